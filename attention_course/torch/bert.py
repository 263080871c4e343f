"""Chapter 9's BERT in PyTorch: Chapter 8's post-LN encoder layers (GELU, LayerNorm epsilon 1e-12) under token,
position and segment embeddings, and the loading of a pretrained BERT's weights (``attention_course.pretrained``).
Same names and signatures as ``attention_course.keras.bert``.

Shapes: B batch, T tokens, d = d_model. ``mask`` says True (or 1) where a token is real.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .. import validate
from ..pretrained import bert_parameters
from . import inputs
from .transformer import EncoderLayer

__all__ = ["BertEmbeddings", "Bert", "load_pretrained"]


class BertEmbeddings(nn.Module):
    """A token's vector is the sum of three learned ones: its word piece, its position (0 … max_len − 1) and its
    segment (sentence A or B), normalised by a LayerNorm, then dropout."""

    def __init__(self, vocab: int, d_model: int, max_len: int = 512, segments: int = 2, dropout: float = 0.1):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model)
        self.positions = nn.Embedding(max_len, d_model)
        self.segments = nn.Embedding(segments, d_model)
        self.norm = nn.LayerNorm(d_model, eps=1e-12)
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids, segments=None):
        # ids (B, T), segments (B, T) ids of the sentence each token is in (default: all 0) → (B, T, d)
        ids = inputs.ids(ids, "ids", self.tokens)
        validate.positions(ids.shape[1], self.positions.num_embeddings)
        segments = torch.zeros_like(ids) if segments is None else inputs.ids(segments, "segments", self.segments)
        validate.same_shape("segments", tuple(segments.shape), tuple(ids.shape), "ids")
        position = torch.arange(ids.shape[1], device=ids.device)[None]                  # (1, T)
        x = self.tokens(ids) + self.positions(position) + self.segments(segments)
        return self.dropout(self.norm(x))


class Bert(nn.Module):
    """BERT's encoder (Devlin et al.): the embeddings, then ``layers`` of Chapter 8's post-LN ``EncoderLayer`` with
    GELU. ids (B, T), mask (B, T), segments (B, T) → hidden states (B, T, d); with ``return_weights`` also
    ``{"hidden": [embeddings, layer 1, …] (B, T, d) each, "attention": [layer 1, …] (B, h, T, T) each}``."""

    def __init__(self, vocab: int = 30522, d_model: int = 768, heads: int = 12, layers: int = 12, d_ff: int = 3072,
                 max_len: int = 512, segments: int = 2, dropout: float = 0.1):
        super().__init__()
        vocab, d_model, layers, d_ff, max_len, segments = validate.sizes(
            vocab=vocab, d_model=d_model, layers=layers, d_ff=d_ff, max_len=max_len, segments=segments)
        self.embeddings = BertEmbeddings(vocab, d_model, max_len, segments, dropout)
        self.encoder = nn.ModuleList(EncoderLayer(d_model, heads, d_ff, dropout, activation="gelu", eps=1e-12)
                                     for _ in range(layers))

    def forward(self, ids, mask=None, segments=None, return_weights: bool = False):
        x = self.embeddings(ids, segments)
        hidden, attention = [x], []
        for layer in self.encoder:
            out = layer(x, mask, return_weights=return_weights)
            x = out[0] if return_weights else out
            hidden.append(x)
            attention.append(out[1] if return_weights else None)
        return (x, {"hidden": hidden, "attention": attention}) if return_weights else x


def load_pretrained(weights, dropout: float = 0.1) -> Bert:
    """A ``Bert`` holding ``weights`` (a pretrained BERT, ``attention_course.pretrained.read_bert``), in eval mode."""
    model = Bert(**weights.sizes, dropout=dropout)
    params = bert_parameters(weights)

    def put(module, *arrays):
        for target, array in zip((module.weight, module.bias), arrays, strict=True):
            validate.same_shape(f"{type(module).__name__} weight", tuple(np.shape(array)), tuple(target.shape),
                                "the model's")
            target.copy_(torch.as_tensor(np.asarray(array)))

    with torch.no_grad():
        e = params["embeddings"]
        for table, name in ((model.embeddings.tokens, "tokens"), (model.embeddings.positions, "positions"),
                            (model.embeddings.segments, "segments")):
            validate.same_shape(name, tuple(e[name].shape), tuple(table.weight.shape), "the model's")
            table.weight.copy_(torch.as_tensor(e[name]))
        put(model.embeddings.norm, *e["norm"])
        for layer, p in zip(model.encoder, params["layers"], strict=True):
            for name in ("W_q", "W_k", "W_v", "W_o"):
                put(getattr(layer.self_attention, name), *p[name])
            put(layer.feed_forward.W_1, *p["W_1"])
            put(layer.feed_forward.W_2, *p["W_2"])
            put(layer.norm_1, *p["norm_1"])
            put(layer.norm_2, *p["norm_2"])
    return model.eval()
