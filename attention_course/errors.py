"""Exceptions with messages a learner can act on."""

from __future__ import annotations


class CourseError(Exception):
    """Base class of the course's own errors."""

    # Keras re-raises an error that has this attribute as it is, without wrapping its message in "Exception
    # encountered when calling <layer>.call() … Arguments received by …": the same message in both frameworks.
    _keras_call_info_injected = True


class ShapeError(CourseError, ValueError):
    """Tensors whose shapes do not fit together; the message names the shapes."""


class ConfigError(CourseError, ValueError):
    """An unknown profile, framework or option."""


class InputError(CourseError, ValueError):
    """An input whose type, dtype or values a layer cannot take (a mask that is not 0/1, token ids outside the
    vocabulary, integer queries, every target ignored); the message names the argument, the rule and the values."""


def shape_of(x) -> tuple:
    """The shape of an array or tensor of any framework as a plain tuple of ints (None if unknown)."""
    return tuple(None if d is None else int(d) for d in x.shape)


def check_attention_shapes(query, key, value, mask=None, same_d: bool = True) -> None:
    """Raise :class:`ShapeError` unless query ``(B, T_q, d)``, key ``(B, T_k, d)``, value ``(B, T_k, d_v)``
    and mask (broadcastable to ``(B, T_q, T_k)``) fit together. ``same_d=False`` lets the query and key sizes
    differ (scores with learned matrices)."""
    q, k, v = shape_of(query), shape_of(key), shape_of(value)
    if len(q) != 3 or len(k) != 3 or len(v) != 3:
        raise ShapeError(
            f"attention expects 3-D query (batch, T_q, d), key (batch, T_k, d) and value (batch, T_k, d_v); "
            f"got query {q}, key {k}, value {v}"
        )
    if same_d and q[-1] != k[-1]:
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


def check_score_shapes(score, query, key, value=None, mask=None) -> None:
    """Shape errors for a score layer (either framework). Dot scores need d_q == d_k; learned scores
    (``score.d_query``/``score.d_key`` set) accept any pair of sizes, but only the ones they were built for."""
    learned = getattr(score, "d_query", None) is not None
    check_attention_shapes(query, key, key if value is None else value, mask, same_d=not learned)
    q, k = shape_of(query), shape_of(key)
    if learned and (q[-1] != score.d_query or k[-1] != score.d_key):
        raise ShapeError(f"{type(score).__name__} was built for d_query={score.d_query} and d_key={score.d_key}, "
                         f"but got query {q} (d_q={q[-1]}) and key {k} (d_k={k[-1]})")


def check_choice(what: str, value, options) -> None:
    """Raise :class:`ConfigError` unless ``value`` is one of ``options``; the message lists them."""
    if value not in options:
        raise ConfigError(f"unknown {what} {value!r}; choose one of: {', '.join(map(str, options))}")


def check_sequence_shapes(name: str, x, mask=None, features: int | None = None, steps: int | None = None,
                          mask_name: str = "mask") -> None:
    """Shape errors for a layer over a sequence ``x`` ``(B, T, d)`` with an optional ``mask`` ``(B, T)``:
    ``features`` is the d it was built for, ``steps`` the one length T it accepts (a T × T layer). ``mask_name``
    names the (B, T) companion in the message (e.g. "gates")."""
    s = shape_of(x)
    if len(s) != 3:
        raise ShapeError(f"{name} expects a 3-D input (batch, T, d); got {s}")
    if features is not None and s[2] != features:
        raise ShapeError(f"{name} was built for d={features} features, but got input {s} (d={s[2]})")
    if steps is not None and s[1] != steps:
        raise ShapeError(f"{name} was built for exactly T={steps} timesteps (its Dense is {steps}×{steps}), "
                         f"but got input {s} (T={s[1]}): pad or cut every sequence to {steps}")
    if mask is not None and shape_of(mask) != s[:2]:
        raise ShapeError(f"{name}: the {mask_name} must be (batch, T) = {s[:2]} to fit the input {s}; "
                         f"got {mask_name} {shape_of(mask)}")


class EnvError(ConfigError):
    """An environment variable of the course set to a value it cannot use; the message names the variable,
    what it expects and the value."""

    @classmethod
    def positive(cls, name: str, default: float, kind: type = int, what: str = ""):
        """The environment variable ``name`` as a positive ``int`` or ``float`` (``kind``); ``default`` when it
        is unset or empty. Raises this error for anything else (``"abc"``, ``"0"``, ``"-1"``, ``"inf"``)."""
        import math
        import os

        raw = os.environ.get(name, "").strip()
        if not raw:
            return default
        try:
            value = kind(raw)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or value <= 0:
            expected = "a positive integer" if kind is int else "a positive number"
            raise cls(f"{name} must be {expected}{f' ({what})' if what else ''}; got {name}={raw!r}")
        return value
