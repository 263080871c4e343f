"""Chapter 7's probes in Keras 3: two small networks that test what a mixing layer can do. ``RecallNet`` recalls a
symbol far back (self-attention, a GRU or a convolution mixes the sequence); ``LookbackNet`` names the symbols a
fixed number of steps back, which only a layer that knows positions can do. Same names and signatures as
``attention_course.torch.probes``.
"""

from __future__ import annotations

from keras import initializers, layers, ops

from .. import validate
from . import inputs
from .base import BuildOnCall, Layer, Model
from .self_attention import LearnedPositions, MultiHeadAttention, SinusoidalPositions

__all__ = ["MIXERS", "POSITIONS", "CausalConv", "RecallNet", "LookbackNet"]

MIXERS = ("attention", "gru", "conv")
POSITIONS = ("none", "sinusoidal", "learned", "rotary")


def _embedding(vocab: int, d_model: int) -> layers.Embedding:
    # N(0, 1) as torch.nn.Embedding: the size of the symbols against the position codes added to them matters
    return layers.Embedding(vocab, d_model, embeddings_initializer=initializers.RandomNormal(stddev=1.0))


class CausalConv(BuildOnCall, Layer):
    """``layers`` convolutions of width ``kernel``, each seeing only the current and earlier positions (the input
    is padded on the left), with ReLU between: position t sees t − layers·(kernel − 1) … t."""

    def __init__(self, d_model: int, kernel: int = 3, layers: int = 3, **kwargs):
        super().__init__(**kwargs)
        self.d_model, self.kernel, self.layers = d_model, kernel, layers
        for i in range(layers):
            setattr(self, f"conv{i}", _conv(d_model, kernel))

    def call(self, x):
        # x (B, T, d_model) → (B, T, d_model)
        x = inputs.floats(x, "x")
        validate.model_width(self, x)
        for i in range(self.layers):
            x = getattr(self, f"conv{i}")(x)                            # padding="causal": the past only
        return x


def _conv(d_model: int, kernel: int) -> layers.Conv1D:
    return layers.Conv1D(d_model, kernel, padding="causal", activation="relu")


class RecallNet(Model):
    """Embed the symbols, mix the sequence with ``mixer`` ("attention": multi-head self-attention with RoPE,
    "gru" or "conv": a causal convolution), and classify the last position, the query. Everything but the mixer
    is the same in the three."""

    def __init__(self, mixer: str, vocab: int, n_classes: int, d_model: int = 64, heads: int = 4, **kwargs):
        super().__init__(**kwargs)
        validate.choice("mixer", mixer, MIXERS)
        self.mixer_name = mixer
        self.embedding = _embedding(vocab, d_model)
        if mixer == "attention":
            self.mixer = MultiHeadAttention(d_model, heads, rotary=True)     # positions: RoPE
        elif mixer == "gru":
            self.mixer = layers.GRU(d_model, return_sequences=True, reset_after=True)
        else:
            self.mixer = CausalConv(d_model)
        self.hidden = layers.Dense(2 * d_model)
        self.readout = layers.Dense(n_classes)

    def call(self, ids):
        # ids (B, T) → logits (B, n_classes), read at the last position
        ids = inputs.ids(ids, "ids", self.embedding)
        x = self.embedding(ids)                                        # (B, T, d_model)
        mixed = self.mixer(x)
        return self.readout(ops.relu(self.hidden(x[:, -1] + mixed[:, -1])))     # (B, n_classes)


class LookbackNet(Model):
    """Embed symbols, add positions (``positions``: "none", "sinusoidal", "learned" or "rotary"), one causal
    multi-head self-attention with a residual connection, and a classifier at every position."""

    def __init__(self, positions: str, n_symbols: int, n_classes: int, d_model: int = 32, heads: int = 2,
                 max_len: int = 64, **kwargs):
        super().__init__(**kwargs)
        validate.choice("positions", positions, POSITIONS)
        self.positions = positions
        self.embedding = _embedding(n_symbols, d_model)
        self.add_positions = {"sinusoidal": lambda: SinusoidalPositions(d_model),
                              "learned": lambda: LearnedPositions(max_len, d_model)}.get(positions, layers.Identity)()
        self.attention = MultiHeadAttention(d_model, heads, rotary=positions == "rotary")
        self.readout = layers.Dense(n_classes)

    def call(self, ids, return_weights: bool = False):
        # ids (B, T) → logits (B, T, n_classes) [, weights (B, heads, T, T)]
        ids = inputs.ids(ids, "ids", self.embedding)
        x = self.add_positions(self.embedding(ids))                    # (B, T, d_model)
        out = self.attention(x, causal=True, return_weights=return_weights)
        mixed, weights = out if return_weights else (out, None)
        logits = self.readout(x + mixed)                               # (B, T, n_classes)
        return (logits, weights) if return_weights else logits
