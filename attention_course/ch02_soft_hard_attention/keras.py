"""Chapter 2 in Keras 3: hard attention (REINFORCE, Gumbel-softmax) and local attention (Luong's local-m and
local-p); then the experiment that compares them: the pointer model (``PointerModel``), its training loop
(``train_pointer``) and the spread of REINFORCE gradient estimates (``reinforce_gradients``).

Every name mirrors its twin in ``torch.py`` beside it: same arguments, sub-layer names and call signatures.
Random draws can be passed in (``noise``: Gumbel noise of the scores' shape), and the pointer model's noise is
drawn by NumPy from the same seed in both frameworks, so the two can be compared exactly. Shapes: B batch, T_q
queries, S (= T_k) keys, d features, W = 2·window + 1. Inputs: tensors or NumPy arrays (float arrays as float32);
a mask bool or 0/1; ids in [0, vocab) (``inputs``).
"""

from __future__ import annotations

import math
import time
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

from attention_course.ch01_sequence_models.keras import DotProductAttention, masked_softmax
from attention_course.ch02_soft_hard_attention import validate
from attention_course.core import train as training
from attention_course.core.choices import POINTER_ATTENTION
from attention_course.core.errors import ConfigError
from attention_course.core.keras import inputs
from attention_course.core.keras.base import Layer, Model
from attention_course.core.keras.train import Adam
from attention_course.core.metrics import mean_entropy

__all__ = ["gumbel_noise", "gumbel_softmax", "HardAttention", "GumbelSoftmaxAttention", "LocalAttention",
           "PointerModel", "train_pointer", "reinforce_gradients"]


MASKED_SCORE = -1e9  # the score of a masked key before a sampled softmax (finite: noise and 1/τ keep it finite)


def torch_linear_init():
    """PyTorch's nn.Linear weight initialisation (uniform ±1/√fan_in), so both frameworks' kernels start from the
    same distribution (a Dense layer's bias still starts at zero, an nn.Linear's in the same range as its weights).
    A fresh instance per layer: an unseeded Keras initializer reused across layers draws the same numbers for each
    of them."""
    return keras.initializers.VarianceScaling(scale=1 / 3, mode="fan_in", distribution="uniform")


def torch_embedding_init():
    """PyTorch's nn.Embedding initialisation, N(0, 1); a fresh instance per layer (see above)."""
    return keras.initializers.RandomNormal(stddev=1.0)


def gumbel_noise(shape, seed=None):
    """Standard Gumbel noise g = -log(-log u), u ~ Uniform(0, 1), of the given shape (float32).
    ``seed``: an int or a ``keras.random.SeedGenerator`` (None: Keras' global generator)."""
    shape = validate.noise_shape(shape)
    u = keras.random.uniform(shape, minval=1e-10, maxval=1 - 1e-7, seed=seed)
    return -ops.log(-ops.log(u))


def gumbel_softmax(logits, tau: float = 1.0, hard: bool = False, noise=None):
    """A Gumbel-softmax sample over the last axis: softmax((logits + g) / τ), g ~ Gumbel(0, 1).

    ``hard=True``: the straight-through estimator: the forward value is the one-hot vector of the sample's
    argmax, the gradient is the soft sample's. ``noise``: pre-drawn g (same shape as ``logits``).
    """
    validate.tau(tau)
    logits = inputs.floats(logits, "logits")
    noise = gumbel_noise(ops.shape(logits)) if noise is None else given_noise(noise, logits)
    soft = ops.softmax((logits + ops.cast(noise, logits.dtype)) / tau, axis=-1)   # (…, S), differentiable
    if not hard:
        return soft
    one_hot = ops.one_hot(ops.argmax(soft, axis=-1), logits.shape[-1], dtype=soft.dtype)
    return one_hot - ops.stop_gradient(soft) + soft                               # value: one-hot; gradient: soft's


def given_noise(noise, scores):
    """Pre-drawn Gumbel noise: floats of the scores' shape."""
    noise = inputs.floats(noise, "noise")
    validate.same_shape("noise", validate.shape_of(noise), validate.shape_of(scores), "the scores (B, T_q, S)")
    return noise


def dot_scores(query, key, scale: bool):
    scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))                      # (B, T_q, S)
    return scores / math.sqrt(query.shape[-1]) if scale else scores


def key_mask(mask, scores):
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
        query, key, value, mask = inputs.attention(query, key, value, mask, wide=True)   # float32, bool mask
        inputs.finite_visible(query, key, mask)                                   # a NaN or inf: NaN, or no key
        scores = dot_scores(query, key, self.scale)                                   # (B, T_q, S)
        visible = key_mask(mask, scores)
        log_probs = ops.log_softmax(ops.where(visible, scores, MASKED_SCORE), axis=-1)
        if greedy:
            index = ops.argmax(log_probs, axis=-1)                                 # (B, T_q)
        else:
            noise = gumbel_noise(ops.shape(scores), seed=self.seed_generator) if noise is None \
                else given_noise(noise, scores)
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
        validate.tau(tau)
        self.tau, self.hard, self.scale, self.seed = tau, hard, scale, seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, query, key, value, mask=None, noise=None, greedy: bool = False, return_weights: bool = False):
        query, key, value, mask = inputs.attention(query, key, value, mask, wide=True)   # float32, bool mask
        inputs.finite_visible(query, key, mask)                                   # a NaN or inf: NaN, or no key
        scores = dot_scores(query, key, self.scale)
        visible = key_mask(mask, scores)
        scores = ops.where(visible, scores, MASKED_SCORE)
        if greedy:
            weights = ops.one_hot(ops.argmax(scores, axis=-1), scores.shape[-1], dtype=value.dtype)
        else:
            noise = gumbel_noise(ops.shape(scores), seed=self.seed_generator) if noise is None \
                else given_noise(noise, scores)
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
            self.w_p = layers.Dense(dim, use_bias=False, kernel_initializer=torch_linear_init())
            self.v_p = layers.Dense(1, use_bias=False, kernel_initializer=torch_linear_init())

    def centres(self, query, length: int):
        """The window centres p_t (B, T_q), as floats, for keys of ``length`` positions."""
        if self.mode == "m":
            steps = ops.cast(ops.arange(query.shape[1]), query.dtype)
            return ops.broadcast_to(steps[None], ops.shape(query)[:2])
        return length * ops.sigmoid(self.v_p(ops.tanh(self.w_p(query))))[..., 0]

    def call(self, query, key, value, mask=None, return_weights: bool = False):
        query, key, value, mask = inputs.attention(query, key, value, mask, wide=True)   # float32, bool mask
        inputs.finite_visible(query, key, mask)                                   # a NaN or inf: NaN, or no key
        validate.not_empty("query", validate.shape_of(query), what="T_q")
        validate.not_empty("key", validate.shape_of(key), what="S")
        if self.mode == "p":                                                       # w_p reads queries of size dim
            validate.sequence_shapes("LocalAttention(mode='p') query", query, features=self.dim)
        b, t_q = ops.shape(query)[0], query.shape[1]
        d, s, d_v = query.shape[-1], key.shape[1], value.shape[-1]
        p = ops.cast(self.centres(query, s), query.dtype)                          # (B, T_q); w_p may be float16
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


class PointerModel(Model):
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
                 window: int = 2, tau: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        if attention not in self.VARIANTS:
            raise ConfigError(f"unknown attention {attention!r}: use one of {', '.join(self.VARIANTS)}")
        vocab, n_out, length, steps, dim = validate.sizes(vocab=vocab, n_out=n_out, length=length, steps=steps,
                                                       dim=dim)
        self.attention, self.length, self.steps = attention, length, steps
        self.step = layers.Embedding(steps, dim, embeddings_initializer=torch_embedding_init())
        self.symbol = layers.Embedding(vocab, dim, embeddings_initializer=torch_embedding_init())
        self.position = layers.Embedding(length, dim, embeddings_initializer=torch_embedding_init())
        if attention == "soft":
            self.attend = DotProductAttention(scale=True)
        elif attention == "hard":
            self.attend = HardAttention(scale=True)
        elif attention == "gumbel":
            self.attend = GumbelSoftmaxAttention(tau=tau, hard=True, scale=True)
        else:
            self.attend = LocalAttention(mode=attention[-1], window=window, dim=dim, scale=True)
        self.out = layers.Dense(n_out, kernel_initializer=torch_linear_init())

    def _inputs(self, x):
        x = inputs.ids(x, "x", self.symbol, length=self.length)               # (B, S) ids in [0, vocab)
        s = x.shape[1]
        values = self.symbol(x)                                                    # (B, S, d)
        keys = values + self.position(ops.arange(s))[None]                         # (B, S, d)
        queries = self.step(ops.arange(self.steps))[None]                          # (1, T, d)
        queries = ops.broadcast_to(queries, (ops.shape(values)[0], self.steps, queries.shape[-1]))
        return queries, keys, values

    def call(self, x, noise=None, greedy: bool = False):
        queries, keys, values = self._inputs(x)
        log_prob = ops.zeros(ops.shape(queries)[:2])
        if self.attention == "hard":
            context, index, log_prob = self.attend(queries, keys, values, noise=noise, greedy=greedy)
            weights = ops.one_hot(index, x.shape[1], dtype=context.dtype)           # the sampled position
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
        return ops.softmax(dot_scores(queries, keys, True), axis=-1)


def draw_noise(rng, model, batch):
    if model.attention not in ("hard", "gumbel"):
        return None
    return rng.gumbel(size=(batch, model.steps, model.length)).astype(np.float32)


def token_cross_entropy(y, logits):
    return keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)    # (B, T)


class PointerTrainer:
    """The pointer model's side of the course's training loop (:func:`attention_course.core.train.run`): a
    compiled step of Adam on the cross-entropy, plus the REINFORCE term for hard attention; each batch's noise
    comes from ``rng`` right after its examples were drawn."""

    def __init__(self, model: PointerModel, rng, *, lr: float, baseline: bool, entropy: float):
        self.model, self.rng, self.baseline = model, rng, baseline
        self.optimizer = Adam(learning_rate=lr, epsilon=1e-8)     # PyTorch's ε (Keras adds it before bias correction)
        self.optimizer.build(model.trainable_variables)
        self.reward_avg: np.ndarray = np.zeros(model.steps, np.float32)
        self.seconds, self.last_loss = 0.0, float("nan")
        self.train_step = self.compile(model, self.optimizer, entropy)

    @staticmethod
    def compile(model: PointerModel, optimizer, entropy: float):
        hard = model.attention == "hard"

        @tf.function(reduce_retracing=True)
        def train_step(xb, yb, noise, reward_avg):
            with tf.GradientTape() as tape:
                logits, _, log_prob = model(xb, noise=noise)
                ce = token_cross_entropy(yb, logits)                                    # (B, T)
                loss = ops.mean(ce)
                reward = ops.stop_gradient(-ce)
                if hard:
                    advantage = reward - reward_avg
                    loss = loss - ops.mean(advantage * log_prob)                   # score-function term
                    if entropy:                                                    # keep exploring
                        pi = model.distribution(xb)
                        loss = loss + entropy * ops.mean(ops.sum(pi * ops.log(pi + 1e-12), axis=-1))
            grads = tape.gradient(loss, model.trainable_variables)
            # embeddings get sparse gradients (IndexedSlices) with repeated rows; Keras' Adam would square the
            # slices one by one instead of their sum, so we turn them dense: then the update is exactly Adam's
            grads = [tf.convert_to_tensor(g) for g in grads]
            optimizer.apply(grads, model.trainable_variables)
            hits = ops.sum(ops.cast(ops.equal(ops.cast(ops.argmax(logits, -1), yb.dtype), yb), "int32"))
            return ops.mean(ce), ops.mean(reward, axis=0), hits

        return train_step

    def start_epoch(self) -> None:
        pass                                                     # Keras layers take training= at each call

    def step(self, xs, y, step: int) -> tuple[float, int, int]:
        hard = self.model.attention == "hard"
        noise = draw_noise(self.rng, self.model, len(y))
        b = self.reward_avg if (hard and self.baseline) else np.zeros_like(self.reward_avg)
        start = time.perf_counter()
        ce, reward, hits = self.train_step(tf.convert_to_tensor(xs[0]), tf.convert_to_tensor(y),
                                           None if noise is None else tf.convert_to_tensor(noise),
                                           tf.convert_to_tensor(b))
        reward = np.asarray(reward)
        self.seconds += time.perf_counter() - start
        if hard and self.baseline:
            self.reward_avg = reward if step == 1 else 0.9 * self.reward_avg + 0.1 * reward
        self.last_loss = float(ce)
        return self.last_loss, int(hits), int(np.size(y))


def train_pointer(model: PointerModel, x, y, *, steps: int, batch_size: int = 64, lr: float = 1e-2,
                  baseline: bool = True, entropy: float = 0.0, eval_data=None, eval_every: int = 25, probe=None,
                  seed: int = 0, desc: str | None = None) -> dict:
    """Train a :class:`PointerModel` with Adam for ``steps`` mini-batches drawn from (x (n, S), y (n, T)).

    Soft, local and Gumbel variants minimise the cross-entropy by backpropagation. ``"hard"`` adds the
    REINFORCE term: the reward of a sample is r = -cross-entropy, and the loss -(r - b)·log π(sample)
    gives the score-function gradient; ``baseline=True`` makes b a moving average of r per output step
    (``False``: b = 0); ``entropy`` > 0 adds -entropy·H(π) to keep it exploring. Noise comes from a NumPy
    generator seeded with ``seed`` (the same in both frameworks). Every ``eval_every`` steps: greedy accuracy
    and attention entropy on ``eval_data`` and the attention distribution of the ``probe`` examples.
    Returns {"history": [{step, loss, accuracy, entropy, seconds}], "snapshots": [(step, (n_probe, T, S))],
    "seconds": training time without evaluation}.
    """
    validate.training(x, y, (len(y), model.steps, model.out.units), steps=steps, batch_size=batch_size,
                   eval_every=eval_every)
    rng = np.random.default_rng(seed)
    x_eval, y_eval = eval_data if eval_data is not None else (x[:512], y[:512])
    model(x[:2])                                                                   # build the variables
    trainer = PointerTrainer(model, rng, lr=lr, baseline=baseline, entropy=entropy)

    @tf.function(reduce_retracing=True)
    def eval_step(xb):
        logits, _, _ = model(xb, greedy=True)
        return ops.argmax(logits, axis=-1), model.distribution(xb)

    log: dict[str, Any] = {"history": [], "snapshots": [], "seconds": 0.0}

    def evaluate(step: int, loss: float) -> None:
        pred, dist = eval_step(tf.convert_to_tensor(x_eval))
        acc = float(np.mean(np.asarray(pred) == y_eval))
        if probe is not None:
            log["snapshots"].append((step, np.asarray(model.distribution(probe))))
        log["seconds"] = trainer.seconds
        log["history"].append({"step": step, "loss": loss, "accuracy": acc, "entropy": mean_entropy(np.asarray(dist)),
                               "seconds": trainer.seconds})

    draw = training.Drawn(len(x), batch_size, steps, eval_every)
    with inputs.graph_errors():
        evaluate(0, float("nan"))
        training.run(trainer, (x,), y, epochs=draw.epochs, batch_size=batch_size, seed=seed, rng=rng, draw=draw,
                     desc=desc or f"keras · {model.attention}",
                     after_epoch=lambda epoch: evaluate(min(epoch * eval_every, steps), trainer.last_loss))
    return log


def reinforce_gradients(model: PointerModel, x, y, *, draws: int, baseline: float | None = None,
                        seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``draws`` single-sample REINFORCE estimates of the gradient of the expected reward (r = -cross-entropy)
    with respect to the attention parameters (the ``step`` and ``position`` embeddings), on the fixed batch
    (x, y), each with fresh noise. ``baseline``: the constant b subtracted from r (None: no baseline).
    Returns (gradients (draws, n_parameters) float64, rewards (draws,): the mean reward of each draw)."""
    validate.training(x, y, (len(y), model.steps, model.out.units), draws=draws)
    rng = np.random.default_rng(seed)
    model(x[:2])
    params = [model.step.embeddings, model.position.embeddings]
    b = 0.0 if baseline is None else float(baseline)
    xb, yb = tf.convert_to_tensor(x), tf.convert_to_tensor(y)

    @tf.function(reduce_retracing=True)
    def estimate(noise):
        with tf.GradientTape() as tape:
            logits, _, log_prob = model(xb, noise=noise)
            reward = ops.stop_gradient(-token_cross_entropy(yb, logits))
            surrogate = ops.mean((reward - b) * log_prob)
        grads = tape.gradient(surrogate, params)
        return ops.concatenate([ops.reshape(tf.convert_to_tensor(g), (-1,)) for g in grads]), ops.mean(reward)

    out, rewards = [], []
    for _ in range(draws):
        with inputs.graph_errors():
            grad, reward = estimate(tf.convert_to_tensor(draw_noise(rng, model, len(x))))
        out.append(np.asarray(grad, np.float64))
        rewards.append(float(reward))
    return np.stack(out), np.array(rewards)
