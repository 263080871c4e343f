"""Chapter 9 in Keras 3: BERT, Chapter 8's post-LN encoder layers (GELU, LayerNorm epsilon 1e-12) under token,
position and segment embeddings; the masked-language-model head that pretrains it and the classifier that
fine-tunes it; the loading of BERT weights (``pretrained.py`` beside it). Then whether the classifier's attention
explains its prediction, the two tests of Jain & Wallace (2019): the attention that feeds the classifier directly
is the last layer's, in the row of the [CLS] query (the pooler reads [CLS]'s final vector and nothing else);
``logits_with_cls_attention`` runs the model with that row replaced (permuted, say), ``token_gradients`` measures
how much the prediction depends on each token's input vector. Same names and signatures as ``torch.py``
beside it.

Shapes: B batch (sentences), T tokens, h heads, d = d_model. ``mask`` says True (or 1) where a token is real.
"""

from __future__ import annotations

from typing import Any, cast

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from attention_course.ch07_self_attention.keras import merge_heads, split_heads
from attention_course.ch08_transformer.keras import EncoderLayer, torch_like_dense
from attention_course.ch09_bert import validate
from attention_course.ch09_bert.pretrained import (
    ModelUnavailableError,
    PretrainedBert,
    bert_parameters,
    from_parameters,
)
from attention_course.core.keras import inputs
from attention_course.core.keras.base import BuildOnCall, Layer, Model

__all__ = ["BertEmbeddings", "Bert", "MaskedLM", "SentenceClassifier", "load_pretrained", "export_bert",
           "logits_with_cls_attention", "token_gradients"]


INIT = 0.02   # BERT's initializer range: the embedding tables are drawn from N(0, 0.02²)
EXPLAINED = "the two tests read a fine-tuned classifier's [CLS] (a SentenceClassifier over a Bert)"


class BertEmbeddings(BuildOnCall, Layer):
    """A token's vector is the sum of three learned ones: its word piece, its position (0 … max_len − 1) and its
    segment (sentence A or B), normalised by a LayerNorm, then dropout."""

    def __init__(self, vocab: int, d_model: int, max_len: int = 512, segments: int = 2, dropout: float = 0.1,
                 **kwargs):
        super().__init__(**kwargs)
        vocab, d_model, max_len, segments = validate.sizes(vocab=vocab, d_model=d_model, max_len=max_len,
                                                           segments=segments)
        dropout = validate.rate("dropout", dropout)
        self.max_len = max_len
        table = keras.initializers.RandomNormal(stddev=INIT)
        self.tokens = keras.layers.Embedding(vocab, d_model, embeddings_initializer=table)
        self.positions = keras.layers.Embedding(max_len, d_model, embeddings_initializer=table)
        self.segments = keras.layers.Embedding(segments, d_model, embeddings_initializer=table)
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


class MaskedLM(Model):
    """A ``Bert`` with BERT's masked-language-model head: the hidden state at each position to predict goes through
    a dense layer, GELU and a LayerNorm, then scores every word piece against the token embeddings (the output
    layer shares the input table, as in the paper), plus a bias. ids, mask (B, T), positions (B, P), the positions
    to predict, and segments (B, T) → logits (B, P, V)."""

    def __init__(self, vocab: int, d_model: int = 128, heads: int = 4, layers: int = 2, d_ff: int = 512,
                 max_len: int = 512, segments: int = 2, dropout: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        self.bert = Bert(vocab, d_model, heads, layers, d_ff, max_len, segments, dropout)
        self.transform = torch_like_dense(d_model)
        self.norm = keras.layers.LayerNormalization(epsilon=1e-12)
        self.bias = self.add_weight(shape=(vocab,), initializer="zeros", name="bias")

    def call(self, ids, mask, positions, segments=None, training=None):
        h = self.bert(ids, mask, segments, training=training)                           # (B, T, d)
        positions = inputs.positions(positions, ops.shape(h)[:2])                       # (B, P)
        index = ops.repeat(ops.expand_dims(ops.cast(positions, "int32"), -1), h.shape[-1], axis=-1)
        h = ops.take_along_axis(h, index, axis=1)                                       # (B, P, d)
        h = self.norm(keras.activations.gelu(self.transform(h), approximate=False))
        return ops.matmul(h, ops.transpose(self.bert.embeddings.tokens.embeddings)) + self.bias   # (B, P, V)


class SentenceClassifier(Model):
    """BERT fine-tuned to classify a text: the final hidden state of [CLS] through BERT's pooler (a dense layer
    with tanh), dropout and a linear layer to ``classes`` logits. ids, mask, segments (B, T) → logits (B, classes);
    a pair of texts (next-sentence prediction) is one sequence, ``[CLS] A [SEP] B [SEP]``, B's tokens in segment 1."""

    def __init__(self, bert: Bert, classes: int = 2, dropout: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        (classes,) = validate.sizes(classes=classes)
        validate.wraps("SentenceClassifier", bert, Bert, "build it on the encoder, SentenceClassifier(bert), or on "
                       "a MaskedLM's, SentenceClassifier(masked_lm.bert)")
        self.bert = bert
        self.pooler = torch_like_dense(bert.embeddings.tokens.output_dim)
        self.dropout = keras.layers.Dropout(dropout)
        self.out = torch_like_dense(classes)

    def call(self, ids, mask=None, segments=None, return_weights: bool = False, training=None):
        out = self.bert(ids, mask, segments, return_weights=return_weights, training=training)
        h = out[0] if return_weights else out                                            # (B, T, d)
        pooled = ops.tanh(self.pooler(h[:, 0]))                                          # [CLS] → (B, d)
        logits = self.out(self.dropout(pooled, training=training))                       # (B, classes)
        return (logits, out[1]["attention"]) if return_weights else logits


def built(model: Bert | MaskedLM) -> Bert | MaskedLM:
    """``model`` with its weights created (a Keras layer makes them on its first call): one sentence of two tokens,
    and for a ``MaskedLM`` one position to predict."""
    masked_lm = hasattr(model, "transform")           # a MaskedLM (the package's, or a chapter cell's own class)
    bert: Any = getattr(model, "bert", model)
    if not (bert.embeddings.tokens.built and (not masked_lm or cast(Any, model).transform.built)):
        one, real = np.zeros((1, 2), "int32"), np.ones((1, 2), bool)
        model(one, real, np.zeros((1, 1), "int32")) if masked_lm else model(one, real)
    return model


def load_pretrained(weights, dropout: float = 0.1, masked_lm: bool = False) -> Bert | MaskedLM:
    """A ``Bert`` holding ``weights`` (a pretrained BERT, ``attention_course.ch09_bert.pretrained.read_bert``); with
    ``masked_lm``, a ``MaskedLM`` with the weights' masked-LM head as well."""
    validate.pretrained_weights(weights, PretrainedBert)
    params = bert_parameters(weights)
    if masked_lm and "head" not in params:
        raise ModelUnavailableError("these weights have no masked-LM head (cls.predictions.*): load them with "
                                    "masked_lm=False (MiniLM's last training replaced its head)")
    model = built(MaskedLM(**weights.sizes, dropout=dropout) if masked_lm else Bert(**weights.sizes, dropout=dropout))
    bert = model.bert if masked_lm else model

    def put(layer, pair, dense: bool = True):
        # a Dense kernel is (in, out): PyTorch's (out, in) transposed; a LayerNorm's gamma and beta as they are
        weight, bias = pair
        arrays = [np.asarray(weight).T if dense else np.asarray(weight), np.asarray(bias)]
        for target, array in zip(layer.get_weights(), arrays, strict=True):
            validate.same_shape(f"{layer.name} weight", array.shape, target.shape, "the model's")
        layer.set_weights(arrays)

    e = params["embeddings"]
    for table, name in ((bert.embeddings.tokens, "tokens"), (bert.embeddings.positions, "positions"),
                        (bert.embeddings.segments, "segments")):
        validate.same_shape(name, tuple(e[name].shape), tuple(table.embeddings.shape), "the model's")
        table.set_weights([np.asarray(e[name])])
    put(bert.embeddings.norm, e["norm"], dense=False)
    for layer, p in zip(bert.encoder, params["layers"], strict=True):
        for name in ("W_q", "W_k", "W_v", "W_o"):
            put(getattr(layer.self_attention, name), p[name])
        put(layer.feed_forward.W_1, p["W_1"])
        put(layer.feed_forward.W_2, p["W_2"])
        put(layer.norm_1, p["norm_1"], dense=False)
        put(layer.norm_2, p["norm_2"], dense=False)
    if masked_lm:
        put(model.transform, params["head"]["transform"])
        put(model.norm, params["head"]["norm"], dense=False)
        model.bias.assign(np.asarray(params["head"]["bias"]))
    return model


def export_bert(model: Bert | MaskedLM) -> PretrainedBert:
    """``model``'s weights under the names of Hugging Face's ``BertModel`` (a ``MaskedLM``'s head under those of
    ``BertForMaskedLM``): ``pretrained.write_bert`` saves them, ``load_pretrained`` of either framework reads them."""
    def pair(layer, dense: bool = True):
        weight, bias = (np.asarray(w) for w in layer.get_weights())
        return (weight.T if dense else weight), bias                    # a Dense kernel (in, out) → (out, in)

    bert = cast(Bert, getattr(built(model), "bert", model))    # a MaskedLM (or the chapter's own) holds its Bert
    e = bert.embeddings
    params = {"embeddings": {"tokens": np.asarray(e.tokens.embeddings), "positions": np.asarray(e.positions.embeddings),
                             "segments": np.asarray(e.segments.embeddings), "norm": pair(e.norm, dense=False)},
              "layers": [{**{name: pair(getattr(layer.self_attention, name)) for name in ("W_q", "W_k", "W_v", "W_o")},
                          "W_1": pair(layer.feed_forward.W_1), "W_2": pair(layer.feed_forward.W_2),
                          "norm_1": pair(layer.norm_1, dense=False), "norm_2": pair(layer.norm_2, dense=False)}
                         for layer in bert.encoder]}
    if hasattr(model, "transform"):
        params["head"] = {"transform": pair(model.transform), "norm": pair(model.norm, dense=False),
                          "bias": np.asarray(model.bias)}
    return from_parameters(params, heads=bert.encoder[0].self_attention.heads)


def logits_with_cls_attention(model, ids, mask, attention) -> np.ndarray:
    """The logits (B, classes) of ``model`` (a ``SentenceClassifier`` over a post-LN ``Bert``) when, in the last
    layer, [CLS] attends with ``attention`` (B, h, T) instead of its own weights; the other rows, which the
    classifier does not read, need no change. With the model's own weights it returns the model's logits."""
    validate.wraps("logits_with_cls_attention", model, SentenceClassifier, EXPLAINED)
    bert = model.bert
    x = bert.embeddings(np.asarray(ids), training=False)                                 # (B, T, d)
    for layer in bert.encoder[:-1]:
        x = layer(x, np.asarray(mask), training=False)
    last = bert.encoder[-1]
    heads = last.self_attention.heads
    validate.same_shape("attention", tuple(np.shape(attention)), (x.shape[0], heads, x.shape[1]), "(B, h, T)")
    a = ops.convert_to_tensor(validate.cls_attention(attention, mask))
    v = split_heads(last.self_attention.W_v(x), heads)                                   # (B, h, T, d_head)
    context = merge_heads(ops.matmul(a[:, :, None, :], v))                               # (B, 1, d): [CLS]'s mix
    h = last.norm_1(x[:, :1] + last.self_attention.W_o(context))                         # post-LN, as BERT
    h = last.norm_2(h + last.feed_forward(h, training=False))
    return np.asarray(model.out(ops.tanh(model.pooler(h[:, 0]))))


def token_gradients(model, ids, mask) -> np.ndarray:
    """(B, T): the norm of the gradient of each sentence's predicted logit with respect to each token's input
    vector (the embeddings' output), the gradient-based importance Jain & Wallace compare attention with."""
    validate.wraps("token_gradients", model, SentenceClassifier, EXPLAINED)
    ids, mask = np.asarray(ids), np.asarray(mask)
    validate.same_shape("mask", mask.shape, ids.shape, "(B, T), as the ids")
    model(ids[:1], mask[:1], training=False)                   # one sentence, eagerly: checks it, builds the model
    x = model.bert.embeddings(ids, training=False)             # (B, T, d), eagerly: checks every id
    return np.asarray(_token_gradients(model, x, inputs.bool_mask(mask)))


@tf.function(reduce_retracing=True)   # one graph for all batches: op by op, TensorFlow's tape holds ~200 MB more
def _token_gradients(model, x, mask):
    with tf.GradientTape() as tape:
        tape.watch(x)
        h = x
        for layer in model.bert.encoder:
            h = layer(h, mask, training=False)
        logits = model.out(ops.tanh(model.pooler(h[:, 0])))                              # (B, classes)
        picked = tf.reduce_sum(tf.reduce_max(logits, axis=1))                            # the predicted class's
    return tf.norm(tape.gradient(picked, x), axis=-1)
