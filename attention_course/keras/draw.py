"""Chapter 6: DRAW's reading window (Gregor et al. 2015) in Keras 3, the twin of ``attention_course.torch.draw``.

An N × N grid of Gaussian filters, placed by a centre (g_x, g_y), a stride δ between filters, a width σ and an
intensity γ, reads a glimpse from an image: glimpse = γ F_Y x F_Xᵀ (per channel). Every step is differentiable,
so the window's parameters, predicted from a recurrent state, learn by backpropagation: a soft, moving crop.
``GlimpseClassifier`` puts the read in a loop: a few glimpses of a cluttered canvas, then a class.
Shapes: B batch, H × W pixels, C channels (last), N the glimpse size, T glimpses.
"""

from __future__ import annotations

import math

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

from .. import validate
from ..errors import ShapeError
from ..train import History, batches, progress
from . import inputs
from .base import BuildOnCall, Layer, Model

__all__ = ["DrawRead", "GlimpseClassifier", "train_glimpses"]


def _pixels(images, channels: int | None = None):
    """(B, H, W, C) numbers, at least one pixel, as float32 (a read is linear: any intensities will do)."""
    images = inputs.tensor(images, "images")
    validate.images("images", inputs.dtype_name(images), validate.shape_of(images), channels=channels, floats=False)
    return ops.cast(images, "float32")


def _is_tensor(x) -> bool:
    return isinstance(x, keras.KerasTensor) or tf.is_tensor(x)


class DrawRead(BuildOnCall, Layer):
    """DRAW's read operation. ``window(h, H, W)`` turns a state h (B, hidden) into the window's parameters
    (g_x, g_y, σ², δ, γ), each (B,), through a linear layer (``params``), as the paper's eq. 21-24:
    g_x = (W + 1)/2 · (g̃_x + 1), g_y = (H + 1)/2 · (g̃_y + 1), δ = (max(H, W) − 1)/(N − 1) · exp(log δ̃),
    σ² = exp(log σ²), γ = exp(log γ). ``filters`` gives F_Y (B, N, H) and F_X (B, N, W): filter i is a Gaussian
    centred at μ_i = g + (i − N/2 − 0.5) δ (i = 1 … N), each row normalised to sum to 1.
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
        i = ops.arange(1, self.n + 1, dtype="float32") - self.n / 2 - 0.5                     # (N,)
        mu_x, mu_y = gx[:, None] + i * delta[:, None], gy[:, None] + i * delta[:, None]        # (B, N)
        f_x = ops.exp(-(ops.arange(width, dtype="float32") - mu_x[..., None]) ** 2
                      / (2 * sigma2[:, None, None]))                                            # (B, N, W)
        f_y = ops.exp(-(ops.arange(height, dtype="float32") - mu_y[..., None]) ** 2
                      / (2 * sigma2[:, None, None]))                                            # (B, N, H)
        return f_y / (ops.sum(f_y, -1, keepdims=True) + 1e-8), f_x / (ops.sum(f_x, -1, keepdims=True) + 1e-8)

    def read(self, images, gx, gy, sigma2, delta, gamma):
        images = _pixels(images)
        b = ops.shape(images)[0]
        window = {"gx": gx, "gy": gy, "sigma2": sigma2, "delta": delta, "gamma": gamma}
        for name, v in window.items():                           # the values of numbers and NumPy arrays only:
            host = None if _is_tensor(v) else v                  # the model's own window is positive by exp
            validate.window_parameter(name, np.shape(v) if host is not None else validate.shape_of(v),
                                      images.shape[0], host)
        gx, gy, sigma2, delta, gamma = (ops.broadcast_to(ops.reshape(ops.convert_to_tensor(v, dtype="float32"), (-1,)),
                                                         (b,)) for v in window.values())
        f_y, f_x = self.filters(gx, gy, sigma2, delta, images.shape[1], images.shape[2])
        glimpse = ops.einsum("bnh,bhwc,bmw->bnmc", f_y, images, f_x)            # F_Y x F_Xᵀ per channel
        return gamma[:, None, None, None] * glimpse                             # (B, N, N, C)

    def call(self, images, h):
        images = _pixels(images)
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
        images = _pixels(images, self.channels)                                      # (B, H, W, C)
        h = ops.zeros((ops.shape(images)[0], self.read.hidden))                      # (B, hidden)
        c, windows = h, []
        for _ in range(self.glimpses):
            glimpse, window = self.read(images, h)                                   # (B, N, N, C), 5 × (B,)
            flat = ops.reshape(glimpse, (ops.shape(glimpse)[0], -1))                 # (B, N·N·C)
            h, (_, c) = self.cell(ops.relu(self.encode(flat)), [h, c])
            windows.append(ops.stack(window, -1))                                    # (B, 5)
        return self.out(h), ops.stack(windows, 1)                                    # (B, classes), (B, T, 5)


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
    optimizer = keras.optimizers.Adam(learning_rate=lr, epsilon=1e-8, global_clipnorm=clip_norm)
    model(images[:2])                                                # build the variables
    optimizer.build(model.trainable_variables)
    rng, history = np.random.default_rng(seed), History()

    @tf.function(reduce_retracing=True)
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits, _ = model(x, training=True)
            loss = ops.mean(keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True))
        optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        right = ops.equal(ops.cast(ops.argmax(logits, -1), "int32"), ops.cast(y, "int32"))
        return loss, ops.sum(ops.cast(right, "int32"))

    steps = epochs * math.ceil(n / batch_size)
    with inputs.graph_errors(), progress(total=steps, desc=desc or "keras · glimpses") as bar:
        for _ in range(epochs):
            total, correct = 0.0, 0
            for idx in batches(n, batch_size, rng):
                loss, right = train_step(tf.convert_to_tensor(images[idx]), tf.convert_to_tensor(labels[idx]))
                total, correct = total + float(loss) * len(idx), correct + int(right)
                bar.update(1)
            history.log(loss=total / n, accuracy=correct / n)
            bar.set_postfix(loss=f"{total / n:.3f}", acc=f"{correct / n:.3f}")
    return history
