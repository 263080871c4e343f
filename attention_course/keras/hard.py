"""Chapter 2's layers in Keras 3: hard attention (REINFORCE, Gumbel-softmax) and local attention (Luong's
local-m and local-p). The experiment that compares them (the pointer model, its training loop, the REINFORCE
gradients) is in ``pointer``.

Every name mirrors its twin in ``attention_course.torch.hard``: same arguments, sub-layer names and call
signatures. Random draws can be passed in (``noise``: Gumbel noise of the scores' shape) so the two frameworks
can be compared exactly. Shapes: B batch, T_q queries, S (= T_k) keys, d features, W = 2·window + 1.
Inputs: tensors or NumPy arrays (float arrays as float32); a mask bool or 0/1; ids in [0, vocab) (``inputs``).
"""

from __future__ import annotations

import math

import keras
from keras import layers, ops

from .. import validate
from ..errors import ConfigError
from ..validate import TAU_HINT
from . import inputs
from .base import Layer
from .layers import masked_softmax

__all__ = ["gumbel_noise", "gumbel_softmax", "HardAttention", "GumbelSoftmaxAttention", "LocalAttention"]

_NEG = -1e9  # the score of a masked key before a sampled softmax (finite: noise and 1/τ keep it finite)


def _torch_linear():
    """PyTorch's nn.Linear initialisation (uniform ±1/√fan_in), so both frameworks start from the same
    distribution. A fresh instance per layer: an unseeded Keras initializer reused across layers draws the
    same numbers for each of them."""
    return keras.initializers.VarianceScaling(scale=1 / 3, mode="fan_in", distribution="uniform")


def _torch_embedding():
    """PyTorch's nn.Embedding initialisation, N(0, 1); a fresh instance per layer (see above)."""
    return keras.initializers.RandomNormal(stddev=1.0)


def gumbel_noise(shape, seed=None):
    """Standard Gumbel noise g = -log(-log u), u ~ Uniform(0, 1), of the given shape (float32).
    ``seed``: an int or a ``keras.random.SeedGenerator`` (None: Keras' global generator)."""
    u = keras.random.uniform(shape, minval=1e-10, maxval=1 - 1e-7, seed=seed)
    return -ops.log(-ops.log(u))


def gumbel_softmax(logits, tau: float = 1.0, hard: bool = False, noise=None):
    """A Gumbel-softmax sample over the last axis: softmax((logits + g) / τ), g ~ Gumbel(0, 1).

    ``hard=True``: the straight-through estimator: the forward value is the one-hot vector of the sample's
    argmax, the gradient is the soft sample's. ``noise``: pre-drawn g (same shape as ``logits``).
    """
    validate.positive("tau", tau, TAU_HINT)
    logits = inputs.floats(logits, "logits")
    noise = gumbel_noise(ops.shape(logits)) if noise is None else _noise(noise, logits)
    soft = ops.softmax((logits + ops.cast(noise, logits.dtype)) / tau, axis=-1)   # (…, S), differentiable
    if not hard:
        return soft
    one_hot = ops.one_hot(ops.argmax(soft, axis=-1), logits.shape[-1], dtype=soft.dtype)
    return one_hot - ops.stop_gradient(soft) + soft                               # value: one-hot; gradient: soft's


def _noise(noise, scores):
    """Pre-drawn Gumbel noise: floats of the scores' shape."""
    noise = inputs.floats(noise, "noise")
    validate.same_shape("noise", validate.shape_of(noise), validate.shape_of(scores), "the scores (B, T_q, S)")
    return noise


def _scores(query, key, scale: bool):
    scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))                      # (B, T_q, S)
    return scores / math.sqrt(query.shape[-1]) if scale else scores


def _key_mask(mask, scores):
    """A bool (B, T_k) or broadcastable (B, T_q, T_k) mask → (B, T_q, T_k); None → all True."""
    if mask is None:
        return ops.ones_like(scores, dtype="bool")
    if len(mask.shape) == 2:
        mask = ops.expand_dims(mask, 1)
    return ops.broadcast_to(mask, ops.shape(scores))


class HardAttention(Layer):
    """Hard (stochastic) attention: sample ONE key per query from π = softmax(scores) and return its value.

    Returns ``(context, index, log_prob)``: context (B, T_q, d_v) = value[index], index (B, T_q) int, and
    log_prob (B, T_q) = log π(index), the term REINFORCE multiplies by the reward. ``noise``: pre-drawn
    Gumbel noise (B, T_q, S) (the sample is argmax(log π + noise)); ``greedy=True`` takes argmax π instead.
    ``return_weights=True`` appends π (B, T_q, S). A query whose keys are all masked gets a zero context.
    """

    def __init__(self, scale: bool = False, seed: int | None = None, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.seed = scale, seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, query, key, value, mask=None, noise=None, greedy: bool = False, return_weights: bool = False):
        query, key, value, mask = inputs.attention(query, key, value, mask)       # floats, bool mask
        scores = _scores(query, key, self.scale)                                   # (B, T_q, S)
        visible = _key_mask(mask, scores)
        log_probs = ops.log_softmax(ops.where(visible, scores, _NEG), axis=-1)
        if greedy:
            index = ops.argmax(log_probs, axis=-1)                                 # (B, T_q)
        else:
            noise = gumbel_noise(ops.shape(scores), seed=self.seed_generator) if noise is None \
                else _noise(noise, scores)
            index = ops.argmax(log_probs + ops.cast(noise, log_probs.dtype), axis=-1)   # Gumbel-max: a sample
        row = ops.cast(ops.any(visible, axis=-1), value.dtype)                    # (B, T_q): has a key
        picked = ops.take_along_axis(value, index[..., None], axis=1)              # (B, T_q, d_v)
        context = ops.where(row[..., None] > 0, picked, 0.0)                       # the sample (no 0 × NaN)
        log_prob = ops.take_along_axis(log_probs, index[..., None], axis=-1)[..., 0] * row   # (B, T_q)
        if return_weights:
            return context, index, log_prob, ops.exp(log_probs) * ops.cast(visible, value.dtype)
        return context, index, log_prob

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "seed": self.seed}


class GumbelSoftmaxAttention(Layer):
    """Hard attention trained with the Gumbel-softmax straight-through estimator.

    The weights are ``gumbel_softmax(scores, tau, hard)`` (one-hot in the forward pass when ``hard=True``);
    ``greedy=True`` uses the one-hot argmax of the scores (no noise). Returns the context, and with
    ``return_weights=True`` the pair (context, weights (B, T_q, S)).
    """

    def __init__(self, tau: float = 1.0, hard: bool = True, scale: bool = False, seed: int | None = None,
                 **kwargs):
        super().__init__(**kwargs)
        validate.positive("tau", tau, TAU_HINT)
        self.tau, self.hard, self.scale, self.seed = tau, hard, scale, seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, query, key, value, mask=None, noise=None, greedy: bool = False, return_weights: bool = False):
        query, key, value, mask = inputs.attention(query, key, value, mask)       # floats, bool mask
        scores = _scores(query, key, self.scale)
        visible = _key_mask(mask, scores)
        scores = ops.where(visible, scores, _NEG)
        if greedy:
            weights = ops.one_hot(ops.argmax(scores, axis=-1), scores.shape[-1], dtype=value.dtype)
        else:
            noise = gumbel_noise(ops.shape(scores), seed=self.seed_generator) if noise is None \
                else _noise(noise, scores)
            weights = gumbel_softmax(scores, self.tau, self.hard, noise)
        weights = weights * ops.cast(visible, value.dtype)                        # fully masked rows → zeros
        context = ops.matmul(weights, inputs.hide(value, mask))                   # hidden rows zeroed
        return (context, weights) if return_weights else context

    def get_config(self):
        return {**super().get_config(), "tau": self.tau, "hard": self.hard, "scale": self.scale, "seed": self.seed}


class LocalAttention(Layer):
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

    def __init__(self, mode: str = "m", window: int = 2, dim: int | None = None, scale: bool = False, **kwargs):
        super().__init__(**kwargs)
        if mode not in ("m", "p"):
            raise ConfigError(f"unknown local attention mode {mode!r}: use 'm' (monotonic) or 'p' (predictive)")
        window = validate.integer("window (the half-width D)", window, 1 if mode == "p" else 0)
        if mode == "p" and dim is None:
            raise ConfigError("local-p predicts its centre from the query: give dim=<query size>")
        dim = dim if mode == "m" and dim is None else validate.integer("dim (the query size)", dim)
        self.mode, self.window, self.dim, self.scale = mode, window, dim, scale
        if mode == "p":
            self.w_p = layers.Dense(dim, use_bias=False, kernel_initializer=_torch_linear())
            self.v_p = layers.Dense(1, use_bias=False, kernel_initializer=_torch_linear())

    def centres(self, query, length: int):
        """The window centres p_t (B, T_q), as floats, for keys of ``length`` positions."""
        if self.mode == "m":
            steps = ops.cast(ops.arange(query.shape[1]), query.dtype)
            return ops.broadcast_to(steps[None], ops.shape(query)[:2])
        return length * ops.sigmoid(self.v_p(ops.tanh(self.w_p(query))))[..., 0]

    def call(self, query, key, value, mask=None, return_weights: bool = False):
        query, key, value, mask = inputs.attention(query, key, value, mask)       # floats, bool mask
        validate.not_empty("query", validate.shape_of(query), what="T_q")
        validate.not_empty("key", validate.shape_of(key), what="S")
        if self.mode == "p":                                                       # w_p reads queries of size dim
            validate.sequence_shapes("LocalAttention(mode='p') query", query, features=self.dim)
        b, t_q = ops.shape(query)[0], query.shape[1]
        d, s, d_v = query.shape[-1], key.shape[1], value.shape[-1]
        p = self.centres(query, s)                                                 # (B, T_q)
        offsets = ops.arange(-self.window, self.window + 1, dtype="int32")         # (W,)
        centre = ops.cast(ops.floor(ops.stop_gradient(p) + 0.5), "int32")
        pos = centre[..., None] + offsets                                          # (B, T_q, W)
        inside = ops.logical_and(pos >= 0, pos < s)                                # in the sequence
        idx = ops.clip(pos, 0, s - 1)
        rows = ops.reshape(idx + s * ops.arange(b, dtype="int32")[:, None, None], (-1,))   # rows of (B·S, ·)
        k_win = ops.reshape(ops.take(ops.reshape(key, (-1, d)), rows, axis=0), (b, t_q, -1, d))
        v_win = ops.reshape(ops.take(ops.reshape(value, (-1, d_v)), rows, axis=0), (b, t_q, -1, d_v))
        if mask is not None:                                                       # and visible
            m = ops.expand_dims(mask, 1) if len(mask.shape) == 2 else mask
            m = ops.broadcast_to(m, (b, t_q, s))
            inside = ops.logical_and(inside, ops.take_along_axis(m, idx, axis=-1))
            v_win = ops.where(inside[..., None], v_win, 0.0)                       # 0 × NaN = NaN
        scores = ops.sum(query[:, :, None, :] * k_win, axis=-1)                    # (B, T_q, W)
        if self.scale:
            scores = scores / math.sqrt(d)
        weights = masked_softmax(scores, inside)                                   # softmax over the window only
        if self.mode == "p":
            sigma = self.window / 2
            dist = ops.cast(pos, p.dtype) - p[..., None]
            weights = weights * ops.exp(-(dist**2) / (2 * sigma**2))
        context = ops.sum(weights[..., None] * v_win, axis=-2)                     # (B, T_q, d_v)
        if not return_weights:
            return context
        dense = ops.sum(ops.one_hot(idx, s, dtype=weights.dtype) * weights[..., None], axis=-2)
        return context, dense                                                      # (B, T_q, S), zero outside

    def get_config(self):
        return {**super().get_config(), "mode": self.mode, "window": self.window, "dim": self.dim,
                "scale": self.scale}
