"""Chapter 6: DRAW's reading window (Gregor et al. 2015) in PyTorch, the twin of ``attention_course.keras.draw``.

An N × N grid of Gaussian filters, placed by a centre (g_x, g_y), a stride δ between filters, a width σ and an
intensity γ, reads a glimpse from an image: glimpse = γ F_Y x F_Xᵀ (per channel). Every step is differentiable,
so the window's parameters, predicted from a recurrent state, learn by backpropagation: a soft, moving crop.
``GlimpseClassifier`` puts the read in a loop: a few glimpses of a cluttered canvas, then a class.
Shapes: B batch, H × W pixels, C channels (last), N the glimpse size, T glimpses.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .. import validate
from ..errors import ShapeError
from ..train import History, batches, progress
from . import inputs

__all__ = ["DrawRead", "GlimpseClassifier", "train_glimpses"]


def _pixels(images, device=None, channels: int | None = None) -> torch.Tensor:
    """(B, H, W, C) numbers, at least one pixel, as float32 (a read is linear: any intensities will do)."""
    images = inputs.tensor(images, "images", device)
    validate.images("images", inputs.dtype_name(images), validate.shape_of(images), channels=channels, floats=False)
    return images.float()


class DrawRead(nn.Module):
    """DRAW's read operation. ``window(h, H, W)`` turns a state h (B, hidden) into the window's parameters
    (g_x, g_y, σ², δ, γ), each (B,), through a linear layer (``params``), as the paper's eq. 21-24:
    g_x = (W + 1)/2 · (g̃_x + 1), g_y = (H + 1)/2 · (g̃_y + 1), δ = (max(H, W) − 1)/(N − 1) · exp(log δ̃),
    σ² = exp(log σ²), γ = exp(log γ). ``filters`` gives F_Y (B, N, H) and F_X (B, N, W): filter i is a Gaussian
    centred at μ_i = g + (i − N/2 − 0.5) δ (i = 1 … N), each row normalised to sum to 1.
    ``read(images, gx, gy, sigma2, delta, gamma)`` → glimpse (B, N, N, C); ``forward(images, h)`` predicts the
    window from h and reads: (glimpse, (gx, gy, sigma2, delta, gamma))."""

    def __init__(self, n: int, hidden: int):
        super().__init__()
        self.n, self.hidden = validate.sizes(n=n, hidden=hidden)
        self.params = nn.Linear(hidden, 5)

    def window(self, h, height: int, width: int):
        gx_, gy_, log_sigma2, log_delta, log_gamma = self.params(h).unbind(-1)   # (B,) each
        gx, gy = (width + 1) / 2 * (gx_ + 1), (height + 1) / 2 * (gy_ + 1)
        delta = (max(height, width) - 1) / max(self.n - 1, 1) * torch.exp(log_delta)
        return gx, gy, torch.exp(log_sigma2), delta, torch.exp(log_gamma)

    def filters(self, gx, gy, sigma2, delta, height: int, width: int):
        i = torch.arange(1, self.n + 1, dtype=gx.dtype, device=gx.device) - self.n / 2 - 0.5     # (N,)
        mu_x, mu_y = gx[:, None] + i * delta[:, None], gy[:, None] + i * delta[:, None]        # (B, N)
        f_x = torch.exp(-(torch.arange(width, dtype=gx.dtype, device=gx.device) - mu_x[..., None]) ** 2
                        / (2 * sigma2[:, None, None]))                                          # (B, N, W)
        f_y = torch.exp(-(torch.arange(height, dtype=gx.dtype, device=gx.device) - mu_y[..., None]) ** 2
                        / (2 * sigma2[:, None, None]))                                          # (B, N, H)
        return f_y / (f_y.sum(-1, keepdim=True) + 1e-8), f_x / (f_x.sum(-1, keepdim=True) + 1e-8)

    def read(self, images, gx, gy, sigma2, delta, gamma):
        images = _pixels(images)
        window = {"gx": gx, "gy": gy, "sigma2": sigma2, "delta": delta, "gamma": gamma}
        for name, v in window.items():                           # the values of numbers and NumPy arrays only:
            host = None if torch.is_tensor(v) else v             # the model's own window is positive by exp
            validate.window_parameter(name, np.shape(v) if host is not None else tuple(v.shape), len(images), host)
        gx, gy, sigma2, delta, gamma = (torch.as_tensor(v, dtype=torch.float32, device=images.device).reshape(-1)
                                        .expand(len(images)) for v in window.values())
        f_y, f_x = self.filters(gx, gy, sigma2, delta, images.shape[1], images.shape[2])
        glimpse = torch.einsum("bnh,bhwc,bmw->bnmc", f_y, images, f_x)          # F_Y x F_Xᵀ per channel
        return gamma[:, None, None, None] * glimpse                             # (B, N, N, C)

    def forward(self, images, h):
        images = _pixels(images)
        h = inputs.floats(h, "h", images.device)
        if tuple(h.shape) != (images.shape[0], self.hidden):
            raise ShapeError(f"h must be (B, hidden) = ({images.shape[0]}, {self.hidden}), one state per image; "
                             f"got {tuple(h.shape)}")
        window = self.window(h, images.shape[1], images.shape[2])
        return self.read(images, *window), window


class GlimpseClassifier(nn.Module):
    """Classify an image from a few DRAW glimpses (Gregor et al. 2015, section 4.1). At each of ``glimpses`` steps
    the reader places its window from the LSTM state h_{t−1} (h_0 = 0: the first window is the same for every
    image), reads an N × N glimpse, and the LSTM takes it in: h_t, c_t = LSTM(ReLU(W_e vec(glimpse_t)), h_{t−1},
    c_{t−1}). The class scores are W_o h_T. Where to look is learned by backpropagation alone, through the
    window's five parameters. ``forward(images)`` → (logits (B, classes), windows (B, T, 5): g_x, g_y, σ², δ, γ
    of each glimpse)."""

    def __init__(self, classes: int, n: int = 8, glimpses: int = 3, hidden: int = 128, channels: int = 1):
        super().__init__()
        self.classes, self.glimpses, self.channels = validate.sizes(classes=classes, glimpses=glimpses,
                                                                    channels=channels)
        self.read = DrawRead(n, hidden)
        self.encode = nn.Linear(n * n * channels, hidden)
        self.cell = nn.LSTMCell(hidden, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, images):
        images = _pixels(images, inputs.device_of(self), self.channels)             # (B, H, W, C)
        h = images.new_zeros(len(images), self.read.hidden)                          # (B, hidden)
        c, windows = torch.zeros_like(h), []
        for _ in range(self.glimpses):
            glimpse, window = self.read(images, h)                                   # (B, N, N, C), 5 × (B,)
            h, c = self.cell(torch.relu(self.encode(glimpse.flatten(1))), (h, c))
            windows.append(torch.stack(window, -1))                                  # (B, 5)
        return self.out(h), torch.stack(windows, 1)                                  # (B, classes), (B, T, 5)


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
    dev = inputs.device_of(model)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    rng, history = np.random.default_rng(seed), History()
    with progress(total=epochs * math.ceil(n / batch_size), desc=desc or "pytorch · glimpses") as bar:
        for _ in range(epochs):
            total, correct = 0.0, 0
            for idx in batches(n, batch_size, rng):
                y = torch.as_tensor(labels[idx], device=dev)
                logits, _ = model(images[idx])
                loss = nn.functional.cross_entropy(logits, y)
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
                optimizer.step()
                total += float(loss.detach()) * len(idx)
                correct += int((logits.argmax(-1) == y).sum())
                bar.update(1)
            history.log(loss=total / n, accuracy=correct / n)
            bar.set_postfix(loss=f"{total / n:.3f}", acc=f"{correct / n:.3f}")
    model.eval()
    return history
