"""Exceptions with messages a learner can act on."""

from __future__ import annotations


class CourseError(Exception):
    """Base class of the course's own errors."""


class ShapeError(CourseError, ValueError):
    """Tensors whose shapes do not fit together; the message names the shapes."""


class ConfigError(CourseError, ValueError):
    """An unknown profile, framework or option."""


def shape_of(x) -> tuple:
    """The shape of an array or tensor of any framework as a plain tuple of ints (None if unknown)."""
    return tuple(None if d is None else int(d) for d in x.shape)


def check_attention_shapes(query, key, value, mask=None) -> None:
    """Raise :class:`ShapeError` unless query ``(B, T_q, d)``, key ``(B, T_k, d)``, value ``(B, T_k, d_v)``
    and mask (broadcastable to ``(B, T_q, T_k)``) fit together."""
    q, k, v = shape_of(query), shape_of(key), shape_of(value)
    if len(q) != 3 or len(k) != 3 or len(v) != 3:
        raise ShapeError(
            f"attention expects 3-D query (batch, T_q, d), key (batch, T_k, d) and value (batch, T_k, d_v); "
            f"got query {q}, key {k}, value {v}"
        )
    if q[-1] != k[-1]:
        raise ShapeError(f"query and key must share their last size d: query {q} has d={q[-1]}, key {k} has d={k[-1]}")
    if k[1] != v[1]:
        raise ShapeError(f"key and value must have the same number of positions T_k: key {k}, value {v}")
    if q[0] != k[0] or k[0] != v[0]:
        raise ShapeError(f"query, key and value must share the batch size: query {q}, key {k}, value {v}")
    if mask is not None:
        m = shape_of(mask)
        expected = (q[0], q[1], k[1])
        if len(m) == 2:
            ok = m == (q[0], k[1])
            hint = f"a 2-D key mask must be (batch, T_k) = {(q[0], k[1])}"
        elif len(m) == 3:
            ok = all(a in (1, b) for a, b in zip(m, expected, strict=True))
            hint = f"a 3-D mask must broadcast to (batch, T_q, T_k) = {expected}"
        else:
            ok, hint = False, "a mask must be 2-D (batch, T_k) or 3-D (batch, T_q, T_k)"
        if not ok:
            raise ShapeError(f"mask of shape {m} does not fit query {q} and key {k}: {hint}")
