"""Chapter 9's BERT in Keras 3: Chapter 8's post-LN encoder layers (GELU, LayerNorm epsilon 1e-12) under token,
position and segment embeddings, and the loading of a pretrained BERT's weights (``attention_course.pretrained``).
Same names and signatures as ``attention_course.torch.bert``.

Shapes: B batch, T tokens, d = d_model. ``mask`` says True (or 1) where a token is real.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from .. import validate
from ..pretrained import bert_parameters
from . import inputs
from .base import BuildOnCall, Layer, Model
from .transformer import EncoderLayer

__all__ = ["BertEmbeddings", "Bert", "load_pretrained"]


class BertEmbeddings(BuildOnCall, Layer):
    """A token's vector is the sum of three learned ones: its word piece, its position (0 … max_len − 1) and its
    segment (sentence A or B), normalised by a LayerNorm, then dropout."""

    def __init__(self, vocab: int, d_model: int, max_len: int = 512, segments: int = 2, dropout: float = 0.1,
                 **kwargs):
        super().__init__(**kwargs)
        self.max_len = max_len
        self.tokens = keras.layers.Embedding(vocab, d_model)
        self.positions = keras.layers.Embedding(max_len, d_model)
        self.segments = keras.layers.Embedding(segments, d_model)
        self.norm = keras.layers.LayerNormalization(epsilon=1e-12)
        self.dropout = keras.layers.Dropout(dropout)

    def call(self, ids, segments=None, training=None):
        # ids (B, T), segments (B, T) ids of the sentence each token is in (default: all 0) → (B, T, d)
        ids = inputs.ids(ids, "ids", self.tokens)
        validate.positions(ids.shape[1], self.max_len)
        segments = ops.zeros_like(ids) if segments is None else inputs.ids(segments, "segments", self.segments)
        validate.same_shape("segments", tuple(segments.shape), tuple(ids.shape), "ids")
        position = ops.arange(ids.shape[1])[None]                                         # (1, T)
        x = self.tokens(ids) + self.positions(position) + self.segments(segments)
        return self.dropout(self.norm(x), training=training)


class Bert(Model):
    """BERT's encoder (Devlin et al.): the embeddings, then ``layers`` of Chapter 8's post-LN ``EncoderLayer`` with
    GELU. ids (B, T), mask (B, T), segments (B, T) → hidden states (B, T, d); with ``return_weights`` also
    ``{"hidden": [embeddings, layer 1, …] (B, T, d) each, "attention": [layer 1, …] (B, h, T, T) each}``."""

    def __init__(self, vocab: int = 30522, d_model: int = 768, heads: int = 12, layers: int = 12, d_ff: int = 3072,
                 max_len: int = 512, segments: int = 2, dropout: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        vocab, d_model, layers, d_ff, max_len, segments = validate.sizes(
            vocab=vocab, d_model=d_model, layers=layers, d_ff=d_ff, max_len=max_len, segments=segments)
        self.embeddings = BertEmbeddings(vocab, d_model, max_len, segments, dropout)
        self.encoder = [EncoderLayer(d_model, heads, d_ff, dropout, activation="gelu", eps=1e-12)
                        for _ in range(layers)]

    def call(self, ids, mask=None, segments=None, return_weights: bool = False, training=None):
        x = self.embeddings(ids, segments, training=training)
        hidden, attention = [x], []
        for layer in self.encoder:
            out = layer(x, mask, return_weights=return_weights, training=training)
            x = out[0] if return_weights else out
            hidden.append(x)
            attention.append(out[1] if return_weights else None)
        return (x, {"hidden": hidden, "attention": attention}) if return_weights else x


def load_pretrained(weights, dropout: float = 0.1) -> Bert:
    """A ``Bert`` holding ``weights`` (a pretrained BERT, ``attention_course.pretrained.read_bert``)."""
    model = Bert(**weights.sizes, dropout=dropout)
    model(np.zeros((1, 2), "int32"), np.ones((1, 2), bool))                          # build the weights
    params = bert_parameters(weights)

    def put(layer, pair, dense: bool = True):
        # a Dense kernel is (in, out): PyTorch's (out, in) transposed; a LayerNorm's gamma and beta as they are
        weight, bias = pair
        arrays = [np.asarray(weight).T if dense else np.asarray(weight), np.asarray(bias)]
        for target, array in zip(layer.get_weights(), arrays, strict=True):
            validate.same_shape(f"{layer.name} weight", array.shape, target.shape, "the model's")
        layer.set_weights(arrays)

    e = params["embeddings"]
    for table, name in ((model.embeddings.tokens, "tokens"), (model.embeddings.positions, "positions"),
                        (model.embeddings.segments, "segments")):
        validate.same_shape(name, tuple(e[name].shape), tuple(table.embeddings.shape), "the model's")
        table.set_weights([np.asarray(e[name])])
    put(model.embeddings.norm, e["norm"], dense=False)
    for layer, p in zip(model.encoder, params["layers"], strict=True):
        for name in ("W_q", "W_k", "W_v", "W_o"):
            put(getattr(layer.self_attention, name), p[name])
        put(layer.feed_forward.W_1, p["W_1"])
        put(layer.feed_forward.W_2, p["W_2"])
        put(layer.norm_1, p["norm_1"], dense=False)
        put(layer.norm_2, p["norm_2"], dense=False)
    return model
