"""Chapter 7's probes in PyTorch: two small networks that test what a mixing layer can do. ``RecallNet`` recalls a
value stored far back (self-attention, a GRU or a convolution mixes the sequence); ``LookbackNet`` names the
symbols a fixed number of steps back, which only a layer that knows positions can do. Same names and signatures
as ``attention_course.keras.probes``.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import nn

from .. import validate
from . import inputs
from .self_attention import LearnedPositions, MultiHeadAttention, SinusoidalPositions

__all__ = ["MIXERS", "POSITIONS", "CausalConv", "RecallNet", "LookbackNet"]

MIXERS = ("attention", "gru", "conv")
POSITIONS = ("none", "sinusoidal", "learned", "rotary")


class CausalConv(nn.Module):
    """``layers`` convolutions of width ``kernel``, each seeing only the current and earlier positions (the input
    is padded on the left), with ReLU between: position t sees t − layers·(kernel − 1) … t."""

    def __init__(self, d_model: int, kernel: int = 3, layers: int = 3):
        super().__init__()
        self.d_model, self.kernel, self.layers = d_model, kernel, layers
        for i in range(layers):
            setattr(self, f"conv{i}", nn.Conv1d(d_model, d_model, kernel))

    def forward(self, x):
        # x (B, T, d_model) → (B, T, d_model)
        x = inputs.floats(x, "x", self.conv0.weight.device)
        validate.model_width(self, x)
        h = x.transpose(1, 2)                                         # (B, d_model, T): channels first
        for i in range(self.layers):
            h = F.relu(getattr(self, f"conv{i}")(F.pad(h, (self.kernel - 1, 0))))   # pad the past only
        return h.transpose(1, 2)


class RecallNet(nn.Module):
    """Embed the symbols, mix the sequence with ``mixer`` ("attention": multi-head self-attention with RoPE,
    "gru" or "conv": a causal convolution), and classify the last position, the query. Everything but the mixer
    is the same in the three."""

    def __init__(self, mixer: str, vocab: int, n_classes: int, d_model: int = 64, heads: int = 4):
        super().__init__()
        validate.choice("mixer", mixer, MIXERS)
        self.mixer_name = mixer
        self.embedding = nn.Embedding(vocab, d_model)
        if mixer == "attention":
            self.mixer = MultiHeadAttention(d_model, heads, rotary=True)     # positions: RoPE
        elif mixer == "gru":
            self.mixer = nn.GRU(d_model, d_model, batch_first=True)
        else:
            self.mixer = CausalConv(d_model)
        self.hidden = nn.Linear(d_model, 2 * d_model)
        self.readout = nn.Linear(2 * d_model, n_classes)

    def forward(self, ids):
        # ids (B, T) → logits (B, n_classes), read at the last position
        ids = inputs.ids(ids, "ids", self.embedding)
        x = self.embedding(ids)                                        # (B, T, d_model)
        mixed = self.mixer(x)[0] if self.mixer_name == "gru" else self.mixer(x)
        return self.readout(F.relu(self.hidden(x[:, -1] + mixed[:, -1])))     # (B, n_classes)


class LookbackNet(nn.Module):
    """Embed symbols, add positions (``positions``: "none", "sinusoidal", "learned" or "rotary"), one causal
    multi-head self-attention with a residual connection, and a classifier at every position."""

    def __init__(self, positions: str, n_symbols: int, n_classes: int, d_model: int = 32, heads: int = 2,
                 max_len: int = 64):
        super().__init__()
        validate.choice("positions", positions, POSITIONS)
        self.positions = positions
        self.embedding = nn.Embedding(n_symbols, d_model)
        self.add_positions = {"sinusoidal": lambda: SinusoidalPositions(d_model),
                              "learned": lambda: LearnedPositions(max_len, d_model)}.get(positions, nn.Identity)()
        self.attention = MultiHeadAttention(d_model, heads, rotary=positions == "rotary")
        self.readout = nn.Linear(d_model, n_classes)

    def forward(self, ids, return_weights: bool = False):
        # ids (B, T) → logits (B, T, n_classes) [, weights (B, heads, T, T)]
        ids = inputs.ids(ids, "ids", self.embedding)
        x = self.add_positions(self.embedding(ids))                    # (B, T, d_model)
        out = self.attention(x, causal=True, return_weights=return_weights)
        mixed, weights = out if return_weights else (out, None)
        logits = self.readout(x + mixed)                               # (B, T, n_classes)
        return (logits, weights) if return_weights else logits
