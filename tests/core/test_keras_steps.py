"""Keras' compiled training and validation steps trace once per model, whatever the batch size
(core.keras.train.any_batch): the shorter last batch of an epoch used to trace the whole model again. And once a
model is trained, its traced step is freed (core.keras.train.Adam)."""

import functools

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


def test_a_trained_keras_model_leaves_no_traced_step_behind():
    """Keras' Adam sums the gradients over the replicas even on one device, and in a compiled step that sum
    registers a gradient function for the rest of the session that keeps the traced step (forward, backward, every
    recurrent loop) alive: about 50 MB per trained model. The course's Adam skips the sum on one device: once a
    model is trained, nothing of its training step is left."""
    import gc

    from tensorflow.python.framework.func_graph import FuncGraph

    rng = np.random.default_rng(0)
    x, y = rng.integers(1, 20, (40, 6)), rng.integers(0, 3, (40, 6))

    def steps_alive():
        gc.collect()
        return sum(isinstance(o, FuncGraph) and o.name.startswith("on_one_device") for o in gc.get_objects())

    before = steps_alive()
    for _ in range(2):
        model = ac.keras.Seq2Seq(20, embed=4, hidden=6, attention=True)
        ac.keras.fit(model, (x, x), y, epochs=1, batch_size=16, seed=0, clip_norm=1.0)
        del model
    assert steps_alive() == before


def test_the_course_adam_steps_as_keras_adam_does():
    """On one device the course's Adam moves the weights exactly as Keras' own (clipping included)."""
    import keras

    from attention_course.core.keras.train import Adam

    rng = np.random.default_rng(0)
    start = [rng.normal(size=(3, 2)).astype("float32"), rng.normal(size=(2,)).astype("float32")]
    grads = [rng.normal(size=w.shape).astype("float32") for w in start]
    after = []
    for optimizer in (keras.optimizers.Adam(1e-2, global_clipnorm=0.5), Adam(1e-2, global_clipnorm=0.5)):
        variables = [keras.Variable(w) for w in start]
        optimizer.build(variables)
        step = tf.function(functools.partial(optimizer.apply, [tf.constant(g) for g in grads], variables))
        for _ in range(3):
            step()
        after.append([np.asarray(v) for v in variables])
    for ours, keras_own, first in zip(after[1], after[0], start, strict=True):
        np.testing.assert_allclose(ours, keras_own, rtol=1e-6)
        assert not np.allclose(ours, first)                                             # it moved
