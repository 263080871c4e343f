"""Exercise checkers: run a learner's function on fresh random inputs against the reference, and when the
answer is wrong, name the likely mistake by comparing with the answers that common mistakes produce.

Learners' functions take and return NumPy arrays, so the checks work whichever framework is on. Every checker
runs them through :func:`._run.call`: a time limit, and their errors reported with the inputs' shapes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attention_course.core.grading import ExerciseError, call, softmax, start

__all__ = ["ExerciseError", "attention_average", "masked_softmax", "reference_attention", "reference_masked_softmax"]


def reference_masked_softmax(scores: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Softmax over the last axis; masked keys get 0; a fully masked row gets all zeros."""
    if mask is None:
        return softmax(scores)
    mask = np.broadcast_to(mask[:, None, :] if mask.ndim == 2 else mask, scores.shape)
    filled = np.where(mask, scores, np.finfo(scores.dtype).min)
    return softmax(filled) * mask


def reference_attention(query, key, value, mask=None, scale: bool = False):
    """(context (B, T_q, d_v), weights (B, T_q, T_k)) of dot-product attention, in NumPy."""
    scores = query @ key.transpose(0, 2, 1)
    if scale:
        scores = scores / np.sqrt(query.shape[-1])
    weights = reference_masked_softmax(scores, mask)
    return weights @ value, weights


def _close(a, b) -> bool:
    a = np.asarray(a, dtype=np.float64)
    return a.shape == np.shape(b) and bool(np.allclose(a, b, rtol=1e-4, atol=1e-5))


NAN = ("the result contains NaN: something computed 0/0, inf − inf or 0 × inf (an exponential of a large score "
       "overflows to inf: subtract each row's maximum before exp)")


def _diagnose(got, candidates: dict[str, np.ndarray], nan: str = NAN) -> str:
    """Which common mistake ``got`` matches; ``nan``: what a NaN in it means in this exercise."""
    got = np.asarray(got)
    if got.dtype.kind == "f" and np.isnan(got).any():
        return nan
    for mistake, answer in candidates.items():
        if _close(got, answer):
            return mistake
    return "it differs from the reference in a way none of the common mistakes explains"


def _pass(name: str, trials: int) -> None:
    print(f"✓ {name}: correct on {trials} random inputs")


def _inputs(rng, b=None, tq=None, tk=None, d=None, dv=None):
    b, tq, tk = b or rng.integers(1, 4), tq or rng.integers(1, 6), tk or rng.integers(2, 7)
    d, dv = d or rng.integers(2, 9), dv or rng.integers(1, 6)
    return (rng.normal(size=(b, tq, d)), rng.normal(size=(b, tk, d)), rng.normal(size=(b, tk, dv)))


def attention_average(fn: Callable, *, scale: bool = False, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(query, key, value) -> (context, weights)``: dot-product attention without a mask.

    query (B, T_q, d), key (B, T_k, d), value (B, T_k, d_v) → context (B, T_q, d_v), weights (B, T_q, T_k).
    """
    rng = start(fn, trials, seed)
    for _ in range(trials):
        q, k, v = _inputs(rng)
        out = call(fn, {"query": q, "key": k, "value": v})
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ExerciseError("return a pair (context, weights)")
        context, weights = (np.asarray(o) for o in out)
        ref_c, ref_w = reference_attention(q, k, v, scale=scale)
        raw = q @ k.transpose(0, 2, 1)
        s = raw / np.sqrt(q.shape[-1]) if scale else raw
        wrong_w = {
            "softmax over the wrong axis: the weights must sum to 1 over the keys (last axis), "
            "not over the queries": softmax(s, axis=1),
            "missing scale: divide the scores by √d before the softmax": softmax(raw),
            "the scores were scaled by √d, but this exercise asks for the plain dot product":
                softmax(raw / np.sqrt(q.shape[-1])),
            "no softmax: the weights are the raw scores": s,
            "the weights are normalised by their sum without the exponential": s / s.sum(-1, keepdims=True),
        }
        if not _close(weights, ref_w):
            if weights.shape != ref_w.shape:
                raise ExerciseError(f"weights have shape {weights.shape}; expected (B, T_q, T_k) = {ref_w.shape}")
            raise ExerciseError(f"weights are wrong: {_diagnose(weights, wrong_w)}")
        wrong_c = {"the context averages the keys; it must average the values": ref_w @ k
                   if k.shape[-1] == v.shape[-1] else np.zeros(0)}
        if not _close(context, ref_c):
            if context.shape != ref_c.shape:
                raise ExerciseError(f"context has shape {context.shape}; expected (B, T_q, d_v) = {ref_c.shape}")
            raise ExerciseError(f"context is wrong: {_diagnose(context, wrong_c)}")
    _pass("attention average", trials)


def masked_softmax(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(scores, mask) -> weights``: scores (B, T_q, T_k), mask (B, T_k) bool, True = attend.

    Masked keys must get exactly 0, each row with a visible key must sum to 1, and a fully masked row
    must give zeros (no NaN).
    """
    rng = start(fn, trials, seed)
    for trial in range(trials):
        b, tq, tk = rng.integers(2, 4), rng.integers(2, 5), rng.integers(3, 7)
        scores = rng.normal(size=(b, tq, tk)) * 3
        mask = rng.random((b, tk)) > 0.4
        mask[0] = False                               # one fully masked example in every trial
        mask[1, 0] = True                             # and one with at least a visible key
        got = np.asarray(call(fn, {"scores": scores, "mask": mask}))
        ref = reference_masked_softmax(scores, mask)
        if _close(got, ref):
            continue
        if got.shape != ref.shape:
            raise ExerciseError(f"weights have shape {got.shape}; expected (B, T_q, T_k) = {ref.shape}")
        m3 = mask[:, None, :]
        after = softmax(scores) * m3
        wrong = {
            "the mask is not applied": softmax(scores),
            "the mask is broadcast over the queries instead of the keys: a (B, T_k) mask must become "
            "(B, 1, T_k)": reference_masked_softmax(scores, np.broadcast_to(mask[:, :tq, None], scores.shape))
            if tq <= tk else np.zeros(0),
            "the mask is inverted: True means 'may attend'": reference_masked_softmax(scores, ~mask),
            "masked after the softmax without renormalising: the visible weights no longer sum to 1": after,
            "the masked scores were set to a finite value like -1e9 but a fully masked row then gets a "
            "uniform distribution instead of zeros": softmax(np.where(m3, scores, -1e9)),
        }
        nan = NAN
        if got.dtype.kind == "f" and np.isnan(got).any() and not np.isnan(got[1:]).any():
            nan = "the result contains NaN where every key is masked: such a row must give zeros, not 0/0"
        raise ExerciseError(f"wrong on trial {trial + 1}: {_diagnose(got, wrong, nan)}")
    _pass("masked softmax", trials)
