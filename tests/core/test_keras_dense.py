"""``core.keras.base.Dense`` is Keras' ``Dense`` computed as one 2-D matrix product: the same numbers for inputs of
any rank, in eager and in compiled calls of unknown sizes. Chapters 4 and 11's additive scores use it: TensorFlow
2.20 (Colab's) crashes in the batched product of a single decoding step's scores, (B, 1, N, d) by (d, 1)
(`make colab-check` found it)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attention_course.core.keras.base import Dense


@pytest.mark.parametrize("shape", [(5, 32), (5, 12, 32), (8, 1, 12, 32), (2, 3, 4, 32)])
@pytest.mark.parametrize("units", [1, 7])
def test_the_same_numbers_as_keras_dense_at_every_rank(shape, units):
    x = np.random.default_rng(0).normal(size=shape).astype("float32")
    ours, theirs = Dense(units), keras.layers.Dense(units)
    ours.build(shape), theirs.build(shape)
    theirs.set_weights(ours.get_weights())
    out = np.asarray(ours(x))
    assert out.shape == (*shape[:-1], units)
    np.testing.assert_allclose(out, np.asarray(theirs(x)), rtol=1e-5, atol=1e-6)


def test_a_compiled_call_of_unknown_sizes_keeps_the_leading_axes():
    layer = Dense(1, use_bias=False)
    call = tf.function(lambda x: layer(x))
    call.get_concrete_function(tf.TensorSpec((None, None, None, 32), tf.float32))
    x = np.ones((8, 1, 12, 32), "float32")
    out = call(tf.constant(x))
    assert tuple(out.shape) == (8, 1, 12, 1)
    np.testing.assert_allclose(np.asarray(out)[..., 0], np.full((8, 1, 12), float(np.sum(layer.kernel))), rtol=1e-5)


def test_the_additive_scores_are_the_2d_dense():
    from attention_course.ch11_more_attention import keras as c11

    assert type(c11.PointerAttention(32, 32, 32).v) is Dense
    assert type(c11.MonotonicAttention(32, 32, 32).v) is Dense
    from attention_course.ch04_score_functions import keras as c4

    assert type(c4.AdditiveScore(32, 32, 32).v_a) is Dense
    assert type(c4.ConcatScore(32, 32, 32).v_a) is Dense
