"""Chapter 9 in PyTorch: BERT, Chapter 8's post-LN encoder layers (GELU, LayerNorm epsilon 1e-12) under token,
position and segment embeddings; the masked-language-model head that pretrains it and the classifier that
fine-tunes it; the loading of BERT weights (``pretrained.py`` beside it). Then whether the classifier's attention
explains its prediction, the two tests of Jain & Wallace (2019): the attention that feeds the classifier directly
is the last layer's, in the row of the [CLS] query (the pooler reads [CLS]'s final vector and nothing else);
``logits_with_cls_attention`` runs the model with that row replaced (permuted, say), ``token_gradients`` measures
how much the prediction depends on each token's input vector. Same names and signatures as ``keras.py``
beside it.

Shapes: B batch (sentences), T tokens, h heads, d = d_model. ``mask`` says True (or 1) where a token is real.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from attention_course.ch07_self_attention.torch import merge_heads, split_heads
from attention_course.ch08_transformer.torch import EncoderLayer
from attention_course.ch09_bert import validate
from attention_course.ch09_bert.pretrained import (
    ModelUnavailableError,
    PretrainedBert,
    bert_parameters,
    from_parameters,
)
from attention_course.core.torch import inputs

__all__ = ["BertEmbeddings", "Bert", "MaskedLM", "SentenceClassifier", "load_pretrained", "export_bert",
           "logits_with_cls_attention", "token_gradients"]


INIT = 0.02   # BERT's initializer range: the embedding tables are drawn from N(0, 0.02²)
EXPLAINED = "the two tests read a fine-tuned classifier's [CLS] (a SentenceClassifier over a Bert)"


class BertEmbeddings(nn.Module):
    """A token's vector is the sum of three learned ones: its word piece, its position (0 … max_len − 1) and its
    segment (sentence A or B), normalised by a LayerNorm, then dropout."""

    def __init__(self, vocab: int, d_model: int, max_len: int = 512, segments: int = 2, dropout: float = 0.1):
        super().__init__()
        vocab, d_model, max_len, segments = validate.sizes(vocab=vocab, d_model=d_model, max_len=max_len,
                                                           segments=segments)
        dropout = validate.rate("dropout", dropout)
        self.tokens = nn.Embedding(vocab, d_model)
        self.positions = nn.Embedding(max_len, d_model)
        self.segments = nn.Embedding(segments, d_model)
        self.norm = nn.LayerNorm(d_model, eps=1e-12)
        self.dropout = nn.Dropout(dropout)
        for table in (self.tokens, self.positions, self.segments):
            nn.init.normal_(table.weight, std=INIT)

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


class MaskedLM(nn.Module):
    """A ``Bert`` with BERT's masked-language-model head: the hidden state at each position to predict goes through
    a dense layer, GELU and a LayerNorm, then scores every word piece against the token embeddings (the output
    layer shares the input table, as in the paper), plus a bias. ids, mask (B, T), positions (B, P), the positions
    to predict, and segments (B, T) → logits (B, P, V)."""

    def __init__(self, vocab: int, d_model: int = 128, heads: int = 4, layers: int = 2, d_ff: int = 512,
                 max_len: int = 512, segments: int = 2, dropout: float = 0.1):
        super().__init__()
        self.bert = Bert(vocab, d_model, heads, layers, d_ff, max_len, segments, dropout)
        self.transform = nn.Linear(d_model, d_model)
        self.norm = nn.LayerNorm(d_model, eps=1e-12)
        self.bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, ids, mask, positions, segments=None):
        h = self.bert(ids, mask, segments)                                            # (B, T, d)
        positions = inputs.positions(positions, h.shape[:2], h.device)                # (B, P)
        h = torch.gather(h, 1, positions[..., None].expand(-1, -1, h.shape[-1]))       # (B, P, d)
        h = self.norm(F.gelu(self.transform(h)))
        return h @ self.bert.embeddings.tokens.weight.T + self.bias                  # (B, P, V)


class SentenceClassifier(nn.Module):
    """BERT fine-tuned to classify a text: the final hidden state of [CLS] through BERT's pooler (a dense layer
    with tanh), dropout and a linear layer to ``classes`` logits. ids, mask, segments (B, T) → logits (B, classes);
    a pair of texts (next-sentence prediction) is one sequence, ``[CLS] A [SEP] B [SEP]``, B's tokens in segment 1."""

    def __init__(self, bert: Bert, classes: int = 2, dropout: float = 0.1):
        super().__init__()
        (classes,) = validate.sizes(classes=classes)
        validate.wraps("SentenceClassifier", bert, Bert, "build it on the encoder, SentenceClassifier(bert), or on "
                       "a MaskedLM's, SentenceClassifier(masked_lm.bert)")
        d_model = bert.embeddings.tokens.embedding_dim
        self.bert = bert
        self.pooler = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(d_model, classes)

    def forward(self, ids, mask=None, segments=None, return_weights: bool = False):
        out = self.bert(ids, mask, segments, return_weights=return_weights)
        h = out[0] if return_weights else out                                          # (B, T, d)
        logits = self.out(self.dropout(torch.tanh(self.pooler(h[:, 0]))))           # [CLS] → (B, classes)
        return (logits, out[1]["attention"]) if return_weights else logits


def load_pretrained(weights, dropout: float = 0.1, masked_lm: bool = False) -> Bert | MaskedLM:
    """A ``Bert`` holding ``weights`` (a pretrained BERT, ``pretrained.read_bert`` beside this module), in eval mode;
    with ``masked_lm``, a ``MaskedLM`` with the weights' masked-LM head as well."""
    validate.pretrained_weights(weights, PretrainedBert)
    params = bert_parameters(weights)
    if masked_lm and "head" not in params:
        raise ModelUnavailableError("these weights have no masked-LM head (cls.predictions.*): load them with "
                                    "masked_lm=False (MiniLM's last training replaced its head)")
    model = MaskedLM(**weights.sizes, dropout=dropout) if masked_lm else Bert(**weights.sizes, dropout=dropout)
    bert = model.bert if masked_lm else model

    def put(module, *arrays):
        for target, array in zip((module.weight, module.bias), arrays, strict=True):
            validate.same_shape(f"{type(module).__name__} weight", tuple(np.shape(array)), tuple(target.shape),
                                "the model's")
            target.copy_(torch.as_tensor(np.asarray(array)))

    with torch.no_grad():
        e = params["embeddings"]
        for table, name in ((bert.embeddings.tokens, "tokens"), (bert.embeddings.positions, "positions"),
                            (bert.embeddings.segments, "segments")):
            validate.same_shape(name, tuple(e[name].shape), tuple(table.weight.shape), "the model's")
            table.weight.copy_(torch.as_tensor(e[name]))
        put(bert.embeddings.norm, *e["norm"])
        for layer, p in zip(bert.encoder, params["layers"], strict=True):
            for name in ("W_q", "W_k", "W_v", "W_o"):
                put(getattr(layer.self_attention, name), *p[name])
            put(layer.feed_forward.W_1, *p["W_1"])
            put(layer.feed_forward.W_2, *p["W_2"])
            put(layer.norm_1, *p["norm_1"])
            put(layer.norm_2, *p["norm_2"])
        if masked_lm:
            put(model.transform, *params["head"]["transform"])
            put(model.norm, *params["head"]["norm"])
            model.bias.copy_(torch.as_tensor(params["head"]["bias"]))
    return model.eval()


def export_bert(model: Bert | MaskedLM) -> PretrainedBert:
    """``model``'s weights under the names of Hugging Face's ``BertModel`` (a ``MaskedLM``'s head under those of
    ``BertForMaskedLM``): ``pretrained.write_bert`` saves them, ``load_pretrained`` of either framework reads them."""
    def pair(module):
        return module.weight.detach().cpu().numpy(), module.bias.detach().cpu().numpy()

    bert = cast(Bert, getattr(model, "bert", model))    # a MaskedLM (or the chapter's own) holds its Bert
    e = bert.embeddings
    params = {"embeddings": {"tokens": e.tokens.weight.detach().cpu().numpy(),
                             "positions": e.positions.weight.detach().cpu().numpy(),
                             "segments": e.segments.weight.detach().cpu().numpy(), "norm": pair(e.norm)},
              "layers": [{**{name: pair(getattr(layer.self_attention, name)) for name in ("W_q", "W_k", "W_v", "W_o")},
                          "W_1": pair(layer.feed_forward.W_1), "W_2": pair(layer.feed_forward.W_2),
                          "norm_1": pair(layer.norm_1), "norm_2": pair(layer.norm_2)} for layer in bert.encoder]}
    if hasattr(model, "transform"):
        params["head"] = {"transform": pair(model.transform), "norm": pair(model.norm),
                          "bias": model.bias.detach().cpu().numpy()}
    return from_parameters(params, heads=bert.encoder[0].self_attention.heads)


@torch.no_grad()
def logits_with_cls_attention(model, ids, mask, attention) -> np.ndarray:
    """The logits (B, classes) of ``model`` (a ``SentenceClassifier`` over a post-LN ``Bert``) when, in the last
    layer, [CLS] attends with ``attention`` (B, h, T) instead of its own weights; the other rows, which the
    classifier does not read, need no change. With the model's own weights it returns the model's logits."""
    validate.wraps("logits_with_cls_attention", model, SentenceClassifier, EXPLAINED)
    model.eval()
    bert, device = model.bert, model.out.weight.device
    ids, mask = torch.as_tensor(np.asarray(ids), device=device), torch.as_tensor(np.asarray(mask), device=device)
    x = bert.embeddings(ids)                                                          # (B, T, d)
    for layer in bert.encoder[:-1]:
        x = layer(x, mask)
    last = bert.encoder[-1]
    heads = last.self_attention.heads
    validate.same_shape("attention", tuple(np.shape(attention)), (x.shape[0], heads, x.shape[1]), "(B, h, T)")
    a = torch.as_tensor(validate.cls_attention(attention, mask.cpu().numpy()), dtype=x.dtype, device=device)
    v = split_heads(last.self_attention.W_v(x), heads)                                # (B, h, T, d_head)
    context = merge_heads(a[:, :, None, :] @ v)                                       # (B, 1, d): [CLS]'s mix
    h = last.norm_1(x[:, :1] + last.self_attention.W_o(context))                      # post-LN, as BERT
    h = last.norm_2(h + last.feed_forward(h))
    return model.out(torch.tanh(model.pooler(h[:, 0]))).cpu().numpy()


def token_gradients(model, ids, mask) -> np.ndarray:
    """(B, T): the norm of the gradient of each sentence's predicted logit with respect to each token's input
    vector (the embeddings' output), the gradient-based importance Jain & Wallace compare attention with."""
    validate.wraps("token_gradients", model, SentenceClassifier, EXPLAINED)
    model.eval()
    device = model.out.weight.device
    ids, mask = torch.as_tensor(np.asarray(ids), device=device), torch.as_tensor(np.asarray(mask), device=device)
    x = model.bert.embeddings(ids).detach().requires_grad_(True)                      # (B, T, d)
    h = x
    for layer in model.bert.encoder:
        h = layer(h, mask)
    logits = model.out(torch.tanh(model.pooler(h[:, 0])))                             # (B, classes)
    logits.gather(1, logits.argmax(1, keepdim=True)).sum().backward()
    return x.grad.norm(dim=-1).cpu().numpy()
