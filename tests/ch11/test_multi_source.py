"""Chapter 11's multi-source attention (Zoph & Knight 2016): MultiSourceAttention is the NumPy reference (each source
its own additive score and its own softmax, the contexts joined with the query) in both frameworks; the translator
agrees across frameworks and reads a padded source as the unpadded one; the two-source task is the first source then
the second; bad input is a clear error; a small run learns both halves with both sources and one half with one."""

import numpy as np
import pytest
import torch

import attention_course as ac
from attention_course.ch11_more_attention import experiment as c11
from attention_course.ch11_more_attention import keras as ch11_keras
from attention_course.ch11_more_attention import reference
from attention_course.ch11_more_attention import torch as ch11_torch
from attention_course.core.backend import backend
from attention_course.core.errors import ConfigError, InputError, ShapeError
from attention_course.core.parity import torch_to_keras

pytestmark = pytest.mark.chapter(11)

RNG = np.random.default_rng(4)
QUERY = RNG.normal(size=(2, 3, 4)).astype("float32")
KEYS = RNG.normal(size=(2, 2, 5, 6)).astype("float32")
MASK = np.ones((2, 2, 5), bool)
MASK[0, 1, 2:] = False                                     # the first example's second source: two positions
MASK[1, 0, 4:] = False


def _weights(layer):
    """(W_a, U_a, v_a) per source and W_c, b_c of a PyTorch layer, as the reference takes them."""
    additive = [(a.score.W_a.weight.detach().numpy().T, a.score.U_a.weight.detach().numpy().T,
                 a.score.v_a.weight.detach().numpy()[0]) for a in layer.attend]
    return additive, layer.W_c.weight.detach().numpy().T, layer.W_c.bias.detach().numpy()


def test_multi_source_attention_is_the_reference_in_both_frameworks():
    torch.manual_seed(0)
    t = ch11_torch.MultiSourceAttention(4, 6, 5, sources=2)
    k = ch11_keras.MultiSourceAttention(4, 6, 5, sources=2)
    torch_to_keras(t, k, (QUERY, KEYS, MASK))
    additive, W_c, b_c = _weights(t)
    want_h, want_w = reference.multi_source(QUERY, KEYS, MASK, W_c, b_c, additive)
    for layer in (t, k):
        h, w = backend(layer).run(layer, QUERY, KEYS, MASK, return_weights=True)
        np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w, want_w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-6)          # a distribution per source and query
        assert (w[np.broadcast_to(~MASK[:, :, None], w.shape)] == 0).all()
    assert want_w.shape == (2, 2, 3, 5)


def test_one_source_changes_only_its_own_weights():
    torch.manual_seed(1)
    layer = ch11_torch.MultiSourceAttention(4, 6, 5, sources=2)
    moved = KEYS.copy()
    moved[:, 1] = RNG.normal(size=moved[:, 1].shape)
    _, before = backend(layer).run(layer, QUERY, KEYS, MASK, return_weights=True)
    _, after = backend(layer).run(layer, QUERY, moved, MASK, return_weights=True)
    np.testing.assert_allclose(after[:, 0], before[:, 0], rtol=1e-6)   # the first source's softmax is its own
    assert not np.allclose(after[:, 1], before[:, 1])


def test_the_translators_agree_and_padding_a_source_changes_nothing():
    data = c11.two_sources(4, 5, 12, seed=2)
    sources = data.sources.copy()
    sources[1, 0, 3:] = 0                                        # a shorter first source
    torch.manual_seed(0)
    t = ch11_torch.MultiSourceTranslator(12, 12, 2, embed=8, hidden=6)
    k = ch11_keras.MultiSourceTranslator(12, 12, 2, embed=8, hidden=6)
    torch_to_keras(t, k, (sources, data.tgt_in))
    ours = backend(t).run(t, sources, data.tgt_in, return_weights=True)
    theirs = backend(k).run(k, sources, data.tgt_in, return_weights=True)
    assert ours[0].shape == (4, 10, 12) and ours[1].shape == (4, 2, 10, 5)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    padded = np.concatenate([sources, np.zeros((4, 2, 3), np.int64)], axis=-1)   # three more pads on each source
    for model in (t, k):
        logits, weights = backend(model).run(model, padded, data.tgt_in, return_weights=True)
        np.testing.assert_allclose(logits, ours[0], rtol=1e-4, atol=1e-5)
        assert (weights[..., 5:] == 0).all() and (weights[1, 0, :, 3:] == 0).all()


def test_the_task_is_the_first_source_then_the_second():
    data = c11.two_sources(50, 4, 9, seed=1)
    assert data.sources.shape == (50, 2, 4) and data.target.shape == data.tgt_in.shape == (50, 8)
    np.testing.assert_array_equal(data.target[:, :4], data.sources[:, 0])
    np.testing.assert_array_equal(data.target[:, 4:], data.sources[:, 1])
    assert (data.tgt_in[:, 0] == c11.START).all() and (data.tgt_in[:, 1:] == data.target[:, :-1]).all()
    assert data.sources.min() > c11.START and data.sources.max() < 9
    np.testing.assert_array_equal(c11.two_sources(50, 4, 9, seed=1).sources, data.sources)


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_bad_input_is_a_clear_error(fw):
    layer = fw.MultiSourceAttention(4, 6, 5, sources=2)
    with pytest.raises(ShapeError, match=r"over 2 sources takes .*\(B, 2, S, d_k\)"):
        layer(QUERY, KEYS[:, :1], MASK[:, :1])
    with pytest.raises(ShapeError, match="multi-source attention"):
        layer(QUERY, KEYS, MASK[:, :, :3])
    with pytest.raises(ShapeError, match="multi-source attention"):
        layer(QUERY[:, 0], KEYS)
    model = fw.MultiSourceTranslator(12, 12, 2, embed=8, hidden=6)
    data = c11.two_sources(3, 4, 12, seed=0)
    with pytest.raises(ShapeError, match=r"reads 2 source\(s\): sources must be ids \(B, 2, S\)"):
        model(data.sources[:, :1], data.tgt_in)
    with pytest.raises(ShapeError, match="share their batch size"):
        model(data.sources, data.tgt_in[:2])
    with pytest.raises(InputError):
        model(data.sources + 20, data.tgt_in)                      # ids past the vocabulary
    with pytest.raises(ConfigError, match="sources"):
        fw.MultiSourceTranslator(12, 12, 0)
    with pytest.raises(ConfigError, match="vocab=2"):
        c11.two_sources(3, 4, 2, seed=0)


def test_both_sources_write_both_halves_and_one_source_only_its_own():
    sizes = {**c11.MULTI_SIZES["quick"], "n_train": 2000, "n_test": 200, "length": 4, "vocab": 8, "epochs": 6}
    table, _, _ = c11.multi_source(ac.torch, sizes, seed=0)
    row = table.set_index("model")
    assert (row.loc["both sources", ["first half right", "second half right"]] > 0.7).all(), table
    assert row.loc["first source only", "first half right"] > 0.8, table
    assert row.loc["first source only", "second half right"] < 0.35, table        # 6 words: chance 1 in 6
    assert row.loc["second source only", "first half right"] < 0.35, table


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_nan_at_a_hidden_position_changes_nothing_and_at_a_real_one_is_a_clear_error(fw):
    layer = fw.MultiSourceAttention(4, 6, 5, sources=2)
    clean = backend(layer).run(layer, QUERY, KEYS, MASK, return_weights=True)
    dirty = KEYS.copy()
    dirty[~MASK] = np.nan
    for a, b in zip(clean, backend(layer).run(layer, QUERY, dirty, MASK, return_weights=True), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    real, query = KEYS.copy(), QUERY.copy()
    real[0, 1, 1, 0], query[1, 2, 3] = np.inf, np.nan
    with pytest.raises(InputError, match="keys must hold finite numbers"):
        layer(QUERY, real, MASK)
    with pytest.raises(InputError, match="query must hold finite numbers"):
        layer(query, KEYS, MASK)
