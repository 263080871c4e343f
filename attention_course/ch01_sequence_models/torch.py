"""Chapter 1 in PyTorch: the RNN shapes (one-to-one, many-to-one, many-to-many, one-to-many), the masked softmax,
dot-product attention, and the encoder–decoder with optional attention that the chapter trains.

Every name mirrors its twin in ``keras.py`` beside it: same class name, constructor arguments, sub-layer names and
call signature, so weights can be copied across (``attention_course.core.parity``). Shapes: B batch, T_q queries,
T_k keys, d features. Inputs: tensors or NumPy arrays (float arrays as float32); token ids integers in [0, vocab);
every sequence at least one step; a mask bool or 0/1 (``inputs``).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attention_course.ch01_sequence_models import validate
from attention_course.core.text import BOS
from attention_course.core.torch import inputs

__all__ = ["masked_softmax", "DotProductAttention", "OneToOne", "ManyToOne", "ManyToMany", "OneToMany", "Seq2Seq"]


class OneToOne(nn.Module):
    """One input → one output (a plain feed-forward net): x (B,) ids → logits (B, n_out)."""

    def __init__(self, n_in: int, n_out: int, hidden: int = 32):
        super().__init__()
        n_in, n_out, hidden = validate.sizes(n_in=n_in, n_out=n_out, hidden=hidden)
        self.embed = nn.Embedding(n_in, hidden)
        self.hidden = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, n_out)

    def forward(self, x):
        x = inputs.ids(x, "x", self.embed, ndim=1)                       # (B,) ids in [0, n_in)
        return self.out(torch.relu(self.hidden(self.embed(x))))


class ManyToOne(nn.Module):
    """Sequence → one label: x (B, T) → logits (B, n_out), read off the GRU's last state."""

    def __init__(self, vocab: int, n_out: int, embed: int = 16, hidden: int = 64):
        super().__init__()
        vocab, n_out, embed, hidden = validate.sizes(vocab=vocab, n_out=n_out, embed=embed, hidden=hidden)
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = nn.GRU(embed, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_out)

    def forward(self, x):
        x = inputs.ids(x, "x", self.embed)                               # (B, T) ids in [0, vocab)
        _, h = self.rnn(self.embed(x))                   # h (1, B, H)
        return self.out(h[0])                            # (B, n_out)


class ManyToMany(nn.Module):
    """Sequence labeling: x (B, T) → logits (B, T, n_out), one label per step."""

    def __init__(self, vocab: int, n_out: int, embed: int = 16, hidden: int = 64):
        super().__init__()
        vocab, n_out, embed, hidden = validate.sizes(vocab=vocab, n_out=n_out, embed=embed, hidden=hidden)
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = nn.GRU(embed, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_out)

    def forward(self, x):
        x = inputs.ids(x, "x", self.embed)                               # (B, T) ids in [0, vocab)
        states, _ = self.rnn(self.embed(x))              # (B, T, H)
        return self.out(states)                          # (B, T, n_out)


class OneToMany(nn.Module):
    """One input → a sequence: the input sets the decoder's first state, the decoder then reads its own
    previous token (teacher forcing in training). x (B,), tgt_in (B, T) → logits (B, T, vocab)."""

    def __init__(self, n_in: int, vocab: int, embed: int = 16, hidden: int = 64):
        super().__init__()
        n_in, vocab, embed, hidden = validate.sizes(n_in=n_in, vocab=vocab, embed=embed, hidden=hidden)
        self.init = nn.Embedding(n_in, hidden)
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = nn.GRU(embed, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x, tgt_in):
        x, tgt_in = inputs.ids(x, "x", self.init, ndim=1), inputs.ids(tgt_in, "tgt_in", self.embed)
        validate.same_batch(x=validate.shape_of(x), tgt_in=validate.shape_of(tgt_in))
        h0 = torch.tanh(self.init(x))[None]              # (1, B, H)
        states, _ = self.rnn(self.embed(tgt_in), h0)     # (B, T, H)
        return self.out(states)                          # (B, T, vocab)

    @torch.no_grad()
    def generate(self, x, steps: int):
        """Greedy generation: x (B,) → ids (B, steps)."""
        x, steps = inputs.ids(x, "x", self.init, ndim=1), validate.integer("steps", steps)
        h = torch.tanh(self.init(x))[None]
        token = torch.full((x.shape[0], 1), BOS, dtype=torch.long, device=x.device)
        out = []
        for _ in range(steps):
            state, h = self.rnn(self.embed(token), h)
            token = self.out(state).argmax(-1)           # (B, 1)
            out.append(token)
        return torch.cat(out, dim=1)


class Seq2Seq(nn.Module):
    """Encoder–decoder GRU. Without attention the decoder sees the source only through the encoder's
    final state (the fixed-length bottleneck). With ``attention=True`` every decoder state also takes a
    weighted average of all encoder states (dot-product attention) before predicting its token.

    src (B, S) left-padded ids, tgt_in (B, T), src_mask (B, S) True on real tokens → logits (B, T, vocab).
    """

    def __init__(self, vocab: int, embed: int = 32, hidden: int = 64, attention: bool = False):
        super().__init__()
        vocab, embed, hidden = validate.sizes(vocab=vocab, embed=embed, hidden=hidden)
        self.use_attention = attention
        self.embed = nn.Embedding(vocab, embed)
        self.encoder = nn.GRU(embed, hidden, batch_first=True)
        self.decoder = nn.GRU(embed, hidden, batch_first=True)
        self.attention = self.make_attention(hidden)
        self.combine = nn.Linear(2 * hidden if attention else hidden, hidden)
        self.out = nn.Linear(hidden, vocab)

    def make_attention(self, hidden: int):
        """The attention layer: dot products of decoder and encoder states (Chapter 4 scores them otherwise)."""
        return DotProductAttention()

    def encode(self, src):
        src = inputs.ids(src, "src", self.embed)                         # (B, S) ids in [0, vocab)
        enc, h = self.encoder(self.embed(src))           # enc (B, S, H), h (1, B, H)
        return enc, h

    def _src_mask(self, src_mask, enc):
        """src_mask (B, S) as bool: True/1 on real tokens, False/0 on pads (None, or unused without attention)."""
        if src_mask is None or not self.use_attention:
            return None
        return inputs.bool_mask(src_mask, "src_mask", enc.device)

    def step_logits(self, dec, enc, src_mask):
        """dec (B, T, H) decoder states → logits (B, T, vocab) and attention weights (B, T, S) or None."""
        weights = None
        if self.use_attention:
            context, weights = self.attention(dec, enc, enc, mask=src_mask, return_weights=True)
            dec = torch.cat([dec, context], dim=-1)      # (B, T, 2H)
        return self.out(torch.tanh(self.combine(dec))), weights

    def forward(self, src, tgt_in, src_mask=None):
        enc, h = self.encode(src)                                        # src (B, S) ids in [0, vocab)
        tgt_in = inputs.ids(tgt_in, "tgt_in", self.embed)                # (B, T) ids in [0, vocab)
        validate.same_batch(src=validate.shape_of(enc)[:2], tgt_in=validate.shape_of(tgt_in))
        src_mask = self._src_mask(src_mask, enc)
        dec, _ = self.decoder(self.embed(tgt_in), h)     # (B, T, H), teacher forcing
        return self.step_logits(dec, enc, src_mask)[0]

    @torch.no_grad()
    def generate(self, src, steps: int, src_mask=None):
        """Greedy decoding: src (B, S) → ids (B, steps), attention weights (B, steps, S) (zeros without
        attention)."""
        steps = validate.integer("steps", steps)
        enc, h = self.encode(src)
        src_mask = self._src_mask(src_mask, enc)                         # checked once, not at every step
        token = torch.full((enc.shape[0], 1), BOS, dtype=torch.long, device=enc.device)
        tokens, weights = [], []
        for _ in range(steps):
            dec, h = self.decoder(self.embed(token), h)  # (B, 1, H)
            logits, w = self.step_logits(dec, enc, src_mask)
            token = logits.argmax(-1)                    # (B, 1)
            tokens.append(token)
            weights.append(w if w is not None else enc.new_zeros(enc.shape[0], 1, enc.shape[1]))
        return torch.cat(tokens, dim=1), torch.cat(weights, dim=1)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis (the keys) that gives exactly 0 to masked positions.

    scores (B, T_q, T_k); mask (B, T_k) or broadcastable to (B, T_q, T_k), True (or 1) where a key may be
    attended, False (or 0) where it is hidden. A row with every key masked gets all zeros (not NaN).
    """
    scores = inputs.floats(scores, "scores")
    mask = None if mask is None else inputs.tensor(mask, "mask", scores.device)
    validate.softmax_shapes(validate.shape_of(scores), None if mask is None else validate.shape_of(mask))
    if mask is None:
        return torch.softmax(scores, dim=-1)
    mask = inputs.bool_mask(mask)                          # bool, or 0/1 numbers: anything else is an error
    if mask.dim() == 2:                                    # (B, T_k) key mask → (B, 1, T_k)
        mask = mask[:, None, :]
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(filled, dim=-1) * mask            # fully masked rows: uniform × 0 = 0


class DotProductAttention(nn.Module):
    """Dot-product attention: a weighted average of the values, weighted by query·key similarity.

    ``scale=True`` divides the scores by √d (the Transformer's scaled dot product).
    """

    def __init__(self, scale: bool = False):
        super().__init__()
        self.scale = scale

    def forward(self, query, key, value, mask=None, return_weights: bool = False):
        # query (B, T_q, d), key (B, T_k, d), value (B, T_k, d_v), mask (B, T_k) or (B, T_q, T_k)
        query, key, value, mask = inputs.attention(query, key, value, mask)   # floats, bool mask
        inputs.finite_visible(query, key, mask)           # a NaN or inf there: a row of NaN or zeros
        scores = query @ key.transpose(1, 2)              # (B, T_q, T_k)
        if self.scale:
            scores = scores / math.sqrt(query.shape[-1])
        weights = masked_softmax(scores, mask)            # (B, T_q, T_k), rows sum to 1
        context = weights @ inputs.hide(value, mask)      # (B, T_q, d_v); hidden rows zeroed (0 × NaN = NaN)
        return (context, weights) if return_weights else context
