"""Chapter 7 in PyTorch: scaled dot-product attention over heads (a fused path, and an explicit one that returns
the weights), single-head self-attention, multi-head attention, and three ways to give positions; then two small
networks that test what a mixing layer can do: ``RecallNet`` recalls a value stored far back (self-attention, a
GRU or a convolution mixes the sequence) and ``LookbackNet`` names the symbols a fixed number of steps back, which
only a layer that knows positions can do. Same names and signatures as ``keras.py`` beside it.

Shapes: B batch, h heads, T_q queries, T_k keys, d_head features per head, d_model = h · d_head. Masks say True
(or 1) where a key may be attended: ``mask`` (B or 1, T_q or 1, T_k), the keys each query may see, and
``padding_mask`` (B, T_k), the keys that are real tokens. A 2-D ``mask`` is refused: (B, T_k) and (T_q, T_k) would
look alike when B = T_q.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attention_course.ch07_self_attention import validate
from attention_course.core.torch import inputs

__all__ = ["causal_mask", "scaled_dot_product_attention", "split_heads", "merge_heads", "SelfAttention",
           "MultiHeadAttention", "as_framework_layer", "from_framework_layer", "SinusoidalPositions",
           "LearnedPositions", "rope", "MIXERS", "POSITIONS", "CausalConv", "RecallNet", "LookbackNet"]


def causal_mask(t_q: int, t_k: int | None = None, device=None) -> torch.Tensor:
    """(1, T_q, T_k) bool, True where query i may see key j: j ≤ i + T_k − T_q (the queries are the last T_q
    positions of the sequence, so a decoder step that has T_k − T_q earlier keys sees them all). The leading 1 is
    the batch: the mask holds for every example, and it cannot be mistaken for a (batch, T_k) padding mask."""
    t_q, t_k = validate.sizes(t_q=t_q, t_k=t_q if t_k is None else t_k)
    return torch.ones(t_q, t_k, dtype=torch.bool, device=device).tril(t_k - t_q)[None]


def combined_mask(mask=None, padding_mask=None, keys=None, device=None) -> torch.Tensor | None:
    """One bool mask (B or 1, T_q or 1, T_k) of the keys each query may see, or None: ``mask`` (B or 1, T_q or 1,
    T_k) and ``padding_mask`` (B, T_k), the keys that are real tokens (of ``keys``, (B, T_k, d) or (B, h, T_k, d))."""
    mask = None if mask is None else inputs.tensor(mask, "mask", device)
    padding = None if padding_mask is None else inputs.tensor(padding_mask, "padding_mask", device)
    validate.masks(mask, padding, keys)                               # a 2-D mask is refused: padding or (T_q, T_k)?
    mask, padding = inputs.bool_mask(mask), inputs.bool_mask(padding, "padding_mask")
    if padding is None:
        return mask
    padding = padding[:, None, :]                                     # (B, 1, T_k): the same for every query
    return padding if mask is None else mask & padding


def visible_keys(mask, causal: bool, t_q: int, t_k: int, device) -> torch.Tensor | None:
    """The keys each query may see, as bool (B or 1, 1, T_q or 1, T_k), or None when it may see them all."""
    visible = None
    if mask is not None:
        mask = inputs.bool_mask(inputs.tensor(mask, "mask", device))
        visible = mask[:, None, None, :] if mask.dim() == 2 else mask[:, None]      # (B, 1, 1|T_q, T_k)
    if causal:
        future = causal_mask(t_q, t_k, device)[:, None]                             # (1, 1, T_q, T_k)
        visible = future if visible is None else visible & future
    return visible


def scaled_dot_product_attention(query, key, value, mask=None, causal: bool = False, return_weights: bool = False,
                                 padding_mask=None):
    """softmax(Q Kᵀ / √d_head) V for every head at once.

    query (B, h, T_q, d_head), key (B, h, T_k, d_head), value (B, h, T_k, d_v); mask (B or 1, T_q or 1, T_k), the
    keys each query may see; padding_mask (B, T_k), the keys that are real tokens; ``causal`` hides the keys after
    each query. Without ``return_weights`` the fused kernel runs (``F.scaled_dot_product_attention``); with it, the
    explicit softmax, which also returns the weights (B, h, T_q, T_k). A query that may see no key gets zeros on
    both paths, never NaN.
    """
    query = inputs.floats(query, "query")
    key, value = inputs.floats(key, "key", query.device), inputs.floats(value, "value", query.device)
    mask = combined_mask(mask, padding_mask, key, query.device)       # (B or 1, T_q or 1, T_k) bool, or None
    validate.head_shapes(query, key, value, mask)
    t_q, t_k = query.shape[-2], key.shape[-2]
    if not return_weights and mask is None and causal and t_q == t_k:
        return F.scaled_dot_product_attention(query, key, value, is_causal=True)   # the kernel's own causal path
    visible = visible_keys(mask, causal, t_q, t_k, query.device)
    if not return_weights:
        out = F.scaled_dot_product_attention(query, key, value, attn_mask=visible)  # fused: weights never stored
        return out if visible is None else out.masked_fill(~visible.any(-1, keepdim=True), 0.0)
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])              # (B, h, T_q, T_k)
    if visible is not None:
        scores = scores.masked_fill(~visible, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)                                          # rows sum to 1
    if visible is not None:
        weights = weights * visible                                                  # a row that sees nothing: 0
    return weights @ value, weights                                                  # (B, h, T_q, d_v)


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """(B, T, h · d_head) → (B, h, T, d_head): head i takes features i·d_head … (i+1)·d_head − 1."""
    validate.split(x, heads)
    b, t, d = x.shape
    return x.view(b, t, heads, d // heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, h, T, d_head) → (B, T, h · d_head), the inverse of ``split_heads``."""
    validate.merge(x)
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


class SelfAttention(nn.Module):
    """One head: every position of x asks (query), offers (key) and gives (value), all linear maps of x."""

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.d_in, self.d_out = validate.sizes(d_in=d_in, d_out=d_out)
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x, mask=None, causal: bool = False, return_weights: bool = False, padding_mask=None):
        # x (B, T, d_in) → context (B, T, d_out) [, weights (B, T, T)]; mask (B or 1, T or 1, T), padding_mask (B, T)
        x, _, _, mask = inputs.attention(x, x, x, combined_mask(mask, padding_mask, x, inputs.device_of(self)))
        validate.sequence_shapes("SelfAttention", x, features=self.d_in)
        q, k, v = (w(x)[:, None] for w in (self.W_query, self.W_key, self.W_value))   # (B, 1, T, d_out)
        out = scaled_dot_product_attention(q, k, v, mask, causal, return_weights)
        return (out[0][:, 0], out[1][:, 0]) if return_weights else out[:, 0]


class MultiHeadAttention(nn.Module):
    """h heads of scaled dot-product attention side by side, each on its own d_model/h-sized projections,
    concatenated and mixed by W_o. ``rotary=True`` rotates each head's queries and keys by position (RoPE)."""

    def __init__(self, d_model: int, heads: int, bias: bool = True, rotary: bool = False):
        super().__init__()
        validate.heads(d_model, heads, rotary)
        self.d_model, self.heads, self.rotary = d_model, heads, rotary
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key=None, value=None, mask=None, causal: bool = False, return_weights: bool = False,
                padding_mask=None):
        # query (B, T_q, d_model); key, value (B, T_k, d_model), default: the query (self-attention);
        # mask (B or 1, T_q or 1, T_k): the keys each query may see; padding_mask (B, T_k): the keys that are tokens
        mask = combined_mask(mask, padding_mask, query if key is None else key, inputs.device_of(self))
        q, k, v, mask = self.project(query, key, value, mask)         # (B, h, T_q or T_k, d_head) each
        if self.rotary:
            q, k = rope(q, offset=k.shape[-2] - q.shape[-2]), rope(k)
        return self.attend(q, k, v, mask, causal, return_weights)

    def project(self, query, key=None, value=None, mask=None):
        """Each head's queries (B, h, T_q, d_head), keys and values (B, h, T_k, d_head), and the mask as bool."""
        query, key, value, mask = self.prepare(query, key, value, mask)
        q = split_heads(self.W_q(query), self.heads)                  # (B, h, T_q, d_head)
        k = split_heads(self.W_k(key), self.heads)                    # (B, h, T_k, d_head)
        v = split_heads(self.W_v(value), self.heads)                  # (B, h, T_k, d_head)
        return q, k, v, mask

    def prepare(self, query, key=None, value=None, mask=None):
        """The inputs checked: key defaults to the query, value to the key; float tensors of the model's width; the
        mask as bool; hidden keys and values set to zero (0 × NaN would be NaN)."""
        key = query if key is None else key
        value = key if value is None else value
        query, key, value, mask = inputs.attention(query, key, value, mask)
        validate.model_width(self, query)
        return query, inputs.hide(key, mask), inputs.hide(value, mask), mask

    def attend(self, q, k, v, mask=None, causal: bool = False, return_weights: bool = False):
        """Every head attends; the heads are concatenated and mixed by W_o → (B, T_q, d_model) [, weights]."""
        out = scaled_dot_product_attention(q, k, v, mask, causal, return_weights)
        context, weights = out if return_weights else (out, None)
        context = self.W_o(merge_heads(context))                      # (B, T_q, d_model)
        return (context, weights) if return_weights else context


def as_framework_layer(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """PyTorch's own ``nn.MultiheadAttention`` (batch first) holding ``mha``'s weights: W_q, W_k, W_v stacked
    into ``in_proj_weight``, W_o as ``out_proj``. Its masks are the opposite of the course's (True = hidden)."""
    layer = nn.MultiheadAttention(mha.d_model, mha.heads, bias=mha.W_q.bias is not None, batch_first=True)
    layer.to(mha.W_q.weight.device)
    with torch.no_grad():
        layer.in_proj_weight.copy_(torch.cat([mha.W_q.weight, mha.W_k.weight, mha.W_v.weight]))   # (3d, d)
        layer.out_proj.weight.copy_(mha.W_o.weight)
        if mha.W_q.bias is not None:
            layer.in_proj_bias.copy_(torch.cat([mha.W_q.bias, mha.W_k.bias, mha.W_v.bias]))
            layer.out_proj.bias.copy_(mha.W_o.bias)
    return layer


def from_framework_layer(layer: nn.MultiheadAttention) -> MultiHeadAttention:
    """The course's ``MultiHeadAttention`` with the weights of PyTorch's ``nn.MultiheadAttention`` (the inverse of
    ``as_framework_layer``; the layer's query, key and value sizes must all be its embed_dim)."""
    if not layer._qkv_same_embed_dim:
        raise ValueError("only nn.MultiheadAttention with kdim = vdim = embed_dim is converted")
    bias = layer.in_proj_bias is not None
    mha = MultiHeadAttention(layer.embed_dim, layer.num_heads, bias=bias).to(layer.in_proj_weight.device)
    with torch.no_grad():
        for w, part in zip((mha.W_q, mha.W_k, mha.W_v), layer.in_proj_weight.chunk(3), strict=True):
            w.weight.copy_(part)
        mha.W_o.weight.copy_(layer.out_proj.weight)
        if bias:
            for w, part in zip((mha.W_q, mha.W_k, mha.W_v), layer.in_proj_bias.chunk(3), strict=True):
                w.bias.copy_(part)
            mha.W_o.bias.copy_(layer.out_proj.bias)
    return mha


def sinusoids(t: int, d: int, device=None) -> torch.Tensor:
    """(T, d): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d))."""
    position = torch.arange(t, dtype=torch.float32, device=device)[:, None]          # (T, 1)
    rate = torch.exp(torch.arange(0, d, 2, dtype=torch.float32, device=device) * (-math.log(10000.0) / d))
    table = torch.zeros(t, d, device=device)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate[: d // 2])
    return table


class SinusoidalPositions(nn.Module):
    """Vaswani et al.'s fixed encodings, added to x: nothing to learn, defined for any length."""

    def __init__(self, d_model: int):
        super().__init__()
        (self.d_model,) = validate.sizes(d_model=d_model)

    def forward(self, x):
        # x (B, T, d_model) → x + PE[:T]
        x = inputs.floats(x, "x")
        validate.model_width(self, x)
        return x + sinusoids(x.shape[1], self.d_model, x.device)


class LearnedPositions(nn.Module):
    """One trained vector per position, added to x (BERT, GPT-2): positions ≥ ``max_len`` have none."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len, self.d_model = validate.sizes(max_len=max_len, d_model=d_model)
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, x):
        # x (B, T, d_model) → x + E[:T]
        x = inputs.floats(x, "x", self.table.weight.device)
        validate.model_width(self, x)
        validate.positions(x.shape[1], self.max_len)
        return x + self.table.weight[: x.shape[1]]


def rope(x, offset: int = 0, base: float = 10000.0):
    """Rotary position embedding (Su et al.): rotate each pair of features (2i, 2i+1) of position p by the angle
    (p + offset) · base^(−2i/d). x (B, h, T, d) with d even → the same shape. The dot product of a rotated query at
    p and a rotated key at p' then depends on p − p' only."""
    x = inputs.floats(x, "x")
    validate.rope_shape(validate.shape_of(x))
    t, d = x.shape[-2], x.shape[-1]
    rate = base ** (-torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)    # (d/2,)
    angle = (torch.arange(t, dtype=torch.float32, device=x.device) + offset)[:, None] * rate   # (T, d/2)
    cos, sin = torch.cos(angle), torch.sin(angle)
    even, odd = x[..., 0::2], x[..., 1::2]                                           # (B, h, T, d/2)
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


MIXERS = ("attention", "gru", "conv")


POSITIONS = ("none", "sinusoidal", "learned", "rotary")


class CausalConv(nn.Module):
    """``layers`` convolutions of width ``kernel``, each seeing only the current and earlier positions (the input
    is padded on the left), with ReLU between: position t sees t − layers·(kernel − 1) … t."""

    def __init__(self, d_model: int, kernel: int = 3, layers: int = 3):
        super().__init__()
        self.d_model, self.kernel, self.layers = validate.sizes(d_model=d_model, kernel=kernel, layers=layers)
        for i in range(layers):
            setattr(self, f"conv{i}", nn.Conv1d(d_model, d_model, kernel))

    def forward(self, x):
        # x (B, T, d_model) → (B, T, d_model)
        x = inputs.floats(x, "x", self.conv0.weight.device)
        validate.model_width(self, x)
        h = x.transpose(1, 2)                                         # (B, d_model, T): channels first
        for i in range(self.layers):
            h = F.relu(getattr(self, f"conv{i}")(F.pad(h, (self.kernel - 1, 0))))   # pad the past only
        return h.transpose(1, 2)


class RecallNet(nn.Module):
    """Embed the symbols, mix the sequence with ``mixer`` ("attention": multi-head self-attention with RoPE,
    "gru" or "conv": a causal convolution), and classify the last position, the query. Everything but the mixer
    is the same in the three."""

    def __init__(self, mixer: str, vocab: int, n_classes: int, d_model: int = 64, heads: int = 4):
        super().__init__()
        validate.choice("mixer", mixer, MIXERS)
        self.mixer_name = mixer
        self.embedding = nn.Embedding(vocab, d_model)
        if mixer == "attention":
            self.mixer = MultiHeadAttention(d_model, heads, rotary=True)     # positions: RoPE
        elif mixer == "gru":
            self.mixer = nn.GRU(d_model, d_model, batch_first=True)
        else:
            self.mixer = CausalConv(d_model)
        self.hidden = nn.Linear(d_model, 2 * d_model)
        self.readout = nn.Linear(2 * d_model, n_classes)

    def forward(self, ids):
        # ids (B, T) → logits (B, n_classes), read at the last position
        ids = inputs.ids(ids, "ids", self.embedding)
        x = self.embedding(ids)                                        # (B, T, d_model)
        mixed = self.mixer(x)[0] if self.mixer_name == "gru" else self.mixer(x)
        return self.readout(F.relu(self.hidden(x[:, -1] + mixed[:, -1])))     # (B, n_classes)


class LookbackNet(nn.Module):
    """Embed symbols, add positions (``positions``: "none", "sinusoidal", "learned" or "rotary"), one causal
    multi-head self-attention with a residual connection, and a classifier at every position."""

    def __init__(self, positions: str, n_symbols: int, n_classes: int, d_model: int = 32, heads: int = 2,
                 max_len: int = 64):
        super().__init__()
        validate.choice("positions", positions, POSITIONS)
        self.positions = positions
        self.embedding = nn.Embedding(n_symbols, d_model)
        self.add_positions = {"sinusoidal": lambda: SinusoidalPositions(d_model),
                              "learned": lambda: LearnedPositions(max_len, d_model)}.get(positions, nn.Identity)()
        self.attention = MultiHeadAttention(d_model, heads, rotary=positions == "rotary")
        self.readout = nn.Linear(d_model, n_classes)

    def forward(self, ids, return_weights: bool = False):
        # ids (B, T) → logits (B, T, n_classes) [, weights (B, heads, T, T)]
        ids = inputs.ids(ids, "ids", self.embedding)
        x = self.add_positions(self.embedding(ids))                    # (B, T, d_model)
        out = self.attention(x, causal=True, return_weights=return_weights)
        mixed, weights = out if return_weights else (out, None)
        logits = self.readout(x + mixed)                               # (B, T, n_classes)
        return (logits, weights) if return_weights else logits
