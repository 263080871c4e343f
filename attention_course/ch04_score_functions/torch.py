"""Chapter 4 score functions (torch). Same names and signatures in both frameworks.

A score function says how well a query matches each key: ``score(query, key) -> scores`` with
query (B, T_q, d_q), key (B, T_k, d_k) → scores (B, T_q, T_k). ``ScoredAttention`` turns the scores into
weights with the masked softmax and averages the values.

The learned scores are built from bias-free ``nn.Linear`` sub-layers named after the symbols of the papers
(``W_a``, ``U_a``, ``v_a``), so ``attention_course.core.parity.torch_to_keras`` copies them into the Keras twins.
Inputs: tensors or NumPy arrays (float arrays as float32); a mask bool or 0/1 (see ``inputs``).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attention_course.ch01_sequence_models.torch import Seq2Seq, masked_softmax
from attention_course.ch04_score_functions import validate
from attention_course.core.choices import SCORES, score_layer
from attention_course.core.torch import inputs

__all__ = ["ScoreFunction", "DotScore", "ScaledDotScore", "GeneralScore", "concat_pairs", "ConcatScore",
           "AdditiveScore", "LinearConcatScore", "make_score", "ScoredAttention", "ScoredSeq2Seq", "SCORES"]



class ScoreFunction(nn.Module):
    """A score module: ``forward(query, key) -> scores``. A new score subclasses it and defines ``forward``."""

    def __init__(self):
        super().__init__()

    def forward(self, query, key):
        raise validate.no_score(type(self).__name__, "forward")


class DotScore(ScoreFunction):
    """score(q, k) = qᵀk (Luong's "dot"). query (B, T_q, d), key (B, T_k, d) → (B, T_q, T_k)."""

    def forward(self, query, key):
        query, key = inputs.pair(query, key)                       # float tensors
        validate.score_shapes(self, query, key)
        return query @ key.transpose(1, 2)                         # (B, T_q, T_k)


class ScaledDotScore(ScoreFunction):
    """score(q, k) = qᵀk / √d (the Transformer's). query (B, T_q, d), key (B, T_k, d) → (B, T_q, T_k)."""

    def forward(self, query, key):
        query, key = inputs.pair(query, key)                       # float tensors
        validate.score_shapes(self, query, key)
        return query @ key.transpose(1, 2) / math.sqrt(query.shape[-1])


class GeneralScore(ScoreFunction):
    """score(q, k) = qᵀ W_a k (Luong's "general", a bilinear form). W_a maps a key into query space:
    ``W_a.weight`` is the (d_query, d_key) matrix of the formula."""

    def __init__(self, d_query: int, d_key: int):
        super().__init__()
        self.d_query, self.d_key = validate.sizes(d_query=d_query, d_key=d_key)   # whole numbers >= 1
        self.W_a = nn.Linear(d_key, d_query, bias=False)

    def forward(self, query, key):
        query, key = inputs.pair(query, key)                       # float tensors
        validate.score_shapes(self, query, key)
        return query @ self.W_a(key).transpose(1, 2)                # (B, T_q, d_q) @ (B, d_q, T_k)


def concat_pairs(query, key):
    """Every (query, key) pair side by side: query (B, T_q, d_q), key (B, T_k, d_k) → (B, T_q, T_k, d_q + d_k)."""
    validate.same_batch(query=validate.shape_of(query), key=validate.shape_of(key))
    (b, t_q, _), t_k = query.shape, key.shape[1]
    return torch.cat([query[:, :, None, :].expand(b, t_q, t_k, -1),
                      key[:, None, :, :].expand(b, t_q, t_k, -1)], dim=-1)


class ConcatScore(ScoreFunction):
    """score(q, k) = v_aᵀ tanh(W_a [q; k]) (Luong's "concat"). Built literally: every (query, key) pair is
    concatenated into a (B, T_q, T_k, d_q + d_k) tensor before the projection."""

    def __init__(self, d_query: int, d_key: int, units: int):
        super().__init__()
        self.d_query, self.d_key, self.units = validate.sizes(d_query=d_query, d_key=d_key, units=units)
        self.W_a = nn.Linear(d_query + d_key, units, bias=False)
        self.v_a = nn.Linear(units, 1, bias=False)

    def forward(self, query, key):
        query, key = inputs.pair(query, key)                       # float tensors
        validate.score_shapes(self, query, key)
        pairs = concat_pairs(query, key)                            # (B, T_q, T_k, d_q + d_k)
        return self.v_a(torch.tanh(self.W_a(pairs)))[..., 0]        # (B, T_q, T_k)


class AdditiveScore(ScoreFunction):
    """score(q, k) = v_aᵀ tanh(W_a q + U_a k) (Bahdanau's). The same function family as ``ConcatScore``
    (W_a [q; k] = W q + U k), computed by projecting queries and keys once and broadcasting the sum."""

    def __init__(self, d_query: int, d_key: int, units: int):
        super().__init__()
        self.d_query, self.d_key, self.units = validate.sizes(d_query=d_query, d_key=d_key, units=units)
        self.W_a = nn.Linear(d_query, units, bias=False)
        self.U_a = nn.Linear(d_key, units, bias=False)
        self.v_a = nn.Linear(units, 1, bias=False)

    def forward(self, query, key):
        query, key = inputs.pair(query, key)                       # float tensors
        validate.score_shapes(self, query, key)
        hidden = self.W_a(query)[:, :, None, :] + self.U_a(key)[:, None, :, :]  # (B, T_q, T_k, units)
        return self.v_a(torch.tanh(hidden))[..., 0]                 # (B, T_q, T_k)


class LinearConcatScore(ScoreFunction):
    """score(q, k) = W_a [q; k] (the NLP-lab slides' "concat": a linear map of the pair, no tanh, no v_a).
    ``W_a.weight`` is the (1, d_query + d_key) row of the formula. Since W_a [q; k] = w_q·q + w_k·k, the
    query adds the same number to every key's score: the softmax over the keys never sees it."""

    def __init__(self, d_query: int, d_key: int):
        super().__init__()
        self.d_query, self.d_key = validate.sizes(d_query=d_query, d_key=d_key)   # whole numbers >= 1
        self.W_a = nn.Linear(self.d_query + self.d_key, 1, bias=False)

    def forward(self, query, key):
        query, key = inputs.pair(query, key)                       # float tensors
        validate.score_shapes(self, query, key)
        pairs = concat_pairs(query, key)                            # (B, T_q, T_k, d_q + d_k)
        return self.W_a(pairs)[..., 0]                              # (B, T_q, T_k)


def make_score(score: str, d_query: int | None = None, d_key: int | None = None, units: int | None = None):
    """The score module called ``score`` (one of ``SCORES``). Learned scores need ``d_query``; ``d_key``
    defaults to ``d_query`` and ``units`` to ``d_query`` (``attention_course.core.choices.score_layer``)."""
    name, sizes = score_layer(score, d_query, d_key, units)
    return globals()[name](*sizes)


class ScoredAttention(nn.Module):
    """Attention with a choice of score: scores → masked softmax over the keys → weighted sum of the values.

    ``score`` is one of ``SCORES``; the learned ones ("general", "concat", "additive") need ``d_query``
    (``d_key`` and ``units`` default to it), and then query and key may have different sizes.
    """

    def __init__(self, score: str = "dot", d_query: int | None = None, d_key: int | None = None,
                 units: int | None = None):
        super().__init__()
        self.score_name = score
        self.score = make_score(score, d_query, d_key, units)

    def forward(self, query, key, value, mask=None, return_weights: bool = False):
        # query (B, T_q, d_q), key (B, T_k, d_k), value (B, T_k, d_v), mask (B, T_k) or (B, T_q, T_k)
        query, key, value, mask = inputs.attention(query, key, value, mask, same_d=False)   # floats, bool mask
        inputs.finite_visible(query, key, mask)                    # a NaN or inf there: a row of NaN or zeros
        validate.score_shapes(self.score, query, key, value, mask)
        scores = self.score(query, key)                            # (B, T_q, T_k)
        weights = masked_softmax(scores, mask)                     # rows sum to 1 over the visible keys
        context = weights @ inputs.hide(value, mask)               # (B, T_q, d_v); hidden rows zeroed
        return (context, weights) if return_weights else context


class ScoredSeq2Seq(Seq2Seq):
    """Chapter 1's encoder–decoder with attention, its scores computed by one of this chapter's score functions:
    ``score`` is one of "dot", "scaled_dot", "general", "concat", "additive" (``ScoredAttention``). Everything
    else is ``Seq2Seq``'s: the same sub-layers, calls and decoding.

    src (B, S) left-padded ids, tgt_in (B, T), src_mask (B, S) True on real tokens → logits (B, T, vocab).
    """

    def __init__(self, vocab: int, embed: int = 32, hidden: int = 64, score: str = "dot"):
        self.score = score                               # read by make_attention, which Seq2Seq.__init__ calls
        super().__init__(vocab, embed, hidden, attention=True)

    def make_attention(self, hidden: int):
        return ScoredAttention(self.score, d_query=hidden, d_key=hidden, units=hidden)
