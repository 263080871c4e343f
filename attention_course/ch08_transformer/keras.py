"""Chapter 8's Transformer in Keras 3, built from Chapter 7's ``MultiHeadAttention``: the position-wise feed-forward
network, encoder and decoder layers with residual connections and LayerNorm after (post-LN, the paper) or before
(pre-LN) each sub-layer, and the encoder–decoder translator with incremental decoding through a key–value cache.
Same names and signatures as ``torch.py`` beside it.

Shapes: B batch, S source length, T target length, d_model = d. Masks say True (or 1) where a token is real: the
padding masks (B, S) of the sources and of the memory.
"""

from __future__ import annotations

import math

import keras
import numpy as np
import tensorflow as tf
from keras import initializers, layers, ops

from attention_course.ch07_self_attention.keras import MultiHeadAttention, combined_mask, rope, sinusoids, split_heads
from attention_course.ch08_transformer import validate
from attention_course.core.keras import inputs
from attention_course.core.keras.base import BuildOnCall, Layer, Model
from attention_course.core.keras.init import torch_dense

__all__ = ["KVCache", "StaticKVCache", "CachedMultiHeadAttention", "FeedForward", "EncoderLayer", "DecoderLayer",
           "Transformer", "LanguageModel", "framework_encoder_layer"]

EPSILON = 1e-5   # LayerNorm's epsilon, PyTorch's default (Keras' own is 1e-3)


def torch_like_dense(units: int) -> layers.Dense:
    # as PyTorch's nn.Linear, weights and biases U(±1/√fan_in): the twins start alike and train alike (Keras'
    # Glorot default makes the 256 → 64 layer larger and the output layer smaller, and its biases start at zero)
    return torch_dense(units)


def sinusoids_at(positions, d: int):
    """Chapter 7's sinusoids at the positions ``positions`` (T,), a tensor (a compiled step's offset) → (T, d)."""
    rate = ops.exp(ops.arange(0, d, 2, dtype="float32") * (-math.log(10000.0) / d))      # (⌈d/2⌉,)
    angle = ops.cast(positions, "float32")[:, None] * rate                                # (T, ⌈d/2⌉)
    return ops.reshape(ops.stack([ops.sin(angle), ops.cos(angle)], axis=-1), (-1, 2 * rate.shape[0]))[:, :d]


def compiled(model, method: str):
    """``model.method`` as a TensorFlow graph, kept on the model (traced once for each new input shape)."""
    graphs = model.__dict__.setdefault("_graphs", {})
    if method not in graphs:
        graphs[method] = tf.function(getattr(model, method))
    return graphs[method]


class KVCache:
    """The keys and values one attention layer has computed for the steps decoded so far: each new step appends
    its own and attends to all of them, instead of recomputing the whole prefix."""

    def __init__(self):
        self.keys = self.values = None                                # (B, h, steps so far, d_head)

    def __len__(self) -> int:
        return 0 if self.keys is None else int(self.keys.shape[-2])

    def append(self, k, v):
        """Add this step's keys and values (B, h, T, d_head); returns all of them."""
        if self.keys is None:
            self.keys, self.values = k, v
        else:
            validate.same_steps(tuple(self.keys.shape), tuple(k.shape))
            self.keys = ops.concatenate([self.keys, k], axis=-2)
            self.values = ops.concatenate([self.values, v], axis=-2)
        return self.keys, self.values

    def select(self, index) -> None:
        """Keep the batch rows ``index`` (beam search reorders its hypotheses)."""
        if self.keys is not None:
            index = ops.convert_to_tensor(np.asarray(index), dtype="int32")
            self.keys, self.values = ops.take(self.keys, index, axis=0), ops.take(self.values, index, axis=0)


class StaticKVCache(KVCache):
    """A key–value cache of fixed ``capacity``, for a compiled decoding step: each call writes its keys and values at
    position ``length`` of buffers (B, h, capacity, d_head) and its queries see the positions written so far, so
    every step has the same shapes and TensorFlow traces it once. (A growing ``KVCache`` changes shape at every
    step; run op by op, each Keras step costs milliseconds of overhead whatever it computes.)"""

    def __init__(self, keys, values, length):
        self.keys, self.values, self.length = keys, values, length     # buffers (B, h, C, d_head); length: int32

    @classmethod
    def empty(cls, batch: int, heads: int, capacity: int, d_head: int) -> StaticKVCache:
        zeros = ops.zeros((batch, heads, capacity, d_head))
        return cls(zeros, zeros, ops.convert_to_tensor(0, dtype="int32"))

    def __len__(self) -> int:
        return int(self.length)                                       # eager only: in a graph it is a tensor

    def append(self, k, v):
        """Write this call's keys and values (B, h, T, d_head) at ``length``; returns the whole buffers."""
        validate.same_steps(tuple(self.keys.shape), tuple(k.shape))
        written = None if inputs.symbolic(self.length) else int(self.length)       # a tensor, known when eager
        validate.within_capacity(written, k.shape[-2], self.keys.shape[-2])
        start = [0, 0, self.length, 0]
        self.keys, self.values = ops.slice_update(self.keys, start, k), ops.slice_update(self.values, start, v)
        self.length = self.length + k.shape[-2]
        return self.keys, self.values

    def visible(self, t_q: int):
        """(1, T_q, C) bool: query i of this call, at position length − T_q + i, sees the positions up to its own."""
        positions = self.length - t_q + ops.arange(t_q, dtype="int32")           # (T_q,)
        return (ops.arange(self.keys.shape[-2], dtype="int32")[None, :] <= positions[:, None])[None]

    def grown(self, capacity: int) -> StaticKVCache:
        """The same cache in buffers of a larger ``capacity`` (zeros after ``length``)."""
        pad = [(0, 0), (0, 0), (0, capacity - self.keys.shape[-2]), (0, 0)]
        return StaticKVCache(ops.pad(self.keys, pad), ops.pad(self.values, pad), self.length)


class CachedMultiHeadAttention(MultiHeadAttention):
    """Chapter 7's multi-head attention, able to decode one step at a time: with ``cache`` (a ``KVCache``), this
    call's keys and values are appended to the cache and the queries attend to all of them, so each new step
    computes the keys and values of its own tokens only. ``cache`` may also be the keys and values of an encoder's
    output, from ``memory_keys``: the same at every step, so they are computed once per source and the queries
    attend to them as they are. Without a cache it is Chapter 7's layer."""

    def call(self, query, key=None, value=None, mask=None, causal: bool = False, return_weights: bool = False,
             padding_mask=None, cache: KVCache | tuple | None = None):
        if cache is None:
            return super().call(query, key, value, mask, causal, return_weights, padding_mask)
        if isinstance(cache, tuple | list):                           # a memory's keys and values (B, h, S, d_head)
            k, v = cache
            mask = combined_mask(mask, padding_mask, k)
            query = inputs.floats(query, "query")
            validate.model_width(self, query)
            return self.attend(split_heads(self.W_q(query), self.heads), k, v, mask, causal, return_weights)
        mask = combined_mask(mask, padding_mask, query if key is None else key)
        q, k, v, mask = self.project(query, key, value, mask)         # (B, h, T_q or T_k, d_head) each
        if self.rotary:
            past = len(cache)                                         # positions already in the cache
            q, k = rope(q, offset=past + k.shape[-2] - q.shape[-2]), rope(k, offset=past)
        k, v = cache.append(k, v)                                     # (B, h, past + T_k, d_head)
        if isinstance(cache, StaticKVCache):                          # (B, h, C, d_head): hide the unwritten end
            mask = cache.visible(q.shape[-2])
        return self.attend(q, k, v, mask, causal, return_weights)

    def memory_keys(self, memory, padding_mask=None):
        """The keys and values (B, h, S, d_head) of ``memory`` (B, S, d), an encoder's output whose pads
        ``padding_mask`` (B, S) hides: what attention over the memory computes from it at every decoding step,
        computed once, for ``cache=``."""
        memory = inputs.floats(memory, "memory")
        validate.model_width(self, memory)
        memory = inputs.hide(memory, combined_mask(None, padding_mask, memory))                  # pads: zeros
        return split_heads(self.W_k(memory), self.heads), split_heads(self.W_v(memory), self.heads)


class FeedForward(BuildOnCall, Layer):
    """The same two-layer network at every position: d → d_ff → d, ReLU (the paper) or GELU (BERT) between."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu", **kwargs):
        super().__init__(**kwargs)
        d_model, d_ff = validate.sizes(d_model=d_model, d_ff=d_ff)
        dropout = validate.rate("dropout", dropout)
        validate.choice("activation", activation, ("relu", "gelu"))
        self.activation = activation
        self.W_1 = torch_like_dense(d_ff)
        self.W_2 = torch_like_dense(d_model)
        self.dropout = layers.Dropout(dropout)

    def call(self, x, training=None):
        # x (B, T, d) → (B, T, d)
        h = self.W_1(x)
        h = ops.gelu(h, approximate=False) if self.activation == "gelu" else ops.relu(h)
        return self.W_2(self.dropout(h, training=training))


def with_weights(attention, h, return_weights: bool, **kw):
    # (output, weights or None) of an attention layer, whether or not the weights are asked for
    out = attention(h, return_weights=return_weights, **kw)
    return out if return_weights else (out, None)


class EncoderLayer(BuildOnCall, Layer):
    """Self-attention, then the feed-forward network; each adds its output to its input (the residual) and is
    normalised by a LayerNorm after the sum (post-LN, ``norm_first=False``) or before the sub-layer (pre-LN).
    ``causal=True`` lets each position see only itself and earlier ones: the block of a decoder-only model, which is
    the decoder layer without its attention over an encoder; ``cache`` (a ``KVCache``) then decodes step by step.
    BERT's layer computes what this one does with ``activation="gelu"`` and ``eps=1e-12`` (the LayerNorms'
    epsilon); in training BERT drops attention weights, where this layer drops the feed-forward's hidden units."""

    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False,
                 causal: bool = False, activation: str = "relu", eps: float = EPSILON, **kwargs):
        super().__init__(**kwargs)
        validate.positive("eps", eps, " (the LayerNorms' epsilon)")
        self.norm_first, self.causal = norm_first, causal
        self.self_attention = CachedMultiHeadAttention(d_model, heads)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation)
        self.norm_1 = layers.LayerNormalization(epsilon=eps)
        self.norm_2 = layers.LayerNormalization(epsilon=eps)
        self.dropout = layers.Dropout(dropout)

    def residual(self, x, sublayer, norm, training=None):
        """x + sublayer(x), with the LayerNorm before the sub-layer (pre-LN) or after the sum (post-LN)."""
        if self.norm_first:
            out, w = sublayer(norm(x))
            return x + self.dropout(out, training=training), w
        out, w = sublayer(x)
        return norm(x + self.dropout(out, training=training)), w

    def call(self, x, padding_mask=None, return_weights: bool = False, cache: KVCache | None = None, training=None):
        # x (B, S, d), padding_mask (B, S): True on real tokens → (B, S, d) [, weights (B, h, S, S)]
        x = inputs.floats(x, "x")
        x, w = self.residual(x, lambda h: with_weights(self.self_attention, h, return_weights,
                                                  padding_mask=padding_mask, causal=self.causal, cache=cache),
                             self.norm_1, training)
        x, _ = self.residual(x, lambda h: (self.feed_forward(h, training=training), None), self.norm_2, training)
        return (x, w) if return_weights else x


class DecoderLayer(EncoderLayer):
    """Masked self-attention over the target so far, attention over the encoder's output (the memory), then the
    feed-forward network; residuals and LayerNorms as in ``EncoderLayer``. ``cache`` (a ``KVCache``) decodes one
    step at a time: it keeps the self-attention's keys and values of the earlier steps, and ``memory_kv`` the
    cross-attention's keys and values of the memory, computed once per source (``cross_attention.memory_keys``)."""

    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False,
                 **kwargs):
        super().__init__(d_model, heads, d_ff, dropout, norm_first, causal=True, **kwargs)
        self.cross_attention = CachedMultiHeadAttention(d_model, heads)
        self.norm_3 = layers.LayerNormalization(epsilon=EPSILON)

    def call(self, y, memory, memory_mask=None, cache: KVCache | None = None,  # type: ignore[override]
             return_weights: bool = False, memory_kv: tuple | None = None, training=None):
        # y (B, T, d) the target, memory (B, S, d), memory_mask (B, S): True on its real tokens → (B, T, d)
        # [, self-attention weights (B, h, T, T), cross-attention weights (B, h, T, S)]
        y = inputs.floats(y, "y")
        y, w_self = self.residual(
            y, lambda h: with_weights(self.self_attention, h, return_weights, causal=self.causal, cache=cache),
            self.norm_1, training)
        y, w_cross = self.residual(
            y, lambda h: with_weights(self.cross_attention, h, return_weights, key=memory, padding_mask=memory_mask,
                                      cache=memory_kv), self.norm_2, training)
        y, _ = self.residual(y, lambda h: (self.feed_forward(h, training=training), None), self.norm_3, training)
        return (y, w_self, w_cross) if return_weights else y


class Transformer(Model):
    """The encoder–decoder of Vaswani et al.: embeddings scaled by √d, sinusoidal positions, ``layers`` encoder and
    decoder layers, and a linear layer to the target vocabulary; pre-LN adds a final LayerNorm to each stack.

    src (B, S), src_mask (B, S), tgt_in (B, T) = BOS + target → logits (B, T, V). ``start``/``step``/``reorder``
    decode one step at a time on NumPy arrays (``attention_course.core.decode``), with a key–value cache.
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, d_model: int = 64, heads: int = 4, layers: int = 2,
                 d_ff: int = 256, dropout: float = 0.1, norm_first: bool = False, **kwargs):
        super().__init__(**kwargs)
        src_vocab, tgt_vocab, d_model, layers, d_ff = validate.sizes(
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, d_model=d_model, layers=layers, d_ff=d_ff)
        dropout = validate.rate("dropout", dropout)
        self.d_model, self.norm_first = d_model, norm_first
        unit = initializers.RandomNormal(stddev=d_model ** -0.5)       # × √d on the way in: unit size, as the PE
        self.src_embedding = keras.layers.Embedding(src_vocab, d_model, embeddings_initializer=unit)
        self.tgt_embedding = keras.layers.Embedding(tgt_vocab, d_model, embeddings_initializer=unit)
        self.dropout = keras.layers.Dropout(dropout)
        self.encoder = [EncoderLayer(d_model, heads, d_ff, dropout, norm_first) for _ in range(layers)]
        self.decoder = [DecoderLayer(d_model, heads, d_ff, dropout, norm_first) for _ in range(layers)]
        self.encoder_norm = keras.layers.LayerNormalization(epsilon=EPSILON) if norm_first else keras.layers.Identity()
        self.decoder_norm = keras.layers.LayerNormalization(epsilon=EPSILON) if norm_first else keras.layers.Identity()
        self.out = torch_like_dense(tgt_vocab)

    def _embed(self, table, ids, offset=0, training=None):
        # ids (B, T) → (B, T, d): the embedding × √d plus the sinusoids of positions offset … offset + T − 1
        x = table(ids) * math.sqrt(self.d_model)
        if isinstance(offset, int):
            return self.dropout(x + sinusoids(offset + ids.shape[1], self.d_model)[offset:], training=training)
        return self.dropout(x + sinusoids_at(offset + ops.arange(ids.shape[1]), self.d_model),   # compiled step
                            training=training)

    def _source(self, src, src_mask):
        # src (B, S) ids, src_mask (B, S) or None (no padding) → both as checked tensors, the mask bool
        src = inputs.ids(src, "src", self.src_embedding)
        src_mask = ops.ones_like(src, dtype="bool") if src_mask is None else src_mask
        src_mask = inputs.bool_mask(inputs.tensor(src_mask, "src_mask"), "src_mask")
        validate.same_shape("src_mask", validate.shape_of(src_mask), validate.shape_of(src), "src")
        return src, src_mask

    def encode(self, src, src_mask, return_weights: bool = False, training=None):
        # src (B, S) ids, src_mask (B, S), None: no padding → memory (B, S, d) [, weights per layer]
        src, src_mask = self._source(src, src_mask)
        x, weights = self._embed(self.src_embedding, src, training=training), []
        for layer in self.encoder:
            out = layer(x, src_mask, return_weights=return_weights, training=training)
            x = out[0] if return_weights else out
            weights.append(out[1] if return_weights else None)
        x = self.encoder_norm(x)
        return (x, src_mask, weights) if return_weights else (x, src_mask)

    def memory_keys(self, memory, memory_mask):
        # each decoder layer's cross-attention keys and values of the memory (B, h, S, d_head), once per source
        return [layer.cross_attention.memory_keys(memory, memory_mask) for layer in self.decoder]

    def decode(self, tgt_in, memory, memory_mask, caches=None, offset: int = 0, return_weights: bool = False,
               memory_kv=None, training=None):
        # tgt_in (B, T) ids → logits (B, T, V) [, self- and cross-attention weights per layer]
        tgt_in = inputs.ids(tgt_in, "tgt_in", self.tgt_embedding)
        y, weights = self._embed(self.tgt_embedding, tgt_in, offset, training), []
        for i, layer in enumerate(self.decoder):
            out = layer(y, memory, memory_mask, cache=None if caches is None else caches[i],
                        return_weights=return_weights, memory_kv=None if memory_kv is None else memory_kv[i],
                        training=training)
            y = out[0] if return_weights else out
            weights.append(out[1:] if return_weights else None)
        logits = self.out(self.decoder_norm(y))
        return (logits, weights) if return_weights else logits

    def call(self, src, src_mask, tgt_in, return_weights: bool = False, training=None):
        encoded = self.encode(src, src_mask, return_weights=return_weights, training=training)
        memory, mask = encoded[:2]
        validate.same_batch(src=validate.shape_of(memory)[:2], tgt_in=validate.shape_of(tgt_in))
        if not return_weights:
            return self.decode(tgt_in, memory, mask, training=training)
        logits, dec_weights = self.decode(tgt_in, memory, mask, return_weights=True, training=training)
        return logits, {"encoder": encoded[2], "decoder": [w[0] for w in dec_weights],
                        "cross": [w[1] for w in dec_weights]}

    # one step at a time, on NumPy arrays, for greedy and beam search (attention_course.core.decode); the encoder
    # pass with the memory's keys and values, and the step, are compiled (one trace per batch shape), the step with
    # a cache of fixed capacity that doubles when full (one trace per capacity)
    def start(self, src, src_mask, capacity: int = 32):
        memory, mask = compiled(self, "encode")(*self._source(src, src_mask))   # checked where the values are known
        heads = self.decoder[0].self_attention.heads
        caches = [StaticKVCache.empty(memory.shape[0], heads, capacity, self.d_model // heads) for _ in self.decoder]
        return {"memory": memory, "mask": mask, "memory_kv": compiled(self, "memory_keys")(memory, mask),
                "caches": caches, "steps": 0}

    def step(self, tokens, state):
        tokens = ops.convert_to_tensor(np.asarray(tokens)[:, None], dtype="int32")
        caches = state["caches"]
        if state["steps"] == caches[0].keys.shape[-2]:
            caches = [cache.grown(2 * state["steps"]) for cache in caches]
        log_probs, keys, values = compiled(self, "_cached_step")(
            tokens, state["memory"], state["mask"], [c.keys for c in caches], [c.values for c in caches],
            caches[0].length, state["memory_kv"])
        caches = [StaticKVCache(k, v, caches[0].length + 1) for k, v in zip(keys, values, strict=True)]
        return ops.convert_to_numpy(log_probs), {**state, "caches": caches, "steps": state["steps"] + 1}, None

    def compiled_decode(self, tgt_in, memory, memory_mask):
        """``decode`` without a cache, compiled (how ``attention_course.core.decode.Recompute`` runs this model):
        the targets padded on the right to a power of two, which changes no earlier position (the self-attention
        is causal), so that a few graphs serve every length."""
        t = np.shape(tgt_in)[1]
        padded = np.pad(np.asarray(tgt_in), ((0, 0), (0, max(8, 2 ** math.ceil(math.log2(t))) - t)))
        return compiled(self, "decode")(padded, memory, memory_mask)[:, :t]

    def _cached_step(self, tokens, memory, mask, keys, values, length, memory_kv):
        caches = [StaticKVCache(k, v, length) for k, v in zip(keys, values, strict=True)]
        logits = self.decode(tokens, memory, mask, caches, offset=length, memory_kv=memory_kv)
        return ops.log_softmax(logits[:, -1], axis=-1), [c.keys for c in caches], [c.values for c in caches]

    def reorder(self, state, index):
        for cache in state["caches"]:
            cache.select(index)
        index = ops.convert_to_tensor(np.asarray(index), dtype="int32")
        return {**state, "memory": ops.take(state["memory"], index, axis=0),
                "mask": ops.take(state["mask"], index, axis=0),
                "memory_kv": [(ops.take(k, index, axis=0), ops.take(v, index, axis=0)) for k, v in state["memory_kv"]]}


class LanguageModel(Model):
    """A decoder-only Transformer (the GPT of Radford et al.): token embeddings scaled by √d plus sinusoids,
    ``layers`` causal ``EncoderLayer`` blocks (decoder layers without cross-attention), a final LayerNorm (pre-LN)
    and a linear layer to the vocabulary. ids (B, T) → logits (B, T, V), where position t scores the token at t + 1.
    It reads at most ``context`` tokens; ``start``/``step`` generate one token at a time with a key–value cache
    (``attention_course.core.decode.sample``)."""

    def __init__(self, vocab: int, d_model: int = 64, heads: int = 4, layers: int = 2, d_ff: int = 256,
                 dropout: float = 0.1, norm_first: bool = True, context: int = 128, **kwargs):
        super().__init__(**kwargs)
        vocab, d_model, layers, d_ff, context = validate.sizes(
            vocab=vocab, d_model=d_model, layers=layers, d_ff=d_ff, context=context)
        dropout = validate.rate("dropout", dropout)
        self.d_model, self.context = d_model, context
        unit = initializers.RandomNormal(stddev=d_model ** -0.5)
        self.embedding = keras.layers.Embedding(vocab, d_model, embeddings_initializer=unit)
        self.dropout = keras.layers.Dropout(dropout)
        self.blocks = [EncoderLayer(d_model, heads, d_ff, dropout, norm_first, causal=True) for _ in range(layers)]
        self.norm = keras.layers.LayerNormalization(epsilon=EPSILON) if norm_first else keras.layers.Identity()
        self.out = torch_like_dense(vocab)

    _embed = Transformer._embed                                       # embeddings × √d plus the sinusoids

    def call(self, ids, caches=None, offset: int = 0, return_weights: bool = False, training=None):
        # ids (B, T) → logits (B, T, V) [, self-attention weights (B, h, T, offset + T) per block]
        ids = inputs.ids(ids, "ids", self.embedding)
        if isinstance(offset, int):                                   # a compiled step checks it before the call
            validate.within_context(offset + ids.shape[1], self.context)
        x, weights = self._embed(self.embedding, ids, offset, training), []
        for i, block in enumerate(self.blocks):
            out = block(x, cache=None if caches is None else caches[i], return_weights=return_weights,
                        training=training)
            x = out[0] if return_weights else out
            weights.append(out[1] if return_weights else None)
        logits = self.out(self.norm(x))
        return (logits, weights) if return_weights else logits

    # one token at a time, on NumPy arrays (attention_course.core.decode.sample); the step is compiled, with a
    # cache that holds the whole context
    def start(self, prefix):
        heads = self.blocks[0].self_attention.heads
        caches = [StaticKVCache.empty(np.shape(prefix)[0], heads, self.context, self.d_model // heads)
                  for _ in self.blocks]
        state = {"caches": caches, "steps": int(np.shape(prefix)[1])}
        if state["steps"]:
            self(ops.convert_to_tensor(np.asarray(prefix), dtype="int32"), caches=caches)
        return state

    def step(self, tokens, state):
        validate.within_context(state["steps"] + 1, self.context)
        tokens = ops.convert_to_tensor(np.asarray(tokens)[:, None], dtype="int32")
        caches = state["caches"]
        log_probs, keys, values = compiled(self, "_cached_step")(
            tokens, [c.keys for c in caches], [c.values for c in caches], caches[0].length)
        caches = [StaticKVCache(k, v, caches[0].length + 1) for k, v in zip(keys, values, strict=True)]
        return ops.convert_to_numpy(log_probs), {**state, "caches": caches, "steps": state["steps"] + 1}, None

    def _cached_step(self, tokens, keys, values, length):
        caches = [StaticKVCache(k, v, length) for k, v in zip(keys, values, strict=True)]
        logits = self(tokens, caches=caches, offset=length)
        return ops.log_softmax(logits[:, -1], axis=-1), [c.keys for c in caches], [c.values for c in caches]


def framework_encoder_layer(layer: EncoderLayer) -> keras.Model:
    """The same encoder layer composed of Keras' own ``keras.layers.MultiHeadAttention``, ``Dense``,
    ``LayerNormalization`` and ``Dropout`` (Keras has no encoder-layer class), holding the weights of the course's
    ``layer``: a functional model x (B, S, d), mask (B, S) → (B, S, d). Without dropout the two compute the same
    outputs (in training this one has no dropout inside the feed-forward network)."""
    from attention_course.ch07_self_attention.keras import as_framework_layer

    mha, ff = layer.self_attention, layer.feed_forward
    d_model = mha.d_model
    x = keras.Input((None, d_model))
    mask = keras.Input((None,), dtype="bool")
    attention = as_framework_layer(mha)
    w_1, w_2 = keras.layers.Dense(ff.W_1.units, activation=ff.activation), keras.layers.Dense(d_model)
    norm_1, norm_2 = (keras.layers.LayerNormalization(epsilon=layer.norm_1.epsilon) for _ in range(2))
    drop = keras.layers.Dropout(layer.dropout.rate)
    visible = ops.logical_and(mask[:, None, :], ops.ones_like(mask, dtype="bool")[:, :, None])   # (B, S, S)
    if layer.norm_first:
        h = norm_1(x)
        h = x + drop(attention(h, h, h, attention_mask=visible))
        out = h + drop(w_2(w_1(norm_2(h))))
    else:
        h = norm_1(x + drop(attention(x, x, x, attention_mask=visible)))
        out = norm_2(h + drop(w_2(w_1(h))))
    model = keras.Model([x, mask], out)
    for theirs, ours in ((w_1, ff.W_1), (w_2, ff.W_2), (norm_1, layer.norm_1), (norm_2, layer.norm_2)):
        theirs.set_weights(ours.get_weights())
    return model
