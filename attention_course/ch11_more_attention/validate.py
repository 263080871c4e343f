"""Chapter 11's argument checks, beside the generic ones of :mod:`attention_course.core.validate`, which this module
re-exports: the chapter's code says ``validate.…`` for all of them."""

from __future__ import annotations

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
