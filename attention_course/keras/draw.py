"""Chapter 6: DRAW's reading window (Gregor et al. 2015) in Keras 3, the twin of ``attention_course.torch.draw``.

An N × N grid of Gaussian filters, placed by a centre (g_x, g_y), a stride δ between filters, a width σ and an
intensity γ, reads a glimpse from an image: glimpse = γ F_Y x F_Xᵀ (per channel). Every step is differentiable,
so the window's parameters, predicted from a recurrent state, learn by backpropagation: a soft, moving crop.
Shapes: B batch, H × W pixels, C channels (last), N the glimpse size.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

from .. import validate
from ..errors import ShapeError
from . import inputs
from .base import BuildOnCall, Layer

__all__ = ["DrawRead"]


def _pixels(images):
    """(B, H, W, C) numbers, at least one pixel, as float32 (a read is linear: any intensities will do)."""
    images = inputs.tensor(images, "images")
    validate.images("images", inputs.dtype_name(images), validate.shape_of(images), floats=False)
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
