"""Chapter 5: encoder–decoder translators with and without attention, in Keras 3.

Every class mirrors its twin in ``attention_course.torch.translation``: same name, constructor arguments,
sub-layer names and call signature, so ``attention_course.parity.torch_to_keras`` copies weights across.
Shapes: B batch, S source steps, T target steps, E embedding, H decoder state, 2H encoder state (two directions).
Sources are right-padded; ``src_mask`` (B, S) is True on real tokens.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import layers, ops

from .. import validate
from ..choices import TRANSLATION_ATTENTION
from . import inputs
from .base import BuildOnCall, Layer, Model
from .layers import masked_softmax
from .scores import AdditiveScore, GeneralScore

__all__ = ["OneStepAttention", "SeedTranslator", "Encoder", "PlainDecoder", "BahdanauDecoder", "LuongDecoder",
           "Translator", "DECODERS"]


def embedding(vocab: int, embed: int) -> layers.Embedding:
    """An embedding initialised as PyTorch's, N(0, 1): with Keras' default (uniform in ±0.05) these translators
    learn several times slower in the first epochs."""
    return layers.Embedding(vocab, embed, embeddings_initializer=keras.initializers.RandomNormal(stddev=1.0))


class OneStepAttention(BuildOnCall, Layer):
    """The slides' ``one_step_attention``: repeat s_{t−1} over the S source steps, concatenate it with the
    encoder states a, Dense(10, tanh), Dense(1), a softmax over time, and α·a for the context."""

    def __init__(self, d_state: int, d_enc: int, units: int = 10, **kwargs):
        super().__init__(**kwargs)
        self.d_state, self.d_enc, self.units = validate.sizes(d_state=d_state, d_enc=d_enc, units=units)
        self.concatenator = layers.Concatenate(axis=-1)
        self.densor1 = layers.Dense(self.units)
        self.densor2 = layers.Dense(1)
        self.dotor = layers.Dot(axes=1)

    def call(self, a, s_prev, mask=None):
        # a (B, S, 2H) encoder states, s_prev (B, H), mask (B, S)
        a, s_prev, mask = inputs.floats(a, "a"), inputs.floats(s_prev, "s_prev"), inputs.bool_mask(mask, "mask")
        validate.query_and_memory("OneStepAttention", s_prev, self.d_state, a, self.d_enc, mask)
        s = ops.repeat(ops.expand_dims(s_prev, 1), ops.shape(a)[1], axis=1)   # repeator: (B, S, H)
        concat = self.concatenator([a, s])                          # (B, S, 2H + H)
        energies = self.densor2(ops.tanh(self.densor1(concat)))     # (B, S, 1)
        alphas = masked_softmax(ops.transpose(energies, (0, 2, 1)), mask)     # activator, over time: (B, 1, S)
        return self.dotor([ops.transpose(alphas, (0, 2, 1)), a]), alphas    # dotor: context (B, 1, 2H)


class SeedTranslator(Model):
    """The slides' model, repaired: a bidirectional LSTM encoder, ``OneStepAttention`` at every output step,
    the context concatenated with the previous target word (teacher forcing), one LSTM step started from
    [s, c], a linear layer to the vocabulary. src (B, S), src_mask (B, S), tgt_in (B, T) → logits (B, T, V)."""

    def __init__(self, src_vocab: int, tgt_vocab: int, embed: int = 32, n_a: int = 32, n_s: int = 64, **kwargs):
        super().__init__(**kwargs)
        src_vocab, tgt_vocab, embed, n_a, n_s = validate.sizes(
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed=embed, n_a=n_a, n_s=n_s)
        self.n_s = n_s
        self.src_embed = embedding(src_vocab, embed)
        self.encoder = layers.Bidirectional(layers.LSTM(n_a, return_sequences=True))
        self.attention = OneStepAttention(n_s, 2 * n_a, 10)
        self.tgt_embed = embedding(tgt_vocab, embed)
        self.decoder = layers.LSTM(n_s, return_state=True)
        self.out = layers.Dense(tgt_vocab)

    def call(self, src, src_mask, tgt_in, return_weights: bool = False):
        src, tgt_in = inputs.ids(src, "src", self.src_embed), inputs.ids(tgt_in, "tgt_in", self.tgt_embed)
        mask = inputs.source_mask(src_mask, src)
        validate.same_batch(src=validate.shape_of(src), tgt_in=validate.shape_of(tgt_in))
        a = self.encoder(self.src_embed(src), mask=mask)             # (B, S, 2n_a)
        s = c = ops.zeros((ops.shape(a)[0], self.n_s))               # the slides' s0, c0
        y = self.tgt_embed(tgt_in)                                   # (B, T, E)
        logits, weights = [], []
        for t in range(y.shape[1]):
            context, alphas = self.attention(a, s, mask)             # (B, 1, 2n_a), (B, 1, S)
            _, s, c = self.decoder(ops.concatenate([context, y[:, t:t + 1]], -1), initial_state=[s, c])
            logits.append(self.out(s))
            weights.append(alphas)
        logits = ops.stack(logits, axis=1)                           # (B, T, V)
        return (logits, ops.concatenate(weights, axis=1)) if return_weights else logits


class Encoder(BuildOnCall, Layer):
    """Bidirectional GRU: src (B, S) → states h_j (B, S, 2H) (both directions), summary (B, 2H) (the forward
    state after the last token and the backward state after the first) and the decoder's start state
    s_0 = tanh(W_s summary) (B, H)."""

    def __init__(self, vocab: int, embed: int, hidden: int, **kwargs):
        super().__init__(**kwargs)
        vocab, embed, hidden = validate.sizes(vocab=vocab, embed=embed, hidden=hidden)
        self.embed = embedding(vocab, embed)
        # reset_after=True is PyTorch's formulation of the GRU (two bias vectors)
        self.rnn = layers.Bidirectional(layers.GRU(hidden, return_sequences=True, return_state=True,
                                                   reset_after=True))
        self.bridge = layers.Dense(hidden)

    def call(self, src, src_mask):
        src = inputs.ids(src, "src", self.embed)                     # (B, S) ids in [0, vocab)
        mask = inputs.source_mask(src_mask, src)                     # right-padded, every row a real token
        states, forward, backward = self.rnn(self.embed(src), mask=mask)   # (B, S, 2H), (B, H), (B, H)
        states = states * ops.cast(ops.expand_dims(mask, -1), states.dtype)  # zeros on pads, as PyTorch's
        summary = ops.concatenate([forward, backward], axis=-1)     # (B, 2H)
        return states, mask, summary, ops.tanh(self.bridge(summary))


def _decoder_sizes(vocab, embed, hidden, units) -> tuple[int, int, int, int | None]:
    """A decoder's sizes, checked: whole numbers >= 1 (``units``, the score's, may be None: ``hidden``)."""
    vocab, embed, hidden = validate.sizes(vocab=vocab, embed=embed, hidden=hidden)
    return vocab, embed, hidden, validate.optional_size("units", units)


class PlainDecoder(BuildOnCall, Layer):
    """No attention (Cho et al. 2014): every step sees the same fixed summary c of the source.
    s_t = GRU([y_{t−1}; c], s_{t−1}); logits = W_o tanh(W_r [s_t; c; y_{t−1}])."""

    def __init__(self, vocab: int, embed: int, hidden: int, units: int | None = None, **kwargs):
        super().__init__(**kwargs)
        vocab, embed, hidden, units = _decoder_sizes(vocab, embed, hidden, units)
        self.embed = embedding(vocab, embed)
        self.rnn = layers.GRUCell(hidden, reset_after=True)
        self.readout = layers.Dense(hidden)
        self.out = layers.Dense(vocab)

    def keys(self, h):
        return None                                                  # nothing to attend to

    def call(self, y_prev, state, memory):
        # y_prev (B,) ids, state (s_{t−1} (B, H), unused (B, H)),
        # memory (h (B, S, 2H), mask (B, S), c (B, 2H), keys: None here)
        s_prev, _ = state
        c = memory[2]
        e = self.embed(y_prev)                                       # (B, E)
        s, _ = self.rnn(ops.concatenate([e, c], -1), [s_prev])       # (B, H)
        return self.out(ops.tanh(self.readout(ops.concatenate([s, c, e], -1)))), (s, s), None


class BahdanauDecoder(BuildOnCall, Layer):
    """Bahdanau et al. (2015): the previous state s_{t−1} queries the encoder states with the additive score
    e_tj = v_aᵀ tanh(W_a s_{t−1} + U_a h_j) (Chapter 4's ``AdditiveScore``), and the context c_t enters the
    recurrent step. s_t = GRU([y_{t−1}; c_t], s_{t−1}); logits = W_o tanh(W_r [s_t; c_t; y_{t−1}]) (a smaller
    read-out than the paper's maxout layer). U_a h_j does not depend on t: ``keys`` computes it once."""

    def __init__(self, vocab: int, embed: int, hidden: int, units: int | None = None, **kwargs):
        super().__init__(**kwargs)
        vocab, embed, hidden, units = _decoder_sizes(vocab, embed, hidden, units)
        self.embed = embedding(vocab, embed)
        self.score = AdditiveScore(hidden, 2 * hidden, units or hidden)
        self.rnn = layers.GRUCell(hidden, reset_after=True)
        self.readout = layers.Dense(hidden)
        self.out = layers.Dense(vocab)

    def keys(self, h):
        return self.score.U_a(h)                                     # (B, S, units), once per sentence

    def call(self, y_prev, state, memory):
        s_prev, _ = state
        h, mask, _, keys = memory
        e = self.embed(y_prev)                                       # (B, E)
        scores = ops.squeeze(self.score.v_a(ops.tanh(ops.expand_dims(self.score.W_a(s_prev), 1) + keys)), -1)
        alpha = masked_softmax(ops.expand_dims(scores, 1), mask)     # (B, 1, S)
        c = ops.matmul(alpha, h)[:, 0]                               # (B, 2H)
        s, _ = self.rnn(ops.concatenate([e, c], -1), [s_prev])       # (B, H)
        return self.out(ops.tanh(self.readout(ops.concatenate([s, c, e], -1)))), (s, s), alpha[:, 0]


class LuongDecoder(BuildOnCall, Layer):
    """Luong et al. (2015), global attention with input feeding: s_t = GRU([y_{t−1}; h̃_{t−1}], s_{t−1}) first,
    then s_t queries the encoder states with the general score e_tj = s_tᵀ W_a h_j (Chapter 4's
    ``GeneralScore``), h̃_t = tanh(W_c [c_t; s_t]), logits from h̃_t. ``keys`` computes W_a h_j once."""

    def __init__(self, vocab: int, embed: int, hidden: int, units: int | None = None, **kwargs):
        super().__init__(**kwargs)
        vocab, embed, hidden, units = _decoder_sizes(vocab, embed, hidden, units)
        self.embed = embedding(vocab, embed)
        self.rnn = layers.GRUCell(hidden, reset_after=True)
        self.score = GeneralScore(hidden, 2 * hidden)
        self.W_c = layers.Dense(hidden, use_bias=False)
        self.out = layers.Dense(vocab)

    def keys(self, h):
        return self.score.W_a(h)                                     # (B, S, H), once per sentence

    def call(self, y_prev, state, memory):
        s_prev, feed = state                                         # feed: h̃_{t−1} (B, H)
        h, mask, _, keys = memory
        e = self.embed(y_prev)                                       # (B, E)
        s, _ = self.rnn(ops.concatenate([e, feed], -1), [s_prev])    # (B, H)
        scores = ops.matmul(keys, ops.expand_dims(s, -1))[..., 0]    # (B, S)
        alpha = masked_softmax(ops.expand_dims(scores, 1), mask)     # (B, 1, S)
        c = ops.matmul(alpha, h)[:, 0]                               # (B, 2H)
        h_tilde = ops.tanh(self.W_c(ops.concatenate([c, s], -1)))    # (B, H)
        return self.out(h_tilde), (s, h_tilde), alpha[:, 0]


DECODERS: dict[str, Any] = {"none": PlainDecoder, "bahdanau": BahdanauDecoder, "luong": LuongDecoder}


class Translator(Model):
    """Encoder + one of ``DECODERS``, trained with teacher forcing.

    src (B, S), src_mask (B, S), tgt_in (B, T) = BOS + target → logits (B, T, V)
    (and attention weights (B, T, S), zeros without attention, when ``return_weights``).
    ``start``/``step``/``reorder`` decode one step at a time on NumPy arrays (``attention_course.decode``).
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, attention: str = "bahdanau", embed: int = 64,
                 hidden: int = 128, units: int | None = None, **kwargs):
        super().__init__(**kwargs)
        src_vocab, tgt_vocab, embed, hidden = validate.sizes(
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed=embed, hidden=hidden)
        validate.choice("attention", attention, TRANSLATION_ATTENTION)
        self.attention_kind = attention
        self.encoder = Encoder(src_vocab, embed, hidden)
        self.decoder = DECODERS[attention](tgt_vocab, embed, hidden, units)

    def call(self, src, src_mask, tgt_in, return_weights: bool = False):
        h, mask, summary, s = self.encoder(src, src_mask)
        tgt_in = inputs.ids(tgt_in, "tgt_in", self.decoder.embed)    # (B, T) ids
        validate.same_batch(src=validate.shape_of(h)[:2], tgt_in=validate.shape_of(tgt_in))
        state, memory = (s, ops.zeros_like(s)), (h, mask, summary, self.decoder.keys(h))
        logits, weights = [], []
        for t in range(tgt_in.shape[1]):
            step_logits, state, alpha = self.decoder(tgt_in[:, t], state, memory)
            logits.append(step_logits)
            weights.append(alpha if alpha is not None else ops.zeros(ops.shape(h)[:2]))
        logits = ops.stack(logits, axis=1)                           # (B, T, V)
        return (logits, ops.stack(weights, axis=1)) if return_weights else logits

    # one step at a time, on NumPy arrays, for greedy and beam search (attention_course.decode)
    def start(self, src, src_mask):
        h, mask, summary, s = self.encoder(src, src_mask)
        return (s, ops.zeros_like(s)), (h, mask, summary, self.decoder.keys(h))

    def step(self, tokens, state):
        state, memory = state
        tokens = validate.step_tokens("tokens", tokens, memory[0].shape[0], self.decoder.embed.input_dim)
        tokens = ops.convert_to_tensor(tokens, dtype="int32")
        logits, state, alpha = self.decoder(tokens, state, memory)
        log_probs = ops.convert_to_numpy(ops.log_softmax(logits, axis=-1))     # (N, V)
        return log_probs, (state, memory), None if alpha is None else ops.convert_to_numpy(alpha)

    def reorder(self, state, index):
        index = ops.convert_to_tensor(validate.row_index("index", index, state[1][0].shape[0]), dtype="int32")
        return tuple(tuple(None if x is None else ops.take(x, index, axis=0) for x in part) for part in state)
