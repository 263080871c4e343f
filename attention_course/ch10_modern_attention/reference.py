"""Chapter 10's computations in plain NumPy, the references the framework layers are tested against.

``online_softmax``: the softmax in one pass over the scores, with a running maximum and a running sum (Milakov &
Gimelshein, 2018). ``flash_attention``: attention computed block by block over the keys with that running maximum
and sum, never holding the T_q × T_k matrix of weights (Dao et al., 2022; the loop order of FlashAttention-2:
queries outside, keys inside). ``llama_forward``: the forward pass of a llama2.c model (RMSNorm, rotary positions
on adjacent pairs, grouped-query attention, SwiGLU), as ``run.c`` computes it, for a whole sequence at once.
``linear_attention`` and ``linear_attention_recurrent``: attention with a kernel feature map instead of the softmax
(Katharopoulos et al., 2020), in its parallel form for training and its recurrent form for decoding, which carries
a d × d_v matrix and a d-vector from step to step.

Shapes: B batch, h heads, T_q queries, T_k keys, d per head. Masks are True where a key may be attended.
"""

from __future__ import annotations

import numpy as np

from attention_course.ch10_modern_attention.llama2c import Llama2c

__all__ = ["LINEAR_EPS", "elu_feature_map", "explicit_attention", "flash_attention", "linear_attention",
           "linear_attention_recurrent", "llama_forward", "online_softmax", "rope_tables", "rotate", "softmax"]


def softmax(x: np.ndarray) -> np.ndarray:
    """The softmax over the last axis, the usual two-pass way: subtract the maximum, exponentiate, divide."""
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def online_softmax(x: np.ndarray, block: int = 1) -> np.ndarray:
    """The softmax over the last axis with its normaliser found in one pass, ``block`` entries at a time: the running
    maximum ``m`` and the running sum ``l`` of exp(x − m) are rescaled by exp(m_old − m_new) whenever the maximum
    grows, so no entry is read twice to find them."""
    m = np.full(x.shape[:-1] + (1,), -np.inf)                  # running maximum
    total = np.zeros(x.shape[:-1] + (1,))                        # running sum of exp(x - m)
    for start in range(0, x.shape[-1], block):
        part = x[..., start:start + block]
        m_new = np.maximum(m, part.max(-1, keepdims=True))
        total = total * np.exp(m - m_new) + np.exp(part - m_new).sum(-1, keepdims=True)
        m = m_new
    return np.exp(x - m) / total


def explicit_attention(q, k, v, mask=None, causal: bool = False) -> np.ndarray:
    """softmax(q kᵀ / √d) v with the whole (…, T_q, T_k) matrix of weights. q (…, T_q, d), k (…, T_k, d),
    v (…, T_k, d_v), mask (…, T_k) or (…, T_q, T_k); ``causal``: query i sees keys 0 … i + (T_k − T_q)."""
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    keep = _keep(scores.shape, mask, causal)
    scores = np.where(keep, scores, -np.inf)
    top = scores.max(-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0))
    total = e.sum(-1, keepdims=True)
    weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)       # a row with no key: zeros
    return weights @ v


def _keep(shape, mask, causal: bool) -> np.ndarray:
    t_q, t_k = shape[-2:]
    keep = np.ones(shape, bool)
    if mask is not None:
        mask = np.asarray(mask, bool)
        keep &= mask[..., None, :] if mask.ndim == len(shape) - 1 else mask
    if causal:
        keep &= np.tril(np.ones((t_q, t_k), bool), t_k - t_q)
    return keep


def flash_attention(q, k, v, mask=None, causal: bool = False, block: int = 16) -> np.ndarray:
    """The same output as ``explicit_attention``, computed ``block`` keys at a time: for each query row it keeps the
    running maximum ``m``, the running sum ``l`` and the running weighted sum of values ``acc``, rescales them when
    the maximum grows, and divides by ``l`` once at the end; at most (…, T_q, block) scores exist at any time."""
    t_q, t_k = q.shape[-2], k.shape[-2]
    scale = 1 / np.sqrt(q.shape[-1])
    m = np.full(q.shape[:-1] + (1,), -np.inf)
    total = np.zeros(q.shape[:-1] + (1,))
    acc = np.zeros(q.shape[:-1] + (v.shape[-1],))
    for start in range(0, t_k, block):
        stop = min(start + block, t_k)
        s = q @ np.swapaxes(k[..., start:stop, :], -1, -2) * scale                   # (…, T_q, block)
        keep = _keep(s.shape, None if mask is None else _block_mask(mask, start, stop), False)
        if causal:
            keep &= (np.arange(start, stop)[None, :] <= np.arange(t_q)[:, None] + (t_k - t_q))
        s = np.where(keep, s, -np.inf)
        m_new = np.maximum(m, s.max(-1, keepdims=True))
        safe = np.where(np.isfinite(m_new), m_new, 0)                                # all hidden so far
        p = np.exp(s - safe)
        rescale = np.exp(np.where(np.isfinite(m), m - safe, -np.inf))
        total = total * rescale + p.sum(-1, keepdims=True)
        acc = acc * rescale + p @ v[..., start:stop, :]
        m = m_new
    return np.divide(acc, total, out=np.zeros_like(acc), where=total > 0)


def _block_mask(mask, start: int, stop: int):
    mask = np.asarray(mask, bool)
    return mask[..., start:stop]


def rope_tables(positions: int, head_dim: int, theta: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin (positions, head_dim / 2) of the rotation of pair i at position p by p / θ^(2i / head_dim)."""
    freq = 1.0 / theta ** (np.arange(0, head_dim, 2) / head_dim)
    angle = np.arange(positions)[:, None] * freq[None, :]
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


def _rotate_pairs(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotate adjacent pairs (x0, x1), (x2, x3), … of the last axis; x (T, heads, hd), cos/sin (T, hd/2)."""
    even, odd = x[..., 0::2], x[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    out = np.empty_like(x)
    out[..., 0::2] = even * c - odd * s
    out[..., 1::2] = even * s + odd * c
    return out


def _rms(x: np.ndarray, w: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def llama_forward(model: Llama2c, tokens) -> np.ndarray:
    """The logits (T, V) of a llama2.c model for the token ids ``tokens`` (T,), every position at once."""
    c, w = model.config, model.weights
    n_h, n_kv, hd = c["n_heads"], c["n_kv_heads"], c["head_dim"]
    tokens = np.asarray(tokens)
    t = len(tokens)
    cos, sin = rope_tables(t, hd)
    x = w["token_embedding"][tokens].astype(np.float64)                             # (T, d)
    for layer in range(c["n_layers"]):
        h = _rms(x, w["rms_att"][layer])
        q = (h @ w["wq"][layer].T).reshape(t, n_h, hd)
        k = (h @ w["wk"][layer].T).reshape(t, n_kv, hd)
        v = (h @ w["wv"][layer].T).reshape(t, n_kv, hd)
        q, k = _rotate_pairs(q, cos, sin), _rotate_pairs(k, cos, sin)
        group = n_h // n_kv                                                           # query heads per kv head
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)               # (T, h, hd)
        out = explicit_attention(q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2), causal=True)
        x = x + out.transpose(1, 0, 2).reshape(t, -1) @ w["wo"][layer].T
        h = _rms(x, w["rms_ffn"][layer])
        gate = h @ w["w1"][layer].T
        x = x + (gate / (1 + np.exp(-gate)) * (h @ w["w3"][layer].T)) @ w["w2"][layer].T   # SwiGLU
    return _rms(x, w["rms_final"]) @ w["wcls"].T


def elu_feature_map(x: np.ndarray) -> np.ndarray:
    """φ(x) = elu(x) + 1, Katharopoulos et al.'s feature map: positive, so the weights φ(q)·φ(k) are too."""
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def rotate(x: np.ndarray, offset: int = 0, base: float = 10000.0) -> np.ndarray:
    """Chapter 7's ``rope`` in NumPy: each pair of features (2i, 2i+1) of position p turned by the angle
    (p + offset) · base^(−2i/d). x (…, T, d) with d even → the same shape."""
    t, d = x.shape[-2:]
    angle = (np.arange(t) + offset)[:, None] * base ** (-np.arange(0, d, 2) / d)             # (T, d/2)
    cos, sin = np.cos(angle), np.sin(angle)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty(x.shape, dtype=np.result_type(x, np.float64))
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


#: What linear attention adds to its normaliser, so that a query whose weights all vanish (a zero state, keys so
#: negative that φ(k) underflows) gets zeros rather than 0 / 0 (Katharopoulos et al.'s code adds the same 1e-6).
LINEAR_EPS = 1e-6


def linear_attention(q, k, v, causal: bool = True, decay=None, rotary: bool = False,
                     eps: float = LINEAR_EPS) -> np.ndarray:
    """Σ_j φ(q_i)·φ(k_j) v_j / (Σ_j φ(q_i)·φ(k_j) + ε), over all j (or j ≤ i + T_k − T_q when ``causal``), computed in
    parallel: the (…, T_q, T_k) matrix of similarities, masked to the past, then normalised by its row sums.
    ``decay`` (h,) weighs key j of head h by γ_h^(i−j) (q, k, v (…, h, T, d), causal). ``rotary``: RoFormer's linear
    attention (Su et al., eq. 19): the numerator's similarities are (R_i φ(q_i))·(R_j φ(k_j)), φ rotated by
    position after the feature map (the queries are the last T_q of T_k positions), so that they depend on i − j
    alone; the normaliser keeps φ(q_i)·φ(k_j) unrotated, positive."""
    fq, fk = elu_feature_map(q), elu_feature_map(k)
    t_q, t_k = q.shape[-2], k.shape[-2]
    a = fq @ np.swapaxes(fk, -1, -2)                                               # (…, T_q, T_k), positive
    s = rotate(fq, t_k - t_q) @ np.swapaxes(rotate(fk), -1, -2) if rotary else a   # the numerator's
    factor = np.ones((t_q, t_k))
    if causal:
        factor = np.tril(factor, t_k - t_q)
    if decay is not None:
        i = np.arange(t_k - t_q, t_k)
        factor = factor * np.asarray(decay)[:, None, None] ** np.maximum(i[:, None] - np.arange(t_k)[None, :], 0)
    return ((s * factor) @ v) / ((a * factor).sum(-1, keepdims=True) + eps)


def linear_attention_recurrent(q, k, v, decay=None, rotary: bool = False, eps: float = LINEAR_EPS) -> np.ndarray:
    """The causal ``linear_attention`` one step at a time, as an RNN: the state S_t = γ S_{t−1} + φ(k_t) v_tᵀ (d × d_v)
    and z_t = γ z_{t−1} + φ(k_t) (d) are all that is kept of the past; y_t = φ(q_t)ᵀ S_t / (φ(q_t)ᵀ z_t + ε). γ is 1,
    or each head's ``decay`` (h,) for q, k, v (…, h, T, d). ``rotary``: the state adds R_t φ(k_t) v_tᵀ and is read
    with R_t φ(q_t), the normaliser stays unrotated (RoFormer's linear attention)."""
    fq, fk = elu_feature_map(q), elu_feature_map(k)
    rq, rk = (rotate(fq), rotate(fk)) if rotary else (fq, fk)
    gamma = np.asarray(1.0) if decay is None else np.asarray(decay)[:, None]       # (h, 1)
    state = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
    norm = np.zeros(q.shape[:-2] + (q.shape[-1],))
    out = np.empty(q.shape[:-1] + (v.shape[-1],))
    for t in range(q.shape[-2]):
        state = gamma[..., None] * state + rk[..., t, :, None] * v[..., t, None, :]
        norm = gamma * norm + fk[..., t, :]
        out[..., t, :] = ((rq[..., t, None, :] @ state)[..., 0, :]
                          / ((fq[..., t, :] * norm).sum(-1, keepdims=True) + eps))
    return out
