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
    on_cpu = hasattr(decay, "detach") and decay.device.type == "cpu"       # a GPU's would wait for the GPU
    if isinstance(decay, (list, tuple, np.ndarray)) or on_cpu:               # values at hand (not a graph's)
        values = np.asarray(decay.detach() if on_cpu else decay)
        if not ((values > 0) & (values <= 1)).all():
            raise ConfigError(f"decay must lie in (0, 1] (1: no decay); got {values.tolist()}")


def attention_kind(linear: bool, decay: bool, latent: int) -> None:
    """A Llama block has one kind of attention; decay is a kind of linear attention."""
    if decay and not linear:
        raise ConfigError("decay=True is linear attention's decay: give linear=True with it")
    if linear and latent:
        raise ConfigError(f"choose linear=True or latent={latent} (latent attention), not both: a block has one "
                          "kind of attention")


def rope_width(d_rope: int) -> int:
    """The decoupled rotary part of latent attention: 0 (none) or an even number of features, turned in pairs."""
    d_rope = integer("d_rope", d_rope, minimum=0)
    if d_rope % 2:
        raise ConfigError(f"d_rope={d_rope}: rotary positions turn pairs of features, so d_rope must be even (or 0)")
    return d_rope
