"""Exercise checkers of Chapter 3 (attention pooling, timestep-wise attention).

Learners write NumPy functions; the checkers run them on fresh random inputs against the reference and, when
the answer is wrong, compare it with the answers that common mistakes give, to name the mistake.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attention_course.ch01_sequence_models.exercises import _close, _diagnose, _pass, reference_masked_softmax
from attention_course.core.grading import ExerciseError, call, softmax, start

__all__ = ["attention_pooling", "timestep_attention", "reference_attention_pooling",
           "reference_timestep_attention"]


def reference_attention_pooling(states, w, b, mask=None):
    """e_t = tanh(h_t·w + b), weights = softmax over time (masked), context = Σ_t a_t h_t.
    states (B, T, H), w (H,), b scalar, mask (B, T) → (context (B, H), weights (B, T))."""
    e = np.tanh(states @ w + b)                                   # (B, T)
    weights = reference_masked_softmax(e[:, None, :], mask)[:, 0]  # (B, T)
    return (weights[..., None] * states).sum(axis=1), weights


def reference_timestep_attention(x, W, b):
    """Permute, Dense over time, softmax over time, mean over the features, multiply.
    x (B, T, d), W (T, T) a Keras-style kernel (in, out), b (T,) → (out (B, T, d), weights (B, T))."""
    scores = x.transpose(0, 2, 1) @ W + b                         # (B, d, T)
    weights = softmax(scores, axis=-1).mean(axis=1)              # (B, T)
    return x * weights[..., None], weights


def _pair(out, what):
    if not (isinstance(out, tuple) and len(out) == 2):
        raise ExerciseError(f"return a pair ({what}, weights)")
    return tuple(np.asarray(o) for o in out)


def attention_pooling(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(states, w, b, mask) -> (context, weights)``: attention pooling over time.

    states (B, T, H), w (H,), b a float, mask (B, T) bool (True on real tokens) → context (B, H), weights (B, T)
    with e_t = tanh(h_t·w + b), weights = softmax over the real timesteps (pads get exactly 0),
    context = Σ_t weights_t h_t.
    """
    rng = start(fn, trials, seed)
    for trial in range(trials):
        B, T, H = (int(v) for v in (rng.integers(2, 5), rng.integers(3, 8), rng.integers(2, 6)))
        states = rng.normal(size=(B, T, H))
        w, b = rng.normal(size=H) * 1.5, float(rng.normal())
        lengths = rng.integers(1, T + 1, size=B)
        lengths[0] = max(1, T - 2)                                # at least one example with pads …
        mask = np.arange(T)[None, :] >= (T - lengths)[:, None]    # … on the left, as in the chapter
        context, weights = _pair(call(fn, {"states": states, "w": w, "b": b, "mask": mask}), "context")
        ref_c, ref_w = reference_attention_pooling(states, w, b, mask)
        e = np.tanh(states @ w + b)
        raw = states @ w + b
        if weights.shape != ref_w.shape:
            raise ExerciseError(f"weights have shape {weights.shape}; expected (B, T) = {ref_w.shape}: one weight "
                                f"per timestep (did you keep the last axis of size 1, or score the features?)")
        wrong_w = {
            "the mask is not applied: pads must get exactly zero weight": softmax(e),
            "the mask is inverted: True marks the real tokens": reference_masked_softmax(e[:, None], ~mask)[:, 0],
            "masked after the softmax without renormalising: the real tokens' weights no longer sum to 1":
                softmax(e) * mask,
            "the tanh is missing: e_t = tanh(h_t·w + b)": reference_masked_softmax(raw[:, None], mask)[:, 0],
            "softmax over the batch (axis 0) instead of over time (the last axis)": softmax(e, axis=0),
            "no softmax: the weights are the raw scores": e * mask,
        }
        if not _close(weights, ref_w):
            raise ExerciseError(f"weights are wrong on trial {trial + 1}: {_diagnose(weights, wrong_w)}")
        if context.shape != ref_c.shape:
            raise ExerciseError(f"context has shape {context.shape}; expected (B, H) = {ref_c.shape}: sum over "
                                f"the time axis (axis 1)")
        wrong_c = {
            "the context is the weighted MEAN over time; the weights already sum to 1, so take the weighted sum":
                (ref_w[..., None] * states).mean(axis=1),
            "the context ignores the weights (a plain sum or mean of the states)": states.sum(axis=1),
            "the context is the plain mean of the states, not weighted by the attention": states.mean(axis=1),
            "the context is the last state, not the weighted sum": states[:, -1],
        }
        if not _close(context, ref_c):
            raise ExerciseError(f"context is wrong on trial {trial + 1}: {_diagnose(context, wrong_c)}")
    _pass("attention pooling", trials)


def timestep_attention(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(x, W, b) -> (out, weights)``: the timestep-wise attention block.

    x (B, T, d), W (T, T) a Keras-style kernel (scores = inputs @ W + b), b (T,) → out (B, T, d) and weights
    (B, T): permute x to (B, d, T), apply the Dense over the timesteps, softmax over time for every feature,
    average the weights over the features, multiply each timestep of x by its weight.
    """
    rng = start(fn, trials, seed)
    for trial in range(trials):
        B, T = int(rng.integers(2, 4)), int(rng.integers(3, 7))
        d = T if trial % 3 == 1 else T + int(rng.integers(1, 4))      # d == T now and then: mixed-up axes still run
        x = rng.normal(size=(B, T, d))
        W, b = rng.normal(size=(T, T)), rng.normal(size=T) * 0.5
        out, weights = _pair(call(fn, {"x": x, "W": W, "b": b}, hint="\n  Hint: x is (B, T, d); did you apply the "
                                  "(T, T) Dense to the features without permuting x first?"), "out")
        ref_o, ref_w = reference_timestep_attention(x, W, b)
        xt = x.transpose(0, 2, 1)                                 # (B, d, T)
        scores = xt @ W + b
        if weights.shape != ref_w.shape:
            hint = ("you averaged over time instead of over the features: average axis 1 of the (B, d, T) weights"
                    if weights.shape == (B, d) else "one weight per timestep is expected")
            raise ExerciseError(f"weights have shape {weights.shape}; expected (B, T) = {ref_w.shape}: {hint}")
        wrong_w = {
            "every weight equals 1/T: the softmax and the average ran over the same axis (a softmax over the "
            "features, or an average over time); take the softmax over time (the last axis of the permuted "
            "(B, d, T) scores), then average over the features (axis 1)":
                np.full((B, T), 1 / T) if d == T else np.zeros(0),
            "the softmax runs over the features; it must run over time (the last axis of the permuted (B, d, T) "
            "scores)": softmax(scores, axis=1).mean(axis=1),
            "the kernel is used transposed: with a Keras-style kernel (in, out) the scores are inputs @ W":
                softmax(xt @ W.T + b, axis=-1).mean(axis=1),
            "no softmax: the weights are the averaged raw scores": scores.mean(axis=1),
            "the softmax was taken after averaging the scores: take it for every feature first, then average":
                softmax(scores.mean(axis=1), axis=-1),
        }
        if d == T:
            wrong_w["the Dense was applied over the features without permuting: permute x to (B, d, T) first"] = \
                softmax(x @ W + b, axis=-1).mean(axis=1)
        if not _close(weights, ref_w):
            raise ExerciseError(f"weights are wrong on trial {trial + 1}: {_diagnose(weights, wrong_w)}")
        if out.shape != ref_o.shape:
            raise ExerciseError(f"out has shape {out.shape}; expected (B, T, d) = {ref_o.shape}")
        wrong_o = {"the weights are not multiplied into the inputs (out is x)": x,
                   "out is the weighted sum over time; this block reweights each timestep and keeps the shape":
                       np.broadcast_to((x * ref_w[..., None]).sum(1, keepdims=True), x.shape)}
        if d == T:
            wrong_o["the weights multiply the features instead of the timesteps: use weights[:, :, None]"] = \
                x * ref_w[:, None, :]
        if not _close(out, ref_o):
            raise ExerciseError(f"out is wrong on trial {trial + 1}: {_diagnose(out, wrong_o)}")
    _pass("timestep-wise attention", trials)
