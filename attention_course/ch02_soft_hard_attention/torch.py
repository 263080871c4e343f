"""Chapter 2 in PyTorch: hard attention (REINFORCE, Gumbel-softmax) and local attention (Luong's local-m and
local-p); then the experiment that compares them: the pointer model (``PointerModel``), its training loop
(``train_pointer``) and the spread of REINFORCE gradient estimates (``reinforce_gradients``).

Every name mirrors its twin in ``keras.py`` beside it: same arguments, sub-layer names and call signatures.
Random draws can be passed in (``noise``: Gumbel noise of the scores' shape), and the pointer model's noise is
drawn by NumPy from the same seed in both frameworks, so the two can be compared exactly. Shapes: B batch, T_q
queries, S (= T_k) keys, d features, W = 2·window + 1. Inputs: tensors or NumPy arrays (float arrays as float32);
a mask bool or 0/1; ids in [0, vocab) (``inputs``).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch
from torch import nn

from attention_course.ch01_sequence_models.torch import DotProductAttention, masked_softmax
from attention_course.ch02_soft_hard_attention import validate
from attention_course.core import train as training
from attention_course.core.choices import POINTER_ATTENTION
from attention_course.core.errors import ConfigError
from attention_course.core.metrics import mean_entropy
from attention_course.core.torch import inputs
from attention_course.core.torch.train import device

__all__ = ["gumbel_noise", "gumbel_softmax", "HardAttention", "GumbelSoftmaxAttention", "LocalAttention",
           "PointerModel", "train_pointer", "reinforce_gradients"]


MASKED_SCORE = -1e9  # the score of a masked key before a sampled softmax (finite: noise and 1/τ keep it finite)


def gumbel_noise(shape, seed=None) -> torch.Tensor:
    """Standard Gumbel noise g = -log(-log u), u ~ Uniform(0, 1), of the given shape (float32).
    ``seed``: an int or a ``torch.Generator`` (None: PyTorch's global generator)."""
    shape = validate.noise_shape(shape)
    gen = torch.Generator().manual_seed(seed) if isinstance(seed, int) else seed
    u = torch.rand(shape, generator=gen).clamp(1e-10, 1 - 1e-7)
    return -torch.log(-torch.log(u))


def gumbel_softmax(logits, tau: float = 1.0, hard: bool = False, noise=None):
    """A Gumbel-softmax sample over the last axis: softmax((logits + g) / τ), g ~ Gumbel(0, 1).

    ``hard=True``: the straight-through estimator: the forward value is the one-hot vector of the sample's
    argmax, the gradient is the soft sample's. ``noise``: pre-drawn g (same shape as ``logits``).
    """
    validate.tau(tau)
    logits = inputs.floats(logits, "logits")
    noise = gumbel_noise(logits.shape) if noise is None else given_noise(noise, logits)
    noise = noise.to(logits.device, logits.dtype)
    soft = torch.softmax((logits + noise) / tau, dim=-1)            # (…, S), differentiable
    if not hard:
        return soft
    index = soft.argmax(dim=-1)
    one_hot = nn.functional.one_hot(index, logits.shape[-1]).to(soft.dtype)
    return one_hot - soft.detach() + soft                             # value: one-hot; gradient: soft's


def given_noise(noise, scores):
    """Pre-drawn Gumbel noise: floats of the scores' shape."""
    noise = inputs.floats(noise, "noise", scores.device)
    validate.same_shape("noise", validate.shape_of(noise), validate.shape_of(scores), "the scores (B, T_q, S)")
    return noise


def dot_scores(query, key, scale: bool):
    scores = query @ key.transpose(1, 2)                              # (B, T_q, S)
    return scores / math.sqrt(query.shape[-1]) if scale else scores


def key_mask(mask, shape):
    """A bool (B, T_k) or broadcastable (B, T_q, T_k) mask → (B, T_q, T_k); None → all True."""
    if mask is None:
        return torch.ones(shape, dtype=torch.bool)
    if mask.dim() == 2:
        mask = mask[:, None, :]
    return mask.expand(shape)


class HardAttention(nn.Module):
    """Hard (stochastic) attention: sample ONE key per query from π = softmax(scores) and return its value.

    Returns ``(context, index, log_prob)``: context (B, T_q, d_v) = value[index], index (B, T_q) int64, and
    log_prob (B, T_q) = log π(index), the term REINFORCE multiplies by the reward. ``noise``: pre-drawn
    Gumbel noise (B, T_q, S) (the sample is argmax(log π + noise)); ``greedy=True`` takes argmax π instead.
    ``return_weights=True`` appends π (B, T_q, S). A query whose keys are all masked gets a zero context.
    """

    def __init__(self, scale: bool = False, seed: int | None = None):
        super().__init__()
        self.scale, self.seed = scale, seed
        self.generator = None if seed is None else torch.Generator().manual_seed(seed)

    def forward(self, query, key, value, mask=None, noise=None, greedy: bool = False,
                return_weights: bool = False):
        query, key, value, mask = inputs.attention(query, key, value, mask)   # floats, bool mask
        inputs.finite_visible(query, key, mask)                               # a NaN or inf: NaN, or no key
        scores = dot_scores(query, key, self.scale)                      # (B, T_q, S)
        visible = key_mask(mask, scores.shape).to(scores.device)     # (B, T_q, S)
        log_probs = torch.log_softmax(scores.masked_fill(~visible, MASKED_SCORE), dim=-1)
        if greedy:
            index = log_probs.argmax(dim=-1)                          # (B, T_q)
        else:
            noise = gumbel_noise(scores.shape, self.generator) if noise is None else given_noise(noise, scores)
            index = (log_probs + noise.to(scores.device, scores.dtype)).argmax(dim=-1)   # Gumbel-max: a sample
        row = visible.any(dim=-1)                                     # (B, T_q): has at least one key
        picked = value.gather(1, index[..., None].expand(-1, -1, value.shape[-1]))   # (B, T_q, d_v)
        context = picked.masked_fill(~row[..., None], 0)              # the sampled value (gathered: no 0 × NaN)
        log_prob = log_probs.gather(-1, index[..., None])[..., 0] * row   # (B, T_q)
        if return_weights:
            return context, index, log_prob, log_probs.exp() * visible
        return context, index, log_prob


class GumbelSoftmaxAttention(nn.Module):
    """Hard attention trained with the Gumbel-softmax straight-through estimator.

    The weights are ``gumbel_softmax(scores, tau, hard)`` (one-hot in the forward pass when ``hard=True``);
    ``greedy=True`` uses the one-hot argmax of the scores (no noise). Returns the context, and with
    ``return_weights=True`` the pair (context, weights (B, T_q, S)).
    """

    def __init__(self, tau: float = 1.0, hard: bool = True, scale: bool = False, seed: int | None = None):
        super().__init__()
        validate.tau(tau)
        self.tau, self.hard, self.scale, self.seed = tau, hard, scale, seed
        self.generator = None if seed is None else torch.Generator().manual_seed(seed)

    def forward(self, query, key, value, mask=None, noise=None, greedy: bool = False,
                return_weights: bool = False):
        query, key, value, mask = inputs.attention(query, key, value, mask)   # floats, bool mask
        inputs.finite_visible(query, key, mask)                               # a NaN or inf: NaN, or no key
        scores = dot_scores(query, key, self.scale)
        visible = key_mask(mask, scores.shape).to(scores.device)
        scores = scores.masked_fill(~visible, MASKED_SCORE)
        if greedy:
            weights = nn.functional.one_hot(scores.argmax(-1), scores.shape[-1]).to(value.dtype)
        else:
            noise = gumbel_noise(scores.shape, self.generator) if noise is None else given_noise(noise, scores)
            weights = gumbel_softmax(scores, self.tau, self.hard, noise)
        weights = weights * visible                                   # fully masked rows → zeros
        context = weights @ inputs.hide(value, mask)                  # hidden rows zeroed (0 × NaN = NaN)
        return (context, weights) if return_weights else context


class LocalAttention(nn.Module):
    """Luong et al.'s local attention: each query looks only at the 2D+1 keys around a centre p_t.

    ``mode="m"`` (monotonic): p_t = t, the query's own index; weights = softmax over the window.
    ``mode="p"`` (predictive): p_t = S · sigmoid(v_pᵀ tanh(W_p q_t)) (sub-layers ``w_p``, ``v_p``; needs
    ``dim``, the query size); weights = softmax over the window × exp(-(s - p_t)² / (2σ²)), σ = D/2
    (Luong's eq. 10: not renormalised, so they sum to at most 1).
    The window is the integer positions round(p_t) - D … round(p_t) + D inside [0, S) (round half up).
    Keys and values of the window are *gathered*: the cost grows with D, not with S.
    Returns the context (B, T_q, d_v); ``return_weights=True``: (context, weights (B, T_q, S)), zero
    outside the window.
    """

    def __init__(self, mode: str = "m", window: int = 2, dim: int | None = None, scale: bool = False):
        super().__init__()
        if mode not in ("m", "p"):
            raise ConfigError(f"unknown local attention mode {mode!r}: use 'm' (monotonic) or 'p' (predictive)")
        window = validate.integer("window (the half-width D)", window, 1 if mode == "p" else 0)
        if mode == "p" and dim is None:
            raise ConfigError("local-p predicts its centre from the query: give dim=<query size>")
        dim = dim if mode == "m" and dim is None else validate.integer("dim (the query size)", dim)
        self.mode, self.window, self.dim, self.scale = mode, window, dim, scale
        if mode == "p":
            self.w_p = nn.Linear(dim, dim, bias=False)
            self.v_p = nn.Linear(dim, 1, bias=False)

    def centres(self, query, length: int):
        """The window centres p_t (B, T_q), as floats, for keys of ``length`` positions."""
        if self.mode == "m":
            steps = torch.arange(query.shape[1], dtype=query.dtype, device=query.device)
            return steps[None].expand(query.shape[0], -1)
        return length * torch.sigmoid(self.v_p(torch.tanh(self.w_p(query))))[..., 0]

    def forward(self, query, key, value, mask=None, return_weights: bool = False):
        query, key, value, mask = inputs.attention(query, key, value, mask)   # floats, bool mask
        inputs.finite_visible(query, key, mask)                               # a NaN or inf: NaN, or no key
        validate.not_empty("query", query.shape, what="T_q")
        validate.not_empty("key", key.shape, what="S")
        if self.mode == "p":                                          # w_p reads queries of size dim
            validate.sequence_shapes("LocalAttention(mode='p') query", query, features=self.dim)
        b, t_q, d = query.shape
        s, d_v = key.shape[1], value.shape[-1]
        p = self.centres(query, s)                                    # (B, T_q)
        offsets = torch.arange(-self.window, self.window + 1, device=query.device)          # (W,)
        pos = torch.floor(p.detach() + 0.5).long()[..., None] + offsets                     # (B, T_q, W)
        inside = (pos >= 0) & (pos < s)                                                     # in the sequence
        idx = pos.clamp(0, s - 1)
        rows = (idx + s * torch.arange(b, device=query.device)[:, None, None]).reshape(-1)  # rows of (B·S, ·)
        k_win = key.reshape(b * s, d).index_select(0, rows).reshape(b, t_q, -1, d)          # (B, T_q, W, d)
        v_win = value.reshape(b * s, d_v).index_select(0, rows).reshape(b, t_q, -1, d_v)    # (B, T_q, W, d_v)
        if mask is not None:                                                                # and visible
            m = mask[:, None, :] if mask.dim() == 2 else mask
            inside = inside & m.expand(b, t_q, s).gather(-1, idx)
            v_win = v_win.masked_fill(~inside[..., None], 0)                                # 0 × NaN = NaN
        scores = (query[:, :, None, :] * k_win).sum(-1)               # (B, T_q, W)
        if self.scale:
            scores = scores / math.sqrt(d)
        weights = masked_softmax(scores, inside)                      # softmax over the window only
        if self.mode == "p":
            sigma = self.window / 2
            weights = weights * torch.exp(-((pos - p[..., None]) ** 2) / (2 * sigma**2))
        context = (weights[..., None] * v_win).sum(-2)                # (B, T_q, d_v)
        if not return_weights:
            return context
        dense = torch.zeros(b, t_q, s, dtype=weights.dtype, device=weights.device)
        return context, dense.scatter_add(-1, idx, weights)          # (B, T_q, S), zero outside


class PointerModel(nn.Module):
    """The chapter's pointer network: output step t must emit one symbol of a long source.

    Queries are learned embeddings of the output step (``step``); keys = symbol embedding (``symbol``) +
    learned position embedding (``position``); values = symbol embeddings; a linear classifier (``out``)
    reads the context. ``attention`` is ``"soft"`` (global), ``"hard"`` (REINFORCE), ``"gumbel"``
    (straight-through Gumbel-softmax), ``"local-m"`` or ``"local-p"`` (half-width ``window``).

    x (B, S) token ids (< ``vocab``) → (logits (B, T, n_out), weights (B, T, S), log_prob (B, T)).
    weights: what formed the context (soft/local weights, or the one-hot sample); log_prob: log π of the
    sampled positions (zeros unless ``"hard"``). ``noise`` (B, T, S) for the sampling variants; ``greedy``
    replaces sampling by the argmax (evaluation).
    """

    VARIANTS = POINTER_ATTENTION

    def __init__(self, vocab: int, n_out: int, length: int, steps: int, dim: int = 32, attention: str = "soft",
                 window: int = 2, tau: float = 1.0):
        super().__init__()
        if attention not in self.VARIANTS:
            raise ConfigError(f"unknown attention {attention!r}: use one of {', '.join(self.VARIANTS)}")
        vocab, n_out, length, steps, dim = validate.sizes(vocab=vocab, n_out=n_out, length=length, steps=steps,
                                                       dim=dim)
        self.attention, self.length, self.steps = attention, length, steps
        self.step = nn.Embedding(steps, dim)
        self.symbol = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(length, dim)
        if attention == "soft":
            self.attend = DotProductAttention(scale=True)
        elif attention == "hard":
            self.attend = HardAttention(scale=True)
        elif attention == "gumbel":
            self.attend = GumbelSoftmaxAttention(tau=tau, hard=True, scale=True)
        else:
            self.attend = LocalAttention(mode=attention[-1], window=window, dim=dim, scale=True)
        self.out = nn.Linear(dim, n_out)

    def _inputs(self, x):
        x = inputs.ids(x, "x", self.symbol, length=self.length)               # (B, S) ids in [0, vocab)
        b, s = x.shape
        values = self.symbol(x)                                                    # (B, S, d)
        keys = values + self.position(torch.arange(s, device=x.device))[None]      # (B, S, d)
        queries = self.step(torch.arange(self.steps, device=x.device))[None].expand(b, -1, -1)  # (B, T, d)
        return queries, keys, values

    def forward(self, x, noise=None, greedy: bool = False):
        queries, keys, values = self._inputs(x)
        log_prob = torch.zeros(queries.shape[:2], device=queries.device)
        if self.attention == "hard":
            context, index, log_prob = self.attend(queries, keys, values, noise=noise, greedy=greedy)
            weights = nn.functional.one_hot(index, x.shape[1]).to(context.dtype)   # the sampled position
        elif self.attention == "gumbel":
            context, weights = self.attend(queries, keys, values, noise=noise, greedy=greedy, return_weights=True)
        else:
            context, weights = self.attend(queries, keys, values, return_weights=True)
        return self.out(context), weights, log_prob                                # logits (B, T, n_out)

    def centres(self, x):
        """The window centres p_t (B, T) of a local variant (local-m: p_t = t)."""
        queries, _, _ = self._inputs(x)
        return self.attend.centres(queries, x.shape[1])

    def distribution(self, x):
        """The attention distribution (B, T, S) the model samples from or averages with (for charts and
        entropies): softmax of the scores for soft, hard and gumbel; the window weights for local."""
        queries, keys, values = self._inputs(x)
        if self.attention.startswith("local"):
            return self.attend(queries, keys, values, return_weights=True)[1]
        return torch.softmax(dot_scores(queries, keys, True), dim=-1)


def draw_noise(rng, model, batch):
    if model.attention not in ("hard", "gumbel"):
        return None
    noise = rng.gumbel(size=(batch, model.steps, model.length)).astype(np.float32)
    return torch.as_tensor(noise, device=model.step.weight.device)


class PointerTrainer:
    """The pointer model's side of the course's training loop (:func:`attention_course.core.train.run`): Adam on
    the cross-entropy, plus the REINFORCE term for hard attention; each batch's noise comes from ``rng`` right
    after its examples were drawn."""

    def __init__(self, model: PointerModel, rng, *, lr: float, baseline: bool, entropy: float):
        self.model, self.rng, self.baseline, self.entropy = model, rng, baseline, entropy
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.reward_avg = torch.zeros(model.steps, device=model.step.weight.device)
        self.seconds, self.last_loss = 0.0, float("nan")

    def start_epoch(self) -> None:
        self.model.train()

    def step(self, xs, y, step: int) -> tuple[float, int, int]:
        model, dev = self.model, self.model.step.weight.device
        xb, yb = torch.as_tensor(xs[0], device=dev), torch.as_tensor(y, device=dev)
        noise = draw_noise(self.rng, model, len(y))
        start = time.perf_counter()
        logits, _, log_prob = model(xb, noise=noise)
        ce = nn.functional.cross_entropy(logits.transpose(1, 2), yb, reduction="none")   # (B, T)
        loss = ce.mean()
        if model.attention == "hard":
            reward = -ce.detach()                                                      # (B, T)
            advantage = reward - (self.reward_avg if self.baseline else 0.0)           # b: earlier steps only
            loss = loss - (advantage * log_prob).mean()                                # score-function term
            if self.entropy:                                                           # keep exploring
                pi = model.distribution(xb)
                loss = loss + self.entropy * (pi * torch.log(pi + 1e-12)).sum(-1).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.seconds += time.perf_counter() - start
        if model.attention == "hard" and self.baseline:                                # moving average of r
            mean = reward.mean(0)
            self.reward_avg = mean if step == 1 else 0.9 * self.reward_avg + 0.1 * mean
        self.last_loss = float(ce.detach().mean())
        return self.last_loss, int((logits.argmax(-1) == yb).sum()), yb.numel()


def train_pointer(model: PointerModel, x, y, *, steps: int, batch_size: int = 64, lr: float = 1e-2,
                  baseline: bool = True, entropy: float = 0.0, eval_data=None, eval_every: int = 25, probe=None,
                  seed: int = 0, desc: str | None = None) -> dict:
    """Train a :class:`PointerModel` with Adam for ``steps`` mini-batches drawn from (x (n, S), y (n, T)).

    Soft, local and Gumbel variants minimise the cross-entropy by backpropagation. ``"hard"`` adds the
    REINFORCE term: the reward of a sample is r = -cross-entropy, and the loss -(r - b)·log π(sample)
    gives the score-function gradient; ``baseline=True`` makes b a moving average of r per output step
    (``False``: b = 0). Noise comes from a NumPy generator seeded with ``seed`` (the same in both
    frameworks). Every ``eval_every`` steps: greedy accuracy and attention entropy on ``eval_data`` and the
    attention distribution of the ``probe`` examples.
    Returns {"history": [{step, loss, accuracy, entropy, seconds}], "snapshots": [(step, (n_probe, T, S))],
    "seconds": training time without evaluation}.
    """
    validate.training(x, y, (len(y), model.steps, model.out.out_features), steps=steps, batch_size=batch_size,
                   eval_every=eval_every)
    rng = np.random.default_rng(seed)
    dev = device()
    model.to(dev)
    trainer = PointerTrainer(model, rng, lr=lr, baseline=baseline, entropy=entropy)
    x_eval, y_eval = eval_data if eval_data is not None else (x[:512], y[:512])
    x_eval, y_eval = torch.as_tensor(x_eval, device=dev), torch.as_tensor(y_eval, device=dev)
    log: dict[str, Any] = {"history": [], "snapshots": [], "seconds": 0.0}

    def evaluate(step: int, loss: float) -> None:
        model.eval()
        with torch.no_grad():
            logits, _, _ = model(x_eval, greedy=True)
            acc = float((logits.argmax(-1) == y_eval).float().mean())
            ent = mean_entropy(model.distribution(x_eval).cpu().numpy())
            if probe is not None:
                log["snapshots"].append((step, model.distribution(torch.as_tensor(probe, device=dev)).cpu().numpy()))
        model.train()
        log["seconds"] = trainer.seconds
        log["history"].append({"step": step, "loss": loss, "accuracy": acc, "entropy": ent, "seconds": trainer.seconds})

    draw = training.Drawn(len(x), batch_size, steps, eval_every)
    model.train()
    evaluate(0, float("nan"))
    training.run(trainer, (x,), y, epochs=draw.epochs, batch_size=batch_size, seed=seed, rng=rng, draw=draw,
                 desc=desc or f"pytorch · {model.attention}",
                 after_epoch=lambda epoch: evaluate(min(epoch * eval_every, steps), trainer.last_loss))
    model.eval()
    return log


def reinforce_gradients(model: PointerModel, x, y, *, draws: int, baseline: float | None = None,
                        seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``draws`` single-sample REINFORCE estimates of the gradient of the expected reward (r = -cross-entropy)
    with respect to the attention parameters (the ``step`` and ``position`` embeddings), on the fixed batch
    (x, y), each with fresh noise. ``baseline``: the constant b subtracted from r (None: no baseline).
    Returns (gradients (draws, n_parameters) float64, rewards (draws,): the mean reward of each draw)."""
    validate.training(x, y, (len(y), model.steps, model.out.out_features), draws=draws)
    rng = np.random.default_rng(seed)
    dev = model.step.weight.device
    xb, yb = torch.as_tensor(x, device=dev), torch.as_tensor(y, device=dev)
    params = [model.step.weight, model.position.weight]
    out, rewards = [], []
    for _ in range(draws):
        logits, _, log_prob = model(xb, noise=draw_noise(rng, model, len(x)))
        reward = -nn.functional.cross_entropy(logits.transpose(1, 2), yb, reduction="none").detach()
        advantage = reward - (0.0 if baseline is None else baseline)
        grads = torch.autograd.grad((advantage * log_prob).mean(), params)
        out.append(torch.cat([g.reshape(-1) for g in grads]).double().cpu().numpy())
        rewards.append(float(reward.mean()))
    return np.stack(out), np.array(rewards)
