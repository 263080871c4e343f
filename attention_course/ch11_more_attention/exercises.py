"""Exercise checkers of Chapter 11 (more ways to attend), in NumPy.

``pointer_distribution``: ``fn(encoded, decoded, W_1, W_2, v, mask)`` returns a pointer network's output,
log p (B, T, N): u_tj = vᵀ tanh(W_1ᵀ e_j + W_2ᵀ d_t) for encoded (B, N, e), decoded (B, T, d), W_1 (e, u), W_2 (d, u),
v (u,), then a log-softmax over the input positions j, with −inf where ``mask`` (B, N) is False.

``convolutional_scores``: ``fn(query, keys, kernel, bias, W_q, v)`` returns the scores (B, N) of convolutional
attention: e_j = vᵀ tanh(Σ_o kernel[o]ᵀ k_{j + o − width // 2} + bias + W_qᵀ q), over the ``width`` keys centred on
key j (zeros beyond the ends), for query (B, d_q), keys (B, N, d_k), kernel (width, d_k, u), bias (u,), W_q (d_q, u),
v (u,).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attention_course.ch01_sequence_models.exercises import _pass
from attention_course.ch11_more_attention.reference import convolutional_scores as _scores
from attention_course.ch11_more_attention.reference import pointer_log_probs
from attention_course.core.grading import ExerciseError, call, start

__all__ = ["pointer_distribution", "convolutional_scores"]


def pointer_distribution(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(encoded, decoded, W_1, W_2, v, mask) -> log p (B, T, N)``, the pointer's output."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        b, n, t = int(rng.integers(1, 4)), int(rng.integers(2, 7)), int(rng.integers(1, 5))
        e, d, u = (int(rng.integers(1, 6)) for _ in range(3))
        args = {"encoded": rng.normal(size=(b, n, e)), "decoded": rng.normal(size=(b, t, d)),
                "W_1": rng.normal(size=(e, u)), "W_2": rng.normal(size=(d, u)), "v": rng.normal(size=u),
                "mask": np.arange(n)[None] < rng.integers(1, n + 1, size=(b, 1))}
        want = pointer_log_probs(*args.values())
        got = np.asarray(call(fn, args), float)
        if got.shape != want.shape:
            raise ExerciseError(f"for encoded {args['encoded'].shape} and decoded {args['decoded'].shape}, return "
                                f"log p of shape {want.shape} (B, T, N): one distribution over the N inputs per step;"
                                f" got {got.shape}")
        real: np.ndarray = np.broadcast_to(np.asarray(args["mask"], bool)[:, None], want.shape)
        if np.allclose(got[real], want[real], atol=1e-6) and (got[~real] == -np.inf).all():
            continue
        if np.allclose(got[real], np.exp(want[real]), atol=1e-6):
            raise ExerciseError("return the logarithm of the probabilities (a log-softmax), not the probabilities")
        if not (got[~real] == -np.inf).all() and (~real).any():
            raise ExerciseError("a position the mask hides must get −inf: the pointer may only point at real inputs")
        raise ExerciseError("u_tj = v · tanh(W_1ᵀ e_j + W_2ᵀ d_t), then a log-softmax over the positions j (the last "
                            f"axis), for every step t; for the first example, first step, expected "
                            f"{np.round(want[0, 0], 3)}, got {np.round(got[0, 0], 3)}")
    _pass("pointer distribution", trials)


def convolutional_scores(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(query, keys, kernel, bias, W_q, v) -> scores (B, N)``, convolutional attention's scores."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        b, n, width = int(rng.integers(1, 4)), int(rng.integers(3, 8)), int(rng.choice([1, 3, 5]))
        dq, dk, u = (int(rng.integers(1, 5)) for _ in range(3))
        args = {"query": rng.normal(size=(b, dq)), "keys": rng.normal(size=(b, n, dk)),
                "kernel": rng.normal(size=(width, dk, u)), "bias": rng.normal(size=u),
                "W_q": rng.normal(size=(dq, u)), "v": rng.normal(size=u)}
        want = _scores(*args.values())
        got = np.asarray(call(fn, args), float)
        if width > 1 and got.shape == (b, n - width + 1):
            raise ExerciseError(f"with {n} keys and a window of {width}, return one score per key, (B, {n}): pad "
                                f"{width // 2} zero keys at each end")
        if got.shape != want.shape:
            raise ExerciseError(f"return one score per key, shape {want.shape}; got {got.shape}")
        if np.allclose(got, want, atol=1e-6):
            continue
        flipped = _scores(*{**args, "kernel": args["kernel"][::-1]}.values())
        if width > 1 and np.allclose(got, flipped, atol=1e-6):
            raise ExerciseError("kernel[o] weighs key j + o − width // 2: kernel[0] is the key furthest before j, "
                                "not after it")
        raise ExerciseError(f"for keys {args['keys'].shape} and a window of {width}: expected "
                            f"{np.round(want[0], 3)} for the first example, got {np.round(got[0], 3)}")
    _pass("convolutional attention scores", trials)
