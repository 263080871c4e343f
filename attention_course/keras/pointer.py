"""Chapter 2's experiment in Keras 3: the pointer model that compares soft, hard and local attention
(``PointerModel``), its training loop (``train_pointer``) and the spread of REINFORCE gradient estimates
(``reinforce_gradients``). The layers it compares are in ``hard``.

Every name mirrors its twin in ``attention_course.torch.pointer``: same arguments, sub-layer names and call
signatures; noise is drawn by NumPy from the same seed in both frameworks.
"""

from __future__ import annotations

import time
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

from .. import validate
from ..choices import POINTER_ATTENTION
from ..errors import ConfigError
from ..metrics import mean_entropy
from ..train import progress
from . import inputs
from .base import Model
from .hard import GumbelSoftmaxAttention, HardAttention, LocalAttention, _scores, _torch_embedding, _torch_linear
from .layers import DotProductAttention

__all__ = ["PointerModel", "train_pointer", "reinforce_gradients"]


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
        self.step = layers.Embedding(steps, dim, embeddings_initializer=_torch_embedding())
        self.symbol = layers.Embedding(vocab, dim, embeddings_initializer=_torch_embedding())
        self.position = layers.Embedding(length, dim, embeddings_initializer=_torch_embedding())
        if attention == "soft":
            self.attend = DotProductAttention(scale=True)
        elif attention == "hard":
            self.attend = HardAttention(scale=True)
        elif attention == "gumbel":
            self.attend = GumbelSoftmaxAttention(tau=tau, hard=True, scale=True)
        else:
            self.attend = LocalAttention(mode=attention[-1], window=window, dim=dim, scale=True)
        self.out = layers.Dense(n_out, kernel_initializer=_torch_linear())

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
        return ops.softmax(_scores(queries, keys, True), axis=-1)


def _np_noise(rng, model, batch):
    if model.attention not in ("hard", "gumbel"):
        return None
    return rng.gumbel(size=(batch, model.steps, model.length)).astype(np.float32)


def _cross_entropy(y, logits):
    return keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)    # (B, T)


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
    optimizer = keras.optimizers.Adam(learning_rate=lr, epsilon=1e-8)               # PyTorch's Adam defaults
    x_eval, y_eval = eval_data if eval_data is not None else (x[:512], y[:512])
    model(x[:2])                                                                   # build the variables
    optimizer.build(model.trainable_variables)
    hard = model.attention == "hard"

    @tf.function(reduce_retracing=True)
    def train_step(xb, yb, noise, reward_avg):
        with tf.GradientTape() as tape:
            logits, _, log_prob = model(xb, noise=noise)
            ce = _cross_entropy(yb, logits)                                        # (B, T)
            loss = ops.mean(ce)
            reward = ops.stop_gradient(-ce)
            if hard:
                advantage = reward - reward_avg
                loss = loss - ops.mean(advantage * log_prob)                       # score-function term
                if entropy:                                                        # keep exploring
                    pi = model.distribution(xb)
                    loss = loss + entropy * ops.mean(ops.sum(pi * ops.log(pi + 1e-12), axis=-1))
        grads = tape.gradient(loss, model.trainable_variables)
        # embeddings get sparse gradients (IndexedSlices) with repeated rows; Keras' Adam would square the
        # slices one by one instead of their sum, so make them dense: then the update is exactly Adam's
        grads = [tf.convert_to_tensor(g) for g in grads]
        optimizer.apply(grads, model.trainable_variables)
        return ops.mean(ce), ops.mean(reward, axis=0)

    @tf.function(reduce_retracing=True)
    def eval_step(xb):
        logits, _, _ = model(xb, greedy=True)
        return ops.argmax(logits, axis=-1), model.distribution(xb)

    run: dict[str, Any] = {"history": [], "snapshots": [], "seconds": 0.0}

    def evaluate(step, loss):
        pred, dist = eval_step(tf.convert_to_tensor(x_eval))
        acc = float(np.mean(np.asarray(pred) == y_eval))
        if probe is not None:
            run["snapshots"].append((step, np.asarray(model.distribution(probe))))
        run["history"].append({"step": step, "loss": loss, "accuracy": acc, "entropy": mean_entropy(np.asarray(dist)),
                               "seconds": run["seconds"]})

    reward_avg: np.ndarray = np.zeros(model.steps, np.float32)
    with inputs.graph_errors(), progress(total=steps, desc=desc or f"keras · {model.attention}") as bar:
        evaluate(0, float("nan"))
        for step in range(1, steps + 1):
            idx = rng.integers(0, len(x), size=batch_size)
            noise = _np_noise(rng, model, batch_size)
            b = reward_avg if (hard and baseline) else np.zeros_like(reward_avg)
            start = time.perf_counter()
            ce, reward = train_step(tf.convert_to_tensor(x[idx]), tf.convert_to_tensor(y[idx]),
                                    None if noise is None else tf.convert_to_tensor(noise), tf.convert_to_tensor(b))
            reward = np.asarray(reward)
            run["seconds"] += time.perf_counter() - start
            if hard and baseline:
                reward_avg = reward if step == 1 else 0.9 * reward_avg + 0.1 * reward
            bar.update(1)
            if step % eval_every == 0 or step == steps:
                evaluate(step, float(ce))
                bar.set_postfix(acc=f"{run['history'][-1]['accuracy']:.3f}")
    return run


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
            reward = ops.stop_gradient(-_cross_entropy(yb, logits))
            surrogate = ops.mean((reward - b) * log_prob)
        grads = tape.gradient(surrogate, params)
        return ops.concatenate([ops.reshape(tf.convert_to_tensor(g), (-1,)) for g in grads]), ops.mean(reward)

    out, rewards = [], []
    for _ in range(draws):
        with inputs.graph_errors():
            grad, reward = estimate(tf.convert_to_tensor(_np_noise(rng, model, len(x))))
        out.append(np.asarray(grad, np.float64))
        rewards.append(float(reward))
    return np.stack(out), np.array(rewards)
