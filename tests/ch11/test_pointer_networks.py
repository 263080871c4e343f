"""Chapter 11's pointer networks: the pointer is Vinyals et al.'s attention (the NumPy reference), the two
frameworks agree with shared weights, the sorting task is what it says, bad input is a clear error, and a pointer
network learns to sort."""

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
ENCODED = RNG.normal(size=(2, 5, 6)).astype("float32")
DECODED = RNG.normal(size=(2, 3, 4)).astype("float32")
MASK = np.array([[True, True, True, False, False], [True] * 5])


def test_the_pointer_is_vinyals_attention_over_the_input_positions():
    W_1, W_2, v = (RNG.normal(size=s).astype("float32") for s in ((6, 8), (4, 8), (8,)))
    expected = reference.pointer_log_probs(ENCODED, DECODED, W_1, W_2, v, MASK)
    assert np.isneginf(expected[0, :, 3:]).all() and np.allclose(np.exp(expected).sum(-1), 1)
    layer = ch11_torch.PointerAttention(6, 4, 8)
    with torch.no_grad():
        layer.W_1.weight.copy_(torch.as_tensor(W_1.T))
        layer.W_2.weight.copy_(torch.as_tensor(W_2.T))
        layer.v.weight.copy_(torch.as_tensor(v[None]))
        got_torch = layer(ENCODED, DECODED, MASK).numpy()
    k_layer = ch11_keras.PointerAttention(6, 4, 8)
    k_layer(ENCODED, DECODED, MASK)
    k_layer.W_1.set_weights([W_1])
    k_layer.W_2.set_weights([W_2])
    k_layer.v.set_weights([v[:, None]])
    got_keras = np.asarray(k_layer(ENCODED, DECODED, MASK))
    for got in (got_torch, got_keras):
        assert np.isneginf(got[0, :, 3:]).all()
        np.testing.assert_allclose(got[:, :, :3], expected[:, :, :3], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[1], expected[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["pointer", "fixed"])
def test_both_frameworks_agree_with_shared_weights(kind):
    data = c11.sorting(4, (3, 6), seed=1)
    sizes = {"hidden": 12, "train_max": 6}
    tm = c11.build(ch11_torch, kind, sizes, seed=0).eval()
    km = c11.build(ch11_keras, kind, sizes, seed=0)
    torch_to_keras(tm, km, data.inputs)
    with torch.no_grad():
        expected = tm(*data.inputs).numpy()
    got = np.asarray(km(*data.inputs))
    assert expected.shape == (4, 6, 6)
    finite = np.isfinite(expected)
    assert (np.isfinite(got) == finite).all()
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-4, atol=1e-5)


def test_the_sorting_task_is_sorting():
    data = c11.sorting(50, (3, 7), seed=2)
    lengths = data.mask.sum(1)
    assert lengths.min() >= 3 and lengths.max() <= 7 and data.x.shape == (50, 7, 1)
    for x, mask, order, previous in zip(data.x[..., 0], data.mask, data.order, data.previous, strict=True):
        n = int(mask.sum())
        assert (np.diff(x[order[:n]]) >= 0).all() and sorted(order[:n]) == list(range(n))   # a sorting permutation
        assert (order[n:] == c11.IGNORE).all() and previous[0] == -1 and (previous[1:n] == order[:n - 1]).all()
    again = c11.sorting(50, (3, 7), seed=2)
    assert np.array_equal(again.x, data.x)                                   # seeded
    perfect = np.where(data.mask, data.order, c11.IGNORE)
    assert c11.scores(perfect, data) == {"steps right": 1.0, "lists sorted": 1.0}
    with pytest.raises(ConfigError, match="from 7 to 3"):
        c11.sorting(5, (7, 3), seed=0)


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_bad_input_is_a_clear_error(fw):
    model = fw.PointerNetwork(1, 8)
    data = c11.sorting(2, 4, seed=0)
    x, previous, mask = data.inputs
    model(x, previous, mask)
    with pytest.raises(InputError, match=r"previous must be integers .* in \[0, 4\).*from -1 to 4"):
        model(x, np.where(previous == previous.max(), 4, previous), mask)
    with pytest.raises(InputError, match="previous must be integers"):
        model(x, previous.astype("float32"), mask)
    with pytest.raises(ShapeError, match=r"x must be the input elements \(B, N, 1\)"):
        model(np.repeat(x, 2, -1), previous, mask)
    with pytest.raises(ShapeError, match="a pointer takes"):
        model(x, previous, mask[:, :3])
    with pytest.raises(ConfigError):
        fw.PointerNetwork(1, 0)


def test_a_pointer_network_learns_to_sort():
    sizes = {**c11.SIZES["quick"], "n_train": 3000, "train_min": 4, "train_max": 4, "hidden": 32, "epochs": 6,
             "batch_size": 64, "lr": 1e-2}
    model = c11.build(ac.torch, "pointer", sizes, seed=0)
    c11.train(ac.torch, model, c11.sorting(sizes["n_train"], 4, seed=0), sizes, seed=0)
    test = c11.sorting(200, 4, seed=9)
    got = c11.scores(c11.point(model, test), test)
    assert got["steps right"] > 0.7, got                                     # chance: 1 in 4


def _pointers():
    W_1, W_2, v = (np.random.default_rng(8).normal(size=s).astype("float32") for s in ((6, 8), (4, 8), (8,)))
    layer = ch11_torch.PointerAttention(6, 4, 8)
    with torch.no_grad():
        layer.W_1.weight.copy_(torch.as_tensor(W_1.T))
        layer.W_2.weight.copy_(torch.as_tensor(W_2.T))
        layer.v.weight.copy_(torch.as_tensor(v[None]))
    k_layer = ch11_keras.PointerAttention(6, 4, 8)
    k_layer(ENCODED, DECODED, MASK)
    torch_to_keras(layer, k_layer)
    return (layer, k_layer), (W_1, W_2, v)


def _point(layer, *args):
    if isinstance(layer, torch.nn.Module):
        with torch.no_grad():
            return layer(*args).numpy()
    return np.asarray(layer(*args))


def test_a_list_with_no_visible_position_points_nowhere():
    """Its log-probabilities are all −inf (probabilities 0, as a masked softmax's row of zeros), never NaN; the
    other lists are unchanged."""
    mask = MASK.copy()
    mask[0] = False
    layers, weights = _pointers()
    want = reference.pointer_log_probs(ENCODED, DECODED, *weights, mask)
    assert np.isneginf(want[0]).all() and np.allclose(np.exp(want[1]).sum(-1), 1)
    for layer in layers:
        got = _point(layer, ENCODED, DECODED, mask)
        assert np.isneginf(got[0]).all() and not np.isnan(got).any()
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)


def test_nan_at_a_hidden_position_changes_nothing_and_nan_at_a_real_one_is_a_clear_error():
    layers, _ = _pointers()
    dirty = ENCODED.copy()
    dirty[0, 3:] = np.nan                                                  # the first list's two pads
    for layer in layers:
        clean = _point(layer, ENCODED, DECODED, MASK)
        got = _point(layer, dirty, DECODED, MASK)
        assert (np.isfinite(got) == np.isfinite(clean)).all()
        np.testing.assert_allclose(got[np.isfinite(got)], clean[np.isfinite(clean)], rtol=1e-6)
        real = ENCODED.copy()
        real[0, 2, 1] = np.inf
        with pytest.raises(InputError, match="encoded must hold finite numbers"):
            _point(layer, real, DECODED, MASK)
        bad_step = DECODED.copy()
        bad_step[1, 0, 0] = np.nan
        with pytest.raises(InputError, match="decoded must hold finite numbers"):
            _point(layer, ENCODED, bad_step, MASK)
