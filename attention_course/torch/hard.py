"""Chapter 2's layers in PyTorch: hard attention (REINFORCE, Gumbel-softmax) and local attention (Luong's
local-m and local-p). The experiment that compares them (the pointer model, its training loop, the REINFORCE
gradients) is in ``pointer``.

Every name mirrors its twin in ``attention_course.keras.hard``: same arguments, sub-layer names and call
signatures. Random draws can be passed in (``noise``: Gumbel noise of the scores' shape) so the two frameworks
can be compared exactly. Shapes: B batch, T_q queries, S (= T_k) keys, d features, W = 2·window + 1.
Inputs: tensors or NumPy arrays (float arrays as float32); a mask bool or 0/1; ids in [0, vocab) (``inputs``).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .. import validate
from ..errors import ConfigError
from ..validate import TAU_HINT
from . import inputs
from .layers import masked_softmax

__all__ = ["gumbel_noise", "gumbel_softmax", "HardAttention", "GumbelSoftmaxAttention", "LocalAttention"]

_NEG = -1e9  # the score of a masked key before a sampled softmax (finite: noise and 1/τ keep it finite)


def gumbel_noise(shape, seed=None) -> torch.Tensor:
    """Standard Gumbel noise g = -log(-log u), u ~ Uniform(0, 1), of the given shape (float32).
    ``seed``: an int or a ``torch.Generator`` (None: PyTorch's global generator)."""
    gen = torch.Generator().manual_seed(seed) if isinstance(seed, int) else seed
    u = torch.rand(shape, generator=gen).clamp(1e-10, 1 - 1e-7)
    return -torch.log(-torch.log(u))


def gumbel_softmax(logits, tau: float = 1.0, hard: bool = False, noise=None):
    """A Gumbel-softmax sample over the last axis: softmax((logits + g) / τ), g ~ Gumbel(0, 1).

    ``hard=True``: the straight-through estimator: the forward value is the one-hot vector of the sample's
    argmax, the gradient is the soft sample's. ``noise``: pre-drawn g (same shape as ``logits``).
    """
    validate.positive("tau", tau, TAU_HINT)
    logits = inputs.floats(logits, "logits")
    noise = gumbel_noise(logits.shape) if noise is None else _noise(noise, logits)
    noise = noise.to(logits.device, logits.dtype)
    soft = torch.softmax((logits + noise) / tau, dim=-1)            # (…, S), differentiable
    if not hard:
        return soft
    index = soft.argmax(dim=-1)
    one_hot = nn.functional.one_hot(index, logits.shape[-1]).to(soft.dtype)
    return one_hot - soft.detach() + soft                             # value: one-hot; gradient: soft's


def _noise(noise, scores):
    """Pre-drawn Gumbel noise: floats of the scores' shape."""
    noise = inputs.floats(noise, "noise", scores.device)
    validate.same_shape("noise", validate.shape_of(noise), validate.shape_of(scores), "the scores (B, T_q, S)")
    return noise


def _scores(query, key, scale: bool):
    scores = query @ key.transpose(1, 2)                              # (B, T_q, S)
    return scores / math.sqrt(query.shape[-1]) if scale else scores


def _key_mask(mask, shape):
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
        scores = _scores(query, key, self.scale)                      # (B, T_q, S)
        visible = _key_mask(mask, scores.shape).to(scores.device)     # (B, T_q, S)
        log_probs = torch.log_softmax(scores.masked_fill(~visible, _NEG), dim=-1)
        if greedy:
            index = log_probs.argmax(dim=-1)                          # (B, T_q)
        else:
            noise = gumbel_noise(scores.shape, self.generator) if noise is None else _noise(noise, scores)
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
        validate.positive("tau", tau, TAU_HINT)
        self.tau, self.hard, self.scale, self.seed = tau, hard, scale, seed
        self.generator = None if seed is None else torch.Generator().manual_seed(seed)

    def forward(self, query, key, value, mask=None, noise=None, greedy: bool = False,
                return_weights: bool = False):
        query, key, value, mask = inputs.attention(query, key, value, mask)   # floats, bool mask
        scores = _scores(query, key, self.scale)
        visible = _key_mask(mask, scores.shape).to(scores.device)
        scores = scores.masked_fill(~visible, _NEG)
        if greedy:
            weights = nn.functional.one_hot(scores.argmax(-1), scores.shape[-1]).to(value.dtype)
        else:
            noise = gumbel_noise(scores.shape, self.generator) if noise is None else _noise(noise, scores)
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
