"""Chapter 1 in Keras 3: the RNN shapes (one-to-one, many-to-one, many-to-many, one-to-many), the masked softmax,
dot-product attention, and the encoder–decoder with optional attention that the chapter trains.

Every name mirrors its twin in ``torch.py`` beside it: same class name, constructor arguments, sub-layer names and
call signature, so weights can be copied across (``attention_course.core.parity``). Shapes: B batch, T_q queries,
T_k keys, d features. Inputs: tensors or NumPy arrays (float arrays as float32); token ids integers in [0, vocab);
every sequence at least one step; a mask bool or 0/1 (``inputs``).
"""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import layers, ops

from attention_course.ch01_sequence_models import validate
from attention_course.core.keras import inputs
from attention_course.core.keras.base import Layer, Model
from attention_course.core.text import BOS

__all__ = ["masked_softmax", "DotProductAttention", "OneToOne", "ManyToOne", "ManyToMany", "OneToMany", "Seq2Seq"]


def gru_layer(hidden: int) -> layers.GRU:
    # reset_after=True is PyTorch's formulation of the GRU (two bias vectors)
    return layers.GRU(hidden, return_sequences=True, return_state=True, reset_after=True)


class OneToOne(Model):
    """One input → one output (a plain feed-forward net): x (B,) ids → logits (B, n_out)."""

    def __init__(self, n_in: int, n_out: int, hidden: int = 32, **kwargs):
        super().__init__(**kwargs)
        n_in, n_out, hidden = validate.sizes(n_in=n_in, n_out=n_out, hidden=hidden)
        self.embed = layers.Embedding(n_in, hidden)
        self.hidden = layers.Dense(hidden)
        self.out = layers.Dense(n_out)

    def call(self, x):
        x = inputs.ids(x, "x", self.embed, ndim=1)                       # (B,) ids in [0, n_in)
        return self.out(ops.relu(self.hidden(self.embed(x))))


class ManyToOne(Model):
    """Sequence → one label: x (B, T) → logits (B, n_out), read off the GRU's last state."""

    def __init__(self, vocab: int, n_out: int, embed: int = 16, hidden: int = 64, **kwargs):
        super().__init__(**kwargs)
        vocab, n_out, embed, hidden = validate.sizes(vocab=vocab, n_out=n_out, embed=embed, hidden=hidden)
        self.embed = layers.Embedding(vocab, embed)
        self.rnn = gru_layer(hidden)
        self.out = layers.Dense(n_out)

    def call(self, x):
        x = inputs.ids(x, "x", self.embed)                               # (B, T) ids in [0, vocab)
        _, h = self.rnn(self.embed(x))                   # h (B, H)
        return self.out(h)                               # (B, n_out)


class ManyToMany(Model):
    """Sequence labeling: x (B, T) → logits (B, T, n_out), one label per step."""

    def __init__(self, vocab: int, n_out: int, embed: int = 16, hidden: int = 64, **kwargs):
        super().__init__(**kwargs)
        vocab, n_out, embed, hidden = validate.sizes(vocab=vocab, n_out=n_out, embed=embed, hidden=hidden)
        self.embed = layers.Embedding(vocab, embed)
        self.rnn = gru_layer(hidden)
        self.out = layers.Dense(n_out)

    def call(self, x):
        x = inputs.ids(x, "x", self.embed)                               # (B, T) ids in [0, vocab)
        states, _ = self.rnn(self.embed(x))              # (B, T, H)
        return self.out(states)                          # (B, T, n_out)


class OneToMany(Model):
    """One input → a sequence: the input sets the decoder's first state, the decoder then reads its own
    previous token (teacher forcing in training). x (B,), tgt_in (B, T) → logits (B, T, vocab)."""

    def __init__(self, n_in: int, vocab: int, embed: int = 16, hidden: int = 64, **kwargs):
        super().__init__(**kwargs)
        n_in, vocab, embed, hidden = validate.sizes(n_in=n_in, vocab=vocab, embed=embed, hidden=hidden)
        self.init = layers.Embedding(n_in, hidden)
        self.embed = layers.Embedding(vocab, embed)
        self.rnn = gru_layer(hidden)
        self.out = layers.Dense(vocab)

    def call(self, x, tgt_in):
        x, tgt_in = inputs.ids(x, "x", self.init, ndim=1), inputs.ids(tgt_in, "tgt_in", self.embed)
        validate.same_batch(x=validate.shape_of(x), tgt_in=validate.shape_of(tgt_in))
        h0 = ops.tanh(self.init(x))                      # (B, H)
        states, _ = self.rnn(self.embed(tgt_in), initial_state=h0)  # (B, T, H)
        return self.out(states)                          # (B, T, vocab)

    def generate(self, x, steps: int):
        """Greedy generation: x (B,) → ids (B, steps)."""
        x, steps = inputs.ids(x, "x", self.init, ndim=1), validate.integer("steps", steps)
        h = ops.tanh(self.init(x))
        token = ops.full((ops.shape(x)[0], 1), BOS, dtype="int64")
        out = []
        for _ in range(steps):
            state, h = self.rnn(self.embed(token), initial_state=h)
            token = ops.argmax(self.out(state), axis=-1)  # (B, 1)
            out.append(token)
        return ops.concatenate(out, axis=1)


class Seq2Seq(Model):
    """Encoder–decoder GRU. Without attention the decoder sees the source only through the encoder's
    final state (the fixed-length bottleneck). With ``attention=True`` every decoder state also takes a
    weighted average of all encoder states (dot-product attention) before predicting its token.

    src (B, S) left-padded ids, tgt_in (B, T), src_mask (B, S) True on real tokens → logits (B, T, vocab).
    """

    def __init__(self, vocab: int, embed: int = 32, hidden: int = 64, attention: bool = False, **kwargs):
        super().__init__(**kwargs)
        vocab, embed, hidden = validate.sizes(vocab=vocab, embed=embed, hidden=hidden)
        self.use_attention = attention
        self.embed = layers.Embedding(vocab, embed)
        self.encoder = gru_layer(hidden)
        self.decoder = gru_layer(hidden)
        self.attention = self.make_attention(hidden)
        self.combine = layers.Dense(hidden)
        self.out = layers.Dense(vocab)

    def make_attention(self, hidden: int):
        """The attention layer: dot products of decoder and encoder states (Chapter 4 scores them otherwise)."""
        return DotProductAttention()

    def encode(self, src):
        src = inputs.ids(src, "src", self.embed)                         # (B, S) ids in [0, vocab)
        enc, h = self.encoder(self.embed(src))           # enc (B, S, H), h (B, H)
        return enc, h

    def _src_mask(self, src_mask, enc):
        """src_mask (B, S) as bool: True/1 on real tokens, False/0 on pads (None, or unused without attention)."""
        return None if src_mask is None or not self.use_attention else inputs.bool_mask(src_mask, "src_mask")

    def step_logits(self, dec, enc, src_mask):
        """dec (B, T, H) decoder states → logits (B, T, vocab) and attention weights (B, T, S) or None."""
        weights = None
        if self.use_attention:
            context, weights = self.attention(dec, enc, enc, mask=src_mask, return_weights=True)
            dec = ops.concatenate([dec, context], axis=-1)  # (B, T, 2H)
        return self.out(ops.tanh(self.combine(dec))), weights

    def call(self, src, tgt_in, src_mask=None):
        enc, h = self.encode(src)                                        # src (B, S) ids in [0, vocab)
        tgt_in = inputs.ids(tgt_in, "tgt_in", self.embed)                # (B, T) ids in [0, vocab)
        validate.same_batch(src=validate.shape_of(enc)[:2], tgt_in=validate.shape_of(tgt_in))
        src_mask = self._src_mask(src_mask, enc)
        dec, _ = self.decoder(self.embed(tgt_in), initial_state=h)  # (B, T, H), teacher forcing
        return self.step_logits(dec, enc, src_mask)[0]

    def generate(self, src, steps: int, src_mask=None):
        """Greedy decoding: src (B, S) → ids (B, steps), attention weights (B, steps, S) (zeros without
        attention)."""
        steps = validate.integer("steps", steps)
        enc, h = self.encode(src)
        src_mask = self._src_mask(src_mask, enc)                         # checked once, not at every step
        batch, length = ops.shape(src)[0], ops.shape(src)[1]
        token = ops.full((batch, 1), BOS, dtype="int64")
        tokens, weights = [], []
        for _ in range(steps):
            dec, h = self.decoder(self.embed(token), initial_state=h)  # (B, 1, H)
            logits, w = self.step_logits(dec, enc, src_mask)
            token = ops.argmax(logits, axis=-1)          # (B, 1)
            tokens.append(token)
            weights.append(w if w is not None else ops.zeros((batch, 1, length)))
        return ops.concatenate(tokens, axis=1), ops.concatenate(weights, axis=1)


def masked_softmax(scores, mask=None):
    """Softmax over the last axis (the keys) that gives exactly 0 to masked positions.

    scores (B, T_q, T_k); mask (B, T_k) or broadcastable to (B, T_q, T_k), True (or 1) where a key may be
    attended, False (or 0) where it is hidden. A row with every key masked gets all zeros (not NaN).
    float16 scores are computed in float32 and the weights given back in float16.
    """
    scores = inputs.floats(scores, "scores")
    dtype, scores = scores.dtype, inputs.widen(scores)     # float16's lowest fill would tie with a visible score
    mask = None if mask is None else inputs.tensor(mask, "mask")
    validate.softmax_shapes(validate.shape_of(scores), None if mask is None else validate.shape_of(mask))
    if mask is None:
        return ops.cast(ops.softmax(scores, axis=-1), dtype)
    mask = inputs.bool_mask(mask)                          # bool, or 0/1 numbers: anything else is an error
    if len(mask.shape) == 2:                               # (B, T_k) key mask → (B, 1, T_k)
        mask = ops.expand_dims(mask, 1)
    lowest = float(np.finfo(keras.backend.standardize_dtype(scores.dtype)).min)
    filled = ops.where(mask, scores, ops.full_like(scores, lowest))
    weights = ops.softmax(filled, axis=-1) * ops.cast(mask, scores.dtype)  # fully masked rows → 0
    return ops.cast(weights, dtype)


class DotProductAttention(Layer):
    """Dot-product attention: a weighted average of the values, weighted by query·key similarity.

    ``scale=True`` divides the scores by √d (the Transformer's scaled dot product).
    """

    def __init__(self, scale: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, query, key, value, mask=None, return_weights: bool = False):
        # query (B, T_q, d), key (B, T_k, d), value (B, T_k, d_v), mask (B, T_k) or (B, T_q, T_k)
        query, key, value, mask = inputs.attention(query, key, value, mask, wide=True)   # float32, bool mask
        inputs.finite_visible(query, key, mask)                     # a NaN or inf there: a row of NaN or zeros
        scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))   # (B, T_q, T_k)
        if self.scale:
            scores = scores / math.sqrt(query.shape[-1])
        weights = masked_softmax(scores, mask)                      # (B, T_q, T_k), rows sum to 1
        context = ops.matmul(weights, inputs.hide(value, mask))     # (B, T_q, d_v); hidden rows zeroed
        return (context, weights) if return_weights else context

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}
