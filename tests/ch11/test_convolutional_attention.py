"""Chapter 11's convolutional attention: the score is the NumPy reference's (a convolution over neighbouring keys in
the additive score), width 1 sees each key alone and width 3 its neighbours, the two frameworks agree with shared
weights, bad input is a clear error, and on the marker task a window of keys reads the token after the marker where
keys seen alone cannot."""

import numpy as np
import pytest
import torch

import attention_course as ac
from attention_course.ch11_more_attention import experiment as c11
from attention_course.ch11_more_attention import keras as ch11_keras
from attention_course.ch11_more_attention import reference
from attention_course.ch11_more_attention import torch as ch11_torch
from attention_course.core.errors import ConfigError, InputError, ShapeError
from attention_course.core.parity import torch_to_keras

pytestmark = pytest.mark.chapter(11)
RNG = np.random.default_rng(0)
QUERY = RNG.normal(size=(2, 4)).astype("float32")
KEYS = RNG.normal(size=(2, 6, 5)).astype("float32")
MASK = np.array([[True] * 4 + [False] * 2, [True] * 6])


@pytest.mark.parametrize("width", [1, 3])
def test_the_scores_are_the_reference_in_both_frameworks(width):
    layer = ch11_torch.ConvolutionalAttention(4, 5, 8, width)
    kernel = layer.conv.weight.detach().numpy().transpose(2, 1, 0)                  # (width, d_k, u)
    bias, W_q = layer.conv.bias.detach().numpy(), layer.W_q.weight.detach().numpy().T
    v = layer.v.weight.detach().numpy()[0]
    expected_scores = reference.convolutional_scores(QUERY, KEYS, kernel, bias, W_q, v, MASK)
    expected = np.exp(expected_scores - expected_scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    with torch.no_grad():
        context, weights = layer(QUERY, KEYS, KEYS, MASK, return_weights=True)
    np.testing.assert_allclose(weights.numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(context.numpy(), np.einsum("bn,bnd->bd", expected, KEYS), rtol=1e-5, atol=1e-5)
    k_layer = ch11_keras.ConvolutionalAttention(4, 5, 8, width)
    k_layer(QUERY, KEYS, KEYS, MASK)
    torch_to_keras(layer, k_layer)
    k_context, k_weights = k_layer(QUERY, KEYS, KEYS, MASK, return_weights=True)
    np.testing.assert_allclose(np.asarray(k_weights), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(k_context), context.numpy(), rtol=1e-5, atol=1e-5)


def test_width_one_sees_each_key_alone_and_width_three_its_neighbours():
    changed = KEYS.copy()
    changed[:, 2] += 1.0                                                            # change key 2 only
    for width, moved in ((1, {2}), (3, {1, 2, 3})):
        torch.manual_seed(0)
        layer = ch11_torch.ConvolutionalAttention(4, 5, 8, width)
        scores = [reference.convolutional_scores(QUERY, k, layer.conv.weight.detach().numpy().transpose(2, 1, 0),
                                                 layer.conv.bias.detach().numpy(),
                                                 layer.W_q.weight.detach().numpy().T,
                                                 layer.v.weight.detach().numpy()[0]) for k in (KEYS, changed)]
        assert set(np.flatnonzero(~np.isclose(scores[0], scores[1]).all(0))) == moved, width


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_bad_input_is_a_clear_error(fw):
    with pytest.raises(ConfigError, match="odd width"):
        fw.ConvolutionalAttention(4, 5, 8, width=2)
    layer = fw.ConvolutionalAttention(4, 5, 8)
    with pytest.raises(ShapeError, match="one query per example"):
        layer(QUERY[:1], KEYS, KEYS)
    with pytest.raises(ShapeError, match="one query per example"):
        layer(QUERY, KEYS, KEYS, MASK[:, :3])
    with pytest.raises(ConfigError, match="at least 2 tokens"):
        c11.after_marker(4, 1, 10, seed=0)


def test_the_marker_task_and_the_readers_agree_across_frameworks():
    data = c11.after_marker(30, 8, 10, seed=3)
    assert (data.ids[np.arange(30), data.where] == c11.MARKER).all() and (data.where < 7).all()
    assert (data.target == data.ids[np.arange(30), data.where + 1]).all() and (data.target > c11.MARKER).all()
    assert ((data.ids == c11.MARKER).sum(1) == 1).all()
    tm = ch11_torch.MarkerReader(10, 8, 3).eval()
    km = ch11_keras.MarkerReader(10, 8, 3)
    torch_to_keras(tm, km, (data.ids, data.mask))
    with torch.no_grad():
        expected = tm(data.ids, data.mask).numpy()
    np.testing.assert_allclose(np.asarray(km(data.ids, data.mask)), expected, rtol=1e-4, atol=1e-5)


def test_a_window_of_keys_reads_the_token_after_the_marker_and_keys_alone_cannot():
    sizes = {**c11.MARKER_SIZES["quick"], "n_train": 3000, "n_test": 500, "length": 8, "vocab": 10, "dim": 16,
             "epochs": 6}
    table, _ = c11.marker_reading(ac.torch, sizes, seeds=(0,))
    by_width = table.set_index("width")
    assert by_width.loc[3, "accuracy"] > 0.9 and by_width.loc[3, "weight after the marker"] > 0.5, table
    assert by_width.loc[1, "accuracy"] < 0.4, table                                   # 8 words: chance 1 in 8


def _twin_layers(width, seed=0):
    torch.manual_seed(seed)
    layer = ch11_torch.ConvolutionalAttention(4, 5, 8, width)
    k_layer = ch11_keras.ConvolutionalAttention(4, 5, 8, width)
    k_layer(QUERY, KEYS, KEYS, MASK)
    torch_to_keras(layer, k_layer)
    weights = (layer.conv.weight.detach().numpy().transpose(2, 1, 0), layer.conv.bias.detach().numpy(),
               layer.W_q.weight.detach().numpy().T, layer.v.weight.detach().numpy()[0])
    return layer, k_layer, weights


def _run(layer, *args):
    if isinstance(layer, torch.nn.Module):
        with torch.no_grad():
            return [x.numpy() for x in layer(*args, return_weights=True)]
    return [np.asarray(x) for x in layer(*args, return_weights=True)]


@pytest.mark.parametrize("width", [3, 5])
def test_a_padded_sequence_reads_as_the_same_sequence_unpadded(width):
    """The window of a real key next to the pads sees zeros there, as beyond the end of the unpadded sequence,
    whatever the pads hold (huge values, NaN, inf): the pads reach no score, weight or context."""
    rng = np.random.default_rng(4)
    real = rng.normal(size=(1, 3, 5)).astype("float32")                      # 3 real keys
    padded = np.concatenate([real, 1e4 * rng.normal(size=(1, 4, 5)).astype("float32")], 1)
    padded[0, 5], padded[0, 6, 2] = np.nan, np.inf
    mask = np.array([[True] * 3 + [False] * 4])
    query = QUERY[:1]
    layer, k_layer, weights = _twin_layers(width)
    want = reference.convolutional_scores(query, real, *weights)
    np.testing.assert_allclose(reference.convolutional_scores(query, padded, *weights, mask)[:, :3], want,
                               rtol=1e-6)
    for twin in (layer, k_layer):
        alone, alone_weights = _run(twin, query, real, real)
        context, got = _run(twin, query, padded, padded, mask)
        assert np.isfinite(context).all() and (got[:, 3:] == 0).all()
        np.testing.assert_allclose(got[:, :3], alone_weights, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(context, alone, rtol=1e-5, atol=1e-6)


def test_a_row_with_no_visible_key_gets_no_weight_and_a_zero_context():
    mask = MASK.copy()
    mask[0] = False
    layer, k_layer, weights = _twin_layers(3)
    for twin in (layer, k_layer):
        context, got = _run(twin, QUERY, KEYS, KEYS, mask)
        assert (got[0] == 0).all() and (context[0] == 0).all()
        np.testing.assert_allclose(got[1], _run(twin, QUERY, KEYS, KEYS, MASK)[1][1], rtol=1e-6)
        np.testing.assert_allclose(got[1].sum(), 1, rtol=1e-6)


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_nan_in_a_query_or_a_real_key_or_value_is_a_clear_error(fw):
    layer = fw.ConvolutionalAttention(4, 5, 8)
    for name, bad in (("query", 0), ("keys", 1), ("values", 2)):
        args = [QUERY.copy(), KEYS.copy(), KEYS.copy()]
        args[bad][(1, 2) if bad == 0 else (0, 3, 1)] = np.nan                 # key 3 of the first example is real
        with pytest.raises(InputError, match=f"{name} must hold finite numbers"):
            layer(*args, MASK)
