"""Chapter 11's argument checks, beside the generic ones of :mod:`attention_course.core.validate`, which this module
re-exports: the chapter's code says ``validate.…`` for all of them."""

from __future__ import annotations

import numpy as np

from attention_course.core.errors import ConfigError, InputError, ShapeError
from attention_course.core.validate import *  # noqa: F403  (the generic checks)
from attention_course.core.validate import kind, shape_of


def pointer_inputs(encoded, decoded, mask=None) -> None:
    """The pointer's inputs: the encoder's states (B, N, e), the decoder's (B, T, d) for the same B, and a mask
    (B, N) of the real input positions."""
    e, d = shape_of(encoded), shape_of(decoded)
    m = None if mask is None else shape_of(mask)
    same = lambda a, b: None in (a, b) or a == b                          # None: unknown while traced
    if len(e) != 3 or len(d) != 3 or not same(e[0], d[0]) or (m is not None and (
            len(m) != 2 or not same(m[0], e[0]) or not same(m[1], e[1]))):
        raise ShapeError(f"a pointer takes the encoder's states (B, N, e), the decoder's (B, T, d) and a mask (B, N) "
                         f"of the real input positions; got encoded {e}, decoded {d}, mask {m}")


def previous_positions(dtype, shape, x_shape, features: int, low=None, high=None) -> None:
    """What a pointer network's decoder reads: the elements x (B, N, ``features``), and at each output step the
    position output at the step before, integers (B, T) in [0, N), −1 at the first step (the start vector).
    ``low``/``high``: the smallest and largest position given, when the values are known."""
    if len(x_shape) != 3 or (x_shape[2] is not None and x_shape[2] != features):
        raise ShapeError(f"x must be the input elements (B, N, {features}); got shape {tuple(x_shape)}")
    rule = (f"previous must be integers (B, T): the position output at each step before, in [0, {x_shape[1]}) for "
            f"x of shape {tuple(x_shape)}, and −1 at the first step")
    if kind(dtype) != "int" or len(shape) != 2 or None not in (shape[0], x_shape[0]) and shape[0] != x_shape[0]:
        raise InputError(f"{rule}; got a {dtype} array of shape {tuple(shape)}")
    if low is not None and (low < -1 or (x_shape[1] is not None and high >= x_shape[1])):
        raise InputError(f"{rule}; got positions from {low} to {high}")


def odd_width(width: int) -> None:
    """A convolution centred on each key spans as many keys before it as after: an odd width."""
    if width % 2 == 0:
        raise ConfigError(f"width={width}: the window is centred on each key, so it needs an odd width (1, 3, 5, …)")


def pooled_attention(query, keys, values, mask=None) -> None:
    """One query per example attending over its N keys: query (B, d_q), keys (B, N, d_k), values (B, N, d_v), mask
    (B, N)."""
    q, k, v = shape_of(query), shape_of(keys), shape_of(values)
    m = None if mask is None else shape_of(mask)
    same = lambda a, b: None in (a, b) or a == b                          # None: unknown while traced
    if len(q) != 2 or len(k) != 3 or len(v) != 3 or not (same(q[0], k[0]) and same(k[0], v[0]) and same(k[1], v[1])) \
            or (m is not None and (len(m) != 2 or not (same(m[0], k[0]) and same(m[1], k[1])))):
        raise ShapeError(f"attention from one query per example takes query (B, d_q), keys (B, N, d_k), values "
                         f"(B, N, d_v) and a mask (B, N); got query {q}, keys {k}, values {v}, mask {m}")


def some_elements(shortest: int) -> None:
    """Every list has at least one real element (its mask row is not all False)."""
    if shortest < 1:
        raise InputError("every row of mask needs at least one True: a list of no elements has nothing to point at")


def right_padded_documents(mask) -> None:
    """Word ids as the classifiers' GRUs read them, from the host mask of their words: (B, S, W), True at words,
    for documents of S sentences (or (B, N), one row of words per document). In each sentence its words come first,
    then pads; in each document its sentences with words first, then empty ones (PyTorch's packed GRUs read the
    first ``length`` steps of a row, Keras' masked ones the unmasked steps: only right-padded ids read alike)."""
    mask = np.asarray(mask, bool)
    rows = mask if mask.ndim == 3 else mask[:, None]
    rule = ("ids must be right-padded with 0: in each sentence its words first, then pads, and in each document its "
            "sentences with words first, then empty ones")
    hole = np.argwhere(rows[..., 1:] & ~rows[..., :-1])                  # a word right after a pad
    if len(hole):
        d, s = (int(i) for i in hole[0][:2])
        where = f"document {d}, sentence {s}" if mask.ndim == 3 else f"document {d}"
        raise InputError(f"{rule}; {where} has a pad before a word")
    words = rows.any(-1)
    gap = np.argwhere(words[:, 1:] & ~words[:, :-1])                     # an empty sentence before a full one
    if len(gap):
        d, s = (int(i) for i in gap[0])
        raise InputError(f"{rule}; in document {d}, sentence {s} has no word but a later one has")


def multi_source(query, keys, mask, sources: int) -> None:
    """Multi-source attention's inputs: queries (B, T, d_q), the ``sources`` sources' keys stacked (B, K, S, d_k)
    with K = ``sources``, and a mask (B, K, S) of their real positions."""
    q, k = shape_of(query), shape_of(keys)
    m = None if mask is None else shape_of(mask)
    same = lambda a, b: None in (a, b) or a == b                          # None: unknown while traced
    if len(q) != 3 or len(k) != 4 or not same(q[0], k[0]) or not same(k[1], sources) or (m is not None and (
            len(m) != 3 or not all(same(a, b) for a, b in zip(m, k[:3], strict=True)))):
        raise ShapeError(f"multi-source attention over {sources} sources takes queries (B, T, d_q), the sources' keys "
                         f"stacked (B, {sources}, S, d_k) and a mask (B, {sources}, S); got query {q}, keys {k}, "
                         f"mask {m}")


def source_count(shape, sources: int) -> None:
    """A multi-source model's input: ids (B, K, S) with K its number of sources."""
    if shape[1] is not None and shape[1] != sources:
        raise ShapeError(f"this model reads {sources} source(s): sources must be ids (B, {sources}, S), one row of S "
                         f"tokens per source; got shape {tuple(shape)}")


def copy_inputs(logits, weights, src_ext, extra: int) -> None:
    """The copy gate's inputs: the vocabulary's logits (B, T, V), the attention (B, T, S) and the source words' ids
    in the extended vocabulary (B, S) of V + ``extra`` words."""
    lo, w, ids = shape_of(logits), shape_of(weights), shape_of(src_ext)
    same = lambda a, b: None in (a, b) or a == b                          # None: unknown while traced
    if len(lo) != 3 or len(w) != 3 or len(ids) != 2 or not (same(lo[0], w[0]) and same(lo[1], w[1])
                                                            and same(w[0], ids[0]) and same(w[2], ids[1])):
        raise ShapeError(f"a copy gate takes the vocabulary's logits (B, T, V), the attention weights (B, T, S) and "
                         f"the source's ids in the extended vocabulary (B, S) of V + {extra} words; got logits "
                         f"{lo}, weights {w}, src_ext {ids}")


#: How far from 1 a row of the copy gate's attention may sum: float16's rounding of a softmax passes, scores or
#: weights left unnormalised do not.
ROW_TOLERANCE = 1e-2


def copy_weights(lowest: float, low: float, high: float) -> None:
    """The attention a copy gate mixes in: for each output step, weights >= 0 over the source positions that sum
    to 1 (within ``ROW_TOLERANCE``). ``lowest`` is the smallest weight, ``low`` and ``high`` the smallest and
    largest row sums (NaN fails)."""
    if not (lowest >= 0 and abs(low - 1) <= ROW_TOLERANCE and abs(high - 1) <= ROW_TOLERANCE):
        raise InputError(f"weights must be the attention over the source: at each step t, weights >= 0 over the S "
                         f"source positions that sum to 1 (within {ROW_TOLERANCE:g}), which the gate mixes with the "
                         f"vocabulary's distribution; got weights from {lowest:.4g} and rows summing to {low:.4g} … "
                         f"{high:.4g}: pass the attention's softmax, not its scores")


def gate_parts(logits, sizes: dict[str, int], **parts) -> None:
    """The copy gate's inputs to p_gen: ``parts`` (context, state, embedded), each (B, T, d) with the B and T of the
    logits (B, T, V) and the d of ``sizes`` (the gate's d_context, d_state, d_input)."""
    lo = shape_of(logits)
    for (name, part), d in zip(parts.items(), sizes.values(), strict=True):
        got = shape_of(part)
        if len(got) != 3 or any(None not in (a, b) and a != b for a, b in zip(got, (*lo[:2], d), strict=True)):
            raise ShapeError(f"the copy gate's {name} must be (B, T, {d}) for logits {lo}: p_gen reads the "
                             f"context, the decoder's state and its input at each step; got {name} {got}")


def extended_ids(name: str, dtype, shape, size: int, low=None, high=None) -> None:
    """Ids in the extended vocabulary of ``size`` words (the target vocabulary, then the copied source words):
    integers in [0, size)."""
    rule = (f"{name} must be integer ids in the extended vocabulary, [0, {size}): the target words, then one id "
            f"per source word the vocabulary lacks")
    if kind(dtype) != "int":
        raise InputError(f"{rule}; got a {dtype} tensor of shape {tuple(shape)}")
    if low is not None and (low < 0 or high >= size):
        raise InputError(f"{rule}; got ids from {low} to {high}")


def monotonic_inputs(query, keys, mask=None) -> None:
    """Monotonic attention's inputs: queries (B, T, d_q) scanning keys (B, S, d_k) in order, and a mask (B, S) of the
    real keys (right-padded)."""
    q, k = shape_of(query), shape_of(keys)
    m = None if mask is None else shape_of(mask)
    same = lambda a, b: None in (a, b) or a == b                          # None: unknown while traced
    if len(q) != 3 or len(k) != 3 or not same(q[0], k[0]) or (m is not None and (
            len(m) != 2 or not (same(m[0], k[0]) and same(m[1], k[1])))):
        raise ShapeError(f"monotonic attention takes queries (B, T, d_q), the keys it scans in order (B, S, d_k) and "
                         f"a mask (B, S) of the real keys; got query {q}, keys {k}, mask {m}")
