"""Keras' compiled training and validation steps trace once per model, whatever the batch size
(core.keras.train.any_batch): the shorter last batch of an epoch used to trace the whole model again."""

import numpy as np
import tensorflow as tf

import attention_course as ac
from attention_course.core.keras.train import any_batch


def test_a_step_is_traced_once_for_every_batch_size():
    @tf.function
    def step(xs, y, noise):
        return tf.reduce_sum(xs[0]) + tf.reduce_sum(xs[1]) + tf.reduce_sum(y) + (0.0 if noise is None else 1.0)

    totals = [float(any_batch(step, (tf.ones((n, 3)), tf.ones((n, 2, 2))), tf.ones((n,)), None)) for n in (8, 8, 3)]
    assert totals == [8 * 3 + 8 * 4 + 8, 8 * 3 + 8 * 4 + 8, 3 * 3 + 3 * 4 + 3]
    assert step.experimental_get_tracing_count() == 1


def test_fit_traces_its_step_once_with_a_short_last_batch(monkeypatch):
    import keras

    rng = np.random.default_rng(0)
    x, y = rng.integers(1, 20, (70, 6)), rng.integers(0, 3, (70, 6))      # 70 = 2 × 32 + 6: a short last batch
    fit = ac.keras.fit                       # the chapters' layers imported first: only fit's step is recorded
    compiled = []
    original = tf.function

    def recording(fn=None, **kwargs):
        compiled.append(original(fn, **kwargs))
        return compiled[-1]

    monkeypatch.setattr(tf, "function", recording)
    model = keras.Sequential([keras.layers.Embedding(20, 8), keras.layers.Dense(3)])
    history = fit(model, (x,), y, epochs=2, batch_size=32, seed=0)
    assert len(history["loss"]) == 2
    assert [f.experimental_get_tracing_count() for f in compiled] == [1, 0]     # the step; no validation asked
    compiled.clear()
    val_x, val_y = rng.integers(1, 20, (45, 6)), rng.integers(0, 3, (45, 6))     # 45 = 32 + 13
    history = fit(model, (x,), y, epochs=3, batch_size=32, seed=0, validation=((val_x,), val_y))
    assert [f.experimental_get_tracing_count() for f in compiled] == [1, 1]     # the step, the validation loss
    # the compiled validation loss is the eager one: the best epoch's, whose weights fit put back
    eager = ac.keras.evaluate_loss(model, (val_x,), val_y, batch_size=32)
    assert abs(min(history["val_loss"]) - eager) < 1e-5, (history["val_loss"], eager)
