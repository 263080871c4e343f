"""Chapter 5: encoder–decoder translators with and without attention, in PyTorch.

Every class mirrors its twin in ``attention_course.keras.translation``: same name, constructor arguments,
sub-layer names and call signature, so ``attention_course.parity.torch_to_keras`` copies weights across.
Shapes: B batch, S source steps, T target steps, E embedding, H decoder state, 2H encoder state (two directions).
Sources are right-padded; ``src_mask`` (B, S) is True on real tokens.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .. import validate
from ..choices import TRANSLATION_ATTENTION
from . import inputs
from .layers import masked_softmax
from .scores import AdditiveScore, GeneralScore

__all__ = ["OneStepAttention", "SeedTranslator", "Encoder", "PlainDecoder", "BahdanauDecoder", "LuongDecoder",
           "Translator", "DECODERS"]


class OneStepAttention(nn.Module):
    """The slides' ``one_step_attention``: repeat s_{t−1} over the S source steps, concatenate it with the
    encoder states a, Dense(10, tanh), Dense(1), a softmax over time, and α·a for the context."""

    def __init__(self, d_state: int, d_enc: int, units: int = 10):
        super().__init__()
        self.d_state, self.d_enc, self.units = validate.sizes(d_state=d_state, d_enc=d_enc, units=units)
        self.densor1 = nn.Linear(self.d_enc + self.d_state, self.units)
        self.densor2 = nn.Linear(self.units, 1)

    def forward(self, a, s_prev, mask=None):
        # a (B, S, 2H) encoder states, s_prev (B, H), mask (B, S)
        a = inputs.floats(a, "a", inputs.device_of(self))
        s_prev, mask = inputs.floats(s_prev, "s_prev", a.device), inputs.bool_mask(mask, "mask", a.device)
        validate.query_and_memory("OneStepAttention", s_prev, self.d_state, a, self.d_enc, mask)
        s = s_prev[:, None, :].expand(-1, a.shape[1], -1)           # repeator: (B, S, H)
        concat = torch.cat([a, s], dim=-1)                          # concatenator: (B, S, 2H + H)
        energies = self.densor2(torch.tanh(self.densor1(concat)))   # (B, S, 1)
        alphas = masked_softmax(energies[..., 0][:, None, :], mask)  # activator, over time: (B, 1, S)
        return alphas @ a, alphas                                   # dotor: context (B, 1, 2H)


class SeedTranslator(nn.Module):
    """The slides' model, repaired: a bidirectional LSTM encoder, ``OneStepAttention`` at every output step,
    the context concatenated with the previous target word (teacher forcing), one LSTM step started from
    [s, c], a linear layer to the vocabulary. src (B, S), src_mask (B, S), tgt_in (B, T) → logits (B, T, V)."""

    def __init__(self, src_vocab: int, tgt_vocab: int, embed: int = 32, n_a: int = 32, n_s: int = 64):
        super().__init__()
        src_vocab, tgt_vocab, embed, n_a, n_s = validate.sizes(
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed=embed, n_a=n_a, n_s=n_s)
        self.n_s = n_s
        self.src_embed = nn.Embedding(src_vocab, embed)
        self.encoder = nn.LSTM(embed, n_a, batch_first=True, bidirectional=True)
        self.attention = OneStepAttention(n_s, 2 * n_a, 10)
        self.tgt_embed = nn.Embedding(tgt_vocab, embed)
        self.decoder = nn.LSTM(2 * n_a + embed, n_s, batch_first=True)
        self.out = nn.Linear(n_s, tgt_vocab)

    def forward(self, src, src_mask, tgt_in, return_weights: bool = False):
        src, tgt_in = inputs.ids(src, "src", self.src_embed), inputs.ids(tgt_in, "tgt_in", self.tgt_embed)
        mask, lengths = inputs.source_mask(src_mask, src)
        validate.same_batch(src=validate.shape_of(src), tgt_in=validate.shape_of(tgt_in))
        a = _encode(self.encoder, self.src_embed(src), lengths)[0]  # (B, S, 2n_a)
        s = c = a.new_zeros(a.shape[0], self.n_s)                   # the slides' s0, c0
        y = self.tgt_embed(tgt_in)                                  # (B, T, E)
        logits, weights = [], []
        for t in range(y.shape[1]):
            context, alphas = self.attention(a, s, mask)            # (B, 1, 2n_a), (B, 1, S)
            _, (s, c) = self.decoder(torch.cat([context, y[:, t:t + 1]], -1), (s[None], c[None]))
            s, c = s[0], c[0]                                       # (B, n_s)
            logits.append(self.out(s))
            weights.append(alphas)
        logits = torch.stack(logits, dim=1)                         # (B, T, V)
        return (logits, torch.cat(weights, dim=1)) if return_weights else logits


def _encode(rnn, x, lengths):
    """Run a bidirectional RNN over right-padded x (B, S, E): each direction reads only the real tokens, the first
    ``lengths`` (B,) (on the CPU) of each row."""
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    states, last = rnn(packed)
    states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=x.shape[1])
    return states, last


class Encoder(nn.Module):
    """Bidirectional GRU: src (B, S) → states h_j (B, S, 2H) (both directions), summary (B, 2H) (the forward
    state after the last token and the backward state after the first) and the decoder's start state
    s_0 = tanh(W_s summary) (B, H)."""

    def __init__(self, vocab: int, embed: int, hidden: int):
        super().__init__()
        vocab, embed, hidden = validate.sizes(vocab=vocab, embed=embed, hidden=hidden)
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = nn.GRU(embed, hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden, hidden)

    def forward(self, src, src_mask):
        src = inputs.ids(src, "src", self.embed)                     # (B, S) ids in [0, vocab)
        mask, lengths = inputs.source_mask(src_mask, src)            # right-padded, every row a real token
        states, last = _encode(self.rnn, self.embed(src), lengths)  # (B, S, 2H), (2, B, H)
        summary = torch.cat([last[0], last[1]], dim=-1)             # (B, 2H)
        return states, mask, summary, torch.tanh(self.bridge(summary))


def _decoder_sizes(vocab, embed, hidden, units) -> tuple[int, int, int, int | None]:
    """A decoder's sizes, checked: whole numbers >= 1 (``units``, the score's, may be None: ``hidden``)."""
    vocab, embed, hidden = validate.sizes(vocab=vocab, embed=embed, hidden=hidden)
    return vocab, embed, hidden, validate.optional_size("units", units)


class PlainDecoder(nn.Module):
    """No attention (Cho et al. 2014): every step sees the same fixed summary c of the source.
    s_t = GRU([y_{t−1}; c], s_{t−1}); logits = W_o tanh(W_r [s_t; c; y_{t−1}])."""

    def __init__(self, vocab: int, embed: int, hidden: int, units: int | None = None):
        super().__init__()
        vocab, embed, hidden, units = _decoder_sizes(vocab, embed, hidden, units)
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = nn.GRUCell(embed + 2 * hidden, hidden)
        self.readout = nn.Linear(hidden + 2 * hidden + embed, hidden)
        self.out = nn.Linear(hidden, vocab)

    def keys(self, h):
        return None                                                 # nothing to attend to

    def forward(self, y_prev, state, memory):
        # y_prev (B,) ids, state (s_{t−1} (B, H), unused (B, H)),
        # memory (h (B, S, 2H), mask (B, S), c (B, 2H), keys: None here)
        s_prev, _ = state
        c = memory[2]
        e = self.embed(y_prev)                                      # (B, E)
        s = self.rnn(torch.cat([e, c], -1), s_prev)                 # (B, H)
        return self.out(torch.tanh(self.readout(torch.cat([s, c, e], -1)))), (s, s), None


class BahdanauDecoder(nn.Module):
    """Bahdanau et al. (2015): the previous state s_{t−1} queries the encoder states with the additive score
    e_tj = v_aᵀ tanh(W_a s_{t−1} + U_a h_j) (Chapter 4's ``AdditiveScore``), and the context c_t enters the
    recurrent step. s_t = GRU([y_{t−1}; c_t], s_{t−1}); logits = W_o tanh(W_r [s_t; c_t; y_{t−1}]) (a smaller
    read-out than the paper's maxout layer). U_a h_j does not depend on t: ``keys`` computes it once."""

    def __init__(self, vocab: int, embed: int, hidden: int, units: int | None = None):
        super().__init__()
        vocab, embed, hidden, units = _decoder_sizes(vocab, embed, hidden, units)
        self.embed = nn.Embedding(vocab, embed)
        self.score = AdditiveScore(hidden, 2 * hidden, units or hidden)
        self.rnn = nn.GRUCell(embed + 2 * hidden, hidden)
        self.readout = nn.Linear(hidden + 2 * hidden + embed, hidden)
        self.out = nn.Linear(hidden, vocab)

    def keys(self, h):
        return self.score.U_a(h)                                    # (B, S, units), once per sentence

    def forward(self, y_prev, state, memory):
        s_prev, _ = state
        h, mask, _, keys = memory
        e = self.embed(y_prev)                                      # (B, E)
        scores = self.score.v_a(torch.tanh(self.score.W_a(s_prev)[:, None] + keys))[..., 0]   # (B, S)
        alpha = masked_softmax(scores[:, None], mask)               # (B, 1, S)
        c = (alpha @ h)[:, 0]                                       # (B, 2H)
        s = self.rnn(torch.cat([e, c], -1), s_prev)                 # (B, H)
        return self.out(torch.tanh(self.readout(torch.cat([s, c, e], -1)))), (s, s), alpha[:, 0]


class LuongDecoder(nn.Module):
    """Luong et al. (2015), global attention with input feeding: s_t = GRU([y_{t−1}; h̃_{t−1}], s_{t−1}) first,
    then s_t queries the encoder states with the general score e_tj = s_tᵀ W_a h_j (Chapter 4's
    ``GeneralScore``), h̃_t = tanh(W_c [c_t; s_t]), logits from h̃_t. ``keys`` computes W_a h_j once."""

    def __init__(self, vocab: int, embed: int, hidden: int, units: int | None = None):
        super().__init__()
        vocab, embed, hidden, units = _decoder_sizes(vocab, embed, hidden, units)
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = nn.GRUCell(embed + hidden, hidden)
        self.score = GeneralScore(hidden, 2 * hidden)
        self.W_c = nn.Linear(2 * hidden + hidden, hidden, bias=False)
        self.out = nn.Linear(hidden, vocab)

    def keys(self, h):
        return self.score.W_a(h)                                    # (B, S, H), once per sentence

    def forward(self, y_prev, state, memory):
        s_prev, feed = state                                        # feed: h̃_{t−1} (B, H)
        h, mask, _, keys = memory
        e = self.embed(y_prev)                                      # (B, E)
        s = self.rnn(torch.cat([e, feed], -1), s_prev)              # (B, H)
        alpha = masked_softmax((keys @ s[:, :, None])[..., 0][:, None], mask)   # (B, 1, S)
        c = (alpha @ h)[:, 0]                                       # (B, 2H)
        h_tilde = torch.tanh(self.W_c(torch.cat([c, s], -1)))      # (B, H)
        return self.out(h_tilde), (s, h_tilde), alpha[:, 0]


DECODERS: dict[str, Any] = {"none": PlainDecoder, "bahdanau": BahdanauDecoder, "luong": LuongDecoder}


class Translator(nn.Module):
    """Encoder + one of ``DECODERS``, trained with teacher forcing.

    src (B, S), src_mask (B, S), tgt_in (B, T) = BOS + target → logits (B, T, V)
    (and attention weights (B, T, S), zeros without attention, when ``return_weights``).
    ``start``/``step``/``reorder`` decode one step at a time on NumPy arrays (``attention_course.decode``).
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, attention: str = "bahdanau", embed: int = 64,
                 hidden: int = 128, units: int | None = None):
        super().__init__()
        src_vocab, tgt_vocab, embed, hidden = validate.sizes(
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed=embed, hidden=hidden)
        validate.choice("attention", attention, TRANSLATION_ATTENTION)
        self.attention_kind = attention
        self.encoder = Encoder(src_vocab, embed, hidden)
        self.decoder = DECODERS[attention](tgt_vocab, embed, hidden, units)

    def forward(self, src, src_mask, tgt_in, return_weights: bool = False):
        h, mask, summary, s = self.encoder(src, src_mask)
        tgt_in = inputs.ids(tgt_in, "tgt_in", self.decoder.embed)    # (B, T) ids
        validate.same_batch(src=validate.shape_of(h)[:2], tgt_in=validate.shape_of(tgt_in))
        state, memory = (s, torch.zeros_like(s)), (h, mask, summary, self.decoder.keys(h))
        logits, weights = [], []
        for t in range(tgt_in.shape[1]):
            step_logits, state, alpha = self.decoder(tgt_in[:, t], state, memory)
            logits.append(step_logits)
            weights.append(alpha if alpha is not None else h.new_zeros(h.shape[:2]))
        logits = torch.stack(logits, dim=1)                          # (B, T, V)
        return (logits, torch.stack(weights, dim=1)) if return_weights else logits

    # one step at a time, on NumPy arrays, for greedy and beam search (attention_course.decode)
    @torch.no_grad()
    def start(self, src, src_mask):
        self.eval()
        h, mask, summary, s = self.encoder(src, src_mask)
        return (s, torch.zeros_like(s)), (h, mask, summary, self.decoder.keys(h))

    @torch.no_grad()
    def step(self, tokens, state):
        state, memory = state
        tokens = validate.step_tokens("tokens", tokens, memory[0].shape[0], self.decoder.embed.num_embeddings)
        tokens = torch.as_tensor(tokens, dtype=torch.long, device=memory[0].device)
        logits, state, alpha = self.decoder(tokens, state, memory)
        log_probs = torch.log_softmax(logits, dim=-1).cpu().numpy()            # (N, V)
        return log_probs, (state, memory), None if alpha is None else alpha.cpu().numpy()

    def reorder(self, state, index):
        index = validate.row_index("index", index, state[1][0].shape[0])
        index = torch.as_tensor(index, dtype=torch.long, device=state[1][0].device)
        return tuple(tuple(None if x is None else x.index_select(0, index) for x in part) for part in state)
