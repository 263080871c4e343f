"""Chapter 7's experiments: the two synthetic tasks answer what they say, the probe networks are twins with shared
weights, the causal convolution sees exactly its window, a LookbackNet without positions cannot see order and
one with positions can, Keras' fit leaves out a negative ignore_index, and bad arguments name the rule."""

import numpy as np
import pytest
import torch
from conftest import to_numpy

import attention_course as ac
from attention_course.core.errors import ConfigError, InputError, ShapeError
from attention_course.core.parity import torch_to_keras
from attention_course.data import synthetic

RTOL, ATOL = 1e-5, 1e-5


# ---- the tasks -------------------------------------------------------------------------------------------------

def test_steps_back_task_asks_for_the_symbol_k_steps_back():
    ids, labels, k = synthetic.steps_back_task(500, length=12, n_symbols=5, seed=3)
    assert ids.shape == (500, 12) and labels.shape == k.shape == (500,)
    assert ids[:, :-1].max() < 5 and set(np.unique(k)) == set(range(1, 12))        # every distance occurs
    np.testing.assert_array_equal(ids[:, -1], 5 + k)                                 # the question names k
    np.testing.assert_array_equal(labels, ids[np.arange(500), 11 - k])
    again = synthetic.steps_back_task(500, length=12, n_symbols=5, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip((ids, labels, k), again, strict=True))     # seeded


def test_lookback_task_names_the_symbols_one_and_three_back():
    x, y = synthetic.lookback_task(50, length=9, n_symbols=4, seed=1)
    assert x.shape == y.shape == (50, 9)
    assert (y[:, :3] == -1).all()                                                    # nothing to name yet
    t = np.arange(3, 9)
    np.testing.assert_array_equal(y[:, 3:], x[:, t - 1] * 4 + x[:, t - 3])
    assert y.max() < 16


@pytest.mark.parametrize("call, rule", [
    (lambda: synthetic.steps_back_task(4, length=1), "length >= 2"),
    (lambda: synthetic.lookback_task(4, length=3, offsets=(1, 3)), "offsets < length"),
    (lambda: synthetic.lookback_task(4, length=8, offsets=(0, 2)), "0 < offsets"),
])
def test_task_arguments_are_checked(call, rule):
    with pytest.raises(ConfigError, match=rule):
        call()


# ---- the networks ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mixer", ac.torch.MIXERS)
def test_recall_net_twins_agree(mixer):
    x, _, _ = synthetic.steps_back_task(6, length=10, n_symbols=4)
    torch.manual_seed(0)
    t, k = ac.torch.RecallNet(mixer, 14, 4, d_model=16), ac.keras.RecallNet(mixer, 14, 4, d_model=16)
    torch_to_keras(t, k, (x,))
    with torch.no_grad():
        want = t(x).numpy()
    assert want.shape == (6, 4)
    np.testing.assert_allclose(to_numpy(k(x)), want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("positions", ac.torch.POSITIONS)
def test_lookback_net_twins_agree_with_their_weights(positions):
    x, _ = synthetic.lookback_task(3, length=8)
    torch.manual_seed(0)
    t, k = (fw.LookbackNet(positions, 8, 64, d_model=16, max_len=16) for fw in (ac.torch, ac.keras))
    torch_to_keras(t, k, (x,))
    with torch.no_grad():
        logits, weights = t(x, return_weights=True)
    logits_k, weights_k = k(x, return_weights=True)
    assert tuple(logits.shape) == (3, 8, 64) and tuple(weights.shape) == (3, 2, 8, 8)
    np.testing.assert_allclose(to_numpy(logits_k), logits.numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(to_numpy(weights_k), weights.numpy(), rtol=RTOL, atol=ATOL)
    assert np.allclose(np.triu(weights.numpy(), 1), 0)                               # causal


def test_causal_conv_sees_exactly_its_window(fw):
    torch.manual_seed(0)
    conv = fw.CausalConv(8, kernel=3, layers=3)                                      # 6 positions back
    x = np.random.default_rng(0).normal(size=(1, 12, 8)).astype(np.float32)
    base = to_numpy(conv(x))
    for changed, reaches_last in ((11 - 6, True), (11 - 7, False)):
        y = x.copy()
        y[0, changed] += 10.0
        out = to_numpy(conv(y))
        np.testing.assert_allclose(out[0, :changed], base[0, :changed], rtol=RTOL, atol=ATOL)   # never the future
        assert (not np.allclose(out[0, -1], base[0, -1])) == reaches_last, changed


def test_lookback_net_without_positions_cannot_see_order(fw):
    torch.manual_seed(0)
    nets = {p: fw.LookbackNet(p, 8, 64, d_model=16, max_len=16) for p in ("none", "rotary", "sinusoidal")}
    x, _ = synthetic.lookback_task(2, length=8)
    shuffled = x.copy()
    shuffled[:, :7] = x[:, [3, 0, 6, 1, 5, 2, 4]]                                   # same symbols before the last
    last = {p: (to_numpy(net(x))[:, -1], to_numpy(net(shuffled))[:, -1]) for p, net in nets.items()}
    np.testing.assert_allclose(*last["none"], rtol=1e-4, atol=1e-5)                  # a set, not a sequence
    for p in ("rotary", "sinusoidal"):
        assert np.abs(last[p][0] - last[p][1]).max() > 1e-3, p


def test_keras_fit_leaves_out_a_negative_ignore_index():
    import keras

    x, y = synthetic.lookback_task(256, length=8)
    keras.utils.set_random_seed(0)
    model = ac.keras.LookbackNet("rotary", 8, 64, d_model=16)
    history = ac.keras.fit(model, (x,), y, epochs=2, lr=3e-3, ignore_index=-1)
    assert np.isfinite(history.metrics["loss"]).all() and len(history.metrics["loss"]) == 2
    assert 0.0 <= ac.keras.accuracy(model, (x,), y, ignore_index=-1) <= 1.0


def test_probe_arguments_name_the_rule(fw):
    with pytest.raises(ConfigError, match="unknown mixer 'lstm'; choose one of: attention, gru, conv"):
        fw.RecallNet("lstm", 10, 4)
    with pytest.raises(ConfigError, match="unknown positions 'alibi'"):
        fw.LookbackNet("alibi", 8, 64)
    with pytest.raises(InputError, match="ids"):
        fw.RecallNet("gru", 10, 4, d_model=8)(np.full((2, 5), 10))                 # id 10 of a vocabulary of 10
    with pytest.raises(ShapeError):
        fw.LookbackNet("learned", 8, 64, d_model=8, max_len=4)(np.zeros((1, 6), np.int64))    # past the table
