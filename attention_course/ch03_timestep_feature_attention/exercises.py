"""Exercise checkers of Chapter 3 (feature- and timestep-wise attention; attention pooling, a paired comparison over
seeds).

Learners write NumPy functions; the checkers run them on fresh random inputs against the reference and, when
the answer is wrong, compare it with the answers that common mistakes give, to name the mistake.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attention_course.ch01_sequence_models.exercises import _close, _diagnose, _pass, reference_masked_softmax
from attention_course.core.grading import ExerciseError, call, softmax, start

__all__ = ["attention_pooling", "timestep_attention", "feature_attention", "paired_comparison",
           "reference_attention_pooling", "reference_timestep_attention", "reference_feature_attention",
           "reference_paired_comparison"]


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


def reference_feature_attention(x, W, b, single=False):
    """A Dense over the features, softmax over the features; ``single`` averages the weights over time into one
    vector per sequence. x (B, T, d), W (d, d) a Keras-style kernel (in, out), b (d,) → (out (B, T, d),
    weights (B, T, d))."""
    weights = softmax(x @ W + b, axis=-1)                         # (B, T, d), each step's weights sum to 1
    if single:
        weights = np.broadcast_to(weights.mean(axis=1, keepdims=True), weights.shape)
    return x * weights, weights


def reference_paired_comparison(a, b):
    """Two models' accuracies over the same seeds, a and b (n,) → (the mean of a − b, its standard error
    std(a − b, ddof=1) / √n, the paired t statistic mean / standard error)."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    se = diff.std(ddof=1) / np.sqrt(len(diff))
    return diff.mean(), se, diff.mean() / se


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


def feature_attention(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(x, W, b, single) -> (out, weights)``: the feature-wise attention block.

    x (B, T, d), W (d, d) a Keras-style kernel (scores = x @ W + b), b (d,), single a bool → out (B, T, d) and
    weights (B, T, d): a softmax over the d features of every timestep; with ``single`` the weights averaged over
    time, the same vector at every timestep; out = x * weights.
    """
    rng = start(fn, trials, seed)
    for trial in range(trials):
        B, d = int(rng.integers(2, 4)), int(rng.integers(3, 7))
        T = d if trial % 4 == 1 else d + int(rng.integers(1, 4))      # T == d now and then: mixed-up axes still run
        single = bool(trial % 2)
        x, W, b = rng.normal(size=(B, T, d)), rng.normal(size=(d, d)), rng.normal(size=d) * 0.5
        out, weights = _pair(call(fn, {"x": x, "W": W, "b": b, "single": single}), "out")
        ref_o, ref_w = reference_feature_attention(x, W, b, single)
        scores = x @ W + b
        if weights.shape != ref_w.shape:
            raise ExerciseError(f"weights have shape {weights.shape}; expected (B, T, d) = {ref_w.shape}: one weight "
                                f"per feature of every timestep (with single=True, the same vector repeated over T)")
        per_step = softmax(scores, axis=-1)
        wrong_w = {
            "the softmax runs over time (axis 1); it must run over the features of each timestep (the last axis)":
                softmax(scores, axis=1),
            "the kernel is used transposed: with a Keras-style kernel (in, out) the scores are x @ W":
                softmax(x @ W.T + b, axis=-1),
            "no softmax: the weights are the raw scores": scores,
            "with single=True, average the weights over time (axis 1), not over the features":
                np.broadcast_to(per_step.mean(axis=-1, keepdims=True), per_step.shape),
            "with single=True, take the softmax of the time-averaged weights, not of the averaged scores":
                np.broadcast_to(softmax(scores.mean(axis=1, keepdims=True), axis=-1), per_step.shape),
        }
        if single:
            wrong_w["single=True was ignored: average the weights over time into one vector per sequence"] = per_step
        else:
            wrong_w["single=False, yet the weights were averaged over time"] = \
                np.broadcast_to(per_step.mean(axis=1, keepdims=True), per_step.shape)
        if not _close(weights, ref_w):
            raise ExerciseError(f"weights are wrong on trial {trial + 1} (single={single}): "
                                f"{_diagnose(weights, wrong_w)}")
        wrong_o = {"the weights are not multiplied into the inputs (out is x)": x,
                   "out sums over the features; this block reweights them and keeps the shape (B, T, d)":
                       np.broadcast_to((x * ref_w).sum(-1, keepdims=True), x.shape)}
        if out.shape != ref_o.shape:
            raise ExerciseError(f"out has shape {out.shape}; expected (B, T, d) = {ref_o.shape}")
        if not _close(out, ref_o):
            raise ExerciseError(f"out is wrong on trial {trial + 1}: {_diagnose(out, wrong_o)}")
    _pass("feature-wise attention", trials)


def paired_comparison(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(a, b) -> (mean, standard_error, t)``: two models compared seed by seed.

    a, b (n,): the accuracies of two models trained with the same n seeds (seed i gave both the same split and
    start) → the mean of the differences a − b, its standard error std(a − b, ddof=1) / √n, and the paired t
    statistic mean / standard error.
    """
    rng = start(fn, trials, seed)
    for trial in range(trials):
        n = int(rng.integers(3, 12))
        base = rng.uniform(0.7, 0.85, size=n)                     # the seeds move both models together …
        a, b = base + rng.normal(0.01, 0.01, size=n), base + rng.normal(0.0, 0.005, size=n)
        out = call(fn, {"a": a, "b": b})
        if not (isinstance(out, tuple) and len(out) == 3):
            raise ExerciseError("return three numbers: (mean, standard_error, t)")
        mean, se, t = (float(np.asarray(v)) for v in out)
        ref_mean, ref_se, ref_t = reference_paired_comparison(a, b)
        diff = a - b
        if not _close(mean, ref_mean):
            wrong = {"the mean of b − a: the difference is a − b": -ref_mean,
                     "the sum of the differences, not their mean": diff.sum()}
            raise ExerciseError(f"the mean is wrong on trial {trial + 1}: {_diagnose(mean, wrong)}")
        if not _close(se, ref_se):
            wrong = {                                                  # … so pairing matters
                "the standard error of two independent samples, sqrt(var(a)/n + var(b)/n): the seeds pair the "
                "runs, so use the differences a − b":
                    np.sqrt(a.var(ddof=1) / n + b.var(ddof=1) / n),
                "the standard deviation of the differences, not the standard error of their mean (divide by √n)":
                    diff.std(ddof=1),
                "std with ddof=0: a sample of n differences estimates its spread with n − 1 (ddof=1)":
                    diff.std() / np.sqrt(n),
                "divided by n instead of √n": diff.std(ddof=1) / n,
            }
            raise ExerciseError(f"the standard error is wrong on trial {trial + 1}: {_diagnose(se, wrong)}")
        if not _close(t, ref_t):
            wrong = {"t is the standard error over the mean; it is mean / standard error": ref_se / ref_mean}
            raise ExerciseError(f"t is wrong on trial {trial + 1}: {_diagnose(t, wrong)}")
    _pass("paired comparison", trials)
