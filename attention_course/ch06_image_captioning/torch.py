"""Chapter 6 in PyTorch: image captioning with visual attention (Show, Attend and Tell), and DRAW's reading
window (Gregor et al. 2015).

Every class mirrors its twin in ``keras.py`` beside it: same name, constructor arguments, sub-layer names and call
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

import numpy as np
import torch
from torch import nn

from attention_course.ch04_score_functions.torch import AdditiveScore
from attention_course.ch06_image_captioning import validate
from attention_course.core import train as training
from attention_course.core.choices import CAPTION_ATTENTION
from attention_course.core.errors import ConfigError, ShapeError
from attention_course.core.text import PAD
from attention_course.core.torch import inputs
from attention_course.core.torch.train import device
from attention_course.core.train import History

__all__ = ["SceneEncoder", "VisualAttention", "Captioner", "train_captioner", "DrawRead", "GlimpseClassifier",
           "train_glimpses"]


def image_input(images, dev=None, features: int | None = None) -> torch.Tensor:
    """(B, H, W, 3) floats with H and W multiples of 8, or with ``features`` annotation grids (B, L, features), as a
    float32 tensor (on ``dev``)."""
    images = inputs.tensor(images, "images")
    validate.captioner_inputs("images", inputs.dtype_name(images), validate.shape_of(images), features)
    images = inputs.finite(images.float(), "images")
    return images.to(dev) if dev is not None else images


class SceneEncoder(nn.Module):
    """A small CNN from pixels to a grid of annotation vectors a_i (Xu et al. take them from a lower convolutional
    layer). Two coordinate channels (x and y in [-1, 1], "CoordConv") join the RGB input, so a feature knows
    where it is; three blocks of a 3×3 convolution, batch normalisation (without it, this encoder had not learned
    the colours after the quick profile's 6 epochs), ReLU and 2×2 max pooling.
    images (B, H, W, 3) → annotations (B, L, D), L = (H/8)·(W/8), row by row."""

    def __init__(self, dim: int = 64, channels: int = 16):
        super().__init__()
        dim, channels = validate.sizes(dim=dim, channels=channels)
        self.dim = dim
        self.conv1 = nn.Conv2d(5, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.conv3 = nn.Conv2d(2 * channels, dim, 3, padding=1)
        self.norm1 = nn.BatchNorm2d(channels)
        self.norm2 = nn.BatchNorm2d(2 * channels)
        self.norm3 = nn.BatchNorm2d(dim)

    def forward(self, images):
        x = image_input(images, self.conv1.weight.device).permute(0, 3, 1, 2)     # (B, 3, H, W)
        b, _, h, w = x.shape
        ys = torch.linspace(-1, 1, h, device=x.device)[:, None].expand(h, w)
        xs = torch.linspace(-1, 1, w, device=x.device)[None, :].expand(h, w)
        x = torch.cat([x, torch.stack([xs, ys])[None].expand(b, -1, -1, -1)], 1)   # (B, 5, H, W)
        for conv, norm in ((self.conv1, self.norm1), (self.conv2, self.norm2), (self.conv3, self.norm3)):
            x = nn.functional.max_pool2d(torch.relu(norm(conv(x))), 2)     # (B, C, H/2, W/2) each time
        return x.flatten(2).transpose(1, 2)                          # (B, L, D)


class VisualAttention(nn.Module):
    """Xu et al.'s f_att: e_ti = v_aᵀ tanh(W_a h_{t−1} + U_a a_i) (Chapter 4's ``AdditiveScore``) and
    α_t = softmax_i(e_t), a distribution over the L locations. U_a a_i does not depend on t: ``keys`` computes it
    once per image. (h_prev (B, N), keys (B, L, units)) → α (B, L)."""

    def __init__(self, d_query: int, d_key: int, units: int):
        super().__init__()
        self.d_query, self.d_key, self.units = validate.sizes(d_query=d_query, d_key=d_key, units=units)
        self.score = AdditiveScore(self.d_query, self.d_key, self.units)

    def keys(self, a):
        return self.score.U_a(inputs.floats(a, "a", inputs.device_of(self)))     # (B, L, units)

    def forward(self, h_prev, keys):
        h_prev = inputs.floats(h_prev, "h_prev", inputs.device_of(self))
        keys = inputs.floats(keys, "keys", h_prev.device)
        validate.query_and_memory("VisualAttention", h_prev, self.d_query, keys, self.units, names=("h_prev", "keys"),
                                  steps="L")
        e = self.score.v_a(torch.tanh(self.score.W_a(h_prev)[:, None] + keys))[..., 0]   # (B, L)
        return torch.softmax(e, dim=-1)


class Captioner(nn.Module):
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
                 dim: int = 64, units: int = 128, features: int | None = None):
        super().__init__()
        if attention not in CAPTION_ATTENTION:
            raise ConfigError(f"unknown attention {attention!r}: use one of {', '.join(CAPTION_ATTENTION)}")
        vocab, embed, hidden, dim, units = validate.sizes(vocab=vocab, embed=embed, hidden=hidden, dim=dim,
                                                          units=units)
        self.attention, self.gate = attention, bool(gate) and attention in ("soft", "hard")
        self.features = validate.optional_size("features", features)
        context = 0 if attention == "none" else dim
        self.encoder = SceneEncoder(dim) if self.features is None else nn.Linear(self.features, dim)
        self.init_h = nn.Linear(dim, hidden)
        self.init_c = nn.Linear(dim, hidden)
        self.embed = nn.Embedding(vocab, embed)
        if attention in ("soft", "hard"):
            self.attend = VisualAttention(hidden, dim, units)
        if self.gate:
            self.f_beta = nn.Linear(hidden, 1)
        self.rnn = nn.LSTMCell(embed + context, hidden)
        self.L_h = nn.Linear(hidden, embed)
        if context:
            self.L_z = nn.Linear(dim, embed, bias=False)
        self.out = nn.Linear(embed, vocab)

    def start(self, images):
        """Encode; the first state ((h_0, c_0), (annotations, keys))."""
        if self.features is None:
            a = self.encoder(images)                                 # (B, L, D)
        else:                                                        # (B, L, features) → (B, L, D)
            a = torch.relu(self.encoder(image_input(images, inputs.device_of(self), self.features)))
        mean = a.mean(1)                                             # (B, D)
        keys = self.attend.keys(a) if self.attention in ("soft", "hard") else None
        return (torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean))), (a, keys)

    def decode_step(self, y_prev, state, memory, noise=None, expect=None, greedy: bool = False):
        """One word: y_prev (B,) ids → logits (B, V), new state, α (B, L), log π (B,)."""
        (h, c), (a, keys) = state, memory
        e = self.embed(y_prev)                                       # (B, E)
        b, L = a.shape[0], a.shape[1]
        log_pi = torch.zeros(b, device=a.device)
        if self.attention == "none":
            alpha, z = torch.zeros(b, L, device=a.device), None
        elif self.attention == "mean":
            alpha = torch.full((b, L), 1.0 / L, device=a.device)
            z = a.mean(1)                                            # (B, D)
        else:
            alpha = self.attend(h, keys)                             # (B, L)
            z = (alpha[:, :, None] * a).sum(1)                       # the expectation, (B, D)
            if self.attention == "hard":
                log_alpha = torch.log(alpha + 1e-12)
                s = log_alpha.argmax(-1) if greedy or noise is None else (log_alpha + noise).argmax(-1)   # (B,)
                sampled = a[torch.arange(b, device=a.device), s]     # a_s, (B, D)
                log_pi = log_alpha.gather(1, s[:, None])[:, 0]
                if expect is not None:                               # those captions use the expectation
                    z = torch.where(expect[:, None], z, sampled)
                    log_pi = log_pi * ~expect
                else:
                    z = sampled
            if self.gate:
                z = torch.sigmoid(self.f_beta(h)) * z                # β_t z_t
        x = e if z is None else torch.cat([e, z], -1)
        h, c = self.rnn(x, (h, c))                                   # (B, N)
        deep = e + self.L_h(h) + (0 if z is None else self.L_z(z))   # (B, E)
        return self.out(deep), (h, c), alpha, log_pi

    def forward(self, images, tokens, noise=None, expect=None, greedy: bool = False):
        images = image_input(images, inputs.device_of(self), self.features)
        tokens = inputs.ids(tokens, "tokens", self.embed)            # (B, T) ids in [0, vocab), T >= 1
        if tokens.shape[0] != images.shape[0]:
            raise ShapeError(f"tokens must be (B, T) = ({images.shape[0]}, T) ids, one row per image; got "
                             f"{tuple(tokens.shape)}")
        state, memory = self.start(images)
        if noise is not None:
            noise = torch.as_tensor(np.asarray(noise) if not torch.is_tensor(noise) else noise,
                                    dtype=torch.float32, device=tokens.device)
            want = (tokens.shape[0], tokens.shape[1], memory[0].shape[1])
            if tuple(noise.shape) != want:
                raise ShapeError(f"noise must be (B, T, L) = {want}; got {tuple(noise.shape)}")
        if expect is not None:
            expect = inputs.bool_mask(expect, "expect", tokens.device, validate.EXPECT_RULE)
            if tuple(expect.shape) != (tokens.shape[0],):
                raise ShapeError(f"expect must be (B,) = ({tokens.shape[0]},), one bool per caption; got "
                                 f"{tuple(expect.shape)}")
        logits, alphas, log_pis = [], [], []
        for t in range(tokens.shape[1]):
            out, state, alpha, log_pi = self.decode_step(tokens[:, t], state, memory,
                                                         None if noise is None else noise[:, t], expect, greedy)
            logits.append(out)
            alphas.append(alpha)
            log_pis.append(log_pi)
        return torch.stack(logits, 1), torch.stack(alphas, 1), torch.stack(log_pis, 1)

    # one step at a time, on NumPy arrays, for greedy and beam search (attention_course.core.decode)
    @torch.no_grad()
    def step(self, tokens, state):
        state, memory = state
        tokens = validate.step_tokens("tokens", tokens, memory[0].shape[0], self.embed.num_embeddings)
        tokens = torch.as_tensor(tokens, dtype=torch.long, device=memory[0].device)
        logits, state, alpha, _ = self.decode_step(tokens, state, memory, greedy=True)
        return torch.log_softmax(logits, -1).cpu().numpy(), (state, memory), alpha.cpu().numpy()

    def reorder(self, state, index):
        index = validate.row_index("index", index, state[1][0].shape[0])
        index = torch.as_tensor(index, dtype=torch.long, device=state[1][0].device)
        return tuple(tuple(None if x is None else x.index_select(0, index) for x in part) for part in state)


class CaptionerTrainer:
    """The captioner's side of the course's training loop (:func:`attention_course.core.train.run`): Adam on the
    cross-entropy per word, Xu et al.'s doubly stochastic penalty and, for hard attention, the REINFORCE term with
    its baseline; each batch's noise comes from ``rng`` right after its examples were drawn."""

    def __init__(self, model: Captioner, rng, locations: int, *, lr: float, clip_norm: float,
                 doubly_stochastic: float, entropy: float, expect_share: float):
        self.model, self.rng, self.locations = model, rng, locations
        self.clip_norm, self.doubly_stochastic, self.entropy = clip_norm, doubly_stochastic, entropy
        self.expect_share, self.baseline = expect_share, 0.0
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def start_epoch(self) -> None:
        self.model.train()

    def step(self, xs, y, step: int) -> tuple[float, int, int]:
        model, (images, tokens_in), dev = self.model, xs, next(self.model.parameters()).device
        y_in, y = torch.as_tensor(tokens_in, device=dev), torch.as_tensor(y, device=dev)
        noise, expect = None, np.zeros(len(y), bool)             # expect: only hard attention reads it
        if model.attention == "hard":
            noise = self.rng.gumbel(size=(len(y), y.shape[1], self.locations)).astype(np.float32)
            expect = self.rng.random(len(y)) < self.expect_share
        logits, alpha, log_pi = model(images, y_in, noise=noise, expect=expect)
        keep = (y != PAD).float()                                # (b, T)
        ce = nn.functional.cross_entropy(logits.transpose(1, 2), y, reduction="none")    # (b, T)
        words = keep.sum()
        loss = (ce * keep).sum() / words
        if self.doubly_stochastic:
            mass = (alpha * keep[..., None]).sum(1)              # Σ_t α_ti, (b, L)
            loss = loss + self.doubly_stochastic * ((1 - mass) ** 2).sum(1).mean()
        if model.attention == "hard":
            reward = -((ce * keep).sum(1) / keep.sum(1)).detach()           # (b,) mean log-likelihood
            sampled = torch.as_tensor(~expect, device=dev)
            if sampled.any():
                loss = loss - ((reward - self.baseline) * (log_pi * keep).sum(1))[sampled].mean()
                self.baseline = 0.9 * self.baseline + 0.1 * float(reward[sampled].mean())
            if self.entropy:
                h_t = -(alpha * torch.log(alpha + 1e-12)).sum(-1)           # (b, T)
                loss = loss - self.entropy * (h_t * keep).sum() / words
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), self.clip_norm)
        self.optimizer.step()
        counted, hits = int(words), int(((logits.argmax(-1) == y).float() * keep).sum())
        return float((ce * keep).sum().detach()) / counted, hits, counted


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
    validate.captions(tokens_in, tokens_out, model.embed.num_embeddings, PAD)
    epochs, batch_size = validate.sizes(epochs=epochs, batch_size=batch_size)
    for name, value in (("lr", lr), ("clip_norm", clip_norm)):
        validate.positive(name, value)
    doubly_stochastic = validate.non_negative("doubly_stochastic", doubly_stochastic, " (0 turns it off)")
    entropy = validate.non_negative("entropy", entropy, " (0 turns it off)")
    expect_share = validate.probability("expect_share", expect_share)
    model.to(device())
    rng = np.random.default_rng(seed)
    trainer = CaptionerTrainer(model, rng, grid_locations(images), lr=lr, clip_norm=clip_norm,
                               doubly_stochastic=doubly_stochastic, entropy=entropy, expect_share=expect_share)
    history = training.run(trainer, (images, tokens_in), tokens_out, epochs=epochs, batch_size=batch_size,
                           seed=seed, rng=rng, average="target", desc=desc or f"pytorch · {model.attention}")
    model.eval()
    return history


def grid_locations(images) -> int:
    """L, the number of grid locations of these images (B, H, W, 3) or annotation grids (B, L, D)."""
    return images.shape[1] if len(images.shape) == 3 else (images.shape[1] // 8) * (images.shape[2] // 8)


def pixel_input(images, device=None, channels: int | None = None) -> torch.Tensor:
    """(B, H, W, C) numbers, at least one pixel, as float32 (a read is linear: any intensities will do)."""
    images = inputs.tensor(images, "images", device)
    validate.images("images", inputs.dtype_name(images), validate.shape_of(images), channels=channels, floats=False)
    return images.float()


class DrawRead(nn.Module):
    """DRAW's read operation. ``window(h, H, W)`` turns a state h (B, hidden) into the window's parameters
    (g_x, g_y, σ², δ, γ), each (B,), through a linear layer (``params``), as the paper's eq. 21-24:
    g_x = (W + 1)/2 · (g̃_x + 1), g_y = (H + 1)/2 · (g̃_y + 1), δ = (max(H, W) − 1)/(N − 1) · exp(log δ̃),
    σ² = exp(log σ²), γ = exp(log γ). ``filters`` gives F_Y (B, N, H) and F_X (B, N, W): filter i is a Gaussian
    centred at μ_i = g + (i − N/2 − 0.5) δ (i = 1 … N), each row normalised to sum to 1; a σ² below
    ``validate.SIGMA2_MIN`` (0 when exp(log σ²) underflows) counts as it: a point filter, not 0/0 = NaN.
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
        sigma2 = sigma2.clamp(min=validate.SIGMA2_MIN)                                          # (B,), > 0
        i = torch.arange(1, self.n + 1, dtype=gx.dtype, device=gx.device) - self.n / 2 - 0.5     # (N,)
        mu_x, mu_y = gx[:, None] + i * delta[:, None], gy[:, None] + i * delta[:, None]        # (B, N)
        f_x = torch.exp(-(torch.arange(width, dtype=gx.dtype, device=gx.device) - mu_x[..., None]) ** 2
                        / (2 * sigma2[:, None, None]))                                          # (B, N, W)
        f_y = torch.exp(-(torch.arange(height, dtype=gx.dtype, device=gx.device) - mu_y[..., None]) ** 2
                        / (2 * sigma2[:, None, None]))                                          # (B, N, H)
        return f_y / (f_y.sum(-1, keepdim=True) + 1e-8), f_x / (f_x.sum(-1, keepdim=True) + 1e-8)

    def read(self, images, gx, gy, sigma2, delta, gamma):
        images = pixel_input(images)
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
        images = pixel_input(images)
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
        images = pixel_input(images, inputs.device_of(self), self.channels)             # (B, H, W, C)
        h = images.new_zeros(len(images), self.read.hidden)                          # (B, hidden)
        c, windows = torch.zeros_like(h), []
        for _ in range(self.glimpses):
            glimpse, window = self.read(images, h)                                   # (B, N, N, C), 5 × (B,)
            h, c = self.cell(torch.relu(self.encode(glimpse.flatten(1))), (h, c))
            windows.append(torch.stack(window, -1))                                  # (B, 5)
        return self.out(h), torch.stack(windows, 1)                                  # (B, classes), (B, T, 5)


class GlimpseTrainer:
    """The glimpse classifier's side of the course's training loop (:func:`attention_course.core.train.run`): Adam
    on the cross-entropy of the class scores, the gradients clipped to ``clip_norm``."""

    def __init__(self, model: GlimpseClassifier, *, lr: float, clip_norm: float):
        self.model, self.clip_norm = model, clip_norm
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def start_epoch(self) -> None:
        self.model.train()

    def step(self, xs, y, step: int) -> tuple[float, int, int]:
        y = torch.as_tensor(y, device=inputs.device_of(self.model))
        logits, _ = self.model(xs[0])
        loss = nn.functional.cross_entropy(logits, y)
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm)
        self.optimizer.step()
        return float(loss.detach()), int((logits.argmax(-1) == y).sum()), len(y)


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
    history = training.run(GlimpseTrainer(model, lr=lr, clip_norm=clip_norm), (images,), labels, epochs=epochs,
                           batch_size=batch_size, seed=seed, desc=desc or "pytorch · glimpses")
    model.eval()
    return history


