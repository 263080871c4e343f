"""A small training loop for Keras 3 (TensorFlow backend), the twin of ``attention_course.torch.train``."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from .. import validate
from ..train import History, accuracy_of, batches, progress
from . import inputs as course_inputs


def device() -> str:
    """The GPU when TensorFlow sees one, else the CPU (as a TensorFlow device name)."""
    return "/GPU:0" if tf.config.list_physical_devices("GPU") else "/CPU:0"


def _masked_loss_and_hits(y, logits, ignore_index):
    per_token = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
    keep = tf.ones_like(y, dtype=tf.bool) if ignore_index is None else tf.not_equal(y, ignore_index)
    keep_f = tf.cast(keep, per_token.dtype)
    loss = tf.reduce_sum(per_token * keep_f) / tf.maximum(tf.reduce_sum(keep_f), 1.0)
    hits = tf.logical_and(tf.equal(tf.argmax(logits, -1, output_type=y.dtype), y), keep)
    return loss, tf.reduce_sum(tf.cast(hits, tf.int64)), tf.reduce_sum(tf.cast(keep, tf.int64))


def fit(model: keras.Model, inputs, targets, *, epochs: int, batch_size: int = 64, lr: float = 1e-3,
        ignore_index: int | None = None, seed: int = 0, desc: str | None = None) -> History:
    """Train ``model(*inputs)`` with Adam on cross-entropy against integer ``targets``.

    inputs: a tuple of arrays with the examples on axis 0; targets (n,) or (n, T) class ids;
    positions whose target equals ``ignore_index`` (padding) are left out of the loss and accuracy.
    Returns the per-epoch history (loss, accuracy).
    """
    n = validate.examples(inputs, targets)                      # as many examples in each
    epochs, batch_size = validate.sizes(epochs=epochs, batch_size=batch_size)
    validate.positive("lr", lr)
    optimizer = keras.optimizers.Adam(learning_rate=lr)
    logits = model(*[a[:2] for a in inputs])             # build the variables eagerly
    validate.targets(targets, (n, *logits.shape[1:]), ignore_index)
    optimizer.build(model.trainable_variables)

    @tf.function(reduce_retracing=True)
    def train_step(xs, y):
        with tf.GradientTape() as tape:
            logits = model(*xs, training=True)
            loss, hits, count = _masked_loss_and_hits(y, logits, ignore_index)
        grads = tape.gradient(loss, model.trainable_variables)
        # embeddings get sparse gradients; Keras' Adam mis-updates a row that repeats within a batch unless
        # they are made dense (see tests/test_package.py::test_keras_fit_updates_repeated_embedding_rows)
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        optimizer.apply(grads, model.trainable_variables)
        return loss, hits, count

    history = History()
    rng = np.random.default_rng(seed)
    steps = epochs * ((n + batch_size - 1) // batch_size)
    with course_inputs.graph_errors(), progress(total=steps, desc=desc or "keras") as bar:
        for _ in range(epochs):
            total, correct, count = 0.0, 0, 0
            for idx in batches(n, batch_size, rng):
                xs = tuple(tf.convert_to_tensor(a[idx]) for a in inputs)
                loss, hits, kept = train_step(xs, tf.convert_to_tensor(targets[idx]))
                total += float(loss) * len(idx)
                correct += int(hits)
                count += int(kept)
                bar.update(1)
            history.log(loss=total / n, accuracy=correct / max(count, 1))
            bar.set_postfix(loss=f"{total / n:.3f}", acc=f"{correct / max(count, 1):.3f}")
    return history


def predict(model: keras.Model, inputs, batch_size: int = 512) -> np.ndarray:
    """``model(*inputs)`` in inference mode, batched, as a NumPy array."""
    n = validate.examples(inputs)
    validate.integer("batch_size", batch_size)
    outs = [ops.convert_to_numpy(model(*[a[i:i + batch_size] for a in inputs], training=False))
            for i in range(0, n, batch_size)]
    return np.concatenate(outs)


def accuracy(model: keras.Model, inputs, targets, ignore_index: int | None = None) -> float:
    """Share of correct argmax predictions, leaving out ``ignore_index`` targets."""
    return accuracy_of(predict, model, inputs, targets, ignore_index)
