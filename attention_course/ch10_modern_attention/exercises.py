"""Exercise checkers of Chapter 10 (attention in today's language models), in NumPy.

``online_softmax``: ``fn(blocks)`` reads the scores of a row once, a block at a time (an iterator of arrays
(…, b)), and returns (m, l): the maximum m (…, 1) and the normaliser l = Σ exp(x − m) (…, 1). The checker hands
over a one-shot iterator, so a second pass over the scores finds nothing.

``grouped_heads``: ``fn(kv, heads)`` turns keys or values (B, kv_heads, T, d) into (B, heads, T, d) for
grouped-query attention: query head i reads key-value head i // (heads / kv_heads).

``window_cache``: ``fn(cache, key, window, sinks)`` appends one decoding step's key (d,) to a cache (n, d) of the
keys kept so far, in order, and returns what a sliding window with attention sinks keeps: the first ``sinks``
keys of the sequence and the ``window`` most recent ones (the new one included), in order.

``linear_step``: ``fn(state, norm, q, k, v)`` is one step of causal linear attention as an RNN with
φ(x) = elu(x) + 1: state (d, d_v) += φ(k) vᵀ, norm (d,) += φ(k), and y = φ(q)ᵀ state / φ(q)ᵀ norm (d_v,) from the
updated state. Returns (y, state, norm).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attention_course.ch01_sequence_models.exercises import _pass
from attention_course.ch10_modern_attention.reference import elu_feature_map
from attention_course.core.grading import ExerciseError, call, start

__all__ = ["online_softmax", "grouped_heads", "window_cache", "linear_step"]


def _pair(out, what: str) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(out, tuple) or len(out) != 2:
        raise ExerciseError(f"return two arrays, {what}")
    return np.asarray(out[0], float), np.asarray(out[1], float)


class _Blocks:
    """The scores of some rows, handed over a block at a time and readable once; ``shape`` is the whole scores'
    (rows, n), for the messages. The blocks are copies: the learner cannot change the checker's scores."""

    def __init__(self, blocks: list[np.ndarray], shape: tuple[int, ...]):
        self._blocks, self.shape = iter([b.copy() for b in blocks]), shape

    def __iter__(self):
        return self

    def __next__(self) -> np.ndarray:
        return next(self._blocks)


def online_softmax(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(blocks) -> (m, l)``, the running maximum and sum of the online softmax, in one pass."""
    rng = start(fn, trials, seed)
    for trial in range(trials):
        rows, n, b = int(rng.integers(1, 4)), int(rng.integers(2, 13)), int(rng.integers(1, 5))
        x = rng.normal(scale=3.0, size=(rows, n))
        if trial % 3 == 0:
            x[:, -1] += 800.0          # a late, huge score: exp(x) overflows unless the maximum is subtracted
        blocks = [x[:, i:i + b] for i in range(0, n, b)]
        m, total = _pair(call(fn, {"blocks": _Blocks(blocks, x.shape)}),
                         "(m, l): the maximum and the sum of exp(x − m)")
        want_m = x.max(-1, keepdims=True)
        want_l = np.exp(x - want_m).sum(-1, keepdims=True)
        if m.shape != want_m.shape or total.shape != want_l.shape:
            raise ExerciseError(f"for scores {x.shape} in blocks of {b}, m and l must have shape {want_m.shape} "
                                f"(keep the last axis); got {m.shape} and {total.shape}")
        if np.allclose(m, want_m) and np.allclose(total, want_l, rtol=1e-6):
            continue
        if not np.all(np.isfinite(total)):
            raise ExerciseError("l overflowed: sum exp(x − m) with m the running maximum, never exp(x) itself")
        no_rescale, last_max = np.zeros_like(want_l), np.full_like(want_m, -np.inf)
        for part in blocks:
            last_max = np.maximum(last_max, part.max(-1, keepdims=True))
            no_rescale = no_rescale + np.exp(part - last_max).sum(-1, keepdims=True)
        if np.allclose(total, no_rescale, rtol=1e-6):
            raise ExerciseError("when the maximum grows, multiply the sum so far by exp(m_old − m_new) before "
                                "adding the new block")
        if len(blocks) > 1 and np.allclose(m, blocks[-1].max(-1, keepdims=True)) and not np.allclose(m, want_m):
            raise ExerciseError("m must be the maximum over all blocks so far, not the last block's")
        raise ExerciseError(f"for scores {x.shape} in blocks of {b}: m should be {want_m.ravel()[:3]}…, "
                            f"l {want_l.ravel()[:3]}…; got {m.ravel()[:3]}…, {total.ravel()[:3]}…")
    _pass("online softmax", trials)


def grouped_heads(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(kv, heads) -> (B, heads, T, d)``, each key-value head repeated for its group of query heads."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        kv_heads, group = int(rng.choice([1, 2, 4])), int(rng.choice([2, 3, 4]))
        if kv_heads == 1 and group == 1:
            group = 2
        b, t, d = int(rng.integers(1, 3)), int(rng.integers(1, 5)), int(rng.integers(1, 5))
        kv = rng.normal(size=(b, kv_heads, t, d))
        heads = kv_heads * group
        got = np.asarray(call(fn, {"kv": kv, "heads": heads}))
        want = np.repeat(kv, group, axis=1)
        if got.shape != want.shape:
            raise ExerciseError(f"with kv {kv.shape} and heads={heads}, return shape {want.shape}; got {got.shape}")
        if np.allclose(got, want):
            continue
        if kv_heads > 1 and np.allclose(got, np.tile(kv, (1, group, 1, 1))):
            raise ExerciseError("query head i reads key-value head i // group (neighbouring heads share), not "
                                "i % kv_heads: repeat each head in place, do not tile the whole set")
        raise ExerciseError(f"with kv {kv.shape} and heads={heads}, head i should be kv head i // {group}")
    _pass("grouped heads", trials)


def window_cache(fn: Callable, *, trials: int = 10, seed: int | None = None) -> None:
    """Check ``fn(cache, key, window, sinks) -> cache``, run over a stream of keys from an empty cache."""
    rng = start(fn, trials, seed)
    for trial in range(trials):
        window, sinks, d = int(rng.integers(1, 5)), int(trial % 3), int(rng.integers(1, 4))
        steps = window + sinks + int(rng.integers(2, 6))
        keys = np.arange(steps, dtype=float)[:, None] + np.zeros((1, d))       # key t is filled with t: readable
        cache = np.zeros((0, d))
        for t in range(steps):
            cache = np.asarray(call(fn, {"cache": cache, "key": keys[t], "window": window, "sinks": sinks}),
                               float)
            kept = sorted(set(range(min(sinks, t + 1))) | set(range(max(0, t + 1 - window), t + 1)))
            if cache.ndim != 2 or cache.shape[1] != d:
                raise ExerciseError(f"return the cache as an array (n, {d}), one key per row; got {cache.shape}")
            got = [int(v) for v in cache[:, 0]]
            if got == kept:
                continue
            hint = f"after step {t} (keys 0…{t}, window={window}, sinks={sinks}) keep keys {kept}; got {got}"
            if sinks and got == list(range(max(0, t + 1 - window), t + 1)):
                hint += ": the first `sinks` keys are never evicted"
            elif t not in got:
                hint += ": the newest key is always kept"
            elif len(got) > len(kept):
                hint += ": evict the oldest key that is not a sink once the window is full"
            raise ExerciseError(hint)
    _pass("sliding-window cache with sinks", trials)


def linear_step(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(state, norm, q, k, v) -> (y, state, norm)``, causal linear attention's recurrent step."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        d, dv, steps = int(rng.integers(1, 6)), int(rng.integers(1, 5)), int(rng.integers(1, 5))
        state, norm = np.zeros((d, dv)), np.zeros(d)
        for t in range(steps):
            q, k, v = rng.normal(size=d), rng.normal(size=d), rng.normal(size=dv)
            out = call(fn, {"state": state, "norm": norm, "q": q, "k": k, "v": v})
            if not isinstance(out, tuple) or len(out) != 3:
                raise ExerciseError("return three arrays, (y, state, norm)")
            y, new_state, new_norm = (np.asarray(a, float) for a in out)
            fq, fk = elu_feature_map(q), elu_feature_map(k)
            want_state, want_norm = state + np.outer(fk, v), norm + fk
            want_y = fq @ want_state / (fq @ want_norm)
            if new_state.shape != (d, dv) or new_norm.shape != (d,) or y.shape != (dv,):
                raise ExerciseError(f"with q, k ({d},) and v ({dv},): y ({dv},), state ({d}, {dv}), norm ({d},); "
                                    f"got {y.shape}, {new_state.shape}, {new_norm.shape}")
            if not np.allclose(new_state, want_state) or not np.allclose(new_norm, want_norm):
                if np.allclose(new_state, state + np.outer(k, v)):
                    raise ExerciseError("add φ(k) vᵀ to the state, with φ(x) = elu(x) + 1, not k vᵀ")
                raise ExerciseError(f"at step {t}: state += φ(k) vᵀ and norm += φ(k)")
            if not np.allclose(y, want_y):
                from_old = not np.all(np.isfinite(y)) if t == 0 else np.allclose(y, fq @ state / (fq @ norm))
                if from_old:                                   # at the first step the old state is all zeros
                    raise ExerciseError("compute y from the updated state and norm: the token sees itself")
                if np.allclose(y, fq @ want_state):
                    raise ExerciseError("divide by φ(q)ᵀ norm: the weights of the past must sum to 1")
                raise ExerciseError(f"at step {t}, y = φ(q)ᵀ state / φ(q)ᵀ norm")
            state, norm = want_state, want_norm
    _pass("linear attention step", trials)
