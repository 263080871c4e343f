"""Chapter 3 attention blocks inside recurrent models (torch): feature-wise and timestep-wise attention,
attention pooling, the attention GRU. Same names and signatures in both frameworks.

Shapes: B batch, T timesteps, d features (embedding size), H recurrent units. Every block is built from
``nn.Linear``/``nn.Embedding``/``nn.LSTM`` sub-layers named like the Keras twin's, so
``attention_course.core.parity.torch_to_keras`` copies the weights across.
Inputs: tensors or NumPy arrays (float arrays as float32); a mask bool or 0/1; ids in [0, vocab) (``inputs``).
"""

from __future__ import annotations

import torch
from torch import nn

from attention_course.ch01_sequence_models.torch import masked_softmax
from attention_course.core import validate
from attention_course.core.choices import ACTIVATIONS, NER_ATTENTION, NER_PLACES, POOLING
from attention_course.core.errors import ConfigError
from attention_course.core.torch import inputs

__all__ = ["ACTIVATIONS", "NER_ATTENTION", "NER_PLACES", "POOLING", "VariationalLSTM", "FeatureAttention",
           "TimestepAttention", "RepeatVectorAttention", "AttentionPooling", "AttentionGRU", "NERTagger",
           "SentimentClassifier", "BagOfWords"]



class VariationalLSTM(nn.Module):
    """An LSTM that returns every state, with Keras' two dropouts: ``dropout`` on the inputs and
    ``recurrent_dropout`` on the previous state h_{t-1}, each with ONE mask per sequence, the same at every
    timestep ("variational" dropout, Gal & Ghahramani 2016), as ``keras.layers.LSTM(dropout=…,
    recurrent_dropout=…)`` does, except that Keras, once ``recurrent_dropout`` is set, draws a mask for each of
    the four gates and this layer one for all four. ``nn.LSTM`` has no recurrent dropout, so while training with one
    the steps run in a Python loop over the weights of ``self.lstm``; otherwise (evaluation, no dropout) the fused
    ``nn.LSTM`` runs.
    x (B, T, d) → states (B, T, H), or (B, T, 2H) when ``bidirectional``.
    """

    def __init__(self, input_size: int, hidden: int, bidirectional: bool = False, dropout: float = 0.0,
                 recurrent_dropout: float = 0.0):
        super().__init__()
        input_size, hidden = validate.sizes(input_size=input_size, hidden=hidden)
        self.hidden, self.bidirectional = hidden, bidirectional
        validate.rate("dropout", dropout)
        validate.rate("recurrent_dropout", recurrent_dropout)
        self.dropout, self.recurrent_dropout = dropout, recurrent_dropout
        self.lstm = nn.LSTM(input_size, hidden, batch_first=True, bidirectional=bidirectional)

    def _mask(self, like, p):                       # one Bernoulli mask per sequence, scaled by 1/(1-p)
        return torch.bernoulli(torch.full_like(like, 1 - p)) / (1 - p)

    def _direction(self, x, suffix: str, reverse: bool):
        w_ih, w_hh = getattr(self.lstm, f"weight_ih_l0{suffix}"), getattr(self.lstm, f"weight_hh_l0{suffix}")
        bias = getattr(self.lstm, f"bias_ih_l0{suffix}") + getattr(self.lstm, f"bias_hh_l0{suffix}")
        if self.dropout > 0:
            x = x * self._mask(x[:, :1, :], self.dropout)            # (B, 1, d): same mask at every step
        gates_x = x @ w_ih.T + bias                                   # (B, T, 4H), gates i, f, g, o
        h = x.new_zeros(x.shape[0], self.hidden)
        c = torch.zeros_like(h)
        keep = self._mask(h, self.recurrent_dropout) if self.recurrent_dropout > 0 else None
        states = []
        for t in (range(x.shape[1] - 1, -1, -1) if reverse else range(x.shape[1])):
            gates = gates_x[:, t] + (h if keep is None else h * keep) @ w_hh.T
            i, f, g, o = gates.chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            states.append(h)
        if reverse:
            states.reverse()
        return torch.stack(states, dim=1)                             # (B, T, H)

    def forward(self, x):
        x = inputs.floats(x, "x", inputs.device_of(self))
        validate.sequence_shapes("VariationalLSTM", x, features=self.lstm.input_size)
        if not (self.training and (self.dropout > 0 or self.recurrent_dropout > 0)):
            return self.lstm(x)[0]                                    # fused kernel, no dropout
        out = [self._direction(x, "", reverse=False)]
        if self.bidirectional:
            out.append(self._direction(x, "_reverse", reverse=True))
        return torch.cat(out, dim=-1)


def sequence_input(layer, x, mask, name: str = "x"):
    """A layer's float input (B, T, d) and its mask as a tensor (its values are checked after its shape)."""
    x = inputs.floats(x, name, inputs.device_of(layer))
    return x, None if mask is None else inputs.tensor(mask, "mask", x.device)


def normalised_weights(scores, activation, dim, mask=None):
    if activation == "linear":                                        # raw scores, no normalisation
        return scores if mask is None else scores.masked_fill(~mask, 0)
    if mask is None:
        return torch.softmax(scores, dim=dim)
    return masked_softmax(scores, mask)


class FeatureAttention(nn.Module):
    """Feature-wise attention: at each timestep, a Dense layer over the d features with a softmax over the
    features; the weights multiply the inputs. Each weight sees the other features of the same timestep, and
    the same (d × d) layer serves every timestep, so any length T works.

    ``single=True`` averages the weights over time into one vector of feature weights per sequence, used at every
    timestep (one attention vector, as Remy's ``SINGLE_ATTENTION_VECTOR`` option makes one for the weights over
    time); ``mask`` (B, T) then keeps pads out of the average.
    ``activation="linear"`` skips the softmax. x (B, T, d) → (B, T, d), weights (B, T, d).
    """

    def __init__(self, features: int, activation: str = "softmax", single: bool = False):
        super().__init__()
        validate.choice("activation", activation, ACTIVATIONS)
        features = validate.integer("features", features)
        self.features, self.activation, self.single = features, activation, single
        self.score = nn.Linear(features, features)

    def forward(self, x, mask=None, return_weights: bool = False):
        # x (B, T, d), mask (B, T) True on real tokens
        x, mask = sequence_input(self, x, mask)
        validate.sequence_shapes("FeatureAttention", x, mask, features=self.features)
        mask = inputs.bool_mask(mask)
        inputs.finite(inputs.hide(x, mask), "x")                      # the real steps: a NaN or inf gives NaN
        weights = normalised_weights(self.score(x), self.activation, dim=-1)    # (B, T, d), rows sum to 1 over d
        if self.single:
            if mask is None:
                avg = weights.mean(dim=1, keepdim=True)               # (B, 1, d)
            else:
                m = mask[..., None]                                   # (B, T, 1)
                total = weights.masked_fill(~m, 0).sum(1, keepdim=True)   # pads left out (0 × NaN = NaN)
                avg = total / m.sum(1, keepdim=True).clamp(min=1)
            weights = avg.expand_as(x)                                # (B, T, d), the same at every step
        out = x * weights
        return (out, weights) if return_weights else out


class TimestepAttention(nn.Module):
    """Timestep-wise attention: permute to (B, d, T), a Dense layer over the T timesteps with a softmax over
    time for each feature, averaged over the features into one weight per timestep, multiplied in. Each
    weight sees the same feature at the other timesteps. The Dense is T × T: the layer only takes sequences of
    exactly ``steps`` timesteps. ``mask`` (B, T) gives pads zero weight. x (B, T, d) → (B, T, d), weights (B, T).
    The widely copied Keras ``attention_3d_block`` with ``SINGLE_ATTENTION_VECTOR = True`` is this block, less the mask.
    """

    def __init__(self, steps: int, activation: str = "softmax"):
        super().__init__()
        validate.choice("activation", activation, ACTIVATIONS)
        steps = validate.integer("steps", steps)
        self.steps, self.activation = steps, activation
        self.score = nn.Linear(steps, steps)

    def forward(self, x, mask=None, return_weights: bool = False):
        # x (B, T, d), mask (B, T) True on real tokens
        x, mask = sequence_input(self, x, mask)
        validate.sequence_shapes("TimestepAttention", x, mask, steps=self.steps)
        mask = inputs.bool_mask(mask)
        inputs.finite(x, "x")                                         # every step: the T × T Dense reads pads too
        scores = self.score(x.transpose(1, 2))                        # (B, d, T): per feature, over time
        m = None if mask is None else mask[:, None, :]                # (B, 1, T)
        weights = normalised_weights(scores, self.activation, dim=-1, mask=m).mean(dim=1)   # (B, T)
        out = x * weights[..., None]
        return (out, weights) if return_weights else out


class RepeatVectorAttention(nn.Module):
    """The talk's model 1 (its ``AttBiLSTM``) as its code computes it: a Dense layer over the d features with a
    softmax over the features at each timestep; the weights averaged over time into one vector m (B, d);
    ``RepeatVector(d)`` then ``Permute((2, 1))`` lay m out as a (d, d) matrix whose row t holds m_t everywhere,
    and that matrix multiplies the input element-wise. This only runs when T == d (the talk's embedding size is its
    sentence length), and then timestep t is scaled by m_t, the averaged weight of *feature* t.
    ``activation="linear"`` skips the softmax. x (B, T, d) with T = d = ``features`` → (B, T, d), weights (B, T, d).
    """

    def __init__(self, features: int, activation: str = "softmax"):
        super().__init__()
        validate.choice("activation", activation, ACTIVATIONS)
        features = validate.integer("features", features)
        self.features, self.activation = features, activation
        self.score = nn.Linear(features, features)

    def forward(self, x, return_weights: bool = False):
        x = inputs.floats(x, "x", inputs.device_of(self))
        validate.sequence_shapes("RepeatVectorAttention", x, features=self.features, steps=self.features)
        inputs.finite(x, "x")                                         # a NaN or inf gives NaN everywhere
        scores = normalised_weights(self.score(x), self.activation, dim=-1)   # (B, T, d): per timestep, over features
        m = scores.mean(dim=1)                                        # (B, d): averaged over time
        repeated = m[:, None, :].expand(-1, self.features, -1)        # RepeatVector(d): (B, d, d), every row is m
        weights = repeated.transpose(1, 2)                            # Permute((2, 1)): weights[:, t, f] = m[:, t]
        out = x * weights                                             # (B, T, d) ∘ (B, d, d): needs T == d
        return (out, weights) if return_weights else out


class AttentionPooling(nn.Module):
    """Attention pooling over time (feed-forward attention, Raffel & Ellis 2015; Yang et al. 2016 without a
    context vector): e_t = tanh(h_t W + b), a = softmax_t(e) (pads masked), context = Σ_t a_t h_t.
    states (B, T, H), mask (B, T) → context (B, H), weights (B, T)."""

    def __init__(self, hidden: int):
        super().__init__()
        hidden = validate.integer("hidden", hidden)
        self.hidden = hidden
        self.score = nn.Linear(hidden, 1)

    def forward(self, states, mask=None, return_weights: bool = False):
        states, mask = sequence_input(self, states, mask, "states")
        validate.sequence_shapes("AttentionPooling", states, mask, features=self.hidden)
        mask = inputs.bool_mask(mask)
        inputs.finite(inputs.hide(states, mask), "states")            # the real steps: a NaN or inf gives NaN
        e = torch.tanh(self.score(states))[..., 0]                    # (B, T)
        weights = masked_softmax(e[:, None, :], mask)[:, 0]           # (B, T), sums to 1 over the real steps
        context = (weights[..., None] * inputs.hide(states, mask)).sum(dim=1)   # (B, H), pads zeroed
        return (context, weights) if return_weights else context


class AttentionGRU(nn.Module):
    """The attention GRU of Xiong et al. (2016): a GRU whose update gate is replaced by an attention weight
    g_t given from outside, so the weight decides how much step t rewrites the state:
    r_t = σ(W_r x_t + U_r h_{t-1}), h̃_t = tanh(W x_t + r_t ∘ U h_{t-1}), h_t = g_t h̃_t + (1 - g_t) h_{t-1}.
    facts (B, T, d), gates (B, T) → the last state (B, H)."""

    def __init__(self, input_size: int, hidden: int):
        super().__init__()
        input_size, hidden = validate.sizes(input_size=input_size, hidden=hidden)
        self.hidden = hidden
        self.W_r, self.U_r = nn.Linear(input_size, hidden), nn.Linear(hidden, hidden)
        self.W, self.U = nn.Linear(input_size, hidden), nn.Linear(hidden, hidden)

    def forward(self, facts, gates):
        facts = inputs.floats(facts, "facts", inputs.device_of(self))
        gates = inputs.shares(gates, "gates", "how much each fact rewrites the state", facts.device)
        validate.sequence_shapes("AttentionGRU", facts, gates, features=self.W.in_features, mask_name="gates")
        inputs.finite(facts, "facts")                                 # a NaN or inf reaches the state
        xr, xh = self.W_r(facts), self.W(facts)                       # (B, T, H) each, for every step at once
        h = facts.new_zeros(facts.shape[0], self.hidden)
        for t in range(facts.shape[1]):
            r = torch.sigmoid(xr[:, t] + self.U_r(h))
            candidate = torch.tanh(xh[:, t] + r * self.U(h))
            g = gates[:, t, None]                                     # (B, 1)
            h = g * candidate + (1 - g) * h
        return h                                                      # (B, H)


class NERTagger(nn.Module):
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
                 recurrent_dropout: float = 0.1, place: str = "before"):
        super().__init__()
        validate.choice("attention", attention, NER_ATTENTION)
        validate.choice("place", place, NER_PLACES)
        self.attention: TimestepAttention | FeatureAttention | RepeatVectorAttention | None
        vocab, n_tags, embed, hidden = validate.sizes(vocab=vocab, n_tags=n_tags, embed=embed, hidden=hidden)
        validate.rate("dropout", dropout)
        self.place = place
        size = embed if place == "before" else 2 * hidden            # the features the block reweights
        self.embed = nn.Embedding(vocab, embed)
        if attention == "timestep":
            if max_len is None:
                raise ConfigError("timestep-wise attention needs max_len: its Linear layer is max_len × max_len")
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
        self.drop = nn.Dropout(dropout)
        self.rnn = VariationalLSTM(embed, hidden, bidirectional=True, recurrent_dropout=recurrent_dropout)
        self.out = nn.Linear(2 * hidden, n_tags)

    def forward(self, x, return_weights: bool = False):
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


class SentimentClassifier(nn.Module):
    """The sentence classifier of Chapter 3.2: embedding → LSTM (dropout, recurrent dropout) → pooling → 2 logits
    (a two-way softmax, equivalent to one sigmoid output).

    ``pooling``: "last" (the last state; sequences are padded on the left), "attention" (``AttentionPooling``)
    or "attention_gru" (the pooling weights drive an ``AttentionGRU`` whose last state is the summary).
    ``embed_init``: draw the embeddings from U(-embed_init, embed_init) instead of the framework's default
    (Keras: U(-0.05, 0.05); PyTorch: N(0, 1)).
    x (B, T) ids, mask (B, T) True on real tokens (None: attend to pads too) → logits (B, 2) [, weights (B, T)].
    """

    def __init__(self, vocab: int, embed: int = 32, hidden: int = 100, pooling: str = "last",
                 dropout: float = 0.3, recurrent_dropout: float = 0.2, embed_init: float | None = None):
        super().__init__()
        validate.choice("pooling", pooling, POOLING)
        vocab, embed, hidden = validate.sizes(vocab=vocab, embed=embed, hidden=hidden)
        self.pooling = pooling
        self.embed = nn.Embedding(vocab, embed)                       # PyTorch's default: N(0, 1)
        if embed_init is not None:
            validate.positive("embed_init", embed_init)
            nn.init.uniform_(self.embed.weight, -embed_init, embed_init)
        self.rnn = VariationalLSTM(embed, hidden, dropout=dropout, recurrent_dropout=recurrent_dropout)
        self.pool: AttentionPooling | None = AttentionPooling(hidden) if pooling != "last" else None
        self.agru: AttentionGRU | None = AttentionGRU(hidden, hidden) if pooling == "attention_gru" else None
        self.out = nn.Linear(hidden, 2)

    def forward(self, x, mask=None, return_weights: bool = False):
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


class BagOfWords(nn.Module):
    """A bag-of-words classifier (Chapter 3.2): the mean of the embeddings of the real words, then a dense layer to
    ``classes`` logits. The order of the words plays no part: a linear model of the words' frequencies in the
    sentence. The embeddings start from U(-0.05, 0.05) in both frameworks.
    x (B, T) ids, mask (B, T) True on real tokens (None: the pads count as words) → logits (B, classes) [, None]."""

    def __init__(self, vocab: int, embed: int = 32, classes: int = 2):
        super().__init__()
        vocab, embed, classes = validate.sizes(vocab=vocab, embed=embed, classes=classes)
        self.embed = nn.Embedding(vocab, embed)
        nn.init.uniform_(self.embed.weight, -0.05, 0.05)              # Keras' default, in both frameworks
        self.out = nn.Linear(embed, classes)

    def forward(self, x, mask=None, return_weights: bool = False):
        x = inputs.ids(x, "x", self.embed)                          # (B, T) ids in [0, vocab)
        e = self.embed(x)                                             # (B, T, d)
        if mask is None:
            mean = e.mean(dim=1)                                      # every position counts, pads too
        else:
            mask = inputs.tensor(mask, "mask", e.device)
            validate.sequence_shapes("BagOfWords", e, mask)
            keep = inputs.bool_mask(mask)[..., None].to(e.dtype)      # (B, T, 1)
            mean = (e * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1)   # (B, d): the mean of the real words
        logits = self.out(mean)                                       # (B, classes)
        return (logits, None) if return_weights else logits
