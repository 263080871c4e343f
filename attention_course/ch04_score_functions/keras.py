"""Chapter 4 score functions (keras). Same names and signatures in both frameworks.

A score function says how well a query matches each key: ``score(query, key) -> scores`` with
query (B, T_q, d_q), key (B, T_k, d_k) → scores (B, T_q, T_k). ``ScoredAttention`` turns the scores into
weights with the masked softmax and averages the values.

The learned scores are built from bias-free ``Dense`` sub-layers named after the symbols of the papers
(``W_a``, ``U_a``, ``v_a``), so ``attention_course.core.parity.torch_to_keras`` copies the PyTorch twins' weights in.
Inputs: tensors or NumPy arrays (float arrays as float32); a mask bool or 0/1 (see ``inputs``).
"""

from __future__ import annotations

import math

from keras import layers, ops

from attention_course.ch01_sequence_models.keras import Seq2Seq, masked_softmax
from attention_course.ch04_score_functions import validate
from attention_course.core.choices import SCORES, score_layer
from attention_course.core.keras import inputs
from attention_course.core.keras.base import BuildOnCall, Dense, Layer

__all__ = ["ScoreFunction", "DotScore", "ScaledDotScore", "GeneralScore", "concat_pairs", "ConcatScore",
           "AdditiveScore", "LinearConcatScore", "make_score", "ScoredAttention", "ScoredSeq2Seq", "SCORES"]



class ScoreFunction(BuildOnCall, Layer):
    """A score layer: ``call(query, key)``; masks go to the softmax (``ScoredAttention``). Its Dense sub-layers
    build on their first call. A new score subclasses it and defines ``call``."""

    def call(self, query, key):
        raise validate.no_score(type(self).__name__, "call")


class DotScore(ScoreFunction):
    """score(q, k) = qᵀk (Luong's "dot"). query (B, T_q, d), key (B, T_k, d) → (B, T_q, T_k)."""

    def call(self, query, key):
        query, key = inputs.pair(query, key, wide=True)            # float32 tensors
        validate.score_shapes(self, query, key)
        return ops.matmul(query, ops.transpose(key, (0, 2, 1)))    # (B, T_q, T_k)


class ScaledDotScore(ScoreFunction):
    """score(q, k) = qᵀk / √d (the Transformer's). query (B, T_q, d), key (B, T_k, d) → (B, T_q, T_k)."""

    def call(self, query, key):
        query, key = inputs.pair(query, key, wide=True)            # float32 tensors
        validate.score_shapes(self, query, key)
        return ops.matmul(query, ops.transpose(key, (0, 2, 1))) / math.sqrt(query.shape[-1])


class GeneralScore(ScoreFunction):
    """score(q, k) = qᵀ W_a k (Luong's "general", a bilinear form). W_a maps a key into query space:
    the kernel of ``W_a`` is the transpose of the (d_query, d_key) matrix of the formula."""

    def __init__(self, d_query: int, d_key: int, **kwargs):
        super().__init__(**kwargs)
        self.d_query, self.d_key = validate.sizes(d_query=d_query, d_key=d_key)   # whole numbers >= 1
        self.W_a = layers.Dense(d_query, use_bias=False)

    def call(self, query, key):
        query, key = inputs.pair(query, key, wide=True)            # float32 tensors
        validate.score_shapes(self, query, key)
        return ops.matmul(query, ops.transpose(self.W_a(key), (0, 2, 1)))  # (B, T_q, d_q) @ (B, d_q, T_k)

    def get_config(self):
        return {**super().get_config(), "d_query": self.d_query, "d_key": self.d_key}


def concat_pairs(query, key):
    """Every (query, key) pair side by side: query (B, T_q, d_q), key (B, T_k, d_k) → (B, T_q, T_k, d_q + d_k)."""
    validate.same_batch(query=validate.shape_of(query), key=validate.shape_of(key))
    t_q, t_k = ops.shape(query)[1], ops.shape(key)[1]
    q = ops.repeat(ops.expand_dims(query, 2), t_k, axis=2)           # (B, T_q, T_k, d_q)
    k = ops.repeat(ops.expand_dims(key, 1), t_q, axis=1)             # (B, T_q, T_k, d_k)
    return ops.concatenate([q, k], axis=-1)


class ConcatScore(ScoreFunction):
    """score(q, k) = v_aᵀ tanh(W_a [q; k]) (Luong's "concat"). Built literally: every (query, key) pair is
    concatenated into a (B, T_q, T_k, d_q + d_k) tensor before the projection."""

    def __init__(self, d_query: int, d_key: int, units: int, **kwargs):
        super().__init__(**kwargs)
        self.d_query, self.d_key, self.units = validate.sizes(d_query=d_query, d_key=d_key, units=units)
        self.W_a = Dense(units, use_bias=False)                      # one 2-D product each (see AdditiveScore)
        self.v_a = Dense(1, use_bias=False)

    def call(self, query, key):
        query, key = inputs.pair(query, key, wide=True)            # float32 tensors
        validate.score_shapes(self, query, key)
        pairs = concat_pairs(query, key)                             # (B, T_q, T_k, d_q + d_k)
        return ops.squeeze(self.v_a(ops.tanh(self.W_a(pairs))), -1)  # (B, T_q, T_k)

    def get_config(self):
        return {**super().get_config(), "d_query": self.d_query, "d_key": self.d_key, "units": self.units}


class AdditiveScore(ScoreFunction):
    """score(q, k) = v_aᵀ tanh(W_a q + U_a k) (Bahdanau's). The same function family as ``ConcatScore``
    (W_a [q; k] = W q + U k), computed by projecting queries and keys once and broadcasting the sum."""

    def __init__(self, d_query: int, d_key: int, units: int, **kwargs):
        super().__init__(**kwargs)
        self.d_query, self.d_key, self.units = validate.sizes(d_query=d_query, d_key=d_key, units=units)
        self.W_a = layers.Dense(units, use_bias=False)
        self.U_a = layers.Dense(units, use_bias=False)
        # core.keras.base.Dense: Keras' Dense as one 2-D product; TensorFlow 2.20's batched product for a decoding
        # step's (B, 1, T_k, u) @ (u, 1) corrupts memory and kills the kernel
        self.v_a = Dense(1, use_bias=False)

    def call(self, query, key):
        query, key = inputs.pair(query, key, wide=True)            # float32 tensors
        validate.score_shapes(self, query, key)
        hidden = ops.expand_dims(self.W_a(query), 2) + ops.expand_dims(self.U_a(key), 1)  # (B, T_q, T_k, units)
        return ops.squeeze(self.v_a(ops.tanh(hidden)), -1)         # (B, T_q, T_k)

    def get_config(self):
        return {**super().get_config(), "d_query": self.d_query, "d_key": self.d_key, "units": self.units}


class LinearConcatScore(ScoreFunction):
    """score(q, k) = W_a [q; k] (the NLP-lab slides' "concat": a linear map of the pair, no tanh, no v_a).
    The kernel of ``W_a`` is the (d_query + d_key, 1) column of the formula. Since W_a [q; k] = w_q·q + w_k·k,
    the query adds the same number to every key's score: the softmax over the keys never sees it."""

    def __init__(self, d_query: int, d_key: int, **kwargs):
        super().__init__(**kwargs)
        self.d_query, self.d_key = validate.sizes(d_query=d_query, d_key=d_key)   # whole numbers >= 1
        self.W_a = Dense(1, use_bias=False)                          # one 2-D product (see AdditiveScore)

    def call(self, query, key):
        query, key = inputs.pair(query, key, wide=True)            # float32 tensors
        validate.score_shapes(self, query, key)
        pairs = concat_pairs(query, key)                             # (B, T_q, T_k, d_q + d_k)
        return ops.squeeze(self.W_a(pairs), -1)                      # (B, T_q, T_k)

    def get_config(self):
        return {**super().get_config(), "d_query": self.d_query, "d_key": self.d_key}


def make_score(score: str, d_query: int | None = None, d_key: int | None = None, units: int | None = None):
    """The score layer called ``score`` (one of ``SCORES``). Learned scores need ``d_query``; ``d_key``
    defaults to ``d_query`` and ``units`` to ``d_query`` (``attention_course.core.choices.score_layer``)."""
    name, sizes = score_layer(score, d_query, d_key, units)
    return globals()[name](*sizes)


class ScoredAttention(BuildOnCall, Layer):
    """Attention with a choice of score: scores → masked softmax over the keys → weighted sum of the values.

    ``score`` is one of ``SCORES``; the learned ones ("general", "concat", "additive") need ``d_query``
    (``d_key`` and ``units`` default to it), and then query and key may have different sizes.
    """

    def __init__(self, score: str = "dot", d_query: int | None = None, d_key: int | None = None,
                 units: int | None = None, **kwargs):
        super().__init__(**kwargs)
        self.score_name = score
        self.sizes = {"d_query": d_query, "d_key": d_key, "units": units}
        self.score = make_score(score, d_query, d_key, units)


    def call(self, query, key, value, mask=None, return_weights: bool = False):
        # query (B, T_q, d_q), key (B, T_k, d_k), value (B, T_k, d_v), mask (B, T_k) or (B, T_q, T_k)
        query, key, value, mask = inputs.attention(query, key, value, mask, same_d=False, wide=True)   # float32
        inputs.finite_visible(query, key, mask)                    # a NaN or inf there: a row of NaN or zeros
        validate.score_shapes(self.score, query, key, value, mask)
        scores = self.score(query, key)                            # (B, T_q, T_k)
        weights = masked_softmax(scores, mask)                     # rows sum to 1 over the visible keys
        context = ops.matmul(weights, inputs.hide(value, mask))    # (B, T_q, d_v); hidden rows zeroed
        return (context, weights) if return_weights else context

    def get_config(self):
        return {**super().get_config(), "score": self.score_name, **self.sizes}


class ScoredSeq2Seq(Seq2Seq):
    """Chapter 1's encoder–decoder with attention, its scores computed by one of this chapter's score functions:
    ``score`` is one of "dot", "scaled_dot", "general", "concat", "additive" (``ScoredAttention``). Everything
    else is ``Seq2Seq``'s: the same sub-layers, calls and decoding.

    src (B, S) left-padded ids, tgt_in (B, T), src_mask (B, S) True on real tokens → logits (B, T, vocab).
    """

    def __init__(self, vocab: int, embed: int = 32, hidden: int = 64, score: str = "dot", **kwargs):
        self.score = score                               # read by make_attention, which Seq2Seq.__init__ calls
        super().__init__(vocab, embed, hidden, attention=True, **kwargs)

    def make_attention(self, hidden: int):
        return ScoredAttention(self.score, d_query=hidden, d_key=hidden, units=hidden)
