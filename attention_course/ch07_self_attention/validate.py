"""Chapter 7's argument checks (``heads``, ``model_width``, ``rope_shape``, ``head_shapes``, ``split``, ``merge``),
beside the generic ones of :mod:`attention_course.core.validate`, which this module re-exports: the chapter's code
says ``validate.…`` for both."""

from __future__ import annotations

from attention_course.core.errors import ConfigError, ShapeError
from attention_course.core.validate import *  # noqa: F403  (the generic checks)
from attention_course.core.validate import integer, shape_of


def heads(d_model: int, heads: int, rotary: bool = False) -> None:
    """Multi-head attention splits d_model into ``heads`` equal parts (even ones for RoPE's pairs)."""
    integer("d_model", d_model)
    integer("heads", heads)
    if d_model % heads:
        raise ConfigError(f"d_model={d_model} does not split into heads={heads} equal parts: choose heads that "
                          f"divide d_model (d_head = d_model / heads)")
    if rotary and (d_model // heads) % 2:
        raise ConfigError(f"rotary=True rotates pairs of features, so d_head = d_model / heads must be even; "
                          f"got d_model={d_model}, heads={heads}, d_head={d_model // heads}")

def model_width(layer, x) -> None:
    """The last axis of x is the d_model the layer was built for."""
    shape = shape_of(x)
    if shape[-1] not in (None, layer.d_model):
        raise ShapeError(f"{type(layer).__name__} was built for d_model={layer.d_model}, but got an input of shape "
                         f"{shape} (last axis {shape[-1]})")

def rope_shape(shape) -> None:
    """RoPE rotates pairs of features: x (B, h, T, d) with d even."""
    if len(shape) != 4 or (shape[-1] is not None and shape[-1] % 2):
        raise ShapeError(f"rope expects x of shape (batch, heads, T, d_head) with d_head even; got {tuple(shape)}")

def masks(mask, padding_mask, keys=None) -> None:
    """An attention's two masks: ``mask`` (B or 1, T_q or 1, T_k), the keys each query may see, is 3-D;
    ``padding_mask`` (B, T_k), the keys that are real tokens, has the batch and T_k of ``keys`` ((B, T_k, d) or
    (B, h, T_k, d)). A 2-D ``mask`` is refused: (batch, T_k) and (T_q, T_k) look alike when batch = T_q."""
    m = None if mask is None else shape_of(mask)
    if m is not None and len(m) == 2:
        raise ShapeError(f"mask of shape {m} is 2-D, and a 2-D mask could be a (batch, T_k) padding mask or a "
                         f"(T_q, T_k) attention mask, which look alike when batch = T_q: give a padding mask as "
                         f"padding_mask=, and an attention mask as 3-D, (1, T_q, T_k) (mask[None], as causal_mask "
                         f"gives) or (batch, T_q, T_k)")
    if m is not None and len(m) != 3:
        raise ShapeError(f"mask of shape {m} must be 3-D, (batch or 1, T_q or 1, T_k): the keys each query may see "
                         f"(a padding mask (batch, T_k) goes to padding_mask=)")
    if padding_mask is None:
        return
    p = shape_of(padding_mask)
    k = shape_of(keys) if getattr(keys, "shape", None) is not None else None     # not a tensor: named later
    want = (None, None) if k is None or len(k) < 3 else (k[0], k[-2])
    if len(p) != 2 or any(a != b and None not in (a, b) for a, b in zip(p, want, strict=True)):
        raise ShapeError(f"padding_mask of shape {p} must be (batch, T_k) = {want}: True where a key is a real "
                         f"token, False where it is padding")


def head_shapes(query, key, value, mask=None) -> None:
    """scaled_dot_product_attention: query (B, h, T_q, d), key (B, h, T_k, d), value (B, h, T_k, d_v), mask
    (B, T_k) or (B, T_q, T_k)."""
    q, k, v = shape_of(query), shape_of(key), shape_of(value)
    if len(q) != 4 or len(k) != 4 or len(v) != 4:
        raise ShapeError(f"scaled_dot_product_attention expects 4-D query (batch, heads, T_q, d), key (batch, "
                         f"heads, T_k, d) and value (batch, heads, T_k, d_v); got query {q}, key {k}, value {v}")
    if q[-1] != k[-1]:
        raise ShapeError(f"query and key must share their last size d: query {q}, key {k}")
    if k[2] != v[2] or q[:2] != k[:2] or k[:2] != v[:2]:
        raise ShapeError(f"query, key and value must share batch and heads, and key and value T_k: query {q}, "
                         f"key {k}, value {v}")
    if mask is not None:
        m, (b, _, t_q, t_k) = shape_of(mask), q[:2] + q[2:3] + k[2:3]
        ok = m == (b, t_k) if len(m) == 2 else (len(m) == 3 and m[2] == t_k and all(     # every key: no broadcast
            a in (1, e) for a, e in zip(m[:2], (b, t_q), strict=True)))
        if not ok:
            raise ShapeError(f"mask of shape {m} does not fit query {q} and key {k}: a mask is (batch, T_k) = "
                             f"{(b, t_k)} or (batch or 1, T_q or 1, T_k) for (batch, T_q, T_k) = {(b, t_q, t_k)}")


def split(x, heads: int) -> None:
    """``split_heads``: x (B, T, d) with d a multiple of ``heads``."""
    s = shape_of(x)
    integer("heads", heads)
    if len(s) != 3 or (s[2] is not None and s[2] % heads):
        raise ShapeError(f"split_heads expects x of shape (batch, T, d) with d a multiple of heads={heads}; got {s}")


def merge(x) -> None:
    """``merge_heads``: x (B, h, T, d_head)."""
    if len(shape_of(x)) != 4:
        raise ShapeError(f"merge_heads expects x of shape (batch, heads, T, d_head); got {shape_of(x)}")
