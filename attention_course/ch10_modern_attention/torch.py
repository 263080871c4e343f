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

from attention_course.ch07_self_attention.torch import (
    MultiHeadAttention,
    causal_mask,
    combined_mask,
    merge_heads,
    rope,
    scaled_dot_product_attention,
    split_heads,
    visible_keys,
)
from attention_course.ch10_modern_attention import validate
from attention_course.ch10_modern_attention.cache import rope_half
from attention_course.ch10_modern_attention.llama2c import Llama2c
from attention_course.core.torch import inputs

__all__ = ["flash_attention", "GroupedQueryAttention", "elu_feature_map", "linear_attention", "linear_attention_step",
           "retention_decays", "LinearAttention", "RMSNorm", "SwiGLU", "LlamaBlock", "Llama", "load_llama2c",
           "window_mask", "MultiHeadLatentAttention"]


def flash_attention(query, key, value, mask=None, causal: bool = False, block: int = 64) -> torch.Tensor:
    """softmax(Q Kᵀ / √d) V, ``block`` keys at a time: each query row keeps a running maximum ``m``, a running sum
    ``l`` of exp(score − m) and a running weighted sum ``acc`` of the values, rescaled by exp(m_old − m_new) when
    the maximum grows; at most (B, h, T_q, block) scores exist at once, never the T_q × T_k matrix.

    query (B, h, T_q, d), key (B, h, T_k, d), value (B, h, T_k, d_v); mask (B, T_k) or (B, T_q, T_k); ``causal``
    hides the keys after each query. → (B, h, T_q, d_v); a query that may see no key gets zeros. The queries, and the
    keys and values some query may see, must be finite (an ``InputError`` names the first that is not); what the mask
    hides is never read."""
    query = inputs.floats(query, "query")
    key, value = inputs.floats(key, "key", query.device), inputs.floats(value, "value", query.device)
    validate.head_shapes(query, key, value, mask)
    (block,) = validate.sizes(block=block)
    t_q, t_k = query.shape[-2], key.shape[-2]
    visible = visible_keys(mask, causal, t_q, t_k, query.device)         # (B or 1, 1, T_q or 1, T_k) or None
    if visible is not None and mask is not None:                         # a pad's key and value: 0 (0 × NaN is NaN)
        seen = visible.any(dim=-2, keepdim=True).transpose(-1, -2)       # (B, 1, T_k, 1)
        key, value = key.masked_fill(~seen, 0.0), value.masked_fill(~seen, 0.0)
    query, key, value = (inputs.finite(x, name) for x, name in ((query, "query"), (key, "key"), (value, "value")))
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
        query, key, value, mask = self.prepare(query, key, value, mask)
        group = self.heads // self.kv_heads
        q = split_heads(self.W_q(query), self.heads)                                   # (B, h, T_q, d_head)
        k = split_heads(self.W_k(key), self.kv_heads).repeat_interleave(group, dim=1)  # (B, h, T_k, d_head)
        v = split_heads(self.W_v(value), self.kv_heads).repeat_interleave(group, dim=1)
        return q, k, v, mask


def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """Linear attention's feature map φ(x) = elu(x) + 1 (Katharopoulos et al., 2020), elementwise: x + 1 where x > 0,
    exp(x) elsewhere, so every feature is positive and so is every product φ(q)·φ(k). x (…, d) → (…, d)."""
    return torch.nn.functional.elu(x) + 1


def linear_attention(query, key, value, causal: bool = True, decay=None, rotary: bool = False,
                     eps: float = 1e-6) -> torch.Tensor:
    """Σ_j φ(q_i)·φ(k_j) v_j / (Σ_j φ(q_i)·φ(k_j) + ε) over the keys j ≤ i (all of them unless ``causal``), the
    parallel form used in training. ``decay`` (h,), each head's γ in (0, 1], weighs key j by γ^(i−j) (RetNet's decay;
    causal only). ``rotary``: rotary positions after the feature map, as RoFormer's linear attention (Su et al., eq.
    19): the numerator's similarities become (R_i φ(q_i))·(R_j φ(k_j)), which depend on i − j alone (the queries are
    the last T_q of the T_k positions); the normaliser keeps φ(q_i)·φ(k_j), unrotated and positive. ``eps``: a query
    whose weights all vanish (keys so negative that φ(k) underflows to 0) gets zeros, not 0 / 0. query, key (B, h,
    T, d), value (B, h, T, d_v), finite (an ``InputError`` names a NaN or inf) → (B, h, T, d_v)."""
    query = inputs.floats(query, "query")
    key, value = inputs.floats(key, "key", query.device), inputs.floats(value, "value", query.device)
    validate.head_shapes(query, key, value)
    validate.decay(decay, query.shape[1], causal)
    query, key, value = (inputs.finite(x, name) for x, name in ((query, "query"), (key, "key"), (value, "value")))
    eps = validate.positive("eps", eps)
    t_q, t_k = query.shape[-2], key.shape[-2]
    fq, fk = elu_feature_map(query), elu_feature_map(key)                  # (B, h, T, d), positive
    a = fq @ fk.transpose(-1, -2)                                          # (B, h, T_q, T_k): the normaliser's
    keep = torch.ones(t_q, t_k, device=a.device)                           # what each query keeps of each key
    if causal:
        keep = keep.tril(t_k - t_q)                                        # the past only
    if decay is not None:                                                  # γ^(i−j): the older, the fainter
        i = torch.arange(t_k - t_q, t_k, device=a.device)
        age = (i[:, None] - torch.arange(t_k, device=a.device)).clamp_min(0)   # (T_q, T_k)
        keep = keep * torch.as_tensor(decay, dtype=a.dtype, device=a.device)[:, None, None] ** age
    a = a * keep
    s = (rope(fq, offset=t_k - t_q) @ rope(fk).transpose(-1, -2)) * keep if rotary else a   # rotated after φ
    return (s @ value) / (a.sum(-1, keepdim=True) + eps)


def linear_attention_step(state, norm, query, key, value, decay=None, position: int | None = None,
                          eps: float = 1e-6):
    """One decoding step of causal linear attention as an RNN: state (B, h, d, d_v) ← γ·state + φ(k) vᵀ, norm (B, h,
    d) ← γ·norm + φ(k), y = φ(q)ᵀ state / (φ(q)ᵀ norm + ε); query, key (B, h, d), value (B, h, d_v); γ is ``decay``
    (h,) or 1. ``position`` (the token's index, an int): rotary positions as ``linear_attention(rotary=True)``, the
    state adds R φ(k) vᵀ and is read with R φ(q), the normaliser stays unrotated. → (y, state, norm). Start from
    zeros; the cost of a step does not grow with the number of steps before it. query, key and value must be finite.
    """
    validate.linear_step(state, norm, query, key, value)
    validate.decay(decay, query.shape[1])
    eps = validate.positive("eps", eps)
    query, key, value = (inputs.finite(inputs.floats(x, name), name)
                         for x, name in ((query, "query"), (key, "key"), (value, "value")))
    fq, fk = elu_feature_map(query), elu_feature_map(key)
    rq, rk = fq, fk
    if position is not None:                                               # rotated after φ, at this position
        position = validate.integer("position", position, minimum=0)
        rq, rk = (rope(x[..., None, :], offset=position)[..., 0, :] for x in (fq, fk))
    if decay is not None:
        gamma = torch.as_tensor(decay, dtype=state.dtype, device=state.device)[:, None]   # (h, 1)
        state, norm = gamma[..., None] * state, gamma * norm
    state = state + rk[..., :, None] * value[..., None, :]                # (B, h, d, d_v)
    norm = norm + fk                                                       # (B, h, d)
    y = (rq[..., None, :] @ state)[..., 0, :] / ((fq * norm).sum(-1, keepdim=True) + eps)
    return y, state, norm


def retention_decays(heads: int) -> torch.Tensor:
    """RetNet's decay per head (Sun et al., 2023): γ_h = 1 − 2^(−5−h), from a memory of about 32 tokens to longer."""
    (heads,) = validate.sizes(heads=heads)
    return 1 - 2.0 ** (-5 - torch.arange(heads, dtype=torch.float32))


class LinearAttention(GroupedQueryAttention):
    """Grouped-query attention with the softmax replaced by ``linear_attention`` (Katharopoulos et al., 2020): the
    same projections, then Σ_j φ(q_i)·φ(k_j) v_j / Σ_j φ(q_i)·φ(k_j) over the keys j ≤ i. Its rotary positions turn
    φ(q) and φ(k), after the feature map, in the numerator only (RoFormer's linear attention), so that a similarity
    depends on the offset of query and key alone; with ``decay=True`` each head forgets at its own rate γ_h
    (``retention_decays``). Causal only, without masks or weights; decoding would carry ``linear_attention_step``'s
    state instead of a cache."""

    def __init__(self, d_model: int, heads: int, kv_heads: int, bias: bool = True, rotary: bool = False,
                 decay: bool = False):
        super().__init__(d_model, heads, kv_heads, bias, rotary)
        self.register_buffer("decay", retention_decays(heads) if decay else None)

    def forward(self, query, key=None, value=None, mask=None, causal: bool = False, return_weights: bool = False,
                padding_mask=None):
        # query (B, T, d_model) → (B, T, d_model); the rotation, if any, comes inside linear_attention, after φ
        mask = combined_mask(mask, padding_mask, query if key is None else key, inputs.device_of(self))
        q, k, v, mask = self.project(query, key, value, mask)         # (B, h, T, d_head) each, not rotated
        return self.attend(q, k, v, mask, causal, return_weights)

    def attend(self, q, k, v, mask=None, causal: bool = False, return_weights: bool = False):
        validate.linear_attend(mask, causal, return_weights)
        out = linear_attention(q, k, v, causal=True, decay=self.decay, rotary=self.rotary)   # (B, h, T, d_head)
        return self.W_o(merge_heads(out))                                                   # (B, T, d_model)


class RMSNorm(nn.Module):
    """x / √(mean(x²) + eps) · γ: LayerNorm without the mean and the bias (Zhang & Sennrich, 2019), as Llama uses."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        (d_model,) = validate.sizes(d_model=d_model)
        self.eps = validate.positive("eps", eps)
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        # x (B, T, d) → (B, T, d)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGLU(nn.Module):
    """Llama's feed-forward block (Shazeer, 2020): W_2 (silu(W_1 x) ⊙ W_3 x), no biases; W_1's branch gates W_3's."""

    def __init__(self, d_model: int, hidden: int):
        super().__init__()
        d_model, hidden = validate.sizes(d_model=d_model, hidden=hidden)
        self.W_1 = nn.Linear(d_model, hidden, bias=False)
        self.W_2 = nn.Linear(hidden, d_model, bias=False)
        self.W_3 = nn.Linear(d_model, hidden, bias=False)

    def forward(self, x):
        # x (B, T, d) → (B, T, d)
        return self.W_2(torch.nn.functional.silu(self.W_1(x)) * self.W_3(x))


class LlamaBlock(nn.Module):
    """A pre-norm decoder block of Llama: x + attention(RMSNorm(x)), then + SwiGLU(RMSNorm(·)); the attention is
    grouped-query with rotary positions and no biases (``linear=True``: ``LinearAttention``, ``decay`` its decay;
    ``latent`` > 0: ``MultiHeadLatentAttention`` of that many latent numbers, its rotary part ``rope_half``)."""

    def __init__(self, d_model: int, heads: int, kv_heads: int, hidden: int, eps: float = 1e-5, linear: bool = False,
                 decay: bool = False, latent: int = 0):
        super().__init__()
        self.norm_1 = RMSNorm(d_model, eps)
        validate.attention_kind(linear, decay, latent)
        if latent:
            self.attention = MultiHeadLatentAttention(d_model, heads, latent, d_rope=rope_half(d_model // heads))
        elif linear:
            self.attention = LinearAttention(d_model, heads, kv_heads, bias=False, rotary=True, decay=decay)
        else:
            self.attention = GroupedQueryAttention(d_model, heads, kv_heads, bias=False, rotary=True)
        self.norm_2 = RMSNorm(d_model, eps)
        self.feed_forward = SwiGLU(d_model, hidden)

    def forward(self, x, mask=None, return_weights: bool = False):
        # x (B, T, d), mask (B or 1, T, T) of the keys each position may see besides the past → (B, T, d)
        out = self.attention(self.norm_1(x), mask=mask, causal=True, return_weights=return_weights)
        attended, weights = out if return_weights else (out, None)
        x = x + attended
        x = x + self.feed_forward(self.norm_2(x))
        return (x, weights) if return_weights else x


class Llama(nn.Module):
    """A decoder-only Llama: token embeddings, ``layers`` ``LlamaBlock`` s, a final RMSNorm, and the embedding
    table again as the output layer (tied). ids (B, T) → logits (B, T, vocab); with ``return_weights`` also each
    layer's attention weights (B, h, T, T). ``linear=True`` uses ``LinearAttention`` in every block (``decay=True``
    with RetNet's decay), ``latent`` > 0 ``MultiHeadLatentAttention``."""

    def __init__(self, vocab: int, d_model: int, heads: int, kv_heads: int, layers: int, hidden: int,
                 max_len: int = 512, eps: float = 1e-5, linear: bool = False, decay: bool = False, latent: int = 0):
        super().__init__()
        vocab, layers, self.max_len = validate.sizes(vocab=vocab, layers=layers, max_len=max_len)
        self.embed = nn.Embedding(vocab, d_model)
        nn.init.normal_(self.embed.weight, std=0.02)     # as llama2.c: N(0, 1) rows make tied logits ~√d too large
        self.blocks = nn.ModuleList(LlamaBlock(d_model, heads, kv_heads, hidden, eps, linear, decay, latent)
                                    for _ in range(layers))
        self.norm = RMSNorm(d_model, eps)

    def forward(self, ids, mask=None, return_weights: bool = False):
        # ids (B, T); mask (B or 1, T, T), e.g. a window_mask: what each position may see besides its past
        ids = inputs.ids(ids, "ids", self.embed, length=self.max_len)
        x, weights = self.embed(ids), []                                      # (B, T, d)
        for block in self.blocks:
            out = block(x, mask=mask, return_weights=return_weights)
            x, w = out if return_weights else (out, None)
            weights.append(w)
        logits = self.norm(x) @ self.embed.weight.T                           # (B, T, vocab), tied
        return (logits, weights) if return_weights else logits


def load_llama2c(checkpoint: Llama2c) -> Llama:
    """The course's ``Llama`` holding a llama2.c checkpoint's weights (``llama2c.read_checkpoint``), in eval mode.
    llama2.c stores matrices (out, in) as ``nn.Linear`` does, and rotates adjacent pairs as Chapter 7's ``rope``."""
    c, w = checkpoint.config, checkpoint.weights
    model = Llama(c["vocab_size"], c["dim"], c["n_heads"], c["n_kv_heads"], c["n_layers"], c["hidden_dim"],
                  c["seq_len"])
    if not c["shared_classifier"]:
        raise validate.ConfigError("this checkpoint has its own output layer; the course's Llama ties it to the "
                                   "embedding")
    with torch.no_grad():
        model.embed.weight.copy_(torch.as_tensor(w["token_embedding"]))
        model.norm.weight.copy_(torch.as_tensor(w["rms_final"]))
        for i, block in enumerate(model.blocks):
            block.norm_1.weight.copy_(torch.as_tensor(w["rms_att"][i]))
            block.norm_2.weight.copy_(torch.as_tensor(w["rms_ffn"][i]))
            for ours, theirs in (("W_q", "wq"), ("W_k", "wk"), ("W_v", "wv"), ("W_o", "wo")):
                getattr(block.attention, ours).weight.copy_(torch.as_tensor(w[theirs][i]))
            for ours, theirs in (("W_1", "w1"), ("W_2", "w2"), ("W_3", "w3")):
                getattr(block.feed_forward, ours).weight.copy_(torch.as_tensor(w[theirs][i]))
    return model.eval()


def window_mask(t_q: int, t_k: int | None = None, window: int = 64, sinks: int = 0, device=None) -> torch.Tensor:
    """(1, T_q, T_k) bool, True where a query may see a key: sliding-window attention (Longformer; Mistral) lets the
    query at position p = i + T_k − T_q see the ``window`` keys p − window + 1 … p, and with ``sinks`` also the
    first ``sinks`` keys of the sequence (StreamingLLM's attention sinks). Stacked, L layers see L · (window − 1)
    positions back."""
    t_k = t_q if t_k is None else t_k
    window, sinks = validate.integer("window", window), validate.integer("sinks", sinks, minimum=0)
    past = causal_mask(t_q, t_k, device)                                           # (1, T_q, T_k)
    position = torch.arange(t_q, device=device)[:, None] + (t_k - t_q)             # (T_q, 1)
    key = torch.arange(t_k, device=device)[None, :]                                 # (1, T_k)
    return past & ((key > position - window) | (key < sinks))[None]


class MultiHeadLatentAttention(nn.Module):
    """DeepSeek-V2's multi-head latent attention: each token is compressed to one latent vector c = W_dkv x of
    ``d_latent`` numbers, which a cache keeps; every head's key and value are projected back from it, k_h = W_uk,h c
    and v_h = W_uv,h c. ``absorbed=True`` computes the same output without forming them: q_hᵀ k_h = (W_uk,hᵀ q_h)ᵀ c,
    so each query moves into the latent space once, attends over the latent vectors, and W_uv,h is applied to the
    mixed latent afterwards. Rotary positions cannot turn k_h (a rotation between W_uk,h and q_h would stop the
    absorption), so ``d_rope`` > 0 adds DeepSeek-V2's decoupled part: each head's query gets ``d_rope`` rotated
    numbers more, matched by one rotated key of ``d_rope`` numbers per token, shared by the heads and cached beside
    the latent."""

    def __init__(self, d_model: int, heads: int, d_latent: int, bias: bool = False, d_rope: int = 0):
        super().__init__()
        validate.heads(d_model, heads)
        (self.d_latent,) = validate.sizes(d_latent=d_latent)
        self.d_model, self.heads, self.d_rope = d_model, heads, validate.rope_width(d_rope)
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_dkv = nn.Linear(d_model, d_latent, bias=bias)          # down: token → latent (cached)
        self.W_uk = nn.Linear(d_latent, d_model, bias=False)           # up: latent → every head's key
        self.W_uv = nn.Linear(d_latent, d_model, bias=False)           # up: latent → every head's value
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        if d_rope:
            self.W_qr = nn.Linear(d_model, heads * d_rope, bias=bias)  # a rotary query per head
            self.W_kr = nn.Linear(d_model, d_rope, bias=bias)          # one rotary key for all heads (cached)

    def forward(self, x, mask=None, causal: bool = False, absorbed: bool = False, return_weights: bool = False,
                padding_mask=None):
        # x (B, T, d_model) → (B, T, d_model) [, weights (B, h, T, T)]; mask (B or 1, T or 1, T): the keys each
        # query may see; padding_mask (B, T): the tokens that are real
        x = inputs.floats(x, "x")
        validate.model_width(self, x)
        mask = combined_mask(mask, padding_mask, x, x.device)                   # (B or 1, T or 1, T) or None
        validate.attention_shapes(x, x, x, mask)
        hidden = inputs.hide(x, mask)            # the tokens no query sees: zeros before any product (0 × NaN = NaN)
        q = split_heads(self.W_q(x), self.heads)                                    # (B, h, T, d_head)
        c = self.W_dkv(hidden)                                                       # (B, T, d_latent)
        d_head = self.d_model // self.heads
        if absorbed:
            w_uk = self.W_uk.weight.view(self.heads, d_head, self.d_latent)        # (h, d_head, d_latent)
            q, k = q @ w_uk, c[:, None].expand(-1, self.heads, -1, -1)          # (B, h, T, d_latent) each
            v = k                                                                # the latent, shared by the heads
        else:
            k, v = split_heads(self.W_uk(c), self.heads), split_heads(self.W_uv(c), self.heads)
        if self.d_rope:                                                          # the decoupled rotary part
            q = torch.cat([q, rope(split_heads(self.W_qr(x), self.heads))], -1)
            k = torch.cat([k, rope(self.W_kr(hidden)[:, None]).expand(-1, self.heads, -1, -1)], -1)
        # the scores are divided by √(d_head + d_rope) in both forms
        q = q * (q.shape[-1] / (d_head + self.d_rope)) ** 0.5
        out = scaled_dot_product_attention(q, k, v, mask, causal, return_weights)
        mixed, weights = out if return_weights else (out, None)                  # (B, h, T, d_head or d_latent)
        if absorbed:                                                             # W_uv,h after the mix
            mixed = mixed @ self.W_uv.weight.view(self.heads, d_head, self.d_latent).transpose(-1, -2)
        out = self.W_o(merge_heads(mixed))
        return (out, weights) if return_weights else out
