"""Chapter 8's Transformer in PyTorch, built from Chapter 7's ``MultiHeadAttention``: the position-wise feed-forward
network, encoder and decoder layers with residual connections and LayerNorm after (post-LN, the paper) or before
(pre-LN) each sub-layer, and the encoder–decoder translator with incremental decoding through a key–value cache.
Same names and signatures as ``keras.py`` beside it.

Shapes: B batch, S source length, T target length, d_model = d. Masks say True (or 1) where a token is real: the
padding masks (B, S) of the sources and of the memory.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from attention_course.ch07_self_attention.torch import MultiHeadAttention, combined_mask, rope, sinusoids, split_heads
from attention_course.ch08_transformer import validate
from attention_course.core.torch import inputs

__all__ = ["KVCache", "StaticKVCache", "CachedMultiHeadAttention", "FeedForward", "EncoderLayer", "DecoderLayer",
           "Transformer", "LanguageModel", "framework_encoder_layer"]


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
            self.keys = torch.cat([self.keys, k], dim=-2)
            self.values = torch.cat([self.values, v], dim=-2)
        return self.keys, self.values

    def select(self, index) -> None:
        """Keep the batch rows ``index`` (beam search reorders its hypotheses)."""
        if self.keys is not None:
            index = torch.as_tensor(np.asarray(index), dtype=torch.long, device=self.keys.device)
            self.keys, self.values = self.keys.index_select(0, index), self.values.index_select(0, index)


class StaticKVCache(KVCache):
    """A key–value cache of fixed ``capacity``, for a compiled decoding step: each call writes its keys and values at
    position ``length`` of buffers (B, h, capacity, d_head) and its queries see the positions written so far, so
    every step has the same shapes. (PyTorch's models run op by op, fast enough to keep the growing ``KVCache``;
    ``torch.compile`` or CUDA graphs would want this one.)"""

    def __init__(self, keys, values, length):
        self.keys, self.values, self.length = keys, values, length     # buffers (B, h, C, d_head); length: int

    @classmethod
    def empty(cls, batch: int, heads: int, capacity: int, d_head: int) -> StaticKVCache:
        return cls(torch.zeros(batch, heads, capacity, d_head), torch.zeros(batch, heads, capacity, d_head), 0)

    def __len__(self) -> int:
        return int(self.length)

    def append(self, k, v):
        """Write this call's keys and values (B, h, T, d_head) at ``length``; returns the whole buffers."""
        validate.same_steps(tuple(self.keys.shape), tuple(k.shape))
        validate.within_capacity(self.length, k.shape[-2], self.keys.shape[-2])
        end = self.length + k.shape[-2]
        self.keys = self.keys.to(k.device).slice_scatter(k, dim=2, start=self.length, end=end)
        self.values = self.values.to(v.device).slice_scatter(v, dim=2, start=self.length, end=end)
        self.length = end
        return self.keys, self.values

    def visible(self, t_q: int):
        """(1, T_q, C) bool: query i of this call, at position length − T_q + i, sees the positions up to its own."""
        positions = self.length - t_q + torch.arange(t_q, device=self.keys.device)              # (T_q,)
        return (torch.arange(self.keys.shape[-2], device=self.keys.device)[None, :] <= positions[:, None])[None]

    def grown(self, capacity: int) -> StaticKVCache:
        """The same cache in buffers of a larger ``capacity`` (zeros after ``length``)."""
        pad = (0, 0, 0, capacity - self.keys.shape[-2])
        return StaticKVCache(F.pad(self.keys, pad), F.pad(self.values, pad), self.length)


class CachedMultiHeadAttention(MultiHeadAttention):
    """Chapter 7's multi-head attention, able to decode one step at a time: with ``cache`` (a ``KVCache``), this
    call's keys and values are appended to the cache and the queries attend to all of them, so each new step
    computes the keys and values of its own tokens only. ``cache`` may also be the keys and values of an encoder's
    output, from ``memory_keys``: the same at every step, so they are computed once per source and the queries
    attend to them as they are. Without a cache it is Chapter 7's layer."""

    def forward(self, query, key=None, value=None, mask=None, causal: bool = False, return_weights: bool = False,
            padding_mask=None, cache: KVCache | tuple | None = None):
        if cache is None:
            return super().forward(query, key, value, mask, causal, return_weights, padding_mask)
        if isinstance(cache, tuple | list):                           # a memory's keys and values (B, h, S, d_head)
            k, v = cache
            mask = combined_mask(mask, padding_mask, k, k.device)
            query = inputs.floats(query, "query", k.device)
            validate.model_width(self, query)
            return self.attend(split_heads(self.W_q(query), self.heads), k, v, mask, causal, return_weights)
        mask = combined_mask(mask, padding_mask, query if key is None else key, inputs.device_of(self))
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
        memory = inputs.floats(memory, "memory", inputs.device_of(self))
        validate.model_width(self, memory)
        memory = inputs.hide(memory, combined_mask(None, padding_mask, memory, memory.device))   # pads: zeros
        return split_heads(self.W_k(memory), self.heads), split_heads(self.W_v(memory), self.heads)


class FeedForward(nn.Module):
    """The same two-layer network at every position: d → d_ff → d, ReLU (the paper) or GELU (BERT) between."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"):
        super().__init__()
        d_model, d_ff = validate.sizes(d_model=d_model, d_ff=d_ff)
        dropout = validate.rate("dropout", dropout)
        validate.choice("activation", activation, ("relu", "gelu"))
        self.activation = activation
        self.W_1 = nn.Linear(d_model, d_ff)
        self.W_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        # x (B, T, d) → (B, T, d)
        h = self.W_1(x)
        h = F.gelu(h) if self.activation == "gelu" else F.relu(h)
        return self.W_2(self.dropout(h))


def with_weights(attention, h, return_weights: bool, **kw):
    # (output, weights or None) of an attention layer, whether or not the weights are asked for
    out = attention(h, return_weights=return_weights, **kw)
    return out if return_weights else (out, None)


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network; each adds its output to its input (the residual) and is
    normalised by a LayerNorm after the sum (post-LN, ``norm_first=False``) or before the sub-layer (pre-LN).
    ``causal=True`` lets each position see only itself and earlier ones: the block of a decoder-only model, which is
    the decoder layer without its attention over an encoder; ``cache`` (a ``KVCache``) then decodes step by step.
    BERT's layer computes what this one does with ``activation="gelu"`` and ``eps=1e-12`` (the LayerNorms'
    epsilon); in training BERT drops attention weights, where this layer drops the feed-forward's hidden units."""

    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False,
                 causal: bool = False, activation: str = "relu", eps: float = 1e-5):
        super().__init__()
        validate.positive("eps", eps, " (the LayerNorms' epsilon)")
        self.norm_first, self.causal = norm_first, causal
        self.self_attention = CachedMultiHeadAttention(d_model, heads)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation)
        self.norm_1 = nn.LayerNorm(d_model, eps=eps)
        self.norm_2 = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def residual(self, x, sublayer, norm):
        """x + sublayer(x), with the LayerNorm before the sub-layer (pre-LN) or after the sum (post-LN)."""
        if self.norm_first:
            out, w = sublayer(norm(x))
            return x + self.dropout(out), w
        out, w = sublayer(x)
        return norm(x + self.dropout(out)), w

    def forward(self, x, padding_mask=None, return_weights: bool = False, cache: KVCache | None = None):
        # x (B, S, d), padding_mask (B, S): True on real tokens → (B, S, d) [, weights (B, h, S, S)]
        x = inputs.floats(x, "x", self.norm_1.weight.device)
        x, w = self.residual(x, lambda h: with_weights(self.self_attention, h, return_weights,
                                                  padding_mask=padding_mask, causal=self.causal, cache=cache),
                             self.norm_1)
        x, _ = self.residual(x, lambda h: (self.feed_forward(h), None), self.norm_2)
        return (x, w) if return_weights else x


class DecoderLayer(EncoderLayer):
    """Masked self-attention over the target so far, attention over the encoder's output (the memory), then the
    feed-forward network; residuals and LayerNorms as in ``EncoderLayer``. ``cache`` (a ``KVCache``) decodes one
    step at a time: it keeps the self-attention's keys and values of the earlier steps, and ``memory_kv`` the
    cross-attention's keys and values of the memory, computed once per source (``cross_attention.memory_keys``)."""

    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__(d_model, heads, d_ff, dropout, norm_first, causal=True)
        self.cross_attention = CachedMultiHeadAttention(d_model, heads)
        self.norm_3 = nn.LayerNorm(d_model)

    def forward(self, y, memory, memory_mask=None, cache: KVCache | None = None,  # type: ignore[override]
                return_weights: bool = False, memory_kv: tuple | None = None):
        # y (B, T, d) the target, memory (B, S, d), memory_mask (B, S): True on its real tokens → (B, T, d)
        # [, self-attention weights (B, h, T, T), cross-attention weights (B, h, T, S)]
        y = inputs.floats(y, "y", self.norm_1.weight.device)
        y, w_self = self.residual(
            y, lambda h: with_weights(self.self_attention, h, return_weights, causal=self.causal, cache=cache),
            self.norm_1)
        y, w_cross = self.residual(
            y, lambda h: with_weights(self.cross_attention, h, return_weights, key=memory, padding_mask=memory_mask,
                                      cache=memory_kv), self.norm_2)
        y, _ = self.residual(y, lambda h: (self.feed_forward(h), None), self.norm_3)
        return (y, w_self, w_cross) if return_weights else y


class Transformer(nn.Module):
    """The encoder–decoder of Vaswani et al.: embeddings scaled by √d, sinusoidal positions, ``layers`` encoder and
    decoder layers, and a linear layer to the target vocabulary; pre-LN adds a final LayerNorm to each stack.

    src (B, S), src_mask (B, S), tgt_in (B, T) = BOS + target → logits (B, T, V). ``start``/``step``/``reorder``
    decode one step at a time on NumPy arrays (``attention_course.core.decode``), with a key–value cache.
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, d_model: int = 64, heads: int = 4, layers: int = 2,
                 d_ff: int = 256, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        src_vocab, tgt_vocab, d_model, layers, d_ff = validate.sizes(
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, d_model=d_model, layers=layers, d_ff=d_ff)
        dropout = validate.rate("dropout", dropout)
        self.d_model, self.norm_first = d_model, norm_first
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model ** -0.5)         # × √d on the way in: unit size, as the PE
        self.dropout = nn.Dropout(dropout)
        self.encoder = nn.ModuleList(EncoderLayer(d_model, heads, d_ff, dropout, norm_first) for _ in range(layers))
        self.decoder = nn.ModuleList(DecoderLayer(d_model, heads, d_ff, dropout, norm_first) for _ in range(layers))
        self.encoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.out = nn.Linear(d_model, tgt_vocab)

    def _embed(self, table, ids, offset: int = 0):
        # ids (B, T) → (B, T, d): the embedding × √d plus the sinusoids of positions offset … offset + T − 1
        x = table(ids) * math.sqrt(self.d_model)
        return self.dropout(x + sinusoids(offset + x.shape[1], self.d_model, x.device)[offset:])

    def encode(self, src, src_mask, return_weights: bool = False):
        # src (B, S) ids, src_mask (B, S), None: no padding → memory (B, S, d) [, weights per layer]
        src = inputs.ids(src, "src", self.src_embedding)
        src_mask = torch.ones_like(src, dtype=torch.bool) if src_mask is None else src_mask
        src_mask = inputs.bool_mask(src_mask, "src_mask", src.device)
        validate.same_shape("src_mask", validate.shape_of(src_mask), validate.shape_of(src), "src")
        x, weights = self._embed(self.src_embedding, src), []
        for layer in self.encoder:
            out = layer(x, src_mask, return_weights=return_weights)
            x = out[0] if return_weights else out
            weights.append(out[1] if return_weights else None)
        x = self.encoder_norm(x)
        return (x, src_mask, weights) if return_weights else (x, src_mask)

    def memory_keys(self, memory, memory_mask):
        # each decoder layer's cross-attention keys and values of the memory (B, h, S, d_head), once per source
        return [layer.cross_attention.memory_keys(memory, memory_mask) for layer in self.decoder]

    def decode(self, tgt_in, memory, memory_mask, caches=None, offset: int = 0, return_weights: bool = False,
               memory_kv=None):
        # tgt_in (B, T) ids → logits (B, T, V) [, self- and cross-attention weights per layer]
        tgt_in = inputs.ids(tgt_in, "tgt_in", self.tgt_embedding)
        y, weights = self._embed(self.tgt_embedding, tgt_in, offset), []
        for i, layer in enumerate(self.decoder):
            out = layer(y, memory, memory_mask, cache=None if caches is None else caches[i],
                        return_weights=return_weights, memory_kv=None if memory_kv is None else memory_kv[i])
            y = out[0] if return_weights else out
            weights.append(out[1:] if return_weights else None)
        logits = self.out(self.decoder_norm(y))
        return (logits, weights) if return_weights else logits

    def forward(self, src, src_mask, tgt_in, return_weights: bool = False):
        encoded = self.encode(src, src_mask, return_weights=return_weights)
        memory, mask = encoded[:2]
        validate.same_batch(src=validate.shape_of(memory)[:2], tgt_in=validate.shape_of(tgt_in))
        if not return_weights:
            return self.decode(tgt_in, memory, mask)
        logits, dec_weights = self.decode(tgt_in, memory, mask, return_weights=True)
        return logits, {"encoder": encoded[2], "decoder": [w[0] for w in dec_weights],
                        "cross": [w[1] for w in dec_weights]}

    # one step at a time, on NumPy arrays, for greedy and beam search (attention_course.core.decode)
    @torch.no_grad()
    def start(self, src, src_mask):
        self.eval()
        memory, mask = self.encode(src, src_mask)
        return {"memory": memory, "mask": mask, "memory_kv": self.memory_keys(memory, mask),   # the source, once
                "caches": [KVCache() for _ in self.decoder], "steps": 0}

    @torch.no_grad()
    def step(self, tokens, state):
        tokens = torch.as_tensor(np.asarray(tokens), dtype=torch.long, device=state["memory"].device)[:, None]
        logits = self.decode(tokens, state["memory"], state["mask"], state["caches"], offset=state["steps"],
                             memory_kv=state["memory_kv"])
        state = {**state, "steps": state["steps"] + 1}
        return torch.log_softmax(logits[:, -1], dim=-1).cpu().numpy(), state, None

    def reorder(self, state, index):
        for cache in state["caches"]:
            cache.select(index)
        index = torch.as_tensor(np.asarray(index), dtype=torch.long, device=state["memory"].device)
        return {**state, "memory": state["memory"].index_select(0, index),
                "mask": state["mask"].index_select(0, index),
                "memory_kv": [(k.index_select(0, index), v.index_select(0, index)) for k, v in state["memory_kv"]]}


class LanguageModel(nn.Module):
    """A decoder-only Transformer (the GPT of Radford et al.): token embeddings scaled by √d plus sinusoids,
    ``layers`` causal ``EncoderLayer`` blocks (decoder layers without cross-attention), a final LayerNorm (pre-LN)
    and a linear layer to the vocabulary. ids (B, T) → logits (B, T, V), where position t scores the token at t + 1.
    It reads at most ``context`` tokens; ``start``/``step`` generate one token at a time with a key–value cache
    (``attention_course.core.decode.sample``)."""

    def __init__(self, vocab: int, d_model: int = 64, heads: int = 4, layers: int = 2, d_ff: int = 256,
                 dropout: float = 0.1, norm_first: bool = True, context: int = 128):
        super().__init__()
        vocab, d_model, layers, d_ff, context = validate.sizes(
            vocab=vocab, d_model=d_model, layers=layers, d_ff=d_ff, context=context)
        dropout = validate.rate("dropout", dropout)
        self.d_model, self.context = d_model, context
        self.embedding = nn.Embedding(vocab, d_model)
        nn.init.normal_(self.embedding.weight, std=d_model ** -0.5)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(EncoderLayer(d_model, heads, d_ff, dropout, norm_first, causal=True)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.out = nn.Linear(d_model, vocab)

    _embed = Transformer._embed                                       # embeddings × √d plus the sinusoids

    def forward(self, ids, caches=None, offset: int = 0, return_weights: bool = False):
        # ids (B, T) → logits (B, T, V) [, self-attention weights (B, h, T, offset + T) per block]
        ids = inputs.ids(ids, "ids", self.embedding)
        validate.within_context(offset + ids.shape[1], self.context)
        x, weights = self._embed(self.embedding, ids, offset), []
        for i, block in enumerate(self.blocks):
            out = block(x, cache=None if caches is None else caches[i], return_weights=return_weights)
            x = out[0] if return_weights else out
            weights.append(out[1] if return_weights else None)
        logits = self.out(self.norm(x))
        return (logits, weights) if return_weights else logits

    # one token at a time, on NumPy arrays (attention_course.core.decode.sample)
    @torch.no_grad()
    def start(self, prefix):
        self.eval()
        state = {"caches": [KVCache() for _ in self.blocks], "steps": int(np.shape(prefix)[1])}
        if state["steps"]:
            self(torch.as_tensor(np.asarray(prefix), dtype=torch.long, device=self.out.weight.device),
                 caches=state["caches"])
        return state

    @torch.no_grad()
    def step(self, tokens, state):
        tokens = torch.as_tensor(np.asarray(tokens), dtype=torch.long, device=self.out.weight.device)[:, None]
        logits = self(tokens, caches=state["caches"], offset=state["steps"])
        state = {**state, "steps": state["steps"] + 1}
        return torch.log_softmax(logits[:, -1], dim=-1).cpu().numpy(), state, None


def framework_encoder_layer(layer: EncoderLayer) -> nn.TransformerEncoderLayer:
    """PyTorch's own ``nn.TransformerEncoderLayer`` holding the weights of the course's ``layer`` (batch first, the
    same activation, norm placement and LayerNorm epsilon): the two compute the same outputs without dropout (in
    training PyTorch's also drops attention weights)."""
    mha, ff = layer.self_attention, layer.feed_forward
    d_model, d_ff = ff.W_1.in_features, ff.W_1.out_features
    theirs = nn.TransformerEncoderLayer(d_model, mha.heads, d_ff, dropout=layer.dropout.p, batch_first=True,
                                        norm_first=layer.norm_first, layer_norm_eps=layer.norm_1.eps,
                                        activation=ff.activation)
    with torch.no_grad():
        theirs.self_attn.in_proj_weight.copy_(torch.cat([mha.W_q.weight, mha.W_k.weight, mha.W_v.weight]))
        theirs.self_attn.in_proj_bias.copy_(torch.cat([mha.W_q.bias, mha.W_k.bias, mha.W_v.bias]))
        theirs.self_attn.out_proj.load_state_dict(mha.W_o.state_dict())
        theirs.linear1.load_state_dict(ff.W_1.state_dict())
        theirs.linear2.load_state_dict(ff.W_2.state_dict())
        theirs.norm1.load_state_dict(layer.norm_1.state_dict())
        theirs.norm2.load_state_dict(layer.norm_2.state_dict())
    return theirs.to(ff.W_1.weight.device)
