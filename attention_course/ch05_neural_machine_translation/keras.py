"""Chapter 5: encoder–decoder translators with and without attention, in Keras 3.

Every class mirrors its twin in ``torch.py`` beside it: same name, constructor arguments,
sub-layer names and call signature, so ``attention_course.core.parity.torch_to_keras`` copies weights across.
Shapes: B batch, S source steps, T target steps, E embedding, H decoder state, 2H encoder state (two directions).
Sources are right-padded; ``src_mask`` (B, S) is True on real tokens.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import layers, ops

from attention_course.ch01_sequence_models.keras import masked_softmax
from attention_course.ch04_score_functions.keras import AdditiveScore, GeneralScore
from attention_course.ch05_neural_machine_translation import validate
from attention_course.core import train as training
from attention_course.core.choices import TRANSLATION_ATTENTION
from attention_course.core.keras import inputs
from attention_course.core.keras.base import BuildOnCall, Layer, Model
from attention_course.core.keras.train import Adam
from attention_course.core.text import PAD

__all__ = ["OneStepAttention", "SlidesTranslator", "Encoder", "PlainDecoder", "BahdanauDecoder", "LuongDecoder",
           "Translator", "DECODERS", "coverage_penalty", "agreement", "fit_attention_terms"]


def embedding(vocab: int, embed: int) -> layers.Embedding:
    """An embedding initialised as PyTorch's, N(0, 1): with Keras' default (uniform in ±0.05) these translators
    learn several times slower in the first epochs."""
    return layers.Embedding(vocab, embed, embeddings_initializer=keras.initializers.RandomNormal(stddev=1.0))


def softmax_over_time(x, mask=None):
    """The slides' ``softmax_over_time``: a softmax over axis 1, time. x (B, S, 1) energies, mask (B, S) True on
    real tokens (the repair: pads get exactly 0) → (B, S, 1) weights."""
    return ops.transpose(masked_softmax(ops.transpose(x, (0, 2, 1)), mask), (0, 2, 1))   # over the last axis


def selector(x, t: int):
    """The slides' ``selector`` with t an argument, read when the step runs: x (B, T, E) → x[:, t:t+1] (B, 1, E)."""
    return x[:, t:t + 1]


class OneStepAttention(BuildOnCall, Layer):
    """The slides' ``one_step_attention(h, st_1)``: repeat s(t−1) over the S source steps (``attn_repeat_layer``),
    concatenate it with each encoder state h_j (``attn_concat_layer``), ``attn_dense1`` = Dense(10, tanh),
    ``attn_dense2`` = Dense(1) and ``softmax_over_time``, then the weighted sum Σ_j α_j h_j (``attn_dot``).
    h (B, S, D), st_1 (B, H), mask (B, S) → context (B, 1, D), alphas (B, S, 1)."""

    def __init__(self, d_state: int, d_enc: int, units: int = 10, **kwargs):
        super().__init__(**kwargs)
        self.d_state, self.d_enc, self.units = validate.sizes(d_state=d_state, d_enc=d_enc, units=units)
        self.attn_concat_layer = layers.Concatenate(axis=-1)
        self.attn_dense1 = layers.Dense(self.units, activation="tanh")
        self.attn_dense2 = layers.Dense(1)
        self.attn_dot = layers.Dot(axes=1)

    def call(self, h, st_1, mask=None):
        h, st_1, mask = inputs.floats(h, "h"), inputs.floats(st_1, "st_1"), inputs.bool_mask(mask, "mask")
        validate.query_and_memory("OneStepAttention", st_1, self.d_state, h, self.d_enc, mask)
        st_1 = ops.repeat(ops.expand_dims(st_1, 1), ops.shape(h)[1], axis=1)   # attn_repeat_layer: (B, S, H)
        x = self.attn_concat_layer([h, st_1])                      # (B, S, D + H)
        x = self.attn_dense1(x)                                    # (B, S, 10)
        alphas = softmax_over_time(self.attn_dense2(x), mask)      # (B, S, 1), a distribution over time
        context = self.attn_dot([alphas, h])                       # Σ_j α_j h_j: (B, 1, D)
        return context, alphas


class SlidesTranslator(Model):
    """The slides' model: ``embedding_layer`` and a bidirectional LSTM encoder with dropout on its inputs, then
    for each output step t ``one_step_attention`` asked with s(t−1), the context concatenated with the previous
    target word chosen by ``selector`` (teacher forcing), one step of ``decoder_lstm`` from [s, c] (zeros at
    first: the slides' inputs s0, c0) and ``decoder_dense``. Repaired: the selector reads its step when it runs,
    the encoder and the softmax over time skip the pads, and the output is logits (the slides' Dense has a
    softmax; here the loss applies it). src (B, S), src_mask (B, S), tgt_in (B, T) → logits (B, T, V)
    [and alphas (B, T, S) when ``return_weights``]."""

    def __init__(self, src_vocab: int, tgt_vocab: int, embed: int = 32, latent_dim: int = 32,
                 latent_dim_decoder: int = 64, dropout: float = 0.5, **kwargs):
        super().__init__(**kwargs)
        src_vocab, tgt_vocab, embed, latent_dim, latent_dim_decoder = validate.sizes(
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed=embed, latent_dim=latent_dim,
            latent_dim_decoder=latent_dim_decoder)
        self.latent_dim_decoder, self.dropout = latent_dim_decoder, validate.rate("dropout", dropout)
        self.embedding_layer = embedding(src_vocab, embed)
        self.encoder = layers.Bidirectional(layers.LSTM(latent_dim, return_sequences=True, dropout=self.dropout))
        self.attention = OneStepAttention(latent_dim_decoder, 2 * latent_dim, 10)
        self.decoder_embedding = embedding(tgt_vocab, embed)
        self.decoder_lstm = layers.LSTM(latent_dim_decoder, return_state=True)
        self.context_last_word_concat_layer = layers.Concatenate(axis=2)
        self.decoder_dense = layers.Dense(tgt_vocab)

    def call(self, src, src_mask, tgt_in, return_weights: bool = False):
        src = inputs.ids(src, "src", self.embedding_layer)
        tgt_in = inputs.ids(tgt_in, "tgt_in", self.decoder_embedding)
        mask = inputs.source_mask(src_mask, src)
        validate.same_batch(src=validate.shape_of(src), tgt_in=validate.shape_of(tgt_in))
        x = self.embedding_layer(src)                              # (B, S, E)
        encoder_outputs = self.encoder(x, mask=mask)              # (B, S, 2 latent_dim); dropout when training
        s = c = ops.zeros((ops.shape(x)[0], self.latent_dim_decoder))     # the slides' initial_s, initial_c
        decoder_inputs_x = self.decoder_embedding(tgt_in)          # (B, T, E)
        outputs, weights = [], []
        for t in range(decoder_inputs_x.shape[1]):                 # Ty times
            context, alphas = self.attention(encoder_outputs, s, mask)     # (B, 1, 2 latent_dim), (B, S, 1)
            xt = selector(decoder_inputs_x, t)                     # the previous target word: (B, 1, E)
            decoder_lstm_input = self.context_last_word_concat_layer([context, xt])
            o, s, c = self.decoder_lstm(decoder_lstm_input, initial_state=[s, c])   # o = s: (B, latent_dim_decoder)
            outputs.append(self.decoder_dense(o))                  # (B, V)
            weights.append(alphas[..., 0])
        logits = ops.stack(outputs, axis=1)                        # stack_and_transpose: (B, T, V)
        return (logits, ops.stack(weights, axis=1)) if return_weights else logits


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


def decoder_sizes(vocab, embed, hidden, units) -> tuple[int, int, int, int | None]:
    """A decoder's sizes, checked: whole numbers >= 1 (``units``, the score's, may be None: ``hidden``)."""
    vocab, embed, hidden = validate.sizes(vocab=vocab, embed=embed, hidden=hidden)
    return vocab, embed, hidden, validate.optional_size("units", units)


class PlainDecoder(BuildOnCall, Layer):
    """No attention (Cho et al. 2014): every step sees the same fixed summary c of the source.
    s_t = GRU([y_{t−1}; c], s_{t−1}); logits = W_o tanh(W_r [s_t; c; y_{t−1}])."""

    def __init__(self, vocab: int, embed: int, hidden: int, units: int | None = None, **kwargs):
        super().__init__(**kwargs)
        vocab, embed, hidden, units = decoder_sizes(vocab, embed, hidden, units)
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
        vocab, embed, hidden, units = decoder_sizes(vocab, embed, hidden, units)
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
        vocab, embed, hidden, units = decoder_sizes(vocab, embed, hidden, units)
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
    ``start``/``step``/``reorder`` decode one step at a time on NumPy arrays (``attention_course.core.decode``).
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
        memory = (h, mask, summary, self.decoder.keys(h))
        steps = ops.shape(tgt_in)[1]
        # a graph loop (PyTorch's twin uses a Python one): the compiled training step holds one copy of the
        # decoder step, not T copies, which keeps Keras' graph, its memory and its tracing time small
        logits = tf.TensorArray(self.compute_dtype, size=steps)      # T × (B, V)
        weights = tf.TensorArray(self.compute_dtype, size=steps)     # T × (B, S)

        def step(t, state, logits, weights):
            step_logits, state, alpha = self.decoder(tgt_in[:, t], state, memory)
            alpha = alpha if alpha is not None else ops.zeros(ops.shape(h)[:2])
            return t + 1, state, logits.write(t, step_logits), weights.write(t, alpha)

        _, _, logits, weights = tf.while_loop(lambda t, *_: t < steps, step,
                                              (0, (s, ops.zeros_like(s)), logits, weights))
        logits = ops.transpose(logits.stack(), (1, 0, 2))            # (B, T, V)
        return (logits, ops.transpose(weights.stack(), (1, 0, 2))) if return_weights else logits

    # one step at a time, on NumPy arrays, for greedy and beam search (attention_course.core.decode)
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


# ---- Cohn et al. (2016): structural biases on the attention matrix, as training terms --------------------------

def coverage_penalty(alphas, src_mask, tgt_mask):
    """Cohn et al.'s global fertility term with every fertility 1: (1 − Σ_t α_ti)² for each real source position
    i, the attention summed over the real output steps t; the mean over the real source positions of the batch.
    alphas (B, T, S), src_mask (B, S), tgt_mask (B, T) → a scalar, 0 when every source word gets one unit."""
    validate.term_shapes(alphas, src_mask, tgt_mask)
    received = ops.sum(alphas * ops.cast(tgt_mask, alphas.dtype)[:, :, None], axis=1)   # (B, S) attention received
    src_mask = ops.cast(src_mask, alphas.dtype)
    return ops.sum(((1 - received) ** 2) * src_mask) / ops.sum(src_mask)


def agreement(a_xy, a_yx, tgt_mask):
    """Cohn et al.'s bidirectional agreement Tr(A_{X→Y} A_{Y→X}ᵀ), with A_{Y→X} laid out as A_{X→Y} (target word ×
    source word): Σ_{t,i} A_{X→Y}[t, i] · A_{Y→X}[i, t], per real output step of the X→Y model. a_xy (B, T, S) the
    X→Y model's weights, a_yx (B, S, T) the Y→X model's on the same pairs, tgt_mask (B, T) → a scalar in [0, 1]."""
    validate.agreement_shapes(a_xy, a_yx, tgt_mask)
    return ops.sum(a_xy * ops.transpose(a_yx, (0, 2, 1))) / ops.sum(ops.cast(tgt_mask, a_xy.dtype))


class AttentionTermsTrainer:
    """The side of the course's training loop (:func:`attention_course.core.train.run`) that trains ``model``
    with Adam on the cross-entropy plus ``coverage`` × ``coverage_penalty``; with ``reverse``, both models learn
    together on the batch's pairs and their reversal, minus ``agreement_weight`` × ``agreement``. ``data`` and
    ``reverse_data`` give the arrays' shapes for the compiled step."""

    def __init__(self, model, reverse, data, reverse_data, *, coverage: float, agreement_weight: float, lr: float,
                 clip_norm: float):
        pair = [model] if reverse is None else [model, reverse]
        for m, d in zip(pair, [data, reverse_data], strict=False):       # build the weights before tracing
            m(d.src[:2], d.src_mask[:2], d.tgt_in[:2])
        params = [v for m in pair for v in m.trainable_variables]
        optimizer = Adam(learning_rate=lr, global_clipnorm=clip_norm)
        optimizer.build(params)

        def cross_entropy(y, logits):                                   # mean over the real target tokens
            keep = ops.cast(y != PAD, logits.dtype)
            per_token = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
            return ops.sum(per_token * keep) / ops.sum(keep)

        def spec(d):                                                    # any batch size: one trace, not two
            return () if d is None else tuple(tf.TensorSpec((None, *a.shape[1:]), tf.as_dtype(a.dtype))
                                              for a in (d.src, d.src_mask, d.tgt_in, d.tgt_out))

        @tf.function(input_signature=[spec(data), spec(reverse_data if reverse is not None else None)])
        def train_step(x, r):
            with tf.GradientTape() as tape:
                logits, a_xy = model(*x[:3], return_weights=True, training=True)      # (b, T, V), (b, T, S)
                loss = cross_entropy(x[3], logits)
                tgt_mask = x[3] != PAD
                if coverage:
                    loss = loss + coverage * coverage_penalty(a_xy, x[1], tgt_mask)
                if reverse is not None:
                    r_logits, a_yx = reverse(*r[:3], return_weights=True, training=True)   # (b, S, V'), (b, S, T)
                    loss = loss + cross_entropy(r[3], r_logits)
                    loss = loss - agreement_weight * agreement(a_xy, a_yx, tgt_mask)
            grads = tape.gradient(loss, params)
            # embeddings get sparse gradients: dense ones keep Adam right for rows repeated in a batch (as in fit)
            optimizer.apply([tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads],
                            params)
            hits = ops.logical_and(ops.equal(ops.cast(ops.argmax(logits, -1), x[3].dtype), x[3]), tgt_mask)
            return loss, ops.sum(ops.cast(hits, "int32")), ops.sum(ops.cast(tgt_mask, "int32"))

        self.train_step = train_step

    def start_epoch(self) -> None:
        pass                                                            # Keras layers take training= at each call

    def step(self, xs, y, step: int) -> tuple[float, int, int]:
        x = tuple(tf.convert_to_tensor(a) for a in (*xs[:3], y))
        r = tuple(tf.convert_to_tensor(a) for a in xs[3:])
        loss, hits, kept = self.train_step(x, r)
        return float(loss), int(hits), int(kept)


def fit_attention_terms(model, data, *, coverage: float = 0.0, reverse=None, reverse_data=None,
                        agreement_weight: float = 0.0, epochs: int, lr: float, batch_size: int = 64,
                        clip_norm: float = 1.0, seed: int = 0) -> list[float]:
    """Train ``model`` (X→Y) with teacher forcing as ``attention_course.keras.fit`` does (Adam, pads out of the
    cross-entropy, gradients clipped at ``clip_norm``, the same shuffles for a seed), plus ``coverage`` ×
    ``coverage_penalty``; with ``reverse`` (a Y→X model) and ``reverse_data`` (the same pairs, reversed), both
    models learn together, with their two cross-entropies, minus ``agreement_weight`` × ``agreement``.
    data, reverse_data: arrays with ``src``, ``src_mask``, ``tgt_in``, ``tgt_out``. Returns the loss per epoch."""
    coverage = validate.non_negative("coverage", coverage)
    agreement_weight = validate.non_negative("agreement_weight", agreement_weight)
    validate.reverse_pair(reverse, reverse_data, agreement_weight)
    validate.positive("lr", lr)
    epochs, batch_size = validate.sizes(epochs=epochs, batch_size=batch_size)
    trainer = AttentionTermsTrainer(model, reverse, data, reverse_data, coverage=coverage,
                                    agreement_weight=agreement_weight, lr=lr, clip_norm=clip_norm)
    inputs: tuple = (data.src, data.src_mask, data.tgt_in)
    if reverse is not None:
        inputs += (reverse_data.src, reverse_data.src_mask, reverse_data.tgt_in, reverse_data.tgt_out)
    return training.run(trainer, inputs, data.tgt_out, epochs=epochs, batch_size=batch_size, seed=seed,
                        desc="attention terms")["loss"]
