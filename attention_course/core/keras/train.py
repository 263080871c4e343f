"""A small training loop for Keras 3 (TensorFlow backend), the twin of ``attention_course.core.torch.train``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from attention_course.core import checkpoint as checkpoints
from attention_course.core import validate
from attention_course.core.keras import inputs as course_inputs
from attention_course.core.train import History, accuracy_of, run


def device() -> str:
    """The GPU when TensorFlow sees one, else the CPU (as a TensorFlow device name)."""
    return "/GPU:0" if tf.config.list_physical_devices("GPU") else "/CPU:0"


def any_batch(step, *args):
    """Call the compiled ``step`` (a ``tf.function``) on ``args``, tracing it the first time for any batch size:
    the trace takes each tensor's shape with the batch axis (axis 0) unknown, so every later batch, the shorter
    last one included, runs that one graph instead of tracing the whole model again. ``None`` arguments stay
    ``None``; scalars keep their shape."""
    if not getattr(step, "_course_any_batch", False):
        def spec(x):
            return x if x is None or not x.shape.rank else tf.TensorSpec((None, *x.shape[1:]), x.dtype)

        step.get_concrete_function(*[tf.nest.map_structure(spec, a) if a is not None else None for a in args])
        step._course_any_batch = True
    return step(*args)


class Adam(keras.optimizers.Adam):
    """Keras' Adam, less a leak: on one device Keras still sums each step's gradients over the replicas, and in a
    compiled step that sum registers a gradient function for the rest of the session that keeps the whole traced
    step alive (about 50 MB per trained model). With one replica there is nothing to sum, so this Adam skips it;
    over several devices it sums as Keras does."""

    def _all_reduce_sum_gradients(self, grads_and_vars):
        if tf.distribute.get_strategy().num_replicas_in_sync == 1:
            return list(grads_and_vars)
        return super()._all_reduce_sum_gradients(grads_and_vars)


def _masked_loss_and_hits(y, logits, ignore_index, label_smoothing=0.0):
    keep = tf.ones_like(y, dtype=tf.bool) if ignore_index is None else tf.not_equal(y, ignore_index)
    # an ignored target may lie outside [0, classes) (−1, −100): give the loss a valid class, then drop it
    per_token = keras.losses.sparse_categorical_crossentropy(tf.where(keep, y, tf.zeros_like(y)), logits,
                                                             from_logits=True)
    if label_smoothing:                      # as PyTorch: (1 − ε)·(−log p_y) + ε·mean over classes of (−log p_k)
        uniform = -tf.reduce_mean(tf.nn.log_softmax(logits, axis=-1), axis=-1)
        per_token = (1.0 - label_smoothing) * per_token + label_smoothing * uniform
    keep_f = tf.cast(keep, per_token.dtype)
    loss = tf.reduce_sum(per_token * keep_f) / tf.maximum(tf.reduce_sum(keep_f), 1.0)
    hits = tf.logical_and(tf.equal(tf.argmax(logits, -1, output_type=y.dtype), y), keep)
    return loss, tf.reduce_sum(tf.cast(hits, tf.int64)), tf.reduce_sum(tf.cast(keep, tf.int64))


def fit(model: keras.Model, inputs, targets, *, epochs: int, batch_size: int = 64, lr: float = 1e-3,
        ignore_index: int | None = None, seed: int = 0, desc: str | None = None, clip_norm: float | None = None,
        validation: tuple | None = None, checkpoint: str | os.PathLike | None = None, label_smoothing: float = 0.0,
        schedule: Callable[[int], float] | None = None) -> History:
    """Train ``model(*inputs)`` with Adam on cross-entropy against integer ``targets``.

    inputs: a tuple of arrays with the examples on axis 0; targets (n,) or (n, T) class ids;
    positions whose target equals ``ignore_index`` (padding) are left out of the loss and accuracy.
    ``clip_norm`` clips the gradients' global norm. ``validation`` = (inputs, targets) adds ``val_loss`` to the
    history and, at the end, puts back the weights of the epoch with the lowest one. ``checkpoint`` (a file)
    is written after every epoch; a run that finds it resumes after the epoch it holds. ``label_smoothing`` moves
    that share of each target's probability onto all classes evenly; ``schedule`` maps the step (1, 2, …) to the
    learning rate, in place of ``lr`` (``attention_course.core.train.warmup_schedule``).
    Returns the per-epoch history (loss, accuracy[, val_loss]).
    """
    epochs, batch_size = validate.sizes(epochs=epochs, batch_size=batch_size)
    trainer = make_trainer(model, inputs, targets, batch_size=batch_size, lr=lr, ignore_index=ignore_index,
                           clip_norm=clip_norm, label_smoothing=label_smoothing, schedule=schedule)
    return run(trainer, inputs, targets, epochs=epochs, batch_size=batch_size, seed=seed, desc=desc or "keras",
               validation=validation, checkpoint=checkpoint, context=course_inputs.graph_errors())


def make_trainer(model: keras.Model, inputs, targets, *, batch_size: int = 64, lr: float = 1e-3,
                 ignore_index: int | None = None, clip_norm: float | None = None, label_smoothing: float = 0.0,
                 schedule: Callable[[int], float] | None = None) -> _Trainer:
    """``fit``'s side of the training loop for ``model`` on ``inputs`` and ``targets`` (the same settings): Adam and
    one compiled training step; ``.step(xs, y, step)`` trains on one mini-batch (``make bench`` times it). Inside
    the scope of a strategy over several devices (:mod:`attention_course.core.keras.parallel`) each device trains
    on its share of the mini-batch, and the step is the one a single device would take on all of it."""
    n = validate.examples(inputs, targets)                      # as many examples in each
    validate.positive("lr", lr)
    if clip_norm is not None:
        validate.positive("clip_norm", clip_norm)
    validate.rate("label_smoothing", label_smoothing, "the share of probability spread over all classes")
    strategy = tf.distribute.get_strategy()              # several devices inside core.keras.parallel's scope
    several = strategy.num_replicas_in_sync > 1
    # Keras clips each replica's gradients before summing them: the replicas clip their sum themselves
    optimizer = Adam(learning_rate=lr, global_clipnorm=None if several else clip_norm)
    logits = model(*[a[:2] for a in inputs])             # build the variables eagerly
    validate.targets(targets, (n, *logits.shape[1:]), ignore_index)
    optimizer.build(model.trainable_variables)

    def gradients(xs, y, counted=None):
        with tf.GradientTape() as tape:
            logits = model(*xs, training=True)
            loss, hits, count = _masked_loss_and_hits(y, logits, ignore_index, label_smoothing)
            if counted is not None:         # weighted by this share's targets: the gradients then sum to the mean's
                loss = loss * tf.cast(count, loss.dtype) / tf.cast(tf.maximum(counted, 1), loss.dtype)
        grads = tape.gradient(loss, model.trainable_variables)
        # embeddings get sparse gradients; Keras' Adam mis-updates a row that repeats within a batch unless
        # they are made dense (see tests/core/test_package.py::test_keras_fit_updates_repeated_embedding_rows)
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        return grads, loss, hits, count

    def on_one_device(xs, y):
        grads, loss, hits, count = gradients(xs, y)
        optimizer.apply(grads, model.trainable_variables)
        return loss, hits, count

    def share(xs, y):                                    # one replica's share; the optimizer sums the gradients
        replica = tf.distribute.get_replica_context()
        i, n = replica.replica_id_in_sync_group, replica.num_replicas_in_sync
        xs, y = [x[i::n] for x in xs], y[i::n]
        keep = tf.ones_like(y, dtype=tf.bool) if ignore_index is None else tf.not_equal(y, ignore_index)
        counted = replica.all_reduce("sum", tf.reduce_sum(tf.cast(keep, tf.int64)))   # the whole mini-batch's
        grads, loss, hits, count = gradients(xs, y, counted)
        if clip_norm is not None:                        # the norm of the sum, as one device would clip
            norm = tf.linalg.global_norm(replica.all_reduce("sum", grads))
            grads = [g * (clip_norm / tf.maximum(norm, clip_norm)) for g in grads]
        optimizer.apply(grads, model.trainable_variables)
        return loss, hits, count

    def on_replicas(xs, y):
        return tuple(strategy.reduce("sum", value, axis=None) for value in strategy.run(share, args=(xs, y)))

    train_step = tf.function(on_replicas if several else on_one_device)
    # the validation loss as one compiled forward too: run eagerly, a recurrent layer steps through time in Python
    validation_step = None if several else tf.function(_loss_step(model, ignore_index))
    return _Trainer(model, optimizer, train_step, validation_step, schedule=schedule, ignore_index=ignore_index,
                    batch_size=batch_size)


class _Trainer:
    """Keras' side of the course's training loop (:func:`attention_course.core.train.run`): ``train_step``, a
    compiled step of Adam on cross-entropy, and a learning-rate schedule when asked."""

    def __init__(self, model: keras.Model, optimizer, train_step, validation_step=None, *,
                 schedule: Callable[[int], float] | None, ignore_index: int | None, batch_size: int):
        self.model, self.optimizer = model, optimizer
        self.train_step, self.validation_step = train_step, validation_step
        self.schedule, self.ignore_index, self.batch_size = schedule, ignore_index, batch_size

    def start_epoch(self) -> None:
        pass                                                     # Keras layers take training= at each call

    def step(self, xs, y, step: int) -> tuple[float, int, int]:
        xs = tuple(tf.convert_to_tensor(a) for a in xs)
        if self.schedule is not None:
            self.optimizer.learning_rate.assign(self.schedule(step))
        loss, hits, kept = any_batch(self.train_step, xs, tf.convert_to_tensor(np.asarray(y, dtype=np.int64)))
        return float(loss), int(hits), int(kept)

    def weights(self) -> list:
        return self.model.get_weights()

    def set_weights(self, weights: list) -> None:
        self.model.set_weights(weights)

    def validation_loss(self, inputs, targets) -> float:
        return evaluate_loss(self.model, inputs, targets, ignore_index=self.ignore_index, batch_size=self.batch_size,
                             step=self.validation_step)

    def save(self, path: Path, history: History, best: dict | None, epoch: int) -> None:
        _save(path, self.model, self.optimizer, history, best, epoch)

    def load(self, path: Path) -> tuple[dict, dict | None, int]:
        arrays, meta = checkpoints.load(path)
        self.model.set_weights(checkpoints.numbered(arrays, "model"))
        for variable, value in zip(self.optimizer.variables, checkpoints.numbered(arrays, "optimizer"), strict=True):
            variable.assign(value)
        best = None if meta["best"] is None else {**meta["best"], "model": checkpoints.numbered(arrays, "best")}
        return meta["history"], best, meta["epoch"]


def _save(path: Path, model, optimizer, history: History, best: dict | None, epoch: int) -> None:
    """The run so far as a course checkpoint (:mod:`attention_course.core.checkpoint`): numbers only, written
    atomically."""
    arrays = {f"model.{i}": w for i, w in enumerate(model.get_weights())}
    arrays.update({f"optimizer.{i}": np.asarray(v) for i, v in enumerate(optimizer.variables)})
    if best is not None:
        arrays.update({f"best.{i}": w for i, w in enumerate(best["model"])})
    checkpoints.save(path, arrays, {"history": history.metrics, "epoch": epoch,
                                    "best": None if best is None else {k: best[k] for k in ("val_loss", "epoch")}})


def _loss_step(model: keras.Model, ignore_index: int | None):
    """One batch's (mean loss, hits, targets counted) of ``model(*xs)`` in inference mode against ``y``."""
    def step(xs, y):
        return _masked_loss_and_hits(y, model(*xs, training=False), ignore_index)
    return step


def evaluate_loss(model: keras.Model, inputs, targets, *, ignore_index: int | None = None, batch_size: int = 256,
                  step=None) -> float:
    """Mean cross-entropy per target token of ``model(*inputs)`` (``ignore_index`` left out), in inference mode;
    ``step`` is that batch's computation compiled (``tf.function`` of ``_loss_step``), eager when not given."""
    n = validate.examples(inputs, targets)
    total, count = 0.0, 0
    for i in range(0, n, batch_size):
        xs = tuple(tf.convert_to_tensor(a[i:i + batch_size]) for a in inputs)
        y = tf.convert_to_tensor(np.asarray(targets[i:i + batch_size], dtype=np.int64))
        loss, _, kept = (_loss_step(model, ignore_index)(xs, y) if step is None else any_batch(step, xs, y))
        total += float(loss) * int(kept)
        count += int(kept)
    validate.counted(count, ignore_index, "mean loss")
    return total / count


def predict(model: keras.Model, inputs, batch_size: int = 512, classes: bool = False) -> np.ndarray:
    """``model(*inputs)`` in inference mode, batched, as a NumPy array; with ``classes`` the argmax of its last axis,
    taken batch by batch (a masked LM's logits over a whole validation set would take gigabytes)."""
    n = validate.examples(inputs)
    validate.integer("batch_size", batch_size)
    outs = []
    for i in range(0, n, batch_size):
        out = ops.convert_to_numpy(model(*[a[i:i + batch_size] for a in inputs], training=False))
        outs.append(out.argmax(-1) if classes else out)
    return np.concatenate(outs)


def accuracy(model: keras.Model, inputs, targets, ignore_index: int | None = None, batch_size: int = 512) -> float:
    """Share of correct argmax predictions, leaving out ``ignore_index`` targets (predicted ``batch_size`` at a
    time: a smaller batch holds less memory)."""
    return accuracy_of(lambda m, x: predict(m, x, batch_size, classes=True), model, inputs, targets, ignore_index)
