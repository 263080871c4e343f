"""Chapter 6: image captioning with visual attention (Show, Attend and Tell), in Keras 3.

Every class mirrors its twin in ``attention_course.torch.captioning``: same name, constructor arguments, sub-layer
names and call signature, so ``attention_course.parity.torch_to_keras`` copies weights across.
Shapes: B batch, H × W pixels (channels last, as the data), L = (H/8)·(W/8) grid locations (or the L of a
pretrained CNN's grid), D annotation size, T caption steps, E embedding, N decoder state.
"""

from __future__ import annotations

import math

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

from .. import validate
from ..choices import CAPTION_ATTENTION
from ..errors import ConfigError, ShapeError
from ..text import PAD
from ..train import History, batches, progress
from . import inputs
from .base import BuildOnCall, Layer, Model
from .scores import AdditiveScore
from .translation import embedding

__all__ = ["SceneEncoder", "VisualAttention", "Captioner", "train_captioner"]


def _images(images, features: int | None = None):
    """(B, H, W, 3) floats with H and W multiples of 8, or with ``features`` annotation grids (B, L, features), as a
    float32 tensor."""
    images = inputs.tensor(images, "images")
    validate.captioner_inputs("images", inputs.dtype_name(images), validate.shape_of(images), features)
    return ops.cast(images, "float32")


class SceneEncoder(BuildOnCall, Layer):
    """A small CNN from pixels to a grid of annotation vectors a_i (Xu et al. take them from a lower convolutional
    layer). Two coordinate channels (x and y in [-1, 1], "CoordConv") join the RGB input, so a feature knows
    where it is; three blocks of a 3×3 convolution, batch normalisation (without it, this encoder had not learned
    the colours after the quick profile's 6 epochs), ReLU and 2×2 max pooling.
    images (B, H, W, 3) → annotations (B, L, D), L = (H/8)·(W/8), row by row."""

    def __init__(self, dim: int = 64, channels: int = 16, **kwargs):
        super().__init__(**kwargs)
        dim, channels = validate.sizes(dim=dim, channels=channels)
        self.dim = dim
        self.conv1 = layers.Conv2D(channels, 3, padding="same")
        self.conv2 = layers.Conv2D(2 * channels, 3, padding="same")
        self.conv3 = layers.Conv2D(dim, 3, padding="same")
        self.norm1 = layers.BatchNormalization(momentum=0.9, epsilon=1e-5)      # PyTorch's defaults
        self.norm2 = layers.BatchNormalization(momentum=0.9, epsilon=1e-5)
        self.norm3 = layers.BatchNormalization(momentum=0.9, epsilon=1e-5)

    def call(self, images, training=None):
        x = _images(images)                                          # (B, H, W, 3)
        b, h, w = ops.shape(x)[0], x.shape[1], x.shape[2]
        ys = ops.broadcast_to(ops.linspace(-1.0, 1.0, h)[:, None], (h, w))
        xs = ops.broadcast_to(ops.linspace(-1.0, 1.0, w)[None, :], (h, w))
        coords = ops.broadcast_to(ops.stack([xs, ys], -1)[None], (b, h, w, 2))
        x = ops.concatenate([x, coords], -1)                         # (B, H, W, 5)
        for conv, norm in ((self.conv1, self.norm1), (self.conv2, self.norm2), (self.conv3, self.norm3)):
            x = ops.max_pool(ops.relu(norm(conv(x), training=training)), 2, 2)   # (B, H/2, W/2, C) each time
        return ops.reshape(x, (b, x.shape[1] * x.shape[2], self.dim))   # (B, L, D)


class VisualAttention(BuildOnCall, Layer):
    """Xu et al.'s f_att: e_ti = v_aᵀ tanh(W_a h_{t−1} + U_a a_i) (Chapter 4's ``AdditiveScore``) and
    α_t = softmax_i(e_t), a distribution over the L locations. U_a a_i does not depend on t: ``keys`` computes it
    once per image. (h_prev (B, N), keys (B, L, units)) → α (B, L)."""

    def __init__(self, d_query: int, d_key: int, units: int, **kwargs):
        super().__init__(**kwargs)
        self.d_query, self.d_key, self.units = validate.sizes(d_query=d_query, d_key=d_key, units=units)
        self.score = AdditiveScore(self.d_query, self.d_key, self.units)

    def keys(self, a):
        return self.score.U_a(inputs.floats(a, "a"))                 # (B, L, units)

    def call(self, h_prev, keys):
        h_prev, keys = inputs.floats(h_prev, "h_prev"), inputs.floats(keys, "keys")
        validate.query_and_memory("VisualAttention", h_prev, self.d_query, keys, self.units, names=("h_prev", "keys"),
                                  steps="L")
        e = ops.squeeze(self.score.v_a(ops.tanh(ops.expand_dims(self.score.W_a(h_prev), 1) + keys)), -1)  # (B, L)
        return ops.softmax(e, axis=-1)


class Captioner(Model):
    """Show, Attend and Tell (Xu et al. 2015) and its baselines, one LSTM step per word.

    ``attention``: ``"none"`` (Show and Tell: the image only sets the initial state), ``"mean"`` (the mean
    annotation is the context at every step), ``"soft"`` (z_t = Σ_i α_ti a_i) or ``"hard"`` (z_t = a_s, s drawn
    from α_t; argmax with ``greedy=True``). ``gate``: the gating scalar β_t = σ(f_β(h_{t−1})) scales z_t.
    h_0, c_0 = f_init,h(ā), f_init,c(ā) from the mean annotation ā; h_t, c_t = LSTM([E y_{t−1}; z_t], h_{t−1}, c_{t−1});
    logits = L_o(E y_{t−1} + L_h h_t + L_z z_t) (the paper's deep output).

    (images (B, H, W, 3), tokens (B, T) ids: BOS + caption) → (logits (B, T, V), α (B, T, L), log π (B, T)).
    α: the distribution attention used or sampled from (uniform for "mean", zeros for "none"); log π: the log
    probability of each sampled location (zeros unless "hard"). ``noise`` (B, T, L): Gumbel noise for the
    samples (argmax(log α + noise) is a draw from α); ``expect`` (B,) bool: those captions use the expectation
    Σ α a instead of a sample (the paper does so for half of them).

    ``features``: the model reads annotation vectors a pretrained CNN computed, grids (B, L, features) (ResNet-50's
    7 × 7 × 2,048: ``attention_course.data.image_features``), instead of images; the encoder is then a projection
    a_i = ReLU(W x_i + b) of each vector to ``dim``. Xu et al. use the CNN's vectors as they are (VGG's 14 × 14 × 512,
    D = 512; D = 2,048 for a ResNet); the projection only keeps the decoder small.
    """

    def __init__(self, vocab: int, attention: str = "soft", gate: bool = True, embed: int = 64, hidden: int = 256,
                 dim: int = 64, units: int = 128, features: int | None = None, **kwargs):
        super().__init__(**kwargs)
        if attention not in CAPTION_ATTENTION:
            raise ConfigError(f"unknown attention {attention!r}: use one of {', '.join(CAPTION_ATTENTION)}")
        vocab, embed, hidden, dim, units = validate.sizes(vocab=vocab, embed=embed, hidden=hidden, dim=dim,
                                                          units=units)
        self.attention, self.gate = attention, bool(gate) and attention in ("soft", "hard")
        self.features = validate.optional_size("features", features)
        context = 0 if attention == "none" else dim
        self.encoder = SceneEncoder(dim) if self.features is None else layers.Dense(dim)
        self.init_h = layers.Dense(hidden)
        self.init_c = layers.Dense(hidden)
        self.embed = embedding(vocab, embed)
        if attention in ("soft", "hard"):
            self.attend = VisualAttention(hidden, dim, units)
        if self.gate:
            self.f_beta = layers.Dense(1)
        self.rnn = layers.LSTMCell(hidden)
        self.L_h = layers.Dense(embed)
        if context:
            self.L_z = layers.Dense(embed, use_bias=False)
        self.out = layers.Dense(vocab)

    def start(self, images):
        """Encode; the first state ((h_0, c_0), (annotations, keys))."""
        if self.features is None:
            a = self.encoder(images)                                 # (B, L, D)
        else:                                                        # (B, L, features) → (B, L, D)
            a = ops.relu(self.encoder(_images(images, self.features)))
        mean = ops.mean(a, 1)                                        # (B, D)
        keys = self.attend.keys(a) if self.attention in ("soft", "hard") else None
        return (ops.tanh(self.init_h(mean)), ops.tanh(self.init_c(mean))), (a, keys)

    def decode_step(self, y_prev, state, memory, noise=None, expect=None, greedy: bool = False):
        """One word: y_prev (B,) ids → logits (B, V), new state, α (B, L), log π (B,)."""
        (h, c), (a, keys) = state, memory
        e = self.embed(y_prev)                                       # (B, E)
        L = a.shape[1]
        log_pi = ops.zeros_like(a[:, 0, 0])                          # (B,)
        if self.attention == "none":
            alpha, z = ops.zeros_like(a[:, :, 0]), None              # (B, L)
        elif self.attention == "mean":
            alpha = ops.ones_like(a[:, :, 0]) / L
            z = ops.mean(a, 1)                                       # (B, D)
        else:
            alpha = self.attend(h, keys)                             # (B, L)
            z = ops.sum(alpha[:, :, None] * a, 1)                    # the expectation, (B, D)
            if self.attention == "hard":
                log_alpha = ops.log(alpha + 1e-12)
                s = ops.argmax(log_alpha if greedy or noise is None else log_alpha + noise, -1)   # (B,)
                pick = ops.one_hot(s, L)                             # (B, L)
                sampled = ops.sum(pick[:, :, None] * a, 1)           # a_s, (B, D)
                log_pi = ops.sum(pick * log_alpha, -1)
                if expect is not None:                               # those captions use the expectation
                    z = ops.where(expect[:, None], z, sampled)
                    log_pi = log_pi * ops.cast(ops.logical_not(expect), log_pi.dtype)
                else:
                    z = sampled
            if self.gate:
                z = ops.sigmoid(self.f_beta(h)) * z                  # β_t z_t
        x = e if z is None else ops.concatenate([e, z], -1)
        h, (_, c) = self.rnn(x, [h, c])                              # (B, N)
        deep = e + self.L_h(h) + (0 if z is None else self.L_z(z))   # (B, E)
        return self.out(deep), (h, c), alpha, log_pi

    def call(self, images, tokens, noise=None, expect=None, greedy: bool = False):
        images = _images(images, self.features)
        tokens = ops.cast(inputs.ids(tokens, "tokens", self.embed), "int32")     # (B, T) ids in [0, vocab)
        if None not in (tokens.shape[0], images.shape[0]) and tokens.shape[0] != images.shape[0]:
            raise ShapeError(f"tokens must be (B, T) = ({images.shape[0]}, T) ids, one row per image; got "
                             f"{tuple(tokens.shape)}")
        state, memory = self.start(images)
        if noise is not None:
            noise = ops.convert_to_tensor(noise, dtype="float32")
            want = (tokens.shape[0], tokens.shape[1], memory[0].shape[1])
            if any(w is not None and g is not None and w != g for w, g in zip(want, noise.shape, strict=True)):
                raise ShapeError(f"noise must be (B, T, L) = {want}; got {tuple(noise.shape)}")
        if expect is not None:
            expect = inputs.bool_mask(expect, "expect", validate.EXPECT_RULE)
            b, got = tokens.shape[0], expect.shape
            if len(got) != 1 or (None not in (b, got[0]) and got[0] != b):
                raise ShapeError(f"expect must be (B,) = ({tokens.shape[0]},), one bool per caption; got "
                                 f"{tuple(expect.shape)}")
        logits, alphas, log_pis = [], [], []
        for t in range(tokens.shape[1]):
            out, state, alpha, log_pi = self.decode_step(tokens[:, t], state, memory,
                                                         None if noise is None else noise[:, t], expect, greedy)
            logits.append(out)
            alphas.append(alpha)
            log_pis.append(log_pi)
        return ops.stack(logits, 1), ops.stack(alphas, 1), ops.stack(log_pis, 1)

    # one step at a time, on NumPy arrays, for greedy and beam search (attention_course.decode)
    def step(self, tokens, state):
        state, memory = state
        tokens = validate.step_tokens("tokens", tokens, memory[0].shape[0], self.embed.input_dim)
        tokens = ops.convert_to_tensor(tokens, dtype="int32")
        logits, state, alpha, _ = self.decode_step(tokens, state, memory, greedy=True)
        return ops.convert_to_numpy(ops.log_softmax(logits, axis=-1)), (state, memory), ops.convert_to_numpy(alpha)

    def reorder(self, state, index):
        index = ops.convert_to_tensor(validate.row_index("index", index, state[1][0].shape[0]), dtype="int32")
        return tuple(tuple(None if x is None else ops.take(x, index, axis=0) for x in part) for part in state)


def train_captioner(model: Captioner, images, tokens_in, tokens_out, *, epochs: int, batch_size: int = 64,
                    lr: float = 1e-3, doubly_stochastic: float = 0.0, entropy: float = 0.0, expect_share: float = 0.5,
                    clip_norm: float = 5.0, seed: int = 0, desc: str | None = None) -> History:
    """Train a :class:`Captioner` with Adam on the cross-entropy of every caption word (padding left out).
    ``images``: what the model reads, (n, H, W, 3) images or (n, L, features) annotation grids.

    ``doubly_stochastic`` = λ adds λ Σ_i (1 − Σ_t α_ti)² per caption (Xu et al.'s eq. 14: every location gets
    about one unit of attention over the caption). ``"hard"`` attention adds the REINFORCE term of Xu et al.'s
    eq. 12: the reward of a caption is r = its mean log-likelihood, b a moving average of r (0.9 · b + 0.1 · r̄),
    and −(r − b) Σ_t log π(s_t) is added to the loss; ``entropy`` = λ_e adds −λ_e H(α_t); a share
    ``expect_share`` of the captions uses the expectation instead of a sample. Noise and that choice come from a
    NumPy generator seeded with ``seed``, the same in both frameworks.
    Returns the per-epoch history: loss (cross-entropy per word), accuracy (teacher-forced, per word).
    """
    n = validate.examples((images, tokens_in), tokens_out)
    validate.captioner_inputs("images", inputs.dtype_name(images), validate.shape_of(images), model.features)
    validate.captions(tokens_in, tokens_out, model.embed.input_dim, PAD)
    epochs, batch_size = validate.sizes(epochs=epochs, batch_size=batch_size)
    for name, value in (("lr", lr), ("clip_norm", clip_norm)):
        validate.positive(name, value)
    doubly_stochastic = validate.non_negative("doubly_stochastic", doubly_stochastic, " (0 turns it off)")
    entropy = validate.non_negative("entropy", entropy, " (0 turns it off)")
    expect_share = validate.probability("expect_share", expect_share)
    optimizer = keras.optimizers.Adam(learning_rate=lr, epsilon=1e-8, global_clipnorm=clip_norm)
    model(images[:2], tokens_in[:2])                                 # build the variables
    optimizer.build(model.trainable_variables)
    rng = np.random.default_rng(seed)
    hard, history, baseline = model.attention == "hard", History(), 0.0

    @tf.function(reduce_retracing=True)
    def train_step(x, y_in, y, noise, expect, baseline):
        with tf.GradientTape() as tape:
            logits, alpha, log_pi = model(x, y_in, noise=noise, expect=expect, training=True)
            keep = ops.cast(y != PAD, "float32")                     # (b, T)
            ce = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)   # (b, T)
            words = ops.sum(keep)
            loss = ops.sum(ce * keep) / words
            if doubly_stochastic:
                mass = ops.sum(alpha * keep[..., None], 1)           # Σ_t α_ti, (b, L)
                loss = loss + doubly_stochastic * ops.mean(ops.sum((1 - mass) ** 2, 1))
            reward = ops.stop_gradient(-ops.sum(ce * keep, 1) / ops.sum(keep, 1))   # (b,) mean log-likelihood
            if hard:
                sampled = ops.cast(ops.logical_not(expect), "float32")
                term = (reward - baseline) * ops.sum(log_pi * keep, 1) * sampled
                loss = loss - ops.sum(term) / ops.maximum(ops.sum(sampled), 1.0)
                if entropy:
                    h_t = -ops.sum(alpha * ops.log(alpha + 1e-12), -1)          # (b, T)
                    loss = loss - entropy * ops.sum(h_t * keep) / words
        grads = tape.gradient(loss, model.trainable_variables)
        grads = [tf.convert_to_tensor(g) for g in grads]             # dense embedding gradients: Adam as PyTorch's
        optimizer.apply(grads, model.trainable_variables)
        right = ops.equal(ops.cast(ops.argmax(logits, -1), "int32"), ops.cast(y, "int32"))
        correct = ops.sum(ops.cast(right, "float32") * keep)
        return ops.sum(ce * keep), correct, words, reward

    steps = epochs * math.ceil(n / batch_size)
    with inputs.graph_errors(), progress(total=steps, desc=desc or f"keras · {model.attention}") as bar:
        for _ in range(epochs):
            total, correct, count = 0.0, 0.0, 0.0
            for idx in batches(n, batch_size, rng):
                noise = expect = None
                if hard:
                    noise = rng.gumbel(size=(len(idx), tokens_in.shape[1], _locations(images))).astype(np.float32)
                    expect = rng.random(len(idx)) < expect_share
                else:
                    expect = np.zeros(len(idx), bool)
                ce_sum, right, words, reward = train_step(
                    tf.convert_to_tensor(images[idx]), tf.convert_to_tensor(tokens_in[idx]),
                    tf.convert_to_tensor(tokens_out[idx]), None if noise is None else tf.convert_to_tensor(noise),
                    tf.convert_to_tensor(expect), tf.constant(baseline, "float32"))
                if hard and not expect.all():
                    baseline = 0.9 * baseline + 0.1 * float(np.asarray(reward)[~expect].mean())
                total, correct, count = total + float(ce_sum), correct + float(right), count + float(words)
                bar.update(1)
            history.log(loss=total / count, accuracy=correct / count)
            bar.set_postfix(loss=f"{total / count:.3f}", acc=f"{correct / count:.3f}")
    return history


def _locations(images) -> int:
    """L, the number of grid locations of these images (B, H, W, 3) or annotation grids (B, L, D)."""
    return images.shape[1] if len(images.shape) == 3 else (images.shape[1] // 8) * (images.shape[2] // 8)
