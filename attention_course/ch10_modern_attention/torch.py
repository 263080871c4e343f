"""Chapter 10 in PyTorch: FlashAttention's forward pass written plainly, attention computed a block of keys at a
time with the online softmax (``reference.flash_attention`` is the NumPy original); grouped-query attention, Chapter
7's multi-head attention with fewer key-value heads than query heads; linear attention, in parallel and as an RNN.
Same names and signatures as ``keras.py``
beside it.

Shapes: B batch, h heads, T_q queries, T_k keys, d per head. ``mask`` says True (or 1) where a key is real.
"""

from __future__ import annotations

import torch
from torch import nn

from attention_course.ch07_self_attention.torch import MultiHeadAttention, split_heads, visible_keys
from attention_course.ch10_modern_attention import validate
from attention_course.core.torch import inputs

__all__ = ["flash_attention", "GroupedQueryAttention", "linear_attention", "linear_attention_step"]


def flash_attention(query, key, value, mask=None, causal: bool = False, block: int = 64) -> torch.Tensor:
    """softmax(Q Kᵀ / √d) V, ``block`` keys at a time: each query row keeps a running maximum ``m``, a running sum
    ``l`` of exp(score − m) and a running weighted sum ``acc`` of the values, rescaled by exp(m_old − m_new) when
    the maximum grows; at most (B, h, T_q, block) scores exist at once, never the T_q × T_k matrix.

    query (B, h, T_q, d), key (B, h, T_k, d), value (B, h, T_k, d_v); mask (B, T_k) or (B, T_q, T_k); ``causal``
    hides the keys after each query. → (B, h, T_q, d_v); a query that may see no key gets zeros."""
    query = inputs.floats(query, "query")
    key, value = inputs.floats(key, "key", query.device), inputs.floats(value, "value", query.device)
    validate.head_shapes(query, key, value, mask)
    (block,) = validate.sizes(block=block)
    t_q, t_k = query.shape[-2], key.shape[-2]
    visible = visible_keys(mask, causal, t_q, t_k, query.device)         # (B or 1, 1, T_q or 1, T_k) or None
    scale = query.shape[-1] ** -0.5
    m = torch.full((*query.shape[:-1], 1), -torch.inf, device=query.device)      # (B, h, T_q, 1)
    total = torch.zeros_like(m)                                                  # (B, h, T_q, 1)
    acc = torch.zeros((*query.shape[:-1], value.shape[-1]), device=query.device)  # (B, h, T_q, d_v)
    for start in range(0, t_k, block):
        k, v = key[..., start:start + block, :], value[..., start:start + block, :]
        s = query @ k.transpose(-1, -2) * scale                                   # (B, h, T_q, block)
        if visible is not None:
            s = s.masked_fill(~visible[..., start:start + block], -torch.inf)
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        safe = torch.where(torch.isfinite(m_new), m_new, 0.0)          # a row that has seen no key yet
        p = torch.exp(s - safe)                                         # hidden keys: exp(-inf) = 0
        rescale = torch.exp(m - safe)                                   # the old sums, to the new maximum
        total = total * rescale + p.sum(-1, keepdim=True)
        acc = acc * rescale + p @ v
        m = m_new
    return torch.where(total > 0, acc / total.clamp_min(torch.finfo(acc.dtype).tiny), 0.0)


class GroupedQueryAttention(MultiHeadAttention):
    """Multi-head attention whose ``heads`` query heads share ``kv_heads`` key-value heads (Ainslie et al., 2023):
    query head i reads the keys and values of head i // (heads / kv_heads). ``kv_heads = heads`` is Chapter 7's
    multi-head attention, ``kv_heads = 1`` multi-query attention (Shazeer, 2019). W_k and W_v shrink to
    kv_heads · d_head outputs, and so does what a key-value cache keeps per token."""

    def __init__(self, d_model: int, heads: int, kv_heads: int, bias: bool = True, rotary: bool = False):
        super().__init__(d_model, heads, bias, rotary)
        self.kv_heads = validate.kv_heads(heads, kv_heads)
        d_kv = kv_heads * (d_model // heads)
        self.W_k = nn.Linear(d_model, d_kv, bias=bias)
        self.W_v = nn.Linear(d_model, d_kv, bias=bias)

    def project(self, query, key=None, value=None, mask=None):
        """Queries (B, h, T_q, d_head); keys and values (B, h, T_k, d_head), each kv head repeated for its group."""
        key = query if key is None else key
        value = key if value is None else value
        query, key, value, mask = inputs.attention(query, key, value, mask)
        validate.model_width(self, query)
        key, value = inputs.hide(key, mask), inputs.hide(value, mask)  # hidden keys: zeros (0 × NaN would be NaN)
        group = self.heads // self.kv_heads
        q = split_heads(self.W_q(query), self.heads)                                   # (B, h, T_q, d_head)
        k = split_heads(self.W_k(key), self.kv_heads).repeat_interleave(group, dim=1)  # (B, h, T_k, d_head)
        v = split_heads(self.W_v(value), self.kv_heads).repeat_interleave(group, dim=1)
        return q, k, v, mask


def _phi(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.elu(x) + 1          # φ(x) = elu(x) + 1 > 0 (Katharopoulos et al.)


def linear_attention(query, key, value, causal: bool = True) -> torch.Tensor:
    """Σ_j φ(q_i)·φ(k_j) v_j / Σ_j φ(q_i)·φ(k_j) over the keys j ≤ i (all of them unless ``causal``), the parallel
    form used in training. query, key (B, h, T, d), value (B, h, T, d_v) → (B, h, T, d_v)."""
    query = inputs.floats(query, "query")
    key, value = inputs.floats(key, "key", query.device), inputs.floats(value, "value", query.device)
    validate.head_shapes(query, key, value)
    a = _phi(query) @ _phi(key).transpose(-1, -2)                          # (B, h, T_q, T_k), all positive
    if causal:
        a = a.tril(key.shape[-2] - query.shape[-2])
    return (a @ value) / a.sum(-1, keepdim=True)


def linear_attention_step(state, norm, query, key, value):
    """One decoding step of causal linear attention as an RNN: state (B, h, d, d_v) += φ(k) vᵀ, norm (B, h, d) +=
    φ(k), y = φ(q)ᵀ state / φ(q)ᵀ norm; query, key (B, h, d), value (B, h, d_v). → (y, state, norm). Start from
    zeros; the cost of a step does not grow with the number of steps before it."""
    fq, fk = _phi(inputs.floats(query, "query")), _phi(inputs.floats(key, "key"))
    state = state + fk[..., :, None] * value[..., None, :]                # (B, h, d, d_v)
    norm = norm + fk                                                       # (B, h, d)
    y = (fq[..., None, :] @ state)[..., 0, :] / (fq * norm).sum(-1, keepdim=True)
    return y, state, norm
