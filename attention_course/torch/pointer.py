"""Chapter 2's experiment in PyTorch: the pointer model that compares soft, hard and local attention
(``PointerModel``), its training loop (``train_pointer``) and the spread of REINFORCE gradient estimates
(``reinforce_gradients``). The layers it compares are in ``hard``.

Every name mirrors its twin in ``attention_course.keras.pointer``: same arguments, sub-layer names and call
signatures; noise is drawn by NumPy from the same seed in both frameworks.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from torch import nn

from .. import validate
from ..choices import POINTER_ATTENTION
from ..errors import ConfigError
from ..metrics import mean_entropy
from ..train import progress
from . import inputs
from .hard import GumbelSoftmaxAttention, HardAttention, LocalAttention, _scores
from .layers import DotProductAttention
from .train import device

__all__ = ["PointerModel", "train_pointer", "reinforce_gradients"]


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
        return torch.softmax(_scores(queries, keys, True), dim=-1)


def _np_noise(rng, model, batch):
    if model.attention not in ("hard", "gumbel"):
        return None
    noise = rng.gumbel(size=(batch, model.steps, model.length)).astype(np.float32)
    return torch.as_tensor(noise, device=model.step.weight.device)


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
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    x_eval, y_eval = eval_data if eval_data is not None else (x[:512], y[:512])
    x_eval, y_eval = torch.as_tensor(x_eval, device=dev), torch.as_tensor(y_eval, device=dev)
    run: dict[str, Any] = {"history": [], "snapshots": [], "seconds": 0.0}
    reward_avg = torch.zeros(model.steps, device=dev)

    def evaluate(step, loss):
        model.eval()
        with torch.no_grad():
            logits, _, _ = model(x_eval, greedy=True)
            acc = float((logits.argmax(-1) == y_eval).float().mean())
            ent = mean_entropy(model.distribution(x_eval).cpu().numpy())
            if probe is not None:
                run["snapshots"].append((step, model.distribution(torch.as_tensor(probe, device=dev)).cpu().numpy()))
        model.train()
        run["history"].append({"step": step, "loss": loss, "accuracy": acc, "entropy": ent,
                               "seconds": run["seconds"]})

    model.train()
    evaluate(0, float("nan"))
    bar = progress(total=steps, desc=desc or f"pytorch · {model.attention}")
    for step in range(1, steps + 1):
        idx = rng.integers(0, len(x), size=batch_size)
        xb, yb = torch.as_tensor(x[idx], device=dev), torch.as_tensor(y[idx], device=dev)
        noise = _np_noise(rng, model, batch_size)
        start = time.perf_counter()
        logits, _, log_prob = model(xb, noise=noise)
        ce = nn.functional.cross_entropy(logits.transpose(1, 2), yb, reduction="none")   # (B, T)
        loss = ce.mean()
        if model.attention == "hard":
            reward = -ce.detach()                                                      # (B, T)
            advantage = reward - (reward_avg if baseline else 0.0)                     # b: earlier steps only
            loss = loss - (advantage * log_prob).mean()                                # score-function term
            if entropy:                                                                # keep exploring
                pi = model.distribution(xb)
                loss = loss + entropy * (pi * torch.log(pi + 1e-12)).sum(-1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        run["seconds"] += time.perf_counter() - start
        if model.attention == "hard" and baseline:                                     # moving average of r
            mean = reward.mean(0)
            reward_avg = mean if step == 1 else 0.9 * reward_avg + 0.1 * mean
        bar.update(1)
        if step % eval_every == 0 or step == steps:
            evaluate(step, float(ce.detach().mean()))
            bar.set_postfix(acc=f"{run['history'][-1]['accuracy']:.3f}")
    bar.close()
    model.eval()
    return run


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
        logits, _, log_prob = model(xb, noise=_np_noise(rng, model, len(x)))
        reward = -nn.functional.cross_entropy(logits.transpose(1, 2), yb, reduction="none").detach()
        advantage = reward - (0.0 if baseline is None else baseline)
        grads = torch.autograd.grad((advantage * log_prob).mean(), params)
        out.append(torch.cat([g.reshape(-1) for g in grads]).double().cpu().numpy())
        rewards.append(float(reward.mean()))
    return np.stack(out), np.array(rewards)
