"""Exercise checker of Chapter 5 (translation): one attention step of Bahdanau's decoder, in NumPy.

s_prev (B, H) the decoder's previous state, h (B, S, D) the encoder states, mask (B, S) bool (True on real
tokens, at least one per row), W (H, u), U (D, u), v (u,) → context (B, D), alpha (B, S):
e_j = v · tanh(s_prev W + h_j U), alpha = softmax over the real source positions, context = Σ_j alpha_j h_j.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._run import ExerciseError, call, start
from .attention import _close, _diagnose, _pass

__all__ = ["bahdanau_attention"]


def _softmax(e, mask, axis=-1):
    e = np.where(mask, e, -np.inf)
    w = np.exp(e - e.max(axis, keepdims=True))
    return w / w.sum(axis, keepdims=True)


def _reference(s_prev, h, mask, W, U, v):
    e = np.tanh((s_prev @ W)[:, None] + h @ U) @ v                 # (B, S)
    alpha = _softmax(e, mask)
    return (alpha[:, :, None] * h).sum(1), alpha


def bahdanau_attention(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(s_prev, h, mask, W, U, v) -> (context, alpha)``, one step of Bahdanau's attention."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        b, s, hid, d, u = (int(x) for x in rng.integers(2, 5, size=5))
        s = s + 1                                                    # at least 3 source positions
        s_prev, h = rng.normal(size=(b, hid)), rng.normal(size=(b, s, d))
        mask = np.arange(s)[None] < rng.integers(1, s + 1, size=(b, 1))
        mask[0] = True                                              # one row without pads, the others with
        W, U, v = rng.normal(size=(hid, u)), rng.normal(size=(d, u)), rng.normal(size=u)
        inputs = {"s_prev": s_prev, "h": h, "mask": mask, "W": W, "U": U, "v": v}
        got = call(fn, inputs)
        if not isinstance(got, tuple) or len(got) != 2:
            raise ExerciseError("return a pair (context, alpha): context (B, D), alpha (B, S)")
        context, alpha = (np.asarray(x, dtype=np.float64) for x in got)
        ref_context, ref_alpha = _reference(s_prev, h, mask, W, U, v)
        if alpha.shape != ref_alpha.shape or context.shape != ref_context.shape:
            raise ExerciseError(f"alpha must have shape {ref_alpha.shape} (B, S) and context {ref_context.shape} "
                                f"(B, D); got {alpha.shape} and {context.shape}")
        if not _close(alpha, ref_alpha):
            e = np.tanh((s_prev @ W)[:, None] + h @ U) @ v
            raise ExerciseError("alpha: " + _diagnose(alpha, {
                "the mask is not applied: padded source positions get weight (they must get exactly 0)":
                    _softmax(e, np.ones_like(mask)),
                "the softmax runs over the batch axis; it belongs over the source positions (axis 1)":
                    _softmax(e, mask, axis=0) if mask.all() else _softmax(e, np.ones_like(mask), axis=0),
                "tanh is missing: e_j = v · tanh(s_prev W + h_j U)": _softmax((s_prev @ W)[:, None] @ v[:, None]
                                                                             [..., 0] + h @ U @ v, mask),
                "W and U are swapped, or the query is not s_prev": _softmax(np.tanh(h @ U) @ v, mask),
            }))
        if not _close(context, ref_context):
            raise ExerciseError("context: " + _diagnose(context, {
                "the context sums the encoder states without the weights: c = Σ_j alpha_j h_j": h.sum(1),
                "the context is the plain mean of the encoder states; weight each h_j by alpha_j": h.mean(1),
            }))
    _pass("Bahdanau attention step", trials)
