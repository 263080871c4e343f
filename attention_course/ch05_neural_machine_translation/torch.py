"""Chapter 5: encoder–decoder translators with and without attention, in PyTorch.

Every class mirrors its twin in ``keras.py`` beside it: same name, constructor arguments,
sub-layer names and call signature, so ``attention_course.core.parity.torch_to_keras`` copies weights across.
Shapes: B batch, S source steps, T target steps, E embedding, H decoder state, 2H encoder state (two directions).
Sources are right-padded; ``src_mask`` (B, S) is True on real tokens.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from attention_course.ch01_sequence_models.torch import masked_softmax
from attention_course.ch04_score_functions.torch import AdditiveScore, GeneralScore
from attention_course.ch05_neural_machine_translation import validate
from attention_course.core import train as training
from attention_course.core.choices import TRANSLATION_ATTENTION
from attention_course.core.text import PAD
from attention_course.core.torch import inputs

__all__ = ["OneStepAttention", "SlidesTranslator", "Encoder", "PlainDecoder", "BahdanauDecoder", "LuongDecoder",
           "Translator", "DECODERS", "coverage_penalty", "agreement", "fit_attention_terms"]


def softmax_over_time(x, mask=None):
    """The slides' ``softmax_over_time``: a softmax over axis 1, time. x (B, S, 1) energies, mask (B, S) True on
    real tokens (the repair: pads get exactly 0) → (B, S, 1) weights."""
    return masked_softmax(x.transpose(1, 2), mask).transpose(1, 2)   # masked_softmax runs over the last axis


def selector(x, t: int):
    """The slides' ``selector`` with t an argument, read when the step runs: x (B, T, E) → x[:, t:t+1] (B, 1, E)."""
    return x[:, t:t + 1]


class OneStepAttention(nn.Module):
    """The slides' ``one_step_attention(h, st_1)``: repeat s(t−1) over the S source steps (``attn_repeat_layer``),
    concatenate it with each encoder state h_j (``attn_concat_layer``), ``attn_dense1`` = Dense(10, tanh),
    ``attn_dense2`` = Dense(1) and ``softmax_over_time``, then the weighted sum Σ_j α_j h_j (``attn_dot``).
    h (B, S, D), st_1 (B, H), mask (B, S) → context (B, 1, D), alphas (B, S, 1)."""

    def __init__(self, d_state: int, d_enc: int, units: int = 10):
        super().__init__()
        self.d_state, self.d_enc, self.units = validate.sizes(d_state=d_state, d_enc=d_enc, units=units)
        self.attn_dense1 = nn.Linear(self.d_enc + self.d_state, self.units)
        self.attn_dense2 = nn.Linear(self.units, 1)

    def forward(self, h, st_1, mask=None):
        h = inputs.floats(h, "h", inputs.device_of(self))
        st_1, mask = inputs.floats(st_1, "st_1", h.device), inputs.bool_mask(mask, "mask", h.device)
        validate.query_and_memory("OneStepAttention", st_1, self.d_state, h, self.d_enc, mask)
        st_1 = st_1[:, None, :].expand(-1, h.shape[1], -1)        # attn_repeat_layer: (B, S, H)
        x = torch.cat([h, st_1], dim=-1)                           # attn_concat_layer: (B, S, D + H)
        x = torch.tanh(self.attn_dense1(x))                        # (B, S, 10)
        alphas = softmax_over_time(self.attn_dense2(x), mask)      # (B, S, 1), a distribution over time
        context = alphas.transpose(1, 2) @ h                       # attn_dot, Dot(axes=1): (B, 1, D)
        return context, alphas


class SlidesTranslator(nn.Module):
    """The slides' model: ``embedding_layer`` and a bidirectional LSTM encoder with dropout on its inputs, then
    for each output step t ``one_step_attention`` asked with s(t−1), the context concatenated with the previous
    target word chosen by ``selector`` (teacher forcing), one step of ``decoder_lstm`` from [s, c] (zeros at
    first: the slides' inputs s0, c0) and ``decoder_dense``. Repaired: the selector reads its step when it runs,
    the encoder and the softmax over time skip the pads, and the output is logits (the slides' Dense has a
    softmax; here the loss applies it). src (B, S), src_mask (B, S), tgt_in (B, T) → logits (B, T, V)
    [and alphas (B, T, S) when ``return_weights``]."""

    def __init__(self, src_vocab: int, tgt_vocab: int, embed: int = 32, latent_dim: int = 32,
                 latent_dim_decoder: int = 64, dropout: float = 0.5):
        super().__init__()
        src_vocab, tgt_vocab, embed, latent_dim, latent_dim_decoder = validate.sizes(
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed=embed, latent_dim=latent_dim,
            latent_dim_decoder=latent_dim_decoder)
        self.latent_dim_decoder, self.dropout = latent_dim_decoder, validate.rate("dropout", dropout)
        self.embedding_layer = nn.Embedding(src_vocab, embed)
        self.encoder = nn.LSTM(embed, latent_dim, batch_first=True, bidirectional=True)
        self.attention = OneStepAttention(latent_dim_decoder, 2 * latent_dim, 10)
        self.decoder_embedding = nn.Embedding(tgt_vocab, embed)
        self.decoder_lstm = nn.LSTM(2 * latent_dim + embed, latent_dim_decoder, batch_first=True)
        self.decoder_dense = nn.Linear(latent_dim_decoder, tgt_vocab)

    def forward(self, src, src_mask, tgt_in, return_weights: bool = False):
        src = inputs.ids(src, "src", self.embedding_layer)
        tgt_in = inputs.ids(tgt_in, "tgt_in", self.decoder_embedding)
        mask, lengths = inputs.source_mask(src_mask, src)
        validate.same_batch(src=validate.shape_of(src), tgt_in=validate.shape_of(tgt_in))
        x = self.embedding_layer(src)                              # (B, S, E)
        if self.training and self.dropout:     # as Keras' LSTM(dropout=…): one mask on the inputs for all steps
            x = x * torch.bernoulli(x.new_full((x.shape[0], 1, x.shape[2]), 1 - self.dropout)) / (1 - self.dropout)
        encoder_outputs = encode_padded(self.encoder, x, lengths)[0]    # (B, S, 2 latent_dim)
        s = c = x.new_zeros(x.shape[0], self.latent_dim_decoder)  # the slides' initial_s, initial_c
        decoder_inputs_x = self.decoder_embedding(tgt_in)          # (B, T, E)
        outputs, weights = [], []
        for t in range(decoder_inputs_x.shape[1]):                 # Ty times
            context, alphas = self.attention(encoder_outputs, s, mask)     # (B, 1, 2 latent_dim), (B, S, 1)
            xt = selector(decoder_inputs_x, t)                     # the previous target word: (B, 1, E)
            decoder_lstm_input = torch.cat([context, xt], dim=2)   # context_last_word_concat_layer
            o, (s, c) = self.decoder_lstm(decoder_lstm_input, (s[None], c[None]))
            s, c = s[0], c[0]                                      # (B, latent_dim_decoder)
            outputs.append(self.decoder_dense(o[:, 0]))           # (B, V)
            weights.append(alphas[..., 0])
        logits = torch.stack(outputs, dim=1)                       # stack_and_transpose: (B, T, V)
        return (logits, torch.stack(weights, dim=1)) if return_weights else logits


def encode_padded(rnn, x, lengths):
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
        states, last = encode_padded(self.rnn, self.embed(src), lengths)  # (B, S, 2H), (2, B, H)
        summary = torch.cat([last[0], last[1]], dim=-1)             # (B, 2H)
        return states, mask, summary, torch.tanh(self.bridge(summary))


def decoder_sizes(vocab, embed, hidden, units) -> tuple[int, int, int, int | None]:
    """A decoder's sizes, checked: whole numbers >= 1 (``units``, the score's, may be None: ``hidden``)."""
    vocab, embed, hidden = validate.sizes(vocab=vocab, embed=embed, hidden=hidden)
    return vocab, embed, hidden, validate.optional_size("units", units)


class PlainDecoder(nn.Module):
    """No attention (Cho et al. 2014): every step sees the same fixed summary c of the source.
    s_t = GRU([y_{t−1}; c], s_{t−1}); logits = W_o tanh(W_r [s_t; c; y_{t−1}])."""

    def __init__(self, vocab: int, embed: int, hidden: int, units: int | None = None):
        super().__init__()
        vocab, embed, hidden, units = decoder_sizes(vocab, embed, hidden, units)
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
        vocab, embed, hidden, units = decoder_sizes(vocab, embed, hidden, units)
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
        vocab, embed, hidden, units = decoder_sizes(vocab, embed, hidden, units)
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
    ``start``/``step``/``reorder`` decode one step at a time on NumPy arrays (``attention_course.core.decode``).
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

    # one step at a time, on NumPy arrays, for greedy and beam search (attention_course.core.decode)
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


# ---- Cohn et al. (2016): structural biases on the attention matrix, as training terms --------------------------

def coverage_penalty(alphas, src_mask, tgt_mask):
    """Cohn et al.'s global fertility term with every fertility 1: (1 − Σ_t α_ti)² for each real source position
    i, the attention summed over the real output steps t; the mean over the real source positions of the batch.
    alphas (B, T, S), src_mask (B, S), tgt_mask (B, T) → a scalar, 0 when every source word gets one unit."""
    validate.term_shapes(alphas, src_mask, tgt_mask)
    received = (alphas * tgt_mask[:, :, None]).sum(1)                  # (B, S) the attention each source word got
    src_mask = src_mask.to(alphas.dtype)
    return (((1 - received) ** 2) * src_mask).sum() / src_mask.sum()


def agreement(a_xy, a_yx, tgt_mask):
    """Cohn et al.'s bidirectional agreement Tr(A_{X→Y} A_{Y→X}ᵀ), with A_{Y→X} laid out as A_{X→Y} (target word ×
    source word): Σ_{t,i} A_{X→Y}[t, i] · A_{Y→X}[i, t], per real output step of the X→Y model. a_xy (B, T, S) the
    X→Y model's weights, a_yx (B, S, T) the Y→X model's on the same pairs, tgt_mask (B, T) → a scalar in [0, 1]."""
    validate.agreement_shapes(a_xy, a_yx, tgt_mask)
    return (a_xy * a_yx.transpose(1, 2)).sum() / tgt_mask.sum()


class AttentionTermsTrainer:
    """The side of the course's training loop (:func:`attention_course.core.train.run`) that trains ``model``
    with Adam on the cross-entropy plus ``coverage`` × ``coverage_penalty``; with ``reverse``, both models learn
    together on the batch's pairs and their reversal, minus ``agreement_weight`` × ``agreement``."""

    def __init__(self, model, reverse, *, coverage: float, agreement_weight: float, lr: float, clip_norm: float):
        self.pair = [model] if reverse is None else [model, reverse]
        self.params = [p for m in self.pair for p in m.parameters()]
        self.optimizer = torch.optim.Adam(self.params, lr=lr)
        self.cross_entropy = nn.CrossEntropyLoss(ignore_index=PAD)
        self.coverage, self.agreement_weight, self.clip_norm = coverage, agreement_weight, clip_norm

    def start_epoch(self) -> None:
        for m in self.pair:
            m.train()

    def step(self, xs, y, step: int) -> tuple[float, int, int]:
        x = [torch.as_tensor(a) for a in xs[:3]]                                   # src, src_mask, tgt_in
        y = torch.as_tensor(y)
        logits, a_xy = self.pair[0](*x, return_weights=True)                       # (b, T, V), (b, T, S)
        loss = self.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        tgt_mask = y != PAD
        if self.coverage:
            loss = loss + self.coverage * coverage_penalty(a_xy, x[1], tgt_mask)
        if len(self.pair) == 2:
            r = [torch.as_tensor(a) for a in xs[3:]]                               # the same pairs, Y→X
            r_logits, a_yx = self.pair[1](*r[:3], return_weights=True)              # (b, S, V'), (b, S, T)
            loss = loss + self.cross_entropy(r_logits.reshape(-1, r_logits.shape[-1]), r[3].reshape(-1))
            loss = loss - self.agreement_weight * agreement(a_xy, a_yx, tgt_mask)
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.params, self.clip_norm)
        self.optimizer.step()
        return loss.item(), int(((logits.argmax(-1) == y) & tgt_mask).sum()), int(tgt_mask.sum())


def fit_attention_terms(model, data, *, coverage: float = 0.0, reverse=None, reverse_data=None,
                        agreement_weight: float = 0.0, epochs: int, lr: float, batch_size: int = 64,
                        clip_norm: float = 1.0, seed: int = 0) -> list[float]:
    """Train ``model`` (X→Y) with teacher forcing as ``attention_course.torch.fit`` does (Adam, pads out of the
    cross-entropy, gradients clipped at ``clip_norm``, the same shuffles for a seed), plus ``coverage`` ×
    ``coverage_penalty``; with ``reverse`` (a Y→X model) and ``reverse_data`` (the same pairs, reversed), both
    models learn together, with their two cross-entropies, minus ``agreement_weight`` × ``agreement``.
    data, reverse_data: arrays with ``src``, ``src_mask``, ``tgt_in``, ``tgt_out``. Returns the loss per epoch."""
    coverage = validate.non_negative("coverage", coverage)
    agreement_weight = validate.non_negative("agreement_weight", agreement_weight)
    validate.reverse_pair(reverse, reverse_data, agreement_weight)
    validate.positive("lr", lr)
    epochs, batch_size = validate.sizes(epochs=epochs, batch_size=batch_size)
    trainer = AttentionTermsTrainer(model, reverse, coverage=coverage, agreement_weight=agreement_weight, lr=lr,
                                    clip_norm=clip_norm)
    inputs: tuple = (data.src, data.src_mask, data.tgt_in)
    if reverse is not None:
        inputs += (reverse_data.src, reverse_data.src_mask, reverse_data.tgt_in, reverse_data.tgt_out)
    history = training.run(trainer, inputs, data.tgt_out, epochs=epochs, batch_size=batch_size, seed=seed,
                           desc="attention terms")
    for m in trainer.pair:
        m.eval()
    return history["loss"]
