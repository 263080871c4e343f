"""Chapter 11 in Keras: the pointer network (Vinyals et al., 2015), whose attention over the input positions is its
prediction, and the same encoder-decoder with a fixed vocabulary of output positions, the model a pointer network
replaces; convolutional attention (Allamanis et al., 2016), whose scores see a window of neighbouring keys;
hierarchical attention (Yang et al., 2016); multi-source attention (Zoph & Knight, 2016), one decoder attending to
several encoders; the pointer-generator (See et al., 2017), which copies source words through its attention;
monotonic attention (Raffel et al., 2017), which reads its input in order and can decode online. Same names and
signatures as ``torch.py`` beside it.

Shapes: B batch, N input positions, F features per input element, T output steps, h the LSTMs' width.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import layers, ops

from attention_course.ch01_sequence_models.keras import masked_softmax
from attention_course.ch04_score_functions.keras import ScoredAttention
from attention_course.ch05_neural_machine_translation.keras import Encoder, embedding
from attention_course.ch11_more_attention import validate
from attention_course.core.keras import inputs
from attention_course.core.keras.base import BuildOnCall, Dense, Layer, Model
from attention_course.core.keras.init import torch_bias, torch_dense, torch_kernel, torch_uniform
from attention_course.core.text import UNK

__all__ = ["PointerAttention", "PointerNetwork", "FixedOutputNetwork", "ConvolutionalAttention", "MarkerReader",
           "ContextAttention", "HierarchicalAttentionNetwork", "FlatAttentionNetwork", "MultiSourceAttention",
           "MultiSourceTranslator", "CopyGate", "PointerGenerator",
           "MonotonicAttention", "Speller"]


class _TwoBiases(keras.initializers.Initializer):
    """b_ih + b_hh, each U(±1/√hidden): PyTorch's two LSTM biases, as Keras' one bias holds them (summed)."""

    def __init__(self, hidden: int):
        self.hidden, self.parts = hidden, (torch_uniform(hidden), torch_uniform(hidden))

    def __call__(self, shape, dtype=None):
        return self.parts[0](shape, dtype) + self.parts[1](shape, dtype)

    def get_config(self):
        return {"hidden": self.hidden}


def _lstm(hidden: int, **kwargs) -> layers.LSTM:
    """An LSTM that starts as PyTorch's ``nn.LSTM``: its kernels U(±1/√hidden), its bias PyTorch's two summed, and
    no forget-gate bias of 1 (Keras' ``unit_forget_bias``)."""
    return layers.LSTM(hidden, kernel_initializer=torch_uniform(hidden), recurrent_initializer=torch_uniform(hidden),
                       bias_initializer=_TwoBiases(hidden), unit_forget_bias=False, **kwargs)


def _gru(hidden: int, **kwargs) -> layers.GRU:
    """A GRU in PyTorch's formulation (``reset_after``, two biases) that starts as ``nn.GRU``: every weight and bias
    U(±1/√hidden)."""
    return layers.GRU(hidden, reset_after=True, kernel_initializer=torch_uniform(hidden),
                      recurrent_initializer=torch_uniform(hidden), bias_initializer=torch_uniform(hidden), **kwargs)


class PointerAttention(BuildOnCall, Layer):
    """u_tj = vᵀ tanh(W_1 e_j + W_2 d_t), softmax over the input positions j: the distribution a pointer network
    outputs (``reference.pointer_log_probs``). encoded (B, N, e), decoded (B, T, d), mask (B, N) → log p (B, T, N);
    a hidden position gets log p = −inf (probability 0), so a list with none visible points nowhere: −inf
    everywhere, never NaN."""

    def __init__(self, enc_dim: int, dec_dim: int, units: int, **kwargs):
        super().__init__(**kwargs)
        enc_dim, dec_dim, units = validate.sizes(enc_dim=enc_dim, dec_dim=dec_dim, units=units)
        self.W_1 = torch_dense(units, use_bias=False)              # as nn.Linear: U(±1/√fan_in)
        self.W_2 = torch_dense(units, use_bias=False)
        self.v = Dense(1, use_bias=False, kernel_initializer=torch_kernel())   # (B, T, N, u) → (B, T, N, 1), 2-D

    def call(self, encoded, decoded, mask=None):
        encoded, decoded = inputs.floats(encoded, "encoded"), inputs.floats(decoded, "decoded")
        validate.pointer_inputs(encoded, decoded, mask)
        mask = inputs.bool_mask(mask)
        encoded = inputs.finite(inputs.hide(encoded, mask), "encoded")          # a pad's NaN reaches nothing
        decoded = inputs.finite(decoded, "decoded")
        scores = ops.squeeze(self.v(ops.tanh(self.W_1(encoded)[:, None] + self.W_2(decoded)[:, :, None])), -1)
        if mask is None:                                                         # (B, T, N)
            return ops.log_softmax(scores, axis=-1)
        visible = mask[:, None]                                                  # (B, 1, N)
        lowest = float(np.finfo(keras.backend.standardize_dtype(scores.dtype)).min)
        log_p = ops.log_softmax(ops.where(visible, scores, lowest), axis=-1)
        return ops.where(visible, log_p, -float("inf"))                         # log 0: none visible, all −inf

class _EncoderDecoder(Model):
    """What both models share: each input element (F numbers) embedded, an LSTM encoder, an LSTM decoder started
    from the encoder's last state whose input at step t is the element output at step t − 1 (a learned start
    vector at t = 0), and the pointer's attention over the encoder's states. The encoder stops at each list's last
    real element (``mask``), so a list reads the same padded or not."""

    def __init__(self, features: int, hidden: int, **kwargs):
        super().__init__(**kwargs)
        features, hidden = validate.sizes(features=features, hidden=hidden)
        self.features, self.hidden = features, hidden
        self.embed = torch_dense(hidden, features)                 # every layer starts as its PyTorch twin
        self.start = embedding(1, hidden)
        self.encoder = _lstm(hidden, return_sequences=True, return_state=True)
        self.decoder = _lstm(hidden, return_sequences=True)
        self.pointer = PointerAttention(hidden, hidden, hidden)

    def run(self, x, previous, mask=None):
        # x (B, N, F), previous (B, T) the position output at t − 1 (−1 at t = 0) → encoded (B, N, h), decoded
        # (B, T, h) and the pointer's log-probabilities (B, T, N)
        x = inputs.floats(x, "x")
        previous = inputs.tensor(previous, "previous")
        known = not inputs.symbolic(previous) and int(ops.size(previous)) > 0
        low, high = (int(ops.min(previous)), int(ops.max(previous))) if known else (None, None)
        validate.previous_positions(inputs.dtype_name(previous), tuple(previous.shape), tuple(x.shape),
                                    self.features, low, high)
        validate.pointer_inputs(x, x, mask)                                      # the mask fits the elements
        known_mask = None if mask is None else inputs.bool_mask(mask)
        x = inputs.finite(inputs.hide(x, known_mask), "x")                       # its real elements
        e = self.embed(x)                                                        # (B, N, h)
        if known_mask is not None and not inputs.symbolic(known_mask):
            validate.some_elements(int(ops.min(ops.sum(ops.cast(known_mask, "int32"), axis=1))))
        encoded, h, c = self.encoder(e, mask=known_mask)                         # stops at each list's end
        fed = ops.take_along_axis(e, ops.maximum(previous, 0)[..., None], axis=1)               # (B, T, h)
        start = self.start(ops.zeros_like(previous))                                           # (B, T, h)
        fed = ops.where((previous < 0)[..., None], start, fed)
        decoded = self.decoder(fed, initial_state=[h, c])                        # (B, T, h)
        return encoded, decoded, self.pointer(encoded, decoded, mask)

class PointerNetwork(_EncoderDecoder):
    """Vinyals et al.'s pointer network: at each step the attention over the N input positions is the output, so
    the output "vocabulary" grows with the input. x (B, N, F), previous (B, T), mask (B, N) → log p (B, T, N)."""

    def call(self, x, previous, mask=None):
        return self.run(x, previous, mask)[2]

class FixedOutputNetwork(_EncoderDecoder):
    """The same encoder-decoder with attention, predicting the output position from a fixed vocabulary of
    ``positions`` classes (a softmax layer over [decoder state; attention context]), as a sequence-to-sequence model
    with attention would: it cannot name a position ≥ ``positions``. x (B, N, F), previous (B, T), mask (B, N)
    → logits (B, T, positions)."""

    def __init__(self, features: int, hidden: int, positions: int, **kwargs):
        super().__init__(features, hidden, **kwargs)
        (self.positions,) = validate.sizes(positions=positions)
        self.out = torch_dense(positions, 2 * hidden)

    def call(self, x, previous, mask=None):
        encoded, decoded, log_p = self.run(x, previous, mask)
        context = ops.matmul(ops.exp(log_p), encoded)                            # (B, T, h)
        return self.out(ops.concatenate([decoded, context], axis=-1))            # (B, T, positions)


class ConvolutionalAttention(BuildOnCall, Layer):
    """e_j = vᵀ tanh(conv(K)_j + W_q q): the additive score with each key's features computed by a convolution
    over the ``width`` keys centred on it (``reference.convolutional_scores``), so that a score can depend on a
    neighbour ("the word after 'Mr.'"); ``width=1`` is Bahdanau's additive score, each key alone. Then a softmax
    over the keys and the weighted sum of the values. A hidden key is read as zeros, as beyond the ends, so a
    right-padded sequence scores as the same sequence unpadded, and gets no weight; a row with no visible key
    gets no weight at all and a zero context.

    query (B, d_q), keys (B, N, d_k), values (B, N, d_v), mask (B, N) → context (B, d_v) [, weights (B, N)]."""

    def __init__(self, d_query: int, d_key: int, units: int, width: int = 3, **kwargs):
        super().__init__(**kwargs)
        d_query, d_key, units, width = validate.sizes(d_query=d_query, d_key=d_key, units=units, width=width)
        validate.odd_width(width)
        self.conv = layers.Conv1D(units, width, padding="same", kernel_initializer=torch_kernel(),
                                  bias_initializer=torch_bias(d_key * width))  # zeros beyond the ends
        self.W_q = torch_dense(units, use_bias=False)
        self.v = torch_dense(1, use_bias=False)

    def call(self, query, keys, values, mask=None, return_weights: bool = False):
        query, keys, values = (inputs.floats(a, n) for a, n in ((query, "query"), (keys, "keys"), (values, "values")))
        validate.pooled_attention(query, keys, values, mask)
        mask = inputs.bool_mask(mask)
        query = inputs.finite(query, "query")
        keys = inputs.finite(inputs.hide(keys, mask), "keys")                  # pads read as zeros, as the ends
        values = inputs.finite(inputs.hide(values, mask), "values")            # 0 × NaN would still be NaN
        scores = ops.squeeze(self.v(ops.tanh(self.conv(keys) + self.W_q(query)[:, None])), -1)   # (B, N)
        weights = masked_softmax(scores[:, None], mask)[:, 0]                   # (B, N), 0 on pads
        context = ops.sum(weights[..., None] * values, axis=1)                  # (B, d_v)
        return (context, weights) if return_weights else context


class MarkerReader(Model):
    """Reads one token of a sequence, chosen by where it stands: token embeddings, attention from a learned query
    (``ConvolutionalAttention`` of ``width``), a linear layer to the vocabulary. ids (B, N), mask (B, N) → logits
    (B, vocab) [, weights (B, N)]."""

    def __init__(self, vocab: int, dim: int, width: int = 3, **kwargs):
        super().__init__(**kwargs)
        vocab, dim = validate.sizes(vocab=vocab, dim=dim)
        self.embed = embedding(vocab, dim)                          # N(0, 1), as PyTorch's
        self.query = embedding(1, dim)
        self.attention = ConvolutionalAttention(dim, dim, dim, width)
        self.out = torch_dense(vocab, dim)

    def call(self, ids, mask=None, return_weights: bool = False):
        ids = inputs.ids(ids, "ids", self.embed)
        e = self.embed(ids)                                                      # (B, N, d)
        query = self.query(ops.zeros_like(ids[:, 0]))                           # (B, d)
        context, weights = self.attention(query, e, e, mask, return_weights=True)
        logits = self.out(context)                                               # (B, vocab)
        return (logits, weights) if return_weights else logits


class ContextAttention(BuildOnCall, Layer):
    """Yang et al.'s attention pooling (2016): u_t = tanh(W h_t + b), weights a = softmax_t(u_tᵀ c) over the real
    steps with a learned context vector c (the question "which of these is informative?"), pooled = Σ_t a_t h_t.
    states (B, T, H), mask (B, T) → pooled (B, H) [, weights (B, T)]; a row with no real step pools to zeros."""

    def __init__(self, hidden: int, units: int, **kwargs):
        super().__init__(**kwargs)
        self.hidden, units = validate.sizes(hidden=hidden, units=units)
        self.W = torch_dense(units, hidden)
        self.context = torch_dense(1, use_bias=False)                       # c, as a layer: u_tᵀ c

    def call(self, states, mask=None, return_weights: bool = False):
        states = inputs.floats(states, "states")
        validate.sequence_shapes("ContextAttention", states, mask, features=self.hidden)
        mask = inputs.bool_mask(mask)
        states = inputs.finite(inputs.hide(states, mask), "states")       # 0 × a pad's NaN would still be NaN
        scores = self.context(ops.tanh(self.W(states)))[..., 0]            # (B, T)
        weights = masked_softmax(scores[:, None], mask)[:, 0]              # (B, T), 0 on pads
        pooled = ops.sum(weights[..., None] * states, axis=1)              # (B, H)
        return (pooled, weights) if return_weights else pooled


class _Words(BuildOnCall, Layer):
    """Embeddings, then a bidirectional GRU over each row of right-padded word ids (B, T) → states (B, T, 2h), zeros
    on pads (a row of pads only gives zeros)."""

    def __init__(self, vocab: int, embed: int, hidden: int, **kwargs):
        super().__init__(**kwargs)
        self.embed = embedding(vocab, embed)
        self.rnn = layers.Bidirectional(_gru(hidden, return_sequences=True))

    def call(self, ids, mask):
        states = self.rnn(self.embed(ids), mask=mask)                       # (B, T, 2h)
        return states * ops.cast(mask[..., None], states.dtype)


class HierarchicalAttentionNetwork(Model):
    """Yang et al.'s hierarchical attention network: a bidirectional GRU reads each sentence's words and
    ``ContextAttention`` pools them into a sentence vector; a second GRU reads the sentence vectors and a second
    ``ContextAttention`` pools them into the document; a linear layer gives the class scores.
    ids (B, S, W): W words of each of S sentences, right-padded with 0 (and empty sentences last; anything else is
    refused) → logits (B, classes) [, word weights (B, S, W), sentence weights (B, S)]."""

    def __init__(self, vocab: int, classes: int, embed: int = 64, hidden: int = 32, **kwargs):
        super().__init__(**kwargs)
        vocab, classes, embed, hidden = validate.sizes(vocab=vocab, classes=classes, embed=embed, hidden=hidden)
        self.words = _Words(vocab, embed, hidden)
        self.word_attention = ContextAttention(2 * hidden, 2 * hidden)
        self.sentences = layers.Bidirectional(_gru(hidden, return_sequences=True))
        self.sentence_attention = ContextAttention(2 * hidden, 2 * hidden)
        self.out = torch_dense(classes, 2 * hidden)

    def call(self, ids, return_weights: bool = False):
        ids = inputs.ids(ids, "ids", self.words.embed, ndim=3)                    # 0 = padding
        s, w = ids.shape[1], ids.shape[2]
        word_mask = ids != 0                                                       # (B, S, W)
        if not inputs.symbolic(word_mask):                                         # as PyTorch's packed GRUs
            validate.right_padded_documents(ops.convert_to_numpy(word_mask))
        flat, flat_mask = ops.reshape(ids, (-1, w)), ops.reshape(word_mask, (-1, w))
        states = self.words(flat, flat_mask)                                       # (B·S, W, 2h)
        vectors, word_weights = self.word_attention(states, flat_mask, return_weights=True)
        sentence_mask = ops.any(word_mask, axis=-1)                                # (B, S)
        states = self.sentences(ops.reshape(vectors, (-1, s, vectors.shape[-1])), mask=sentence_mask)
        states = states * ops.cast(sentence_mask[..., None], states.dtype)        # (B, S, 2h), zeros on pads
        document, sentence_weights = self.sentence_attention(states, sentence_mask, return_weights=True)
        logits = self.out(document)                                                # (B, classes)
        return (logits, ops.reshape(word_weights, (-1, s, w)), sentence_weights) if return_weights else logits


class FlatAttentionNetwork(Model):
    """The same word encoder and ``ContextAttention`` over all the document's words at once, with no sentences:
    the flat model the hierarchy is compared with. ids (B, N) right-padded with 0 (no pad before a word) → logits
    (B, classes) [, weights (B, N)]."""

    def __init__(self, vocab: int, classes: int, embed: int = 64, hidden: int = 32, **kwargs):
        super().__init__(**kwargs)
        vocab, classes, embed, hidden = validate.sizes(vocab=vocab, classes=classes, embed=embed, hidden=hidden)
        self.words = _Words(vocab, embed, hidden)
        self.word_attention = ContextAttention(2 * hidden, 2 * hidden)
        self.out = torch_dense(classes, 2 * hidden)

    def call(self, ids, return_weights: bool = False):
        ids = inputs.ids(ids, "ids", self.words.embed)
        mask = ids != 0
        if not inputs.symbolic(mask):                                              # as PyTorch's packed GRU
            validate.right_padded_documents(ops.convert_to_numpy(mask))
        document, weights = self.word_attention(self.words(ids, mask), mask, return_weights=True)
        logits = self.out(document)
        return (logits, weights) if return_weights else logits


class MultiSourceAttention(BuildOnCall, Layer):
    """Zoph and Knight's multi-source attention (2016): one attention per source, each with its own additive score
    and its own softmax over that source's positions (Chapter 4's ``ScoredAttention``), then the query and every
    context joined, h̃_t = tanh(W_c [q_t; c¹_t; …; cᴷ_t] + b_c) (``reference.multi_source``).
    query (B, T, d_q), keys (B, K, S, d_k), mask (B, K, S) → h̃ (B, T, d_q) [, weights (B, K, T, S)]."""

    def __init__(self, d_query: int, d_key: int, units: int, sources: int = 2, **kwargs):
        super().__init__(**kwargs)
        d_query, d_key, units, sources = validate.sizes(d_query=d_query, d_key=d_key, units=units, sources=sources)
        self.attend = [ScoredAttention("additive", d_query, d_key, units) for _ in range(sources)]
        self.W_c = torch_dense(d_query, d_query + sources * d_key, activation="tanh")

    def call(self, query, keys, mask=None, return_weights: bool = False):
        query, keys = inputs.floats(query, "query"), inputs.floats(keys, "keys")
        validate.multi_source(query, keys, mask, len(self.attend))
        mask = None if mask is None else inputs.bool_mask(mask, "mask")
        query = inputs.finite(query, "query")
        keys = inputs.finite(keys if mask is None else ops.where(mask[..., None], keys, 0.0), "keys")   # pads: 0
        contexts, weights = [], []
        for k, attend in enumerate(self.attend):                  # source k: its own score and softmax
            c, w = attend(query, keys[:, k], keys[:, k], None if mask is None else mask[:, k], return_weights=True)
            contexts.append(c)                                    # (B, T, d_k)
            weights.append(w)                                     # (B, T, S)
        h = self.W_c(ops.concatenate([query, *contexts], axis=-1))                # (B, T, d_q)
        return (h, ops.stack(weights, axis=1)) if return_weights else h


class MultiSourceTranslator(Model):
    """One decoder and ``sources`` encoders (Chapter 5's ``Encoder``, one per source), joined by
    ``MultiSourceAttention``. The decoder's GRU reads the previous tokens from s_0 = tanh(W_s [s¹_0; …; sᴷ_0]) (each
    encoder's start state), and each of its states queries every source (Luong's order, as Zoph and Knight).
    sources (B, K, S) ids right-padded with 0, tgt_in (B, T) → logits (B, T, V) [, weights (B, K, T, S)]."""

    def __init__(self, src_vocab: int, tgt_vocab: int, sources: int = 2, embed: int = 32, hidden: int = 64,
                 **kwargs):
        super().__init__(**kwargs)
        src_vocab, tgt_vocab, sources, embed, hidden = validate.sizes(
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, sources=sources, embed=embed, hidden=hidden)
        self.encoders = [Encoder(src_vocab, embed, hidden) for _ in range(sources)]
        self.W_s = torch_dense(hidden, sources * hidden, activation="tanh")
        self.embed = embedding(tgt_vocab, embed)                                   # N(0, 1), as PyTorch's
        self.rnn = _gru(hidden, return_sequences=True)
        self.attention = MultiSourceAttention(hidden, 2 * hidden, hidden, sources)
        self.out = torch_dense(tgt_vocab, hidden)

    def call(self, sources, tgt_in, return_weights: bool = False):
        sources = inputs.ids(sources, "sources", self.encoders[0].embed, ndim=3)      # (B, K, S)
        validate.source_count(validate.shape_of(sources), len(self.encoders))
        read = [encoder(sources[:, k], sources[:, k] != 0) for k, encoder in enumerate(self.encoders)]
        states = ops.stack([r[0] for r in read], axis=1)                           # (B, K, S, 2H)
        mask = ops.stack([r[1] for r in read], axis=1)                             # (B, K, S)
        s_0 = self.W_s(ops.concatenate([r[3] for r in read], axis=-1))             # (B, H)
        tgt_in = inputs.ids(tgt_in, "tgt_in", self.embed)                          # (B, T)
        validate.same_batch(sources=validate.shape_of(sources), tgt_in=validate.shape_of(tgt_in))
        decoded = self.rnn(self.embed(tgt_in), initial_state=[s_0])                # (B, T, H)
        h, weights = self.attention(decoded, states, mask, return_weights=True)
        logits = self.out(h)                                                       # (B, T, V)
        return (logits, weights) if return_weights else logits


class CopyGate(BuildOnCall, Layer):
    """See et al.'s pointer-generator output (2017): p_gen = σ(w_cᵀ c_t + w_sᵀ s_t + w_xᵀ x_t + b) mixes the
    vocabulary distribution with the attention over the source, P(w) = p_gen P_vocab(w) + (1 − p_gen) Σ_{j: w_j = w}
    a_tj, over the extended vocabulary: the V target words, then ``extra`` ids for source words the vocabulary lacks
    (``reference.pointer_generator``). logits (B, T, V), weights (B, T, S), src_ext (B, S) the source words' ids in
    the extended vocabulary, context (B, T, c), state (B, T, s), embedded (B, T, x) → log P (B, T, V + extra)
    [, p_gen (B, T)]. Each row of ``weights`` must be a distribution (it sums to 1), or P would not be one."""

    def __init__(self, d_context: int, d_state: int, d_input: int, extra: int, **kwargs):
        super().__init__(**kwargs)
        d_context, d_state, d_input, extra = validate.sizes(d_context=d_context, d_state=d_state, d_input=d_input,
                                                            extra=extra)
        self.extra, self.parts = extra, {"d_context": d_context, "d_state": d_state, "d_input": d_input}
        self.w = torch_dense(1, d_context + d_state + d_input, activation="sigmoid")

    def call(self, logits, weights, src_ext, context, state, embedded, return_gate: bool = False):
        logits = inputs.finite(inputs.floats(logits, "logits"), "logits")
        weights = inputs.floats(weights, "weights")
        src_ext = inputs.tensor(src_ext, "src_ext")
        context, state, embedded = (inputs.floats(x, name) for x, name in
                                    ((context, "context"), (state, "state"), (embedded, "embedded")))
        validate.copy_inputs(logits, weights, src_ext, self.extra)
        validate.gate_parts(logits, self.parts, context=context, state=state, embedded=embedded)
        if not inputs.symbolic(weights) and int(ops.size(weights)):      # each row a distribution over the source
            sums = ops.sum(weights, axis=-1)
            validate.copy_weights(float(ops.min(weights)), float(ops.min(sums)), float(ops.max(sums)))
        size = logits.shape[-1] + self.extra
        if not inputs.symbolic(src_ext):
            validate.extended_ids("src_ext", inputs.dtype_name(src_ext), src_ext.shape, size,
                                  int(ops.min(src_ext)), int(ops.max(src_ext)))
        p_gen = self.w(ops.concatenate([context, state, embedded], axis=-1))          # (B, T, 1)
        vocab = ops.pad(ops.softmax(logits, axis=-1), [(0, 0), (0, 0), (0, self.extra)])   # (B, T, V + extra)
        copied = ops.matmul(weights, ops.one_hot(src_ext, size, dtype=weights.dtype))  # Σ_{j: w_j = w} a_tj
        log_p = ops.log(ops.maximum(p_gen * vocab + (1 - p_gen) * copied, 1e-12))
        return (log_p, p_gen[..., 0]) if return_gate else log_p


class PointerGenerator(Model):
    """An encoder-decoder with Bahdanau's additive attention that can copy: Chapter 5's ``Encoder``, a GRU decoder
    over the previous tokens whose states query the source (Luong's order, all steps at once), an attentional state
    tanh(W_c [s_t; c_t]) and the vocabulary's logits, then ``CopyGate`` (``copy=True``). With ``copy=False`` it is
    the same translator without the gate, the model that can only write its vocabulary.
    src (B, S) ids in the source vocabulary (0 padding), src_ext (B, S) the same words in the extended vocabulary,
    tgt_in (B, T) extended ids (those ≥ ``tgt_vocab``, copied words, are read as ``UNK``) → log P (B, T, V + extra),
    or with ``copy=False`` logits (B, T, V) [, weights (B, T, S), p_gen (B, T) (ones without copying)]."""

    def __init__(self, src_vocab: int, tgt_vocab: int, extra: int, embed: int = 32, hidden: int = 64,
                 copy: bool = True, **kwargs):
        super().__init__(**kwargs)
        src_vocab, tgt_vocab, extra, embed, hidden = validate.sizes(
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, extra=extra, embed=embed, hidden=hidden)
        self.tgt_vocab, self.extra = tgt_vocab, extra
        self.encoder = Encoder(src_vocab, embed, hidden)
        self.embed = embedding(tgt_vocab, embed)                                   # N(0, 1), as PyTorch's
        self.rnn = _gru(hidden, return_sequences=True)
        self.attention = ScoredAttention("additive", hidden, 2 * hidden, hidden)
        self.W_c = torch_dense(hidden, 3 * hidden, activation="tanh")
        self.out = torch_dense(tgt_vocab, hidden)
        self.gate = CopyGate(2 * hidden, hidden, embed, extra) if copy else None

    def call(self, src, src_ext, tgt_in, return_weights: bool = False):
        src = inputs.ids(src, "src", self.encoder.embed)
        h, mask, _, s_0 = self.encoder(src, src != 0)                                  # (B, S, 2H), …, (B, H)
        tgt_in = inputs.tensor(tgt_in, "tgt_in")
        if not inputs.symbolic(tgt_in):
            validate.extended_ids("tgt_in", inputs.dtype_name(tgt_in), tgt_in.shape, self.tgt_vocab + self.extra,
                                  int(ops.min(tgt_in)), int(ops.max(tgt_in)))
        validate.same_batch(src=validate.shape_of(src), tgt_in=validate.shape_of(tgt_in))
        x = self.embed(ops.where(tgt_in < self.tgt_vocab, tgt_in, UNK))                # (B, T, E)
        s = self.rnn(x, initial_state=[s_0])                                           # (B, T, H)
        c, a = self.attention(s, h, h, mask, return_weights=True)                      # (B, T, 2H), (B, T, S)
        logits = self.out(self.W_c(ops.concatenate([s, c], axis=-1)))                 # (B, T, V)
        if self.gate is None:
            return (logits, a, ops.ones(ops.shape(a)[:2])) if return_weights else logits
        src_ext = inputs.tensor(src_ext, "src_ext")
        validate.same_shape("src_ext", tuple(src_ext.shape), tuple(src.shape), "src")
        log_p, p_gen = self.gate(logits, a, src_ext, c, s, x, return_gate=True)
        return (log_p, a, p_gen) if return_weights else log_p


class MonotonicAttention(BuildOnCall, Layer):
    """Raffel et al.'s monotonic attention (2017). Each output step i scans the keys from where the step before
    stopped and stops at key j with probability p_ij = σ(vᵀ tanh(W q_i + U k_j + b) + r). Training uses the expected
    alignment, α_ij = p_ij Σ_{k ≤ j} α_{i−1,k} Π_{l=k}^{j−1} (1 − p_il), from α_0 on the first key
    (``reference.monotonic_alignment``), computed one output step at a time as α_i = p_i ∘ (L_i α_{i−1}) with
    L_i[j, k] = Π_{l=k}^{j−1} (1 − p_il): products only, exact when a p_ij is 0 or 1 (Raffel et al.'s parallel form
    divides by Π (1 − p_il), which underflows once some p_il are near 1). Gaussian noise of scale ``noise`` is added
    before the sigmoid so that the p_ij learn to be near 0 or 1; ``hard=True`` decodes as the scan does, one key per
    step or none (``reference.hard_monotonic``). query (B, T, d_q), keys (B, S, d_k), mask (B, S) → context
    (B, T, d_k) [, weights (B, T, S)]; a hidden key gets no weight and is never read."""

    def __init__(self, d_query: int, d_key: int, units: int, noise: float = 1.0, bias: float = -1.0, **kwargs):
        super().__init__(**kwargs)
        d_query, d_key, units = validate.sizes(d_query=d_query, d_key=d_key, units=units)
        self.noise = validate.non_negative("noise", noise)
        self.W = torch_dense(units, use_bias=False)                # as nn.Linear: U(±1/√fan_in)
        self.U = torch_dense(units, d_key)
        self.v = Dense(1, use_bias=False, kernel_initializer=torch_kernel())   # (B, T, S, u) → (B, T, S, 1), 2-D
        self.r = self.add_weight(shape=(), initializer=keras.initializers.Constant(float(bias)), name="r")

    def probabilities(self, query, keys, mask=None, training=False):
        """p_ij (B, T, S): the probability that step i stops at key j (0 at a hidden key); noisy while training."""
        energy = ops.squeeze(self.v(ops.tanh(self.W(query)[:, :, None] + self.U(keys)[:, None])), -1) + self.r
        if training and self.noise:
            energy = energy + self.noise * keras.random.normal(ops.shape(energy))
        p = ops.sigmoid(energy)                                                    # (B, T, S)
        mask = inputs.bool_mask(mask, "mask")                                    # bool, or 0/1 numbers
        return p if mask is None else ops.where(mask[:, None], p, 0.0)

    def call(self, query, keys, mask=None, hard: bool = False, return_weights: bool = False, training=False):
        query, keys = inputs.floats(query, "query"), inputs.floats(keys, "keys")
        validate.monotonic_inputs(query, keys, mask)
        mask = None if mask is None else inputs.bool_mask(mask, "mask")
        query = inputs.finite(query, "query")
        keys = inputs.finite(inputs.hide(keys, mask), "keys")          # pads zeroed: 0 × NaN would still be NaN
        p = self.probabilities(query, keys, mask, training)
        s, j = keys.shape[1], ops.arange(keys.shape[1])
        if hard:                                                # the scan: from where the last step stopped
            def step(allowed, p_i):                             # allowed (B, S): 1 from the last stop on; p_i (B, S)
                stop = ops.logical_and(p_i >= 0.5, allowed > 0)                     # (B, S)
                found, first = ops.any(stop, 1), ops.argmax(ops.cast(stop, "int32"), 1)
                chosen = ops.one_hot(first, s, dtype=p_i.dtype) * ops.cast(found[:, None], p_i.dtype)
                allowed = ops.cast(ops.logical_and(j[None] >= first[:, None], found[:, None]), p_i.dtype)
                return allowed, chosen                          # none found: the input is used up
            init = ops.ones_like(p[:, 0])
        else:                                                   # the expectation: α_i = p_i ∘ (L_i α_{i−1})
            passed = j[:, None] > j[None]                       # (S, S): key k comes before key j

            def step(previous, p_i):                            # previous (B, S): α of the step before
                kept = ops.pad(1 - p_i[:, :-1], [(0, 0), (1, 0)], constant_values=1.0)   # (B, S): 1 − p_i,j−1
                # L_i[j, k] = Π_{l=k}^{j−1} (1 − p_il) below the diagonal, 1 on it, 0 above: products only
                L = ops.where(ops.transpose(passed), 0.0, ops.cumprod(ops.where(passed, kept[:, :, None], 1.0), 1))
                row = p_i * ops.matmul(L, previous[..., None])[..., 0]                   # this step's α
                return row, row
            init = ops.one_hot(ops.zeros(ops.shape(p)[:1], "int32"), s, dtype=p.dtype)
        _, steps = ops.scan(step, init, ops.transpose(p, (1, 0, 2)))           # over the output steps: (T, B, S)
        weights = ops.transpose(steps, (1, 0, 2))                                  # (B, T, S)
        context = ops.matmul(weights, keys)                                        # (B, T, d_k)
        return (context, weights) if return_weights else context


class Speller(Model):
    """Spelling to sound with attention that can run online: a GRU reads the letters left to right (no backward
    pass, so a prefix's states do not depend on what follows), a GRU decoder from zeros reads the previous phonemes,
    and its states attend over the letters with ``MonotonicAttention`` (``attention="monotonic"``) or Chapter 4's
    additive attention (``"soft"``); logits from tanh(W_c [s_i; c_i]). src (B, S) letter ids right-padded with 0,
    tgt_in (B, T) phoneme ids → logits (B, T, V) [, weights (B, T, S)]; ``hard`` decodes monotonic attention
    online."""

    def __init__(self, src_vocab: int, tgt_vocab: int, embed: int = 32, hidden: int = 64,
                 attention: str = "monotonic", **kwargs):
        super().__init__(**kwargs)
        src_vocab, tgt_vocab, embed, hidden = validate.sizes(src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed=embed,
                                                             hidden=hidden)
        validate.choice("attention", attention, ("monotonic", "soft"))
        self.kind = attention
        self.letters = embedding(src_vocab, embed)                                  # N(0, 1), as PyTorch's
        self.encoder = _gru(hidden, return_sequences=True)                         # starts as nn.GRU
        self.phonemes = embedding(tgt_vocab, embed)
        self.decoder = _gru(hidden, return_sequences=True)
        self.attention = (MonotonicAttention(hidden, hidden, hidden) if attention == "monotonic"
                          else ScoredAttention("additive", hidden, hidden, hidden))
        self.W_c = torch_dense(hidden, 2 * hidden, activation="tanh")
        self.out = torch_dense(tgt_vocab, hidden)

    def call(self, src, tgt_in, hard: bool = False, return_weights: bool = False, training=False):
        src = inputs.ids(src, "src", self.letters)
        tgt_in = inputs.ids(tgt_in, "tgt_in", self.phonemes)
        validate.same_batch(src=validate.shape_of(src), tgt_in=validate.shape_of(tgt_in))
        mask = src != 0
        h = self.encoder(self.letters(src))                                        # (B, S, H), left to right
        s = self.decoder(self.phonemes(tgt_in))                                    # (B, T, H)
        if self.kind == "monotonic":
            c, a = self.attention(s, h, mask, hard=hard, return_weights=True, training=training)
        else:
            c, a = self.attention(s, h, h, mask, return_weights=True)
        logits = self.out(self.W_c(ops.concatenate([s, c], axis=-1)))             # (B, T, V)
        return (logits, a) if return_weights else logits
