"""Exercise checkers of Chapter 2 (hard and local attention): the Gumbel-softmax sample and the local-p window
weights. Learners' functions take and return NumPy arrays; the checks run them on fresh random inputs and,
when the answer is wrong, name the likely mistake.

A sampler cannot be compared with a reference number by number, so :func:`gumbel_softmax_sample` checks it
statistically: the argmax of a Gumbel-softmax sample must follow softmax(logits) whatever the temperature
(a chi-square test on tens of thousands of draws), the samples must sharpen as τ falls, and the hard sample
must be the one-hot vector of the soft sample's argmax.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attention_course.ch01_sequence_models.exercises import _close, _diagnose, _pass
from attention_course.core.grading import ExerciseError, call, softmax, start

__all__ = [
    "gumbel_softmax_sample", "local_p_weights", "reference_gumbel_softmax", "reference_local_weights",
    "window_positions",
]

_DRAWS = 40_000


# ---- Gumbel-softmax ------------------------------------------------------------------------------------

def reference_gumbel_softmax(logits: np.ndarray, tau: float, rng: np.random.Generator,
                             hard: bool = False) -> np.ndarray:
    """softmax((logits + g) / τ) over the last axis with g = -log(-log u), u ~ U(0, 1) drawn from ``rng``;
    ``hard=True``: the one-hot vector of its argmax (the straight-through forward value)."""
    u = rng.random(np.shape(logits))
    g = -np.log(-np.log(u))
    y = softmax((logits + g) / tau)
    if hard:
        y = np.eye(y.shape[-1])[y.argmax(-1)]
    return y


def _mistaken_samplers() -> dict[str, Callable]:
    """Samplers that make one common mistake each: (logits, tau, rng) → soft samples."""
    def uniform(logits, rng):
        return rng.random(np.shape(logits))

    return {
        "the noise is Gaussian (rng.normal); the Gumbel-max trick needs Gumbel noise g = -log(-log u)":
            lambda lg, t, r: softmax((lg + r.normal(size=np.shape(lg))) / t),
        "the uniform u is added as it is; it must be transformed into Gumbel noise, g = -log(-log u)":
            lambda lg, t, r: softmax((lg + uniform(lg, r)) / t),
        "the noise has the wrong sign: g = -log(-log u), not log(-log u)":
            lambda lg, t, r: softmax((lg + np.log(-np.log(uniform(lg, r)))) / t),
        "one log is missing: g = -log(-log u), not -log u":
            lambda lg, t, r: softmax((lg - np.log(uniform(lg, r))) / t),
        "only the logits are divided by τ: divide logits AND noise, softmax((logits + g) / τ)":
            lambda lg, t, r: softmax(lg / t + r.gumbel(size=np.shape(lg))),
    }


def _chi2_threshold(df: int, z: float = 4.75) -> float:
    """The chi-square value with upper tail ≈ 1e-6 (Wilson–Hilferty), so a correct sampler fails ~1e-6."""
    a = 2 / (9 * df)
    return df * (1 - a + z * np.sqrt(a)) ** 3


def _argmax_freq(samples: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(np.asarray(samples).argmax(-1), minlength=k) / len(samples)


def _call(fn, logits, tau, rng, hard=False):
    out = np.asarray(call(fn, {"logits": logits, "tau": tau, "rng": rng}, hard=hard), dtype=np.float64)
    if out.shape != logits.shape:
        raise ExerciseError(f"the sample has shape {out.shape}; expected the shape of the logits {logits.shape}")
    if np.isnan(out).any():
        raise ExerciseError("the sample contains NaN (is the uniform u ever exactly 0 or 1? log(0) = -inf)")
    return out


def gumbel_softmax_sample(fn: Callable, *, trials: int = 3, seed: int | None = None) -> None:
    """Check ``fn(logits, tau, rng, hard=False) -> sample``: logits (N, K), a NumPy ``Generator`` ``rng`` to
    draw the noise from; returns (N, K) Gumbel-softmax samples softmax((logits + g) / τ), one per row, or with
    ``hard=True`` their one-hot argmax vectors."""
    rng = start(fn, trials, seed)
    mistakes = _mistaken_samplers()
    for trial in range(trials):
        k = int(rng.integers(4, 7))
        logits = rng.normal(size=k) * 1.5
        probs = softmax(logits)
        many = np.tile(logits, (_DRAWS, 1))                                        # (N, K): the same logits
        for tau in (1.0, 0.5):
            y = _call(fn, many, tau, np.random.default_rng(rng.integers(2**32)))
            if (y < -1e-9).any() or not np.allclose(y.sum(-1), 1, atol=1e-6):
                raise ExerciseError("every soft sample must be a probability vector (non-negative, summing to 1 "
                                    "over the last axis): is the softmax over the right axis?")
            if np.allclose(y, y[0]):
                raise ExerciseError("every row of your samples is the same, so no noise is added: a Gumbel-"
                                    "softmax sample is softmax((logits + g) / τ) with fresh noise g in every row")
            freq = _argmax_freq(y, k)
            chi2 = float(_DRAWS * ((freq - probs) ** 2 / probs).sum())
            if chi2 > _chi2_threshold(k - 1):
                expected = {m: _argmax_freq(f(many, tau, np.random.default_rng(trial)), k)
                            for m, f in mistakes.items()}
                tv = {m: 0.5 * np.abs(freq - e).sum() for m, e in expected.items()}
                best = min(tv, key=lambda mistake: tv[mistake])
                why = best if tv[best] < 0.02 else "a distribution none of the common mistakes explains"
                raise ExerciseError(
                    f"at τ = {tau} the argmax of your samples lands on the K positions with frequencies "
                    f"{np.round(freq, 3)}, but it must follow softmax(logits) = {np.round(probs, 3)} "
                    f"(chi-square {chi2:.0f} on {_DRAWS} draws). Likely: {why}")
        few = np.tile(logits, (2000, 1))
        cold = _call(fn, few, 0.05, np.random.default_rng(rng.integers(2**32))).max(-1).mean()
        hot = _call(fn, few, 50.0, np.random.default_rng(rng.integers(2**32))).max(-1).mean()
        if cold < 0.9 or hot > 1 / k + 0.1:
            flipped = cold < hot
            raise ExerciseError(
                f"temperature: at τ = 0.05 the samples should be nearly one-hot (mean largest entry {cold:.2f}, "
                f"expected > 0.9) and at τ = 50 nearly uniform ({hot:.2f}, expected about 1/K = {1 / k:.2f})"
                + (": you multiply by τ; divide by it, softmax((logits + g) / τ)" if flipped else ""))
        state = int(rng.integers(2**32))
        soft = _call(fn, few, 0.5, np.random.default_rng(state))
        hard = _call(fn, few, 0.5, np.random.default_rng(state), hard=True)
        if not (np.isclose(hard, 0, atol=1e-6) | np.isclose(hard, 1, atol=1e-6)).all() or \
                not np.allclose(hard.sum(-1), 1, atol=1e-6):
            raise ExerciseError("with hard=True every row must be a one-hot vector (the straight-through "
                                "estimator's forward value), e.g. np.eye(K)[y.argmax(-1)]")
        if not (hard.argmax(-1) == soft.argmax(-1)).all():
            same_as_logits = (hard.argmax(-1) == logits.argmax()).all()
            raise ExerciseError(
                "with hard=True the one-hot vector must mark the argmax of the soft sample drawn with the same "
                "noise (draw the noise first, then take the softmax, then the argmax)"
                + ("; yours always marks the argmax of the logits, without noise" if same_as_logits else ""))
    _pass("Gumbel-softmax sample", trials)


# ---- local-p window weights ----------------------------------------------------------------------------

def window_positions(p: np.ndarray, window: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Luong's window around centres ``p`` (…,): positions (…, 2D+1) = round(p) - D … round(p) + D (round half
    up) and a bool array marking those inside [0, length)."""
    pos = np.floor(np.asarray(p) + 0.5).astype(int)[..., None] + np.arange(-window, window + 1)
    return pos, (pos >= 0) & (pos < length)


def reference_local_weights(scores: np.ndarray, p: np.ndarray, window: int, gaussian: bool = True,
                            sigma: float | None = None) -> np.ndarray:
    """Local attention weights (…, S) from scores (…, S) and centres p (…,): a softmax over the window
    positions only, times exp(-(s - p)² / (2σ²)) with σ = window / 2 when ``gaussian`` (local-p; local-m
    uses p_t = t and no Gaussian). Zero outside the window."""
    scores = np.asarray(scores, dtype=np.float64)
    positions = np.arange(scores.shape[-1])
    centre = np.floor(np.asarray(p, dtype=np.float64) + 0.5)[..., None]          # round half up
    in_window = np.abs(positions - centre) <= window                               # (…, S)
    filled = np.where(in_window, scores, -np.inf)
    e = np.exp(filled - filled.max(-1, keepdims=True))
    w = e / e.sum(-1, keepdims=True)
    if gaussian:
        sigma = window / 2 if sigma is None else sigma
        w = w * np.exp(-((positions - np.asarray(p)[..., None]) ** 2) / (2 * sigma**2))
    return w


def local_p_weights(fn: Callable, *, trials: int = 30, seed: int | None = None) -> None:
    """Check ``fn(scores, p, window) -> weights``: scores (T, S), real centres p (T,) in [0, S), half-width
    D = ``window`` → weights (T, S): for each row t, a softmax of the scores over the window positions
    round(p_t) - D … round(p_t) + D that lie in [0, S) (round half up: floor(p + 0.5)), multiplied by the
    Gaussian exp(-(s - p_t)² / (2σ²)) with σ = D / 2; zero outside the window."""
    rng = start(fn, trials, seed)
    for trial in range(trials):
        s, t, d = int(rng.integers(8, 16)), int(rng.integers(3, 6)), int(rng.integers(1, 4))
        scores = rng.normal(size=(t, s)) * 2
        p = rng.uniform(0, s, size=t)
        p[0] = rng.uniform(0, 1.5)                                   # one window cut by the start
        p[1] = rng.uniform(s - 1.5, s)                               # and one by the end
        got = np.asarray(call(fn, {"scores": scores, "p": p, "window": d}))
        ref = reference_local_weights(scores, p, d)
        if _close(got, ref):
            continue
        if got.shape != ref.shape:
            raise ExerciseError(f"weights have shape {got.shape}; expected (T, S) = {ref.shape}")
        positions = np.arange(s)
        in_window = np.abs(positions - np.floor(p + 0.5)[:, None]) <= d
        gauss = np.exp(-((positions - p[:, None]) ** 2) / (2 * (d / 2) ** 2))
        full = softmax(scores)
        wrong = {
            "σ = D: Luong's local-p uses σ = D/2": reference_local_weights(scores, p, d, sigma=d),
            "no Gaussian factor: local-p multiplies the window softmax by exp(-(s - p_t)² / (2σ²))":
                reference_local_weights(scores, p, d, gaussian=False),
            "the window is not truncated: weights outside round(p_t) ± D must be exactly 0": full * gauss,
            "the softmax runs over the whole sequence: normalise over the window positions only":
                full * in_window * gauss,
            "the Gaussian is centred on the rounded centre; it must use the real-valued p_t":
                reference_local_weights(scores, p, d, gaussian=False)
                * np.exp(-((positions - np.floor(p + 0.5)[:, None]) ** 2) / (2 * (d / 2) ** 2)),
            "the weights were renormalised after the Gaussian; Luong's local-p keeps softmax × Gaussian":
                ref / ref.sum(-1, keepdims=True),
            "the Gaussian lacks the 2 in 2σ²: exp(-(s - p_t)² / (2σ²)) with σ = D/2":
                reference_local_weights(scores, p, d, gaussian=False)
                * np.exp(-((positions - p[:, None]) ** 2) / ((d / 2) ** 2)),
            "the window centre is truncated (int(p)); round it to the nearest position, floor(p + 0.5)":
                reference_local_weights(scores, np.floor(p), d, gaussian=False) * gauss,
        }
        raise ExerciseError(f"wrong on trial {trial + 1}: {_diagnose(got, wrong)}")
    _pass("local-p weights", trials)
