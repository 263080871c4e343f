"""Exercise checkers of Chapter 7 (self-attention and multi-head attention), in NumPy.

``heads``: ``split(x, heads)`` (B, T, h·d_head) → (B, h, T, d_head), head i holding features i·d_head … (i+1)·d_head
− 1, and, when given, ``merge(x)``, its inverse.

``causal``: ``fn(t_q, t_k)`` → (T_q, T_k) bool, True where query i may see key j, the queries being the last T_q
positions: j ≤ i + T_k − T_q.

``rotary``: ``fn(x, base)`` with x (T, d), d even → the same shape, each pair of features (2i, 2i+1) of position p
rotated by the angle p · base^(−2i/d) (RoPE, Su et al.).

``multi_head``: ``fn(x, W_q, W_k, W_v, W_o, heads, causal)`` → (B, T, d_model), multi-head self-attention with
bias-free projections, the scores of each head scaled by √d_head.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attention_course.ch01_sequence_models.exercises import _close, _diagnose, _pass
from attention_course.core.grading import ExerciseError, call, softmax, start

__all__ = ["heads", "causal", "rotary", "multi_head"]


def _split(x, h):
    b, t, d = x.shape
    return x.reshape(b, t, h, d // h).transpose(0, 2, 1, 3)


def _merge(x):
    b, h, t, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)


def heads(split: Callable, merge: Callable | None = None, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``split(x, heads) -> (B, h, T, d_head)`` and, when given, ``merge(x) -> (B, T, h·d_head)``."""
    rng = start(split, trials, seed)
    if merge is not None:
        start(merge, trials, seed)
    for _ in range(trials):
        b, t, h, d_head = (int(v) for v in rng.integers(2, 6, size=4))
        x = rng.normal(size=(b, t, h * d_head))
        got = np.asarray(call(split, {"x": x, "heads": h}))
        want = _split(x, h)
        if got.shape != want.shape:
            raise ExerciseError(f"split: x of shape {x.shape} with heads={h} must give (B, h, T, d_head) = "
                                f"{want.shape}; got {got.shape}")
        if not _close(got, want):
            raise ExerciseError("split: " + _diagnose(got, {
                "heads split along the wrong axis: reshaping (B, T, d) straight to (B, h, T, d_head) mixes "
                "positions into heads; reshape to (B, T, h, d_head), then swap axes 1 and 2": x.reshape(want.shape),
                "the features of a head are interleaved (every h-th feature): reshape to (B, T, h, d_head), not "
                "(B, T, d_head, h)": x.reshape(b, t, d_head, h).transpose(0, 3, 1, 2),
            }))
        if merge is None:
            continue
        back = np.asarray(call(merge, {"x": want}))
        if back.shape != x.shape:
            raise ExerciseError(f"merge: x of shape {want.shape} must give (B, T, h·d_head) = {x.shape}; "
                                f"got {back.shape}")
        if not _close(back, x):
            raise ExerciseError("merge: " + _diagnose(back, {
                "the heads are not moved back next to each other: swap axes 1 and 2 before reshaping to "
                "(B, T, h·d_head)": want.reshape(x.shape),
            }))
    _pass("split heads" if merge is None else "split and merge heads", trials)


def causal(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(t_q, t_k) -> (T_q, T_k) bool``, the causal mask."""
    rng = start(fn, trials, seed)
    for trial in range(trials):
        t_k = int(rng.integers(3, 9))
        t_q = t_k if trial % 2 == 0 else int(rng.integers(1, t_k - 1))     # T_k - T_q >= 2: mistakes stay apart
        got = np.asarray(call(fn, {"t_q": t_q, "t_k": t_k}))
        want = np.tri(t_q, t_k, t_k - t_q, dtype=bool)
        if got.shape != want.shape:
            raise ExerciseError(f"with t_q={t_q}, t_k={t_k} the mask must have shape (T_q, T_k) = {want.shape}; "
                                f"got {got.shape}")
        if got.dtype != bool:
            raise ExerciseError(f"return a bool mask (True where a key may be seen); got dtype {got.dtype}")
        if not np.array_equal(got, want):
            candidates = {
                "the mask lets a position see the future: keep keys j <= i (the lower triangle)": ~np.tri(
                    t_q, t_k, t_k - t_q - 1, dtype=bool),
                "a position must see itself: the diagonal belongs to the mask (j <= i, not j < i)": np.tri(
                    t_q, t_k, t_k - t_q - 1, dtype=bool),
                "the mask is inverted: True marks the keys a query may see": ~want,
                "the queries are the last T_q positions: shift the triangle by T_k - T_q": np.tri(t_q, t_k,
                                                                                                   dtype=bool),
            }
            raise ExerciseError(next((m for m, c in candidates.items() if np.array_equal(got, c)),
                                     f"with t_q={t_q}, t_k={t_k} the mask differs from j <= i + T_k - T_q in a way "
                                     "none of the common mistakes explains"))
    _pass("causal mask", trials)


def _rope(x, base, positions=None, pairs="adjacent", rate_power=2.0, sign=1.0):
    t, d = x.shape
    p = np.arange(t) if positions is None else positions
    angle = p[:, None] * base ** (-rate_power * np.arange(d // 2) / d)                # (T, d/2)
    cos, sin = np.cos(angle), sign * np.sin(angle)
    if pairs == "adjacent":
        a, b = x[:, 0::2], x[:, 1::2]
    else:                                                                             # (i, i + d/2)
        a, b = x[:, : d // 2], x[:, d // 2:]
    ra, rb = a * cos - b * sin, a * sin + b * cos
    out = np.empty_like(x)
    if pairs == "adjacent":
        out[:, 0::2], out[:, 1::2] = ra, rb
    else:
        out[:, : d // 2], out[:, d // 2:] = ra, rb
    return out


def rotary(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(x, base) -> rotated x``, rotary position embedding of x (T, d)."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        t, d = int(rng.integers(3, 9)), 2 * int(rng.integers(2, 6))
        base = float(rng.choice([100.0, 10000.0]))
        x = rng.normal(size=(t, d))
        got = np.asarray(call(fn, {"x": x, "base": base}))
        want = _rope(x, base)
        if got.shape != want.shape:
            raise ExerciseError(f"x of shape {x.shape} must keep its shape; got {got.shape}")
        if not _close(got, want):
            raise ExerciseError(_diagnose(got, {
                "RoPE rotates the wrong pairs: the paper pairs features 2i and 2i+1, not i and i + d/2":
                    _rope(x, base, pairs="halves"),
                "the frequencies are base^(-i/d); pair i turns at base^(-2i/d)": _rope(x, base, rate_power=1.0),
                "the rotation goes the wrong way: (a, b) -> (a cos - b sin, a sin + b cos)": _rope(x, base, sign=-1.0),
                "positions start at 0: the first position is not rotated": _rope(x, base,
                                                                                 positions=np.arange(1, t + 1)),
            }))
    _pass("rotary position embedding", trials)


def _split_wrong(y, h):
    b, t, d = y.shape
    return y.reshape(b, h, t, d // h)


def _mha(x, W_q, W_k, W_v, W_o, h, causal, scale=None, axis=-1, split=_split, out=True):
    q, k, v = (split(x @ w, h) for w in (W_q, W_k, W_v))                             # (B, h, T, d_head)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1] if scale is None else scale)
    if causal:
        scores = np.where(np.tri(x.shape[1], dtype=bool), scores, -np.inf)
    weights = softmax(scores) if axis == -1 else np.nan_to_num(np.exp(scores) / np.exp(scores).sum(-2, keepdims=True))
    merged = _merge(weights @ v)
    return merged @ W_o if out else merged


def multi_head(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(x, W_q, W_k, W_v, W_o, heads, causal) -> (B, T, d_model)``, multi-head self-attention."""
    rng = start(fn, trials, seed)
    for trial in range(trials):
        b, t, h, d_head = (int(v) for v in rng.integers(2, 5, size=4))
        d = h * d_head
        x = rng.normal(size=(b, t, d))
        W_q, W_k, W_v, W_o = (rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(4))
        is_causal = bool(trial % 2)
        args = {"x": x, "W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o, "heads": h, "causal": is_causal}
        got = np.asarray(call(fn, args))
        want = _mha(x, W_q, W_k, W_v, W_o, h, is_causal)
        if got.shape != want.shape:
            raise ExerciseError(f"x of shape {x.shape} must give (B, T, d_model) = {want.shape}; got {got.shape}")
        if not _close(got, want):
            raise ExerciseError(_diagnose(got, {
                "the scores are scaled by sqrt(d_model); each head's dot products have d_head terms, so divide by "
                "sqrt(d_head)": _mha(x, W_q, W_k, W_v, W_o, h, is_causal, scale=d),
                "the scores are not scaled: divide by sqrt(d_head)": _mha(x, W_q, W_k, W_v, W_o, h, is_causal,
                                                                          scale=1),
                "the softmax runs over the queries; it belongs over the keys (the last axis)": _mha(
                    x, W_q, W_k, W_v, W_o, h, is_causal, axis=-2),
                "heads split along the wrong axis (reshape to (B, T, h, d_head), then swap axes 1 and 2)": _mha(
                    x, W_q, W_k, W_v, W_o, h, is_causal, split=_split_wrong),
                "W_o is missing: the concatenated heads go through the output projection": _mha(
                    x, W_q, W_k, W_v, W_o, h, is_causal, out=False),
                "the causal mask is missing": _mha(x, W_q, W_k, W_v, W_o, h, False),
            }))
    _pass("multi-head self-attention", trials)
