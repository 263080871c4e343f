"""Chapter 6 in Keras 3: image captioning with visual attention (Show, Attend and Tell), and DRAW's reading
window (Gregor et al. 2015).

Every class mirrors its twin in ``torch.py`` beside it: same name, constructor arguments, sub-layer names and call
signature, so ``attention_course.core.parity.torch_to_keras`` copies weights across. Captioning shapes: B batch,
H × W pixels (channels last, as the data), L = (H/8)·(W/8) grid locations (or the L of a pretrained CNN's grid),
D annotation size, T caption steps, E embedding, N decoder state.

DRAW: an N × N grid of Gaussian filters, placed by a centre (g_x, g_y), a stride δ between filters, a width σ and
an intensity γ, reads a glimpse from an image: glimpse = γ F_Y x F_Xᵀ (per channel). Every step is
differentiable, so the window's parameters, predicted from a recurrent state, learn by backpropagation: a soft,
moving crop. ``GlimpseClassifier`` puts the read in a loop: a few glimpses of a cluttered canvas, then a class.
Shapes: B batch, H × W pixels, C channels (last), N the glimpse size, T glimpses.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

from attention_course.ch04_score_functions.keras import AdditiveScore
from attention_course.ch05_neural_machine_translation.keras import embedding
from attention_course.ch06_image_captioning import validate
from attention_course.core import train as training
from attention_course.core.choices import CAPTION_ATTENTION
from attention_course.core.errors import ConfigError, ShapeError
from attention_course.core.keras import inputs
from attention_course.core.keras.base import BuildOnCall, Layer, Model
from attention_course.core.keras.train import Adam, any_batch
from attention_course.core.text import PAD
from attention_course.core.train import History

__all__ = ["SceneEncoder", "VisualAttention", "Captioner", "train_captioner", "DrawRead", "GlimpseClassifier",
           "train_glimpses"]


def image_input(images, features: int | None = None):
    """(B, H, W, 3) floats with H and W multiples of 8, or with ``features`` annotation grids (B, L, features), as a
    float32 tensor."""
    images = inputs.tensor(images, "images")
    validate.captioner_inputs("images", inputs.dtype_name(images), validate.shape_of(images), features)
    return inputs.finite(ops.cast(images, "float32"), "images")


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
        x = image_input(images)                                          # (B, H, W, 3)
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
    7 × 7 × 2,048: ``image_features.py`` beside it), instead of images; the encoder is then a projection
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
            a = ops.relu(self.encoder(image_input(images, self.features)))
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
        images = image_input(images, self.features)
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

    # one step at a time, on NumPy arrays, for greedy and beam search (attention_course.core.decode)
    def step(self, tokens, state):
        state, memory = state
        tokens = validate.step_tokens("tokens", tokens, memory[0].shape[0], self.embed.input_dim)
        tokens = ops.convert_to_tensor(tokens, dtype="int32")
        logits, state, alpha, _ = self.decode_step(tokens, state, memory, greedy=True)
        return ops.convert_to_numpy(ops.log_softmax(logits, axis=-1)), (state, memory), ops.convert_to_numpy(alpha)

    def reorder(self, state, index):
        index = ops.convert_to_tensor(validate.row_index("index", index, state[1][0].shape[0]), dtype="int32")
        return tuple(tuple(None if x is None else ops.take(x, index, axis=0) for x in part) for part in state)


class CaptionerTrainer:
    """The captioner's side of the course's training loop (:func:`attention_course.core.train.run`): a compiled
    step of Adam on the cross-entropy per word, Xu et al.'s doubly stochastic penalty and, for hard attention, the
    REINFORCE term with its baseline; each batch's noise comes from ``rng`` right after its examples were drawn."""

    def __init__(self, model: Captioner, rng, locations: int, *, lr: float, clip_norm: float,
                 doubly_stochastic: float, entropy: float, expect_share: float):
        self.model, self.rng, self.locations, self.expect_share = model, rng, locations, expect_share
        self.baseline = 0.0
        self.optimizer = Adam(learning_rate=lr, epsilon=1e-8, global_clipnorm=clip_norm)
        self.optimizer.build(model.trainable_variables)
        self.train_step = self.compile(model, self.optimizer, doubly_stochastic, entropy)

    @staticmethod
    def compile(model: Captioner, optimizer, doubly_stochastic: float, entropy: float):
        hard = model.attention == "hard"

        @tf.function(reduce_retracing=True)
        def train_step(x, y_in, y, noise, expect, baseline):
            with tf.GradientTape() as tape:
                logits, alpha, log_pi = model(x, y_in, noise=noise, expect=expect, training=True)
                keep = ops.cast(y != PAD, "float32")                 # (b, T)
                ce = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)   # (b, T)
                words = ops.sum(keep)
                loss = ops.sum(ce * keep) / words
                if doubly_stochastic:
                    mass = ops.sum(alpha * keep[..., None], 1)       # Σ_t α_ti, (b, L)
                    loss = loss + doubly_stochastic * ops.mean(ops.sum((1 - mass) ** 2, 1))
                reward = ops.stop_gradient(-ops.sum(ce * keep, 1) / ops.sum(keep, 1))   # (b,) mean log-likelihood
                if hard:
                    sampled = ops.cast(ops.logical_not(expect), "float32")
                    term = (reward - baseline) * ops.sum(log_pi * keep, 1) * sampled
                    loss = loss - ops.sum(term) / ops.maximum(ops.sum(sampled), 1.0)
                    if entropy:
                        h_t = -ops.sum(alpha * ops.log(alpha + 1e-12), -1)      # (b, T)
                        loss = loss - entropy * ops.sum(h_t * keep) / words
            grads = tape.gradient(loss, model.trainable_variables)
            grads = [tf.convert_to_tensor(g) for g in grads]         # dense embedding gradients: Adam as PyTorch's
            optimizer.apply(grads, model.trainable_variables)
            right = ops.equal(ops.cast(ops.argmax(logits, -1), "int32"), ops.cast(y, "int32"))
            correct = ops.sum(ops.cast(right, "float32") * keep)
            return ops.sum(ce * keep), correct, words, reward

        return train_step

    def start_epoch(self) -> None:
        pass                                                         # Keras layers take training= at each call

    def step(self, xs, y, step: int) -> tuple[float, int, int]:
        images, tokens_in = xs
        hard = self.model.attention == "hard"
        noise = None
        if hard:
            noise = self.rng.gumbel(size=(len(y), tokens_in.shape[1], self.locations)).astype(np.float32)
            expect = self.rng.random(len(y)) < self.expect_share
        else:
            expect = np.zeros(len(y), bool)
        ce_sum, right, words, reward = any_batch(
            self.train_step, tf.convert_to_tensor(images), tf.convert_to_tensor(tokens_in), tf.convert_to_tensor(y),
            None if noise is None else tf.convert_to_tensor(noise), tf.convert_to_tensor(expect),
            tf.constant(self.baseline, "float32"))
        if hard and not expect.all():
            self.baseline = 0.9 * self.baseline + 0.1 * float(np.asarray(reward)[~expect].mean())
        counted = int(float(words))
        return float(ce_sum) / counted, int(float(right)), counted


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
    validate.examples((images, tokens_in), tokens_out)
    validate.captioner_inputs("images", inputs.dtype_name(images), validate.shape_of(images), model.features)
    validate.captions(tokens_in, tokens_out, model.embed.input_dim, PAD)
    epochs, batch_size = validate.sizes(epochs=epochs, batch_size=batch_size)
    for name, value in (("lr", lr), ("clip_norm", clip_norm)):
        validate.positive(name, value)
    doubly_stochastic = validate.non_negative("doubly_stochastic", doubly_stochastic, " (0 turns it off)")
    entropy = validate.non_negative("entropy", entropy, " (0 turns it off)")
    expect_share = validate.probability("expect_share", expect_share)
    model(images[:2], tokens_in[:2])                                 # build the variables
    rng = np.random.default_rng(seed)
    trainer = CaptionerTrainer(model, rng, grid_locations(images), lr=lr, clip_norm=clip_norm,
                               doubly_stochastic=doubly_stochastic, entropy=entropy, expect_share=expect_share)
    return training.run(trainer, (images, tokens_in), tokens_out, epochs=epochs, batch_size=batch_size, seed=seed,
                        rng=rng, average="target", desc=desc or f"keras · {model.attention}",
                        context=inputs.graph_errors())


def grid_locations(images) -> int:
    """L, the number of grid locations of these images (B, H, W, 3) or annotation grids (B, L, D)."""
    return images.shape[1] if len(images.shape) == 3 else (images.shape[1] // 8) * (images.shape[2] // 8)


def pixel_input(images, channels: int | None = None):
    """(B, H, W, C) numbers, at least one pixel, as float32 (a read is linear: any intensities will do)."""
    images = inputs.tensor(images, "images")
    validate.images("images", inputs.dtype_name(images), validate.shape_of(images), channels=channels, floats=False)
    return ops.cast(images, "float32")


def is_tensor(x) -> bool:
    return isinstance(x, keras.KerasTensor) or tf.is_tensor(x)


class DrawRead(BuildOnCall, Layer):
    """DRAW's read operation. ``window(h, H, W)`` turns a state h (B, hidden) into the window's parameters
    (g_x, g_y, σ², δ, γ), each (B,), through a linear layer (``params``), as the paper's eq. 21-24:
    g_x = (W + 1)/2 · (g̃_x + 1), g_y = (H + 1)/2 · (g̃_y + 1), δ = (max(H, W) − 1)/(N − 1) · exp(log δ̃),
    σ² = exp(log σ²), γ = exp(log γ). ``filters`` gives F_Y (B, N, H) and F_X (B, N, W): filter i is a Gaussian
    centred at μ_i = g + (i − N/2 − 0.5) δ (i = 1 … N), each row normalised to sum to 1; a σ² below
    ``validate.SIGMA2_MIN`` (0 when exp(log σ²) underflows) counts as it: a point filter, not 0/0 = NaN.
    ``read(images, gx, gy, sigma2, delta, gamma)`` → glimpse (B, N, N, C); ``forward(images, h)`` predicts the
    window from h and reads: (glimpse, (gx, gy, sigma2, delta, gamma))."""

    def __init__(self, n: int, hidden: int, **kwargs):
        super().__init__(**kwargs)
        self.n, self.hidden = validate.sizes(n=n, hidden=hidden)
        self.params = layers.Dense(5)

    def window(self, h, height: int, width: int):
        gx_, gy_, log_sigma2, log_delta, log_gamma = ops.unstack(self.params(h), 5, axis=-1)   # (B,) each
        gx, gy = (width + 1) / 2 * (gx_ + 1), (height + 1) / 2 * (gy_ + 1)
        delta = (max(height, width) - 1) / max(self.n - 1, 1) * ops.exp(log_delta)
        return gx, gy, ops.exp(log_sigma2), delta, ops.exp(log_gamma)

    def filters(self, gx, gy, sigma2, delta, height: int, width: int):
        sigma2 = ops.maximum(sigma2, validate.SIGMA2_MIN)                                       # (B,), > 0
        i = ops.arange(1, self.n + 1, dtype="float32") - self.n / 2 - 0.5                     # (N,)
        mu_x, mu_y = gx[:, None] + i * delta[:, None], gy[:, None] + i * delta[:, None]        # (B, N)
        f_x = ops.exp(-(ops.arange(width, dtype="float32") - mu_x[..., None]) ** 2
                      / (2 * sigma2[:, None, None]))                                            # (B, N, W)
        f_y = ops.exp(-(ops.arange(height, dtype="float32") - mu_y[..., None]) ** 2
                      / (2 * sigma2[:, None, None]))                                            # (B, N, H)
        return f_y / (ops.sum(f_y, -1, keepdims=True) + 1e-8), f_x / (ops.sum(f_x, -1, keepdims=True) + 1e-8)

    def read(self, images, gx, gy, sigma2, delta, gamma):
        images = pixel_input(images)
        b = ops.shape(images)[0]
        window = {"gx": gx, "gy": gy, "sigma2": sigma2, "delta": delta, "gamma": gamma}
        for name, v in window.items():                           # the values of numbers and NumPy arrays only:
            host = None if is_tensor(v) else v                  # the model's own window is positive by exp
            validate.window_parameter(name, np.shape(v) if host is not None else validate.shape_of(v),
                                      images.shape[0], host)
        gx, gy, sigma2, delta, gamma = (ops.broadcast_to(ops.reshape(ops.convert_to_tensor(v, dtype="float32"), (-1,)),
                                                         (b,)) for v in window.values())
        f_y, f_x = self.filters(gx, gy, sigma2, delta, images.shape[1], images.shape[2])
        glimpse = ops.einsum("bnh,bhwc,bmw->bnmc", f_y, images, f_x)            # F_Y x F_Xᵀ per channel
        return gamma[:, None, None, None] * glimpse                             # (B, N, N, C)

    def call(self, images, h):
        images = pixel_input(images)
        h = inputs.floats(h, "h")
        if tuple(h.shape) != (images.shape[0], self.hidden):
            raise ShapeError(f"h must be (B, hidden) = ({images.shape[0]}, {self.hidden}), one state per image; "
                             f"got {tuple(h.shape)}")
        window = self.window(h, images.shape[1], images.shape[2])
        return self.read(images, *window), window


class GlimpseClassifier(Model):
    """Classify an image from a few DRAW glimpses (Gregor et al. 2015, section 4.1). At each of ``glimpses`` steps
    the reader places its window from the LSTM state h_{t−1} (h_0 = 0: the first window is the same for every
    image), reads an N × N glimpse, and the LSTM takes it in: h_t, c_t = LSTM(ReLU(W_e vec(glimpse_t)), h_{t−1},
    c_{t−1}). The class scores are W_o h_T. Where to look is learned by backpropagation alone, through the
    window's five parameters. ``call(images)`` → (logits (B, classes), windows (B, T, 5): g_x, g_y, σ², δ, γ
    of each glimpse)."""

    def __init__(self, classes: int, n: int = 8, glimpses: int = 3, hidden: int = 128, channels: int = 1, **kwargs):
        super().__init__(**kwargs)
        self.classes, self.glimpses, self.channels = validate.sizes(classes=classes, glimpses=glimpses,
                                                                    channels=channels)
        self.read = DrawRead(n, hidden)
        self.encode = layers.Dense(hidden)
        self.cell = layers.LSTMCell(hidden)
        self.out = layers.Dense(classes)

    def call(self, images):
        images = pixel_input(images, self.channels)                                      # (B, H, W, C)
        h = ops.zeros((ops.shape(images)[0], self.read.hidden))                      # (B, hidden)
        c, windows = h, []
        for _ in range(self.glimpses):
            glimpse, window = self.read(images, h)                                   # (B, N, N, C), 5 × (B,)
            flat = ops.reshape(glimpse, (ops.shape(glimpse)[0], -1))                 # (B, N·N·C)
            h, (_, c) = self.cell(ops.relu(self.encode(flat)), [h, c])
            windows.append(ops.stack(window, -1))                                    # (B, 5)
        return self.out(h), ops.stack(windows, 1)                                    # (B, classes), (B, T, 5)


class GlimpseTrainer:
    """The glimpse classifier's side of the course's training loop (:func:`attention_course.core.train.run`): a
    compiled step of Adam on the cross-entropy of the class scores, the gradients clipped to ``clip_norm``."""

    def __init__(self, model: GlimpseClassifier, *, lr: float, clip_norm: float):
        optimizer = Adam(learning_rate=lr, epsilon=1e-8, global_clipnorm=clip_norm)
        optimizer.build(model.trainable_variables)

        @tf.function(reduce_retracing=True)
        def train_step(x, y):
            with tf.GradientTape() as tape:
                logits, _ = model(x, training=True)
                loss = ops.mean(keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True))
            optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
            right = ops.equal(ops.cast(ops.argmax(logits, -1), "int32"), ops.cast(y, "int32"))
            return loss, ops.sum(ops.cast(right, "int32"))

        self.train_step = train_step

    def start_epoch(self) -> None:
        pass                                                         # Keras layers take training= at each call

    def step(self, xs, y, step: int) -> tuple[float, int, int]:
        loss, right = any_batch(self.train_step, tf.convert_to_tensor(xs[0]), tf.convert_to_tensor(y))
        return float(loss), int(right), len(y)


def train_glimpses(model: GlimpseClassifier, images, labels, *, epochs: int, batch_size: int = 32, lr: float = 2e-3,
                   clip_norm: float = 5.0, seed: int = 0, desc: str | None = None) -> History:
    """Train a :class:`GlimpseClassifier` with Adam on the cross-entropy of its class scores: the gradient reaches
    the window's parameters through the glimpses, so nothing tells the model where the digit is. Batches are
    shuffled by a NumPy generator seeded with ``seed``. Returns the per-epoch history: loss, accuracy."""
    n = validate.examples((images,), labels)
    validate.targets(labels, (n, model.classes))
    epochs, batch_size = validate.sizes(epochs=epochs, batch_size=batch_size)
    for name, value in (("lr", lr), ("clip_norm", clip_norm)):
        validate.positive(name, value)
    model(images[:2])                                                # build the variables
    return training.run(GlimpseTrainer(model, lr=lr, clip_norm=clip_norm), (images,), labels, epochs=epochs,
                        batch_size=batch_size, seed=seed, desc=desc or "keras · glimpses",
                        context=inputs.graph_errors())


