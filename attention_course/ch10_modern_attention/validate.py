"""Chapter 10's argument checks (``kv_heads``, ``linear_step``), beside those of Chapter 7
(:mod:`attention_course.ch07_self_attention.validate`) and the generic ones of :mod:`attention_course.core.validate`,
which this module re-exports: the chapter's code says ``validate.…`` for all of them."""

from __future__ import annotations

from attention_course.ch07_self_attention.validate import *  # noqa: F403  (Chapter 7's and the generic checks)
from attention_course.core.errors import ConfigError
from attention_course.core.validate import integer


def kv_heads(heads: int, kv_heads: int) -> int:
    """Grouped-query attention: the key-value heads divide the query heads into equal groups."""
    kv_heads = integer("kv_heads", kv_heads)
    if heads % kv_heads:
        raise ConfigError(f"kv_heads={kv_heads} does not divide heads={heads}: each key-value head serves an equal "
                          f"group of query heads; choose a divisor of {heads} (1 is multi-query attention, {heads} "
                          "multi-head attention)")
    return kv_heads


def linear_step(state, norm, query, key, value) -> None:
    """One step of linear attention: query and key (B, h, d), value (B, h, d_v), the state (B, h, d, d_v) and the
    normaliser (B, h, d) carried from the step before (zeros at the start)."""
    from attention_course.core.errors import ShapeError
    from attention_course.core.validate import shape_of

    q, k, v, s, z = (shape_of(x) for x in (query, key, value, state, norm))
    if len(q) != 3 or k != q or len(v) != 3 or v[:2] != q[:2] or s != (*q, v[2]) or z != q:
        raise ShapeError(f"linear_attention_step takes query and key (B, h, d), value (B, h, d_v), state (B, h, d, "
                         f"d_v) and norm (B, h, d); got query {q}, key {k}, value {v}, state {s}, norm {z}")


def linear_attend(mask, causal: bool, return_weights: bool) -> None:
    """Linear attention is causal, over every earlier key, and has no matrix of weights to return."""
    if mask is not None or not causal or return_weights:
        raise ConfigError("LinearAttention attends causally to every earlier key: call it with causal=True, no mask "
                          f"and no return_weights (got mask={'given' if mask is not None else None}, "
                          f"causal={causal}, return_weights={return_weights}); windows and weights need the softmax")


def decay(decay, heads: int, causal: bool = True) -> None:
    """A decay is one factor γ in (0, 1] per head, and weighs the past: causal attention only."""
    if decay is None:
        return
    import numpy as np

    shape = tuple(decay.shape) if hasattr(decay, "shape") else np.shape(decay)
    if shape != (heads,) or not causal:
        raise ConfigError(f"decay must hold one factor per head, shape ({heads},), for causal attention; got shape "
                          f"{shape} and causal={causal}")
    if isinstance(decay, (list, tuple, np.ndarray)) or hasattr(decay, "detach"):    # values at hand (not a graph's)
        values = np.asarray(decay.detach().cpu() if hasattr(decay, "detach") else decay)
        if not ((values > 0) & (values <= 1)).all():
            raise ConfigError(f"decay must lie in (0, 1] (1: no decay); got {values.tolist()}")


def linear_decay(linear: bool, decay: bool) -> None:
    """Decay is a kind of linear attention."""
    if decay and not linear:
        raise ConfigError("decay=True is linear attention's decay: give linear=True with it")
