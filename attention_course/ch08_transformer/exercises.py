"""Exercise checkers of Chapter 8 (the Transformer), in NumPy.

``decoder_masks``: ``fn(src_mask, tgt_mask)`` with src_mask (B, S) and tgt_mask (B, T) bool (True on real tokens)
→ (self_mask (B, T, T), cross_mask (B, T, S)) bool, True where a target position may attend: to itself, earlier
real target tokens, and every real source token.

``warmup``: ``fn(step, d_model, warmup)`` → the learning rate of Vaswani et al.'s schedule (eq. 3),
d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), for steps counted from 1.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attention_course.ch01_sequence_models.exercises import _pass
from attention_course.core.grading import ExerciseError, call, start

__all__ = ["decoder_masks", "warmup"]


def _masks(src_mask, tgt_mask, causal=True, target_pads=True, cross_from="src"):
    t = tgt_mask.shape[1]
    self_mask = np.broadcast_to(np.tri(t, dtype=bool) if causal else np.ones((t, t), bool), (len(tgt_mask), t, t))
    if target_pads:
        self_mask = self_mask & tgt_mask[:, None, :]
    cross = src_mask[:, None, :] if cross_from == "src" else np.ones_like(src_mask)[:, None, :]
    return self_mask.copy(), np.broadcast_to(cross, (len(tgt_mask), t, src_mask.shape[1])).copy()


def decoder_masks(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(src_mask, tgt_mask) -> (self_mask, cross_mask)``, the two masks of a decoder layer."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        b, s, t = int(rng.integers(2, 5)), int(rng.integers(3, 8)), int(rng.integers(3, 8))
        src_mask = np.arange(s)[None, :] < rng.integers(1, s + 1, size=(b, 1))        # right-padded
        tgt_mask = np.arange(t)[None, :] < rng.integers(1, t + 1, size=(b, 1))
        src_mask[0], tgt_mask[0, -1] = True, False                                    # both kinds in every trial
        out = call(fn, {"src_mask": src_mask, "tgt_mask": tgt_mask})
        if not isinstance(out, tuple) or len(out) != 2:
            raise ExerciseError("return two masks, (self_mask, cross_mask)")
        got_self, got_cross = (np.asarray(m) for m in out)
        want_self, want_cross = _masks(src_mask, tgt_mask)
        for name, got, want in (("self_mask", got_self, want_self), ("cross_mask", got_cross, want_cross)):
            if got.shape != want.shape:
                raise ExerciseError(f"with src_mask {src_mask.shape} and tgt_mask {tgt_mask.shape}, {name} must "
                                    f"have shape {want.shape}; got {got.shape}")
            if got.dtype != bool:
                raise ExerciseError(f"{name} must be bool (True where a position may attend); got {got.dtype}")
        if not np.array_equal(got_self, want_self):
            candidates = {
                "self_mask lets a target position see later positions: combine the padding with the causal "
                "triangle (j <= i)": _masks(src_mask, tgt_mask, causal=False)[0],
                "self_mask shows the target's pads: combine the triangle with tgt_mask over the keys":
                    _masks(src_mask, tgt_mask, target_pads=False)[0],
                "self_mask is inverted: True marks what a position may see": ~want_self,
                "self_mask hides the diagonal: a position must see itself (j <= i, not j < i)":
                    want_self & ~np.eye(t, dtype=bool),
            }
            raise ExerciseError(next((m for m, c in candidates.items() if np.array_equal(got_self, c)),
                                     "self_mask differs from causal-and-not-padding in a way none of the common "
                                     "mistakes explains"))
        if not np.array_equal(got_cross, want_cross):
            candidates = {
                "cross_mask must not be causal: every target position may read the whole source":
                    want_cross & np.tri(t, s, dtype=bool),
                "cross_mask shows the source's pads: use src_mask over the keys":
                    _masks(src_mask, tgt_mask, cross_from="none")[1],
                "cross_mask is inverted: True marks the source tokens a position may read": ~want_cross,
            }
            raise ExerciseError(next((m for m, c in candidates.items() if np.array_equal(got_cross, c)),
                                     "cross_mask differs from the source's padding mask in a way none of the "
                                     "common mistakes explains"))
    _pass("decoder masks", trials)


def _rate(step, d_model, warmup, step_power=-0.5, warm_power=-1.5, model_power=-0.5):
    return d_model ** model_power * min(step ** step_power, step * warmup ** warm_power)


def warmup(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(step, d_model, warmup) -> learning rate``, the Transformer's warm-up schedule."""
    rng = start(fn, trials, seed)
    for trial in range(trials):
        d_model, warm = int(rng.choice([64, 128, 512])), int(rng.integers(50, 4001))
        step = [1, warm, 2 * warm][trial % 3] if trial < 6 else int(rng.integers(1, 3 * warm))
        got = call(fn, {"step": step, "d_model": d_model, "warmup": warm})
        try:
            got = float(got)
        except (TypeError, ValueError):
            raise ExerciseError(f"return one number, the learning rate; got {type(got).__name__}") from None
        want = _rate(step, d_model, warm)
        if np.isclose(got, want, rtol=1e-6):
            continue
        candidates = {
            "the rising part is step · warmup^-1.5, not step · warmup^-0.5": _rate(step, d_model, warm,
                                                                                    warm_power=-0.5),
            "the schedule scales by d_model^-0.5 (a wider model takes smaller steps)": _rate(step, 1, warm),
            "take the minimum of the two parts, not the maximum": d_model ** -0.5 * max(
                step ** -0.5, step * warm ** -1.5),
            "the falling part is step^-0.5 (one over the square root), not 1/step": _rate(step, d_model, warm,
                                                                                           step_power=-1.0),
        }
        raise ExerciseError(next((m for m, c in candidates.items() if np.isclose(got, c, rtol=1e-6)),
                                 f"at step {step} with d_model={d_model} and warmup={warm} the rate should be "
                                 f"{want:.6g}; got {got:.6g}"))
    _pass("warm-up schedule", trials)
