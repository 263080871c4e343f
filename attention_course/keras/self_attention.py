"""Chapter 7's layers in Keras 3: scaled dot-product attention over heads (a fused path, and an explicit one that
returns the weights), single-head self-attention, multi-head attention, and three ways to give positions.
Same names and signatures as ``attention_course.torch.self_attention``.

Shapes: B batch, h heads, T_q queries, T_k keys, d_head features per head, d_model = h · d_head. Masks say True
(or 1) where a key may be attended: a key mask (B, T_k) or a full mask (B, T_q, T_k).
"""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import layers, ops

from .. import validate
from . import inputs
from .base import BuildOnCall, Layer

__all__ = ["causal_mask", "scaled_dot_product_attention", "split_heads", "merge_heads", "SelfAttention",
           "KVCache", "MultiHeadAttention", "as_framework_layer", "from_framework_layer", "SinusoidalPositions",
           "LearnedPositions", "rope"]


def causal_mask(t_q: int, t_k: int | None = None):
    """(T_q, T_k) bool, True where query i may see key j: j ≤ i + T_k − T_q (the queries are the last T_q
    positions of the sequence, so a decoder step that has T_k − T_q earlier keys sees them all)."""
    t_k = t_q if t_k is None else t_k
    return ops.convert_to_tensor(np.tri(t_q, t_k, t_k - t_q, dtype=bool))


def _visible(mask, causal: bool, t_q: int, t_k: int):
    """The keys each query may see, as bool (B or 1, 1, T_q or 1, T_k), or None when it may see them all."""
    visible = None
    if mask is not None:
        mask = inputs.bool_mask(inputs.tensor(mask, "mask"))
        visible = mask[:, None, None, :] if len(mask.shape) == 2 else mask[:, None]   # (B, 1, 1|T_q, T_k)
    if causal:
        future = causal_mask(t_q, t_k)[None, None]                                    # (1, 1, T_q, T_k)
        visible = future if visible is None else ops.logical_and(visible, future)
    return visible


def scaled_dot_product_attention(query, key, value, mask=None, causal: bool = False, return_weights: bool = False):
    """softmax(Q Kᵀ / √d_head) V for every head at once.

    query (B, h, T_q, d_head), key (B, h, T_k, d_head), value (B, h, T_k, d_v); mask (B, T_k) or (B, T_q, T_k);
    ``causal`` hides the keys after each query. Without ``return_weights`` the fused kernel runs
    (``ops.dot_product_attention``, which wants (B, T, h, d)); with it, the explicit softmax, which also returns
    the weights (B, h, T_q, T_k). A query that may see no key gets zeros on both paths, never NaN.
    """
    query, key, value = (inputs.floats(x, n) for x, n in ((query, "query"), (key, "key"), (value, "value")))
    validate.head_shapes(query, key, value, mask)
    t_q, t_k = query.shape[-2], key.shape[-2]
    visible = _visible(mask, causal, t_q, t_k)
    if not return_weights:
        heads_last = [ops.transpose(x, (0, 2, 1, 3)) for x in (query, key, value)]      # (B, T, h, d)
        out = ops.transpose(ops.dot_product_attention(*heads_last, mask=visible), (0, 2, 1, 3))
        if visible is None:
            return out
        return ops.where(ops.any(visible, axis=-1, keepdims=True), out, ops.zeros_like(out))
    scores = ops.matmul(query, ops.swapaxes(key, -2, -1)) / math.sqrt(query.shape[-1])   # (B, h, T_q, T_k)
    if visible is not None:
        scores = ops.where(visible, scores, ops.full_like(scores, float(np.finfo(np.float32).min)))
    weights = ops.softmax(scores, axis=-1)                                               # rows sum to 1
    if visible is not None:
        weights = weights * ops.cast(visible, weights.dtype)                             # sees nothing: 0
    return ops.matmul(weights, value), weights                                           # (B, h, T_q, d_v)


def split_heads(x, heads: int):
    """(B, T, h · d_head) → (B, h, T, d_head): head i takes features i·d_head … (i+1)·d_head − 1."""
    b, t, d = ops.shape(x)
    return ops.transpose(ops.reshape(x, (b, t, heads, d // heads)), (0, 2, 1, 3))


def merge_heads(x):
    """(B, h, T, d_head) → (B, T, h · d_head), the inverse of ``split_heads``."""
    b, h, t, d = ops.shape(x)
    return ops.reshape(ops.transpose(x, (0, 2, 1, 3)), (b, t, h * d))


class SelfAttention(BuildOnCall, Layer):
    """One head: every position of x asks (query), offers (key) and gives (value), all linear maps of x."""

    def __init__(self, d_in: int, d_out: int, **kwargs):
        super().__init__(**kwargs)
        self.d_in, self.d_out = d_in, d_out
        self.W_query = layers.Dense(d_out, use_bias=False)
        self.W_key = layers.Dense(d_out, use_bias=False)
        self.W_value = layers.Dense(d_out, use_bias=False)

    def call(self, x, mask=None, causal: bool = False, return_weights: bool = False):
        # x (B, T, d_in) → context (B, T, d_out) [, weights (B, T, T)]
        x, _, _, mask = inputs.attention(x, x, x, mask)
        q, k, v = (w(x)[:, None] for w in (self.W_query, self.W_key, self.W_value))   # (B, 1, T, d_out)
        out = scaled_dot_product_attention(q, k, v, mask, causal, return_weights)
        return (out[0][:, 0], out[1][:, 0]) if return_weights else out[:, 0]

    def get_config(self):
        return {**super().get_config(), "d_in": self.d_in, "d_out": self.d_out}


class KVCache:
    """The keys and values one attention layer has computed for the steps decoded so far (Chapter 8): each new
    step appends its own and attends to all of them, instead of recomputing the whole prefix."""

    def __init__(self):
        self.keys = self.values = None                                # (B, h, steps so far, d_head)

    def __len__(self) -> int:
        return 0 if self.keys is None else int(self.keys.shape[-2])

    def append(self, k, v):
        """Add this step's keys and values (B, h, T, d_head); returns all of them."""
        if self.keys is None:
            self.keys, self.values = k, v
        else:
            self.keys = ops.concatenate([self.keys, k], axis=-2)
            self.values = ops.concatenate([self.values, v], axis=-2)
        return self.keys, self.values

    def select(self, index) -> None:
        """Keep the batch rows ``index`` (beam search reorders its hypotheses)."""
        if self.keys is not None:
            index = ops.convert_to_tensor(np.asarray(index), dtype="int32")
            self.keys, self.values = ops.take(self.keys, index, axis=0), ops.take(self.values, index, axis=0)


class MultiHeadAttention(BuildOnCall, Layer):
    """h heads of scaled dot-product attention side by side, each on its own d_model/h-sized projections,
    concatenated and mixed by W_o. ``rotary=True`` rotates each head's queries and keys by position (RoPE)."""

    def __init__(self, d_model: int, heads: int, bias: bool = True, rotary: bool = False, **kwargs):
        super().__init__(**kwargs)
        validate.heads(d_model, heads, rotary)
        self.d_model, self.heads, self.bias, self.rotary = d_model, heads, bias, rotary
        self.W_q = layers.Dense(d_model, use_bias=bias)
        self.W_k = layers.Dense(d_model, use_bias=bias)
        self.W_v = layers.Dense(d_model, use_bias=bias)
        self.W_o = layers.Dense(d_model, use_bias=bias)

    def call(self, query, key=None, value=None, mask=None, causal: bool = False, return_weights: bool = False,
             cache: KVCache | None = None):
        # query (B, T_q, d_model); key, value (B, T_k, d_model), default: the query (self-attention)
        # cache: a KVCache when decoding one step at a time (Chapter 8); this call's keys and values are appended
        # to it, and the queries attend to all of them
        key = query if key is None else key
        value = key if value is None else value
        query, key, value, mask = inputs.attention(query, key, value, mask)
        validate.model_width(self, query)
        q = split_heads(self.W_q(query), self.heads)                  # (B, h, T_q, d_head)
        k = split_heads(self.W_k(key), self.heads)                    # (B, h, T_k, d_head)
        v = split_heads(self.W_v(value), self.heads)                  # (B, h, T_k, d_head)
        past = 0 if cache is None else len(cache)                     # positions already in the cache
        if self.rotary:
            q, k = rope(q, offset=past + k.shape[-2] - q.shape[-2]), rope(k, offset=past)
        if cache is not None:
            k, v = cache.append(k, v)                                 # (B, h, past + T_k, d_head)
        out = scaled_dot_product_attention(q, k, v, mask, causal, return_weights)
        context, weights = out if return_weights else (out, None)
        context = self.W_o(merge_heads(context))                      # (B, T_q, d_model)
        return (context, weights) if return_weights else context

    def get_config(self):
        return {**super().get_config(), "d_model": self.d_model, "heads": self.heads, "bias": self.bias,
                "rotary": self.rotary}


def _built(mha: MultiHeadAttention) -> None:
    if not mha.W_q.built:
        mha(np.zeros((1, 1, mha.d_model), np.float32))


def as_framework_layer(mha: MultiHeadAttention) -> keras.layers.MultiHeadAttention:
    """Keras' own ``keras.layers.MultiHeadAttention`` holding ``mha``'s weights: each (d_model, d_model) kernel
    seen as (d_model, h, d_head), W_o's as (h, d_head, d_model). Call it as ``layer(query, value, key)``."""
    _built(mha)
    h, d, d_head = mha.heads, mha.d_model, mha.d_model // mha.heads
    layer = keras.layers.MultiHeadAttention(h, d_head, use_bias=mha.bias)
    x = np.zeros((1, 1, d), np.float32)
    layer(x, x)                                                                      # build it
    for ours, theirs in ((mha.W_q, layer.query_dense), (mha.W_k, layer.key_dense), (mha.W_v, layer.value_dense)):
        theirs.kernel.assign(ops.reshape(ours.kernel, (d, h, d_head)))
        if mha.bias:
            theirs.bias.assign(ops.reshape(ours.bias, (h, d_head)))
    layer.output_dense.kernel.assign(ops.reshape(mha.W_o.kernel, (h, d_head, d)))
    if mha.bias:
        layer.output_dense.bias.assign(mha.W_o.bias)
    return layer


def from_framework_layer(layer: keras.layers.MultiHeadAttention) -> MultiHeadAttention:
    """The course's ``MultiHeadAttention`` with the weights of a built ``keras.layers.MultiHeadAttention`` (the
    inverse of ``as_framework_layer``; its key_dim must equal value_dim, and its output size the input's)."""
    h, d_head = layer.num_heads, layer.key_dim
    d = layer.query_dense.kernel.shape[0]
    if layer.value_dim != d_head or h * d_head != d:
        raise ValueError(f"only layers with heads × key_dim = value_dim × heads = d_model are converted; got "
                         f"heads={h}, key_dim={d_head}, value_dim={layer.value_dim}, d_model={d}")
    bias = layer.query_dense.bias is not None
    mha = MultiHeadAttention(d, h, bias=bias)
    _built(mha)
    for ours, theirs in ((mha.W_q, layer.query_dense), (mha.W_k, layer.key_dense), (mha.W_v, layer.value_dense)):
        ours.kernel.assign(ops.reshape(theirs.kernel, (d, d)))
        if bias:
            ours.bias.assign(ops.reshape(theirs.bias, (d,)))
    mha.W_o.kernel.assign(ops.reshape(layer.output_dense.kernel, (d, d)))
    if bias:
        mha.W_o.bias.assign(layer.output_dense.bias)
    return mha


def _sinusoids(t: int, d: int):
    """(T, d): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d))."""
    position = np.arange(t, dtype=np.float32)[:, None]                                # (T, 1)
    rate = np.exp(np.arange(0, d, 2, dtype=np.float32) * (-math.log(10000.0) / d))
    table = np.zeros((t, d), np.float32)
    table[:, 0::2] = np.sin(position * rate)
    table[:, 1::2] = np.cos(position * rate[: d // 2])
    return ops.convert_to_tensor(table)


class SinusoidalPositions(Layer):
    """Vaswani et al.'s fixed encodings, added to x: nothing to learn, defined for any length."""

    def __init__(self, d_model: int, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model

    def call(self, x):
        # x (B, T, d_model) → x + PE[:T]
        x = inputs.floats(x, "x")
        validate.model_width(self, x)
        return x + _sinusoids(x.shape[1], self.d_model)

    def get_config(self):
        return {**super().get_config(), "d_model": self.d_model}


class LearnedPositions(BuildOnCall, Layer):
    """One trained vector per position, added to x (BERT, GPT-2): positions ≥ ``max_len`` have none."""

    def __init__(self, max_len: int, d_model: int, **kwargs):
        super().__init__(**kwargs)
        self.max_len, self.d_model = max_len, d_model
        self.table = layers.Embedding(max_len, d_model)

    def call(self, x):
        # x (B, T, d_model) → x + E[:T]
        x = inputs.floats(x, "x")
        validate.model_width(self, x)
        validate.positions(x.shape[1], self.max_len)
        return x + self.table(ops.arange(x.shape[1]))

    def get_config(self):
        return {**super().get_config(), "max_len": self.max_len, "d_model": self.d_model}


def rope(x, offset: int = 0, base: float = 10000.0):
    """Rotary position embedding (Su et al.): rotate each pair of features (2i, 2i+1) of position p by the angle
    (p + offset) · base^(−2i/d). x (B, h, T, d) with d even → the same shape. The dot product of a rotated query at
    p and a rotated key at p' then depends on p − p' only."""
    x = inputs.floats(x, "x")
    validate.rope_shape(validate.shape_of(x))
    t, d = x.shape[-2], x.shape[-1]
    rate = base ** (-np.arange(0, d, 2, dtype=np.float32) / d)                           # (d/2,)
    angle = ops.convert_to_tensor(((np.arange(t, dtype=np.float32) + offset)[:, None] * rate).astype(np.float32))
    cos, sin = ops.cos(angle), ops.sin(angle)                                            # (T, d/2)
    even, odd = x[..., 0::2], x[..., 1::2]                                               # (B, h, T, d/2)
    rotated = ops.stack([even * cos - odd * sin, even * sin + odd * cos], axis=-1)       # (B, h, T, d/2, 2)
    return ops.reshape(rotated, ops.shape(x))
