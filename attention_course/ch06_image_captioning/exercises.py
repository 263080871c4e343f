"""Exercise checkers of Chapter 6 (captioning), in NumPy.

``visual_attention``: one step of Xu et al.'s soft attention with the gating scalar. h_prev (B, N) the decoder's
previous state, a (B, L, D) the annotations, W (N, u), U (D, u), v (u,), w_beta (N,), b_beta (a float) →
z (B, D), alpha (B, L): e_i = v · tanh(h_prev W + a_i U), alpha = softmax over the L locations,
β = σ(h_prev · w_beta + b_beta), z = β Σ_i alpha_i a_i.

``correctness``: the attention correctness of one map. alpha (gh, gw) a distribution over a grid laid on a canvas
(height, width), box (top, left, bottom, right) in pixels (bottom and right exclusive) → the share of the mass
inside the box, each cell's weight spread evenly over its pixels.

``draw_filters``: DRAW's filterbank for one window. gx, gy the centre in pixels, sigma2 the filters' variance,
delta the stride, n the glimpse size, height and width the image's → (F_Y (n, height), F_X (n, width)): filter i
(i = 1 … n) is a Gaussian over the pixel coordinates centred at μ_i = g + (i − n/2 − 0.5) δ, each row normalised to
sum to 1.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attention_course.ch01_sequence_models.exercises import _close, _diagnose, _pass
from attention_course.ch06_image_captioning.metrics import attention_correctness, draw_filterbank
from attention_course.core.grading import ExerciseError, call, softmax, start

__all__ = ["visual_attention", "correctness", "draw_filters"]


def visual_attention(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(h_prev, a, W, U, v, w_beta, b_beta) -> (z, alpha)``, one step of gated soft attention."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        b, L, n, d, u = (int(x) for x in rng.integers(2, 6, size=5))
        L += 2                                                       # at least 4 locations
        h_prev, a = rng.normal(size=(b, n)), rng.normal(size=(b, L, d))
        W, U, v = rng.normal(size=(n, u)), rng.normal(size=(d, u)), rng.normal(size=u)
        w_beta, b_beta = rng.normal(size=n), float(rng.normal())
        inputs = {"h_prev": h_prev, "a": a, "W": W, "U": U, "v": v, "w_beta": w_beta, "b_beta": b_beta}
        got = call(fn, inputs)
        if not isinstance(got, tuple) or len(got) != 2:
            raise ExerciseError("return a pair (z, alpha): z (B, D), alpha (B, L)")
        z, alpha = (np.asarray(x, dtype=np.float64) for x in got)
        e = np.tanh((h_prev @ W)[:, None] + a @ U) @ v                # (B, L)
        ref_alpha = softmax(e)
        beta = 1 / (1 + np.exp(-(h_prev @ w_beta + b_beta)))          # (B,)
        context = (ref_alpha[:, :, None] * a).sum(1)
        if alpha.shape != ref_alpha.shape or z.shape != context.shape:
            raise ExerciseError(f"alpha must have shape {ref_alpha.shape} (B, L) and z {context.shape} (B, D); "
                                f"got {alpha.shape} and {z.shape}")
        if not _close(alpha, ref_alpha):
            raise ExerciseError("alpha: " + _diagnose(alpha, {
                "the softmax runs over the batch axis; it belongs over the locations (axis 1)": softmax(e, 0),
                "tanh is missing: e_i = v · tanh(h_prev W + a_i U)": softmax((h_prev @ W @ v)[:, None] + a @ U @ v),
                "W and U are swapped, or the query is not h_prev": softmax(np.tanh(a @ U) @ v),
                "alpha is the raw score e, without the softmax": e,
            }))
        if not _close(z, beta[:, None] * context):
            raise ExerciseError("z: " + _diagnose(z, {
                "the gate is missing: z = β Σ_i alpha_i a_i with β = σ(h_prev · w_beta + b_beta)": context,
                "the gate multiplies alpha before the softmax, or is not a sigmoid": (
                    (softmax(beta[:, None] * e)[:, :, None] * a).sum(1)),
                "z is the plain mean of the annotations; weight each a_i by alpha_i": beta[:, None] * a.mean(1),
                "z sums the annotations without the weights": beta[:, None] * a.sum(1),
            }))
    _pass("gated soft attention step", trials)


def correctness(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(alpha, box, canvas) -> float``, the share of the attention map inside the box."""
    rng = start(fn, trials, seed)
    for trial in range(trials):
        cell = int(rng.integers(2, 9))
        gh, gw = (int(x) for x in rng.integers(2, 7, size=2))
        canvas = (gh * cell, gw * cell)
        top, left = int(rng.integers(0, canvas[0] - 1)), int(rng.integers(0, canvas[1] - 1))
        box = (top, left, int(rng.integers(top + 1, canvas[0] + 1)), int(rng.integers(left + 1, canvas[1] + 1)))
        alpha = rng.dirichlet(np.ones(gh * gw)).reshape(gh, gw) if trial else np.full((gh, gw), 1 / (gh * gw))
        got = call(fn, {"alpha": alpha, "box": box, "canvas": canvas})
        try:
            value = float(got)
        except (TypeError, ValueError):
            raise ExerciseError(f"return one number, the share of the attention inside the box; got {got!r}") from None
        want = attention_correctness(alpha, box, canvas)
        if not np.isclose(value, want, rtol=1e-6, atol=1e-9):
            rows = np.zeros((gh, gw), bool)
            rows[(top // cell):((box[2] - 1) // cell + 1), (left // cell):((box[3] - 1) // cell + 1)] = True
            inside = np.zeros((gh, gw), bool)                         # cells wholly inside the box
            for r in range(gh):
                for c in range(gw):
                    inside[r, c] = (top <= r * cell and (r + 1) * cell <= box[2] and left <= c * cell
                                    and (c + 1) * cell <= box[3])
            hint = _diagnose(np.array(value), {
                "every cell the box touches counts whole; count only the share of its pixels inside the box":
                    np.array((alpha * rows).sum()),
                "only the cells wholly inside the box count; a cell the box cuts counts in part":
                    np.array((alpha * inside).sum()),
                "this is the box's share of the canvas (chance), not of the attention": np.array(
                    (box[2] - box[0]) * (box[3] - box[1]) / (canvas[0] * canvas[1])),
            })
            raise ExerciseError(f"for box {box} on a {canvas} canvas and a {gh}×{gw} grid the share is {want:.4f}; "
                                f"got {value:.4f}. {hint}")
    _pass("attention correctness", trials)


def draw_filters(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(gx, gy, sigma2, delta, n, height, width) -> (F_Y, F_X)``, DRAW's filterbank for one window."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        height, width = (int(x) for x in rng.integers(8, 30, size=2))
        n = int(rng.integers(2, 7))
        delta = float(rng.uniform(0.5, min(3.0, (min(height, width) - 1) / (n - 1))))
        half = (n / 2 - 0.5) * delta                       # every filter centred on the image: none underflows
        gx, gy = float(rng.uniform(half, width - 1 - half)), float(rng.uniform(half, height - 1 - half))
        sigma2 = float(rng.uniform(0.5, 4.0))
        got = call(fn, {"gx": gx, "gy": gy, "sigma2": sigma2, "delta": delta, "n": n, "height": height,
                        "width": width})
        if not isinstance(got, tuple) or len(got) != 2:
            raise ExerciseError("return a pair (F_Y, F_X): F_Y (n, height), F_X (n, width)")
        f_y, f_x = (np.asarray(x, dtype=np.float64) for x in got)
        ref_y, ref_x = draw_filterbank(gy, sigma2, delta, n, height), draw_filterbank(gx, sigma2, delta, n, width)
        if f_y.shape != ref_y.shape or f_x.shape != ref_x.shape:
            swapped = f_y.shape == ref_x.shape and f_x.shape == ref_y.shape and height != width
            raise ExerciseError(f"F_Y must have shape {ref_y.shape} (n, height) and F_X {ref_x.shape} (n, width); got "
                                f"{f_y.shape} and {f_x.shape}" + (": F_Y runs over the rows (y), F_X over the columns"
                                                                  if swapped else ""))
        for name, mine, ref, g, size in (("F_X", f_x, ref_x, gx, width), ("F_Y", f_y, ref_y, gy, height)):
            if not _close(mine, ref):
                where = f"{name} for g = {g:.2f}, σ² = {sigma2:.2f}, δ = {delta:.2f}, n = {n}: "
                raise ExerciseError(where + _diagnose(mine, {
                    "each filter (row) must sum to 1: divide by its sum over the pixels":
                        draw_filterbank(g, sigma2, delta, n, size, normalise=False),
                    "the centres are g + (i − n/2 − 0.5) δ for i = 1 … n; the −0.5 is missing":
                        draw_filterbank(g + delta / 2, sigma2, delta, n, size),      # centres g + (i − n/2) δ
                    "the exponent is −(a − μ)² / (2σ²); the 2 is missing":
                        draw_filterbank(g, sigma2 / 2, delta, n, size),              # exp(−(a − μ)² / σ²)
                    "gx and gy are swapped: F_X is centred on gx, F_Y on gy":
                        draw_filterbank(gy if name == "F_X" else gx, sigma2, delta, n, size),
                }))
    _pass("DRAW's filterbank", trials)
