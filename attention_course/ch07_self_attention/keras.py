"""Chapter 7 in Keras 3: scaled dot-product attention over heads (a fused path, and an explicit one that returns
the weights), single-head self-attention, multi-head attention, and three ways to give positions; then two small
networks that test what a mixing layer can do: ``RecallNet`` recalls a value stored far back (self-attention, a
GRU or a convolution mixes the sequence) and ``LookbackNet`` names the symbols a fixed number of steps back, which
only a layer that knows positions can do. Same names and signatures as ``torch.py`` beside it.

Shapes: B batch, h heads, T_q queries, T_k keys, d_head features per head, d_model = h · d_head. Masks say True
(or 1) where a key may be attended: ``mask`` (B or 1, T_q or 1, T_k), the keys each query may see, and
``padding_mask`` (B, T_k), the keys that are real tokens. A 2-D ``mask`` is refused: (B, T_k) and (T_q, T_k) would
look alike when B = T_q.
"""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import layers, ops

from attention_course.ch07_self_attention import validate
from attention_course.core.keras import inputs
from attention_course.core.keras.base import BuildOnCall, Layer, Model
from attention_course.core.keras.init import torch_bias, torch_dense, torch_embedding, torch_kernel, torch_uniform

__all__ = ["causal_mask", "scaled_dot_product_attention", "split_heads", "merge_heads", "SelfAttention",
           "MultiHeadAttention", "as_framework_layer", "from_framework_layer", "SinusoidalPositions",
           "LearnedPositions", "rope", "MIXERS", "POSITIONS", "CausalConv", "RecallNet", "LookbackNet"]


def causal_mask(t_q: int, t_k: int | None = None):
    """(1, T_q, T_k) bool, True where query i may see key j: j ≤ i + T_k − T_q (the queries are the last T_q
    positions of the sequence, so a decoder step that has T_k − T_q earlier keys sees them all). The leading 1 is
    the batch: the mask holds for every example, and it cannot be mistaken for a (batch, T_k) padding mask."""
    t_q, t_k = validate.sizes(t_q=t_q, t_k=t_q if t_k is None else t_k)
    return ops.convert_to_tensor(np.tri(t_q, t_k, t_k - t_q, dtype=bool)[None])


def combined_mask(mask=None, padding_mask=None, keys=None):
    """One bool mask (B or 1, T_q or 1, T_k) of the keys each query may see, or None: ``mask`` (B or 1, T_q or 1,
    T_k) and ``padding_mask`` (B, T_k), the keys that are real tokens (of ``keys``, (B, T_k, d) or (B, h, T_k, d))."""
    mask = None if mask is None else inputs.tensor(mask, "mask")
    padding = None if padding_mask is None else inputs.tensor(padding_mask, "padding_mask")
    validate.masks(mask, padding, keys)                               # a 2-D mask is refused: padding or (T_q, T_k)?
    mask, padding = inputs.bool_mask(mask), inputs.bool_mask(padding, "padding_mask")
    if padding is None:
        return mask
    padding = padding[:, None, :]                                     # (B, 1, T_k): the same for every query
    return padding if mask is None else ops.logical_and(mask, padding)


def visible_keys(mask, causal: bool, t_q: int, t_k: int):
    """The keys each query may see, as bool (B or 1, 1, T_q or 1, T_k), or None when it may see them all."""
    visible = None
    if mask is not None:
        mask = inputs.bool_mask(inputs.tensor(mask, "mask"))
        visible = mask[:, None, None, :] if len(mask.shape) == 2 else mask[:, None]   # (B, 1, 1|T_q, T_k)
    if causal:
        future = causal_mask(t_q, t_k)[:, None]                                       # (1, 1, T_q, T_k)
        visible = future if visible is None else ops.logical_and(visible, future)
    return visible


def scaled_dot_product_attention(query, key, value, mask=None, causal: bool = False, return_weights: bool = False,
                                 padding_mask=None):
    """softmax(Q Kᵀ / √d_head) V for every head at once.

    query (B, h, T_q, d_head), key (B, h, T_k, d_head), value (B, h, T_k, d_v); mask (B or 1, T_q or 1, T_k), the
    keys each query may see; padding_mask (B, T_k), the keys that are real tokens; ``causal`` hides the keys after
    each query. Without ``return_weights`` the fused kernel runs (``ops.dot_product_attention``, which wants
    (B, T, h, d)); with it, the explicit softmax, which also returns the weights (B, h, T_q, T_k). A query that may
    see no key gets zeros on both paths, never NaN.
    """
    query, key, value = (inputs.floats(x, n) for x, n in ((query, "query"), (key, "key"), (value, "value")))
    mask = combined_mask(mask, padding_mask, key)                    # (B or 1, T_q or 1, T_k) bool, or None
    validate.head_shapes(query, key, value, mask)
    t_q, t_k = query.shape[-2], key.shape[-2]
    visible = visible_keys(mask, causal, t_q, t_k)
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
    validate.split(x, heads)
    b, t, d = ops.shape(x)
    return ops.transpose(ops.reshape(x, (b, t, heads, d // heads)), (0, 2, 1, 3))


def merge_heads(x):
    """(B, h, T, d_head) → (B, T, h · d_head), the inverse of ``split_heads``."""
    validate.merge(x)
    b, h, t, d = ops.shape(x)
    return ops.reshape(ops.transpose(x, (0, 2, 1, 3)), (b, t, h * d))


class SelfAttention(BuildOnCall, Layer):
    """One head: every position of x asks (query), offers (key) and gives (value), all linear maps of x."""

    def __init__(self, d_in: int, d_out: int, **kwargs):
        super().__init__(**kwargs)
        self.d_in, self.d_out = validate.sizes(d_in=d_in, d_out=d_out)
        self.W_query = torch_dense(d_out, d_in, use_bias=False)       # as nn.Linear(d_in, d_out): U(±1/√d_in)
        self.W_key = torch_dense(d_out, d_in, use_bias=False)
        self.W_value = torch_dense(d_out, d_in, use_bias=False)

    def call(self, x, mask=None, causal: bool = False, return_weights: bool = False, padding_mask=None):
        # x (B, T, d_in) → context (B, T, d_out) [, weights (B, T, T)]; mask (B or 1, T or 1, T), padding_mask (B, T)
        x, _, _, mask = inputs.attention(x, x, x, combined_mask(mask, padding_mask, x))
        validate.sequence_shapes("SelfAttention", x, features=self.d_in)
        q, k, v = (w(x)[:, None] for w in (self.W_query, self.W_key, self.W_value))   # (B, 1, T, d_out)
        out = scaled_dot_product_attention(q, k, v, mask, causal, return_weights)
        return (out[0][:, 0], out[1][:, 0]) if return_weights else out[:, 0]

    def get_config(self):
        return {**super().get_config(), "d_in": self.d_in, "d_out": self.d_out}


class MultiHeadAttention(BuildOnCall, Layer):
    """h heads of scaled dot-product attention side by side, each on its own d_model/h-sized projections,
    concatenated and mixed by W_o. ``rotary=True`` rotates each head's queries and keys by position (RoPE)."""

    def __init__(self, d_model: int, heads: int, bias: bool = True, rotary: bool = False, **kwargs):
        super().__init__(**kwargs)
        validate.heads(d_model, heads, rotary)
        self.d_model, self.heads, self.bias, self.rotary = d_model, heads, bias, rotary
        self.W_q = torch_dense(d_model, d_model, use_bias=bias)       # as nn.Linear: weights and biases U(±1/√d)
        self.W_k = torch_dense(d_model, d_model, use_bias=bias)
        self.W_v = torch_dense(d_model, d_model, use_bias=bias)
        self.W_o = torch_dense(d_model, d_model, use_bias=bias)

    def call(self, query, key=None, value=None, mask=None, causal: bool = False, return_weights: bool = False,
             padding_mask=None):
        # query (B, T_q, d_model); key, value (B, T_k, d_model), default: the query (self-attention);
        # mask (B or 1, T_q or 1, T_k): the keys each query may see; padding_mask (B, T_k): the keys that are tokens
        mask = combined_mask(mask, padding_mask, query if key is None else key)
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


def sinusoids(t: int, d: int):
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
        (self.d_model,) = validate.sizes(d_model=d_model)

    def call(self, x):
        # x (B, T, d_model) → x + PE[:T]
        x = inputs.floats(x, "x")
        validate.model_width(self, x)
        return x + sinusoids(x.shape[1], self.d_model)

    def get_config(self):
        return {**super().get_config(), "d_model": self.d_model}


class LearnedPositions(BuildOnCall, Layer):
    """One trained vector per position, added to x (BERT, GPT-2): positions ≥ ``max_len`` have none."""

    def __init__(self, max_len: int, d_model: int, **kwargs):
        super().__init__(**kwargs)
        self.max_len, self.d_model = validate.sizes(max_len=max_len, d_model=d_model)
        self.table = torch_like_embedding(max_len, d_model)           # N(0, 1), as the PyTorch twin's table

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


MIXERS = ("attention", "gru", "conv")


POSITIONS = ("none", "sinusoidal", "learned", "rotary")


def torch_like_embedding(vocab: int, d_model: int) -> layers.Embedding:
    # N(0, 1) as torch.nn.Embedding: the size of the symbols against the position codes added to them matters
    return layers.Embedding(vocab, d_model, embeddings_initializer=torch_embedding())


class CausalConv(BuildOnCall, Layer):
    """``layers`` convolutions of width ``kernel``, each seeing only the current and earlier positions (the input
    is padded on the left), with ReLU between: position t sees t − layers·(kernel − 1) … t."""

    def __init__(self, d_model: int, kernel: int = 3, layers: int = 3, **kwargs):
        super().__init__(**kwargs)
        self.d_model, self.kernel, self.layers = validate.sizes(d_model=d_model, kernel=kernel, layers=layers)
        for i in range(layers):
            setattr(self, f"conv{i}", causal_conv1d(d_model, kernel))

    def call(self, x):
        # x (B, T, d_model) → (B, T, d_model)
        x = inputs.floats(x, "x")
        validate.model_width(self, x)
        for i in range(self.layers):
            x = getattr(self, f"conv{i}")(x)                            # padding="causal": the past only
        return x


def causal_conv1d(d_model: int, kernel: int) -> layers.Conv1D:
    # as nn.Conv1d(d_model, d_model, kernel): weights and biases U(±1/√fan_in), fan_in = d_model · kernel
    return layers.Conv1D(d_model, kernel, padding="causal", activation="relu", kernel_initializer=torch_kernel(),
                         bias_initializer=torch_bias(d_model * kernel))


class RecallNet(Model):
    """Embed the symbols, mix the sequence with ``mixer`` ("attention": multi-head self-attention with RoPE,
    "gru" or "conv": a causal convolution), and classify the last position, the query. Everything but the mixer
    is the same in the three."""

    def __init__(self, mixer: str, vocab: int, n_classes: int, d_model: int = 64, heads: int = 4, **kwargs):
        super().__init__(**kwargs)
        validate.choice("mixer", mixer, MIXERS)
        self.mixer_name = mixer
        self.embedding = torch_like_embedding(vocab, d_model)
        if mixer == "attention":
            self.mixer = MultiHeadAttention(d_model, heads, rotary=True)     # positions: RoPE
        elif mixer == "gru":
            self.mixer = layers.GRU(d_model, return_sequences=True, reset_after=True,   # as nn.GRU: U(±1/√d)
                                    kernel_initializer=torch_uniform(d_model),
                                    recurrent_initializer=torch_uniform(d_model),
                                    bias_initializer=torch_uniform(d_model))
        else:
            self.mixer = CausalConv(d_model)
        self.hidden = torch_dense(2 * d_model, d_model)
        self.readout = torch_dense(n_classes, 2 * d_model)

    def call(self, ids):
        # ids (B, T) → logits (B, n_classes), read at the last position
        ids = inputs.ids(ids, "ids", self.embedding)
        x = self.embedding(ids)                                        # (B, T, d_model)
        mixed = self.mixer(x)
        return self.readout(ops.relu(self.hidden(x[:, -1] + mixed[:, -1])))     # (B, n_classes)


class LookbackNet(Model):
    """Embed symbols, add positions (``positions``: "none", "sinusoidal", "learned" or "rotary"), one causal
    multi-head self-attention with a residual connection, and a classifier at every position."""

    def __init__(self, positions: str, n_symbols: int, n_classes: int, d_model: int = 32, heads: int = 2,
                 max_len: int = 64, **kwargs):
        super().__init__(**kwargs)
        validate.choice("positions", positions, POSITIONS)
        self.positions = positions
        self.embedding = torch_like_embedding(n_symbols, d_model)
        self.add_positions = {"sinusoidal": lambda: SinusoidalPositions(d_model),
                              "learned": lambda: LearnedPositions(max_len, d_model)}.get(positions, layers.Identity)()
        self.attention = MultiHeadAttention(d_model, heads, rotary=positions == "rotary")
        self.readout = torch_dense(n_classes, d_model)

    def call(self, ids, return_weights: bool = False):
        # ids (B, T) → logits (B, T, n_classes) [, weights (B, heads, T, T)]
        ids = inputs.ids(ids, "ids", self.embedding)
        x = self.add_positions(self.embedding(ids))                    # (B, T, d_model)
        out = self.attention(x, causal=True, return_weights=return_weights)
        mixed, weights = out if return_weights else (out, None)
        logits = self.readout(x + mixed)                               # (B, T, n_classes)
        return (logits, weights) if return_weights else logits
