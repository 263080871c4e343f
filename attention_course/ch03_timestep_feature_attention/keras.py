"""Chapter 3 attention blocks inside recurrent models (keras): feature-wise and timestep-wise attention,
attention pooling, the attention GRU. Same names and signatures in both frameworks.

Shapes: B batch, T timesteps, d features (embedding size), H recurrent units. Every block is built from
``Dense``/``Embedding``/``LSTM`` sub-layers named like the PyTorch twin's, so
``attention_course.core.parity.torch_to_keras`` copies the weights across.
Inputs: tensors or NumPy arrays (float arrays as float32); a mask bool or 0/1; ids in [0, vocab) (``inputs``).
"""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import layers, ops

from attention_course.ch01_sequence_models.keras import masked_softmax
from attention_course.core import validate
from attention_course.core.choices import ACTIVATIONS, NER_ATTENTION, NER_PLACES, POOLING
from attention_course.core.errors import ConfigError
from attention_course.core.keras import inputs
from attention_course.core.keras.base import Layer, Model

__all__ = ["ACTIVATIONS", "NER_ATTENTION", "NER_PLACES", "POOLING", "VariationalLSTM", "FeatureAttention",
           "TimestepAttention", "RepeatVectorAttention", "AttentionPooling", "AttentionGRU", "NERTagger",
           "SentimentClassifier", "BagOfWords"]



class VariationalLSTM(Layer):
    """An LSTM that returns every state, with ``dropout`` on the inputs and ``recurrent_dropout`` on h_{t-1},
    one mask per sequence, and per gate once ``recurrent_dropout`` is set ("variational" dropout). The weights are
    Keras' own ``LSTM``'s (wrapped in ``Bidirectional`` when ``bidirectional``), which runs in evaluation and when
    there is no recurrent dropout. While training with recurrent dropout the steps run in a loop written here over
    those weights, with the masks Keras' LSTM draws: the same numbers as Keras' own loop, in about half the time,
    since that loop projects the inputs and slices the kernels gate by gate at every step. ``input_size`` is the
    size d of the inputs it takes (as in the PyTorch twin). x (B, T, d) → states (B, T, H), or (B, T, 2H) when
    ``bidirectional``.
    """

    def __init__(self, input_size: int, hidden: int, bidirectional: bool = False, dropout: float = 0.0,
                 recurrent_dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        input_size, hidden = validate.sizes(input_size=input_size, hidden=hidden)
        validate.rate("dropout", dropout)
        validate.rate("recurrent_dropout", recurrent_dropout)
        self.input_size, self.hidden, self.bidirectional = input_size, hidden, bidirectional
        self.recurrent_dropout = recurrent_dropout
        lstm = layers.LSTM(hidden, return_sequences=True, dropout=dropout, recurrent_dropout=recurrent_dropout)
        self.lstm = layers.Bidirectional(lstm) if bidirectional else lstm

    def build(self, input_shape):
        self.lstm.build(input_shape)

    def _direction(self, cell, x, reverse: bool):
        H = self.hidden
        h = ops.zeros((ops.shape(x)[0], H), x.dtype)                  # (B, H)
        dropped = cell.get_dropout_mask(x[:, 0, :])                   # 4 × (B, d) or None, as Keras' LSTM draws them
        keep = ops.stack(cell.get_recurrent_dropout_mask(h))          # (4, B, H): one mask per gate i, f, c, o
        cell.reset_dropout_mask()
        cell.reset_recurrent_dropout_mask()
        kernel = ops.reshape(cell.kernel, (self.input_size, 4, H))    # (d, 4, H)
        if dropped is None:
            gates_x = ops.einsum("btd,dgh->btgh", x, kernel)
        else:
            gates_x = ops.einsum("btd,gbd,dgh->btgh", x, ops.stack(dropped), kernel)
        gates_x = ops.reshape(gates_x, (*ops.shape(x)[:2], 4 * H)) + cell.bias      # (B, T, 4H) for every step
        recurrent = ops.reshape(cell.recurrent_kernel, (H, 4, H))    # (H, 4, H)
        sigmoid, tanh = cell.recurrent_activation, cell.activation

        def step(state, gx):                                          # gx (B, 4H): one timestep's input gates
            h, c = state
            gates = gx + ops.reshape(ops.einsum("gbh,hgk->bgk", h[None] * keep, recurrent), (-1, 4 * H))
            i, f, g, o = ops.split(gates, 4, axis=-1)
            c = sigmoid(f) * c + sigmoid(i) * tanh(g)
            return sigmoid(o) * tanh(c), c

        states, _ = tf.scan(step, ops.transpose(gates_x, (1, 0, 2)), initializer=(h, h), reverse=reverse)
        return ops.transpose(states, (1, 0, 2))                       # (B, T, H)

    def call(self, x, training=None):
        x = inputs.floats(x, "x")
        validate.sequence_shapes("VariationalLSTM", x, features=self.input_size)
        if not (training and self.recurrent_dropout > 0):
            return self.lstm(x, training=training)                    # Keras' own LSTM
        if not self.bidirectional:
            return self._direction(self.lstm.cell, x, reverse=False)
        return ops.concatenate([self._direction(self.lstm.forward_layer.cell, x, reverse=False),
                                self._direction(self.lstm.backward_layer.cell, x, reverse=True)], axis=-1)


def sequence_input(x, mask, name: str = "x"):
    """A layer's float input (B, T, d) and its mask as a tensor (its values are checked after its shape)."""
    return inputs.floats(x, name), None if mask is None else inputs.tensor(mask, "mask")


def normalised_weights(scores, activation, mask=None):
    if activation == "linear":                                        # raw scores, no normalisation
        return scores if mask is None else ops.where(mask, scores, 0.0)
    if mask is None:
        return ops.softmax(scores, axis=-1)
    return masked_softmax(scores, mask)


class FeatureAttention(Layer):
    """Feature-wise attention: at each timestep, a Dense layer over the d features with a softmax over the
    features; the weights multiply the inputs. Each weight sees the other features of the same timestep, and
    the same (d × d) layer serves every timestep, so any length T works.

    ``single=True`` averages the weights over time into one vector of feature weights per sequence, used at every
    timestep (one attention vector, as Remy's ``SINGLE_ATTENTION_VECTOR`` option makes one for the weights over
    time); ``mask`` (B, T) then keeps pads out of the average.
    ``activation="linear"`` skips the softmax. x (B, T, d) → (B, T, d), weights (B, T, d).
    """

    def __init__(self, features: int, activation: str = "softmax", single: bool = False, **kwargs):
        super().__init__(**kwargs)
        validate.choice("activation", activation, ACTIVATIONS)
        features = validate.integer("features", features)
        self.features, self.activation, self.single = features, activation, single
        self.score = layers.Dense(features)

    def call(self, x, mask=None, return_weights: bool = False):
        # x (B, T, d), mask (B, T) True on real tokens
        x, mask = sequence_input(x, mask)
        validate.sequence_shapes("FeatureAttention", x, mask, features=self.features)
        mask = inputs.bool_mask(mask)
        inputs.finite(inputs.hide(x, mask), "x")                      # the real steps: a NaN or inf gives NaN
        weights = normalised_weights(self.score(x), self.activation)            # (B, T, d), rows sum to 1 over d
        if self.single:
            if mask is None:
                avg = ops.mean(weights, axis=1, keepdims=True)        # (B, 1, d)
            else:
                m = ops.expand_dims(mask, -1)                         # (B, T, 1)
                total = ops.sum(ops.where(m, weights, 0.0), 1, keepdims=True)   # pads left out (0 × NaN = NaN)
                avg = total / ops.maximum(ops.sum(ops.cast(m, x.dtype), 1, keepdims=True), 1.0)
            weights = ops.broadcast_to(avg, ops.shape(x))             # (B, T, d), the same at every step
        out = x * weights
        return (out, weights) if return_weights else out

    def get_config(self):
        return {**super().get_config(), "features": self.features, "activation": self.activation,
                "single": self.single}


class TimestepAttention(Layer):
    """Timestep-wise attention: permute to (B, d, T), a Dense layer over the T timesteps with a softmax over
    time for each feature, averaged over the features into one weight per timestep, multiplied in. Each
    weight sees the same feature at the other timesteps. The Dense is T × T: the layer only takes sequences of
    exactly ``steps`` timesteps. ``mask`` (B, T) gives pads zero weight. x (B, T, d) → (B, T, d), weights (B, T).
    The widely copied Keras ``attention_3d_block`` with ``SINGLE_ATTENTION_VECTOR = True`` is this block, less the mask.
    """

    def __init__(self, steps: int, activation: str = "softmax", **kwargs):
        super().__init__(**kwargs)
        validate.choice("activation", activation, ACTIVATIONS)
        steps = validate.integer("steps", steps)
        self.steps, self.activation = steps, activation
        self.score = layers.Dense(steps)

    def call(self, x, mask=None, return_weights: bool = False):
        # x (B, T, d), mask (B, T) True on real tokens
        x, mask = sequence_input(x, mask)
        validate.sequence_shapes("TimestepAttention", x, mask, steps=self.steps)
        mask = inputs.bool_mask(mask)
        inputs.finite(x, "x")                                         # every step: the T × T Dense reads pads too
        scores = self.score(ops.transpose(x, (0, 2, 1)))              # (B, d, T): per feature, over time
        m = None if mask is None else ops.expand_dims(mask, 1)        # (B, 1, T)
        weights = ops.mean(normalised_weights(scores, self.activation, mask=m), axis=1)   # (B, T)
        out = x * ops.expand_dims(weights, -1)
        return (out, weights) if return_weights else out

    def get_config(self):
        return {**super().get_config(), "steps": self.steps, "activation": self.activation}


class RepeatVectorAttention(Layer):
    """The talk's model 1 (its ``AttBiLSTM``) as its code computes it: a Dense layer over the d features with a
    softmax over the features at each timestep; the weights averaged over time into one vector m (B, d);
    ``RepeatVector(d)`` then ``Permute((2, 1))`` lay m out as a (d, d) matrix whose row t holds m_t everywhere,
    and that matrix multiplies the input element-wise. This only runs when T == d (the talk's embedding size is its
    sentence length), and then timestep t is scaled by m_t, the averaged weight of *feature* t.
    ``activation="linear"`` skips the softmax. x (B, T, d) with T = d = ``features`` → (B, T, d), weights (B, T, d).
    """

    def __init__(self, features: int, activation: str = "softmax", **kwargs):
        super().__init__(**kwargs)
        validate.choice("activation", activation, ACTIVATIONS)
        features = validate.integer("features", features)
        self.features, self.activation = features, activation
        self.score = layers.Dense(features)
        self.repeat = layers.RepeatVector(features)
        self.permute = layers.Permute((2, 1))

    def call(self, x, return_weights: bool = False):
        x = inputs.floats(x, "x")
        validate.sequence_shapes("RepeatVectorAttention", x, features=self.features, steps=self.features)
        inputs.finite(x, "x")                                         # a NaN or inf gives NaN everywhere
        scores = normalised_weights(self.score(x), self.activation)   # (B, T, d): per timestep, over the features
        m = ops.mean(scores, axis=1)                                  # (B, d): averaged over time
        weights = self.permute(self.repeat(m))                        # (B, d, d): weights[:, t, f] = m[:, t]
        out = x * weights                                             # (B, T, d) ∘ (B, d, d): needs T == d
        return (out, weights) if return_weights else out

    def get_config(self):
        return {**super().get_config(), "features": self.features, "activation": self.activation}


class AttentionPooling(Layer):
    """Attention pooling over time (feed-forward attention, Raffel & Ellis 2015; Yang et al. 2016 without a
    context vector): e_t = tanh(h_t W + b), a = softmax_t(e) (pads masked), context = Σ_t a_t h_t.
    states (B, T, H), mask (B, T) → context (B, H), weights (B, T)."""

    def __init__(self, hidden: int, **kwargs):
        super().__init__(**kwargs)
        hidden = validate.integer("hidden", hidden)
        self.hidden = hidden
        self.score = layers.Dense(1)

    def call(self, states, mask=None, return_weights: bool = False):
        states, mask = sequence_input(states, mask, "states")
        validate.sequence_shapes("AttentionPooling", states, mask, features=self.hidden)
        mask = inputs.bool_mask(mask)
        inputs.finite(inputs.hide(states, mask), "states")            # the real steps: a NaN or inf gives NaN
        e = ops.tanh(self.score(states))[..., 0]                      # (B, T)
        weights = masked_softmax(ops.expand_dims(e, 1), mask)[:, 0]   # (B, T), sums to 1 over the real steps
        context = ops.sum(ops.expand_dims(weights, -1) * inputs.hide(states, mask), axis=1)   # (B, H), pads zeroed
        return (context, weights) if return_weights else context

    def get_config(self):
        return {**super().get_config(), "hidden": self.hidden}


class AttentionGRU(Layer):
    """The attention GRU of Xiong et al. (2016): a GRU whose update gate is replaced by an attention weight
    g_t given from outside, so the weight decides how much step t rewrites the state:
    r_t = σ(W_r x_t + U_r h_{t-1}), h̃_t = tanh(W x_t + r_t ∘ U h_{t-1}), h_t = g_t h̃_t + (1 - g_t) h_{t-1}.
    facts (B, T, d), gates (B, T) → the last state (B, H)."""

    def __init__(self, input_size: int, hidden: int, **kwargs):
        super().__init__(**kwargs)
        input_size, hidden = validate.sizes(input_size=input_size, hidden=hidden)
        self.input_size, self.hidden = input_size, hidden
        self.W_r, self.U_r = layers.Dense(hidden), layers.Dense(hidden)
        self.W, self.U = layers.Dense(hidden), layers.Dense(hidden)

    def call(self, facts, gates):
        facts = inputs.floats(facts, "facts")
        gates = inputs.shares(gates, "gates", "how much each fact rewrites the state")
        validate.sequence_shapes("AttentionGRU", facts, gates, features=self.input_size, mask_name="gates")
        inputs.finite(facts, "facts")                                 # a NaN or inf reaches the state
        xr, xh = self.W_r(facts), self.W(facts)                       # (B, T, H) each, for every step at once
        h = ops.zeros((ops.shape(facts)[0], self.hidden), dtype=facts.dtype)
        for t in range(facts.shape[1]):                               # T is static: a short unrolled loop
            r = ops.sigmoid(xr[:, t] + self.U_r(h))
            candidate = ops.tanh(xh[:, t] + r * self.U(h))
            g = gates[:, t, None]                                     # (B, 1)
            h = g * candidate + (1 - g) * h
        return h                                                      # (B, H)

    def get_config(self):
        return {**super().get_config(), "input_size": self.input_size, "hidden": self.hidden}


class NERTagger(Model):
    """The BiLSTM tagger of Chapter 3: embedding → [attention] → dropout → BiLSTM → [attention] → a softmax over
    the tags at every timestep (the logits; the loss applies the softmax).

    ``attention``: None (the baseline), "feature", "feature_single" (weights averaged over time), "timestep"
    (needs ``max_len``, the fixed length) or "repeat_vector" (the talk's model 1: needs ``max_len == embed``);
    ``activation``: "softmax" or "linear"; ``place``: "before" the recurrence (the block reweights the
    embeddings) or "after" it (the block reweights the BiLSTM's 2H-dimensional states).
    x (B, T) word ids → logits (B, T, n_tags) [, attention weights].
    """

    def __init__(self, vocab: int, n_tags: int, embed: int = 50, hidden: int = 100, attention: str | None = None,
                 activation: str = "softmax", max_len: int | None = None, dropout: float = 0.1,
                 recurrent_dropout: float = 0.1, place: str = "before", **kwargs):
        super().__init__(**kwargs)
        validate.choice("attention", attention, NER_ATTENTION)
        validate.choice("place", place, NER_PLACES)
        self.attention: TimestepAttention | FeatureAttention | RepeatVectorAttention | None
        vocab, n_tags, embed, hidden = validate.sizes(vocab=vocab, n_tags=n_tags, embed=embed, hidden=hidden)
        validate.rate("dropout", dropout)
        self.place = place
        size = embed if place == "before" else 2 * hidden            # the features the block reweights
        self.embed = layers.Embedding(vocab, embed)
        if attention == "timestep":
            if max_len is None:
                raise ConfigError("timestep-wise attention needs max_len: its Dense layer is max_len × max_len")
            self.attention = TimestepAttention(max_len, activation)
        elif attention == "repeat_vector":
            if max_len != size:
                raise ConfigError(f"the talk's model 1 multiplies a (d, d) matrix into (T, d) inputs: it needs "
                                  f"max_len equal to the {size} features it reweights; got max_len={max_len}")
            self.attention = RepeatVectorAttention(size, activation)
        elif attention is not None:
            self.attention = FeatureAttention(size, activation, single=attention == "feature_single")
        else:
            self.attention = None
        self.drop = layers.Dropout(dropout)
        self.rnn = VariationalLSTM(embed, hidden, bidirectional=True, recurrent_dropout=recurrent_dropout)
        self.out = layers.Dense(n_tags)

    def call(self, x, return_weights: bool = False):
        x = inputs.ids(x, "x", self.embed)                          # (B, T) ids in [0, vocab)
        h = self.embed(x)                                             # (B, T, d)
        weights = None
        if self.attention is not None and self.place == "before":
            h, weights = self.attention(h, return_weights=True)       # on the embeddings: (B, T, d)
        h = self.rnn(self.drop(h))                                    # (B, T, 2H)
        if self.attention is not None and self.place == "after":
            h, weights = self.attention(h, return_weights=True)       # on the BiLSTM's states: (B, T, 2H)
        logits = self.out(h)                                          # (B, T, n_tags)
        return (logits, weights) if return_weights else logits


class SentimentClassifier(Model):
    """The sentence classifier of Chapter 3.2: embedding → LSTM (dropout, recurrent dropout) → pooling → 2 logits
    (a two-way softmax, equivalent to one sigmoid output).

    ``pooling``: "last" (the last state; sequences are padded on the left), "attention" (``AttentionPooling``)
    or "attention_gru" (the pooling weights drive an ``AttentionGRU`` whose last state is the summary).
    ``embed_init``: draw the embeddings from U(-embed_init, embed_init) instead of the framework's default
    (Keras: U(-0.05, 0.05); PyTorch: N(0, 1)).
    x (B, T) ids, mask (B, T) True on real tokens (None: attend to pads too) → logits (B, 2) [, weights (B, T)].
    """

    def __init__(self, vocab: int, embed: int = 32, hidden: int = 100, pooling: str = "last",
                 dropout: float = 0.3, recurrent_dropout: float = 0.2, embed_init: float | None = None, **kwargs):
        super().__init__(**kwargs)
        validate.choice("pooling", pooling, POOLING)
        vocab, embed, hidden = validate.sizes(vocab=vocab, embed=embed, hidden=hidden)
        if embed_init is not None:
            validate.positive("embed_init", embed_init)
        self.pooling = pooling
        init = "uniform" if embed_init is None else keras.initializers.RandomUniform(-embed_init, embed_init)
        self.embed = layers.Embedding(vocab, embed, embeddings_initializer=init)   # Keras' default: U(-0.05, 0.05)
        self.rnn = VariationalLSTM(embed, hidden, dropout=dropout, recurrent_dropout=recurrent_dropout)
        self.pool: AttentionPooling | None = AttentionPooling(hidden) if pooling != "last" else None
        self.agru: AttentionGRU | None = AttentionGRU(hidden, hidden) if pooling == "attention_gru" else None
        self.out = layers.Dense(2)

    def call(self, x, mask=None, return_weights: bool = False):
        x = inputs.ids(x, "x", self.embed)                          # (B, T) ids in [0, vocab)
        states = self.rnn(self.embed(x))                              # (B, T, H)
        weights = None
        if self.pool is None:                                         # pooling "last": the last state
            summary = states[:, -1]                                   # (B, H)
        else:                                                         # pooling "attention" or "attention_gru"
            summary, weights = self.pool(states, mask=mask, return_weights=True)
            if self.agru is not None:
                summary = self.agru(states, weights)                  # the weights act as update gates
        logits = self.out(summary)
        return (logits, weights) if return_weights else logits


class BagOfWords(Model):
    """A bag-of-words classifier (Chapter 3.2): the mean of the embeddings of the real words, then a dense layer to
    ``classes`` logits. The order of the words plays no part: a linear model of the words' frequencies in the
    sentence. The embeddings start from U(-0.05, 0.05) in both frameworks.
    x (B, T) ids, mask (B, T) True on real tokens (None: the pads count as words) → logits (B, classes) [, None]."""

    def __init__(self, vocab: int, embed: int = 32, classes: int = 2, **kwargs):
        super().__init__(**kwargs)
        vocab, embed, classes = validate.sizes(vocab=vocab, embed=embed, classes=classes)
        self.embed = layers.Embedding(vocab, embed)                   # Keras' default: U(-0.05, 0.05)
        self.out = layers.Dense(classes)

    def call(self, x, mask=None, return_weights: bool = False):
        x = inputs.ids(x, "x", self.embed)                          # (B, T) ids in [0, vocab)
        e = self.embed(x)                                             # (B, T, d)
        if mask is None:
            mean = ops.mean(e, axis=1)                                # every position counts, pads too
        else:
            mask = inputs.tensor(mask, "mask")
            validate.sequence_shapes("BagOfWords", e, mask)
            keep = ops.expand_dims(ops.cast(inputs.bool_mask(mask), e.dtype), -1)   # (B, T, 1)
            mean = ops.sum(e * keep, axis=1) / ops.maximum(ops.sum(keep, axis=1), 1.0)   # (B, d): the real words
        logits = self.out(mean)                                       # (B, classes)
        return (logits, None) if return_weights else logits

