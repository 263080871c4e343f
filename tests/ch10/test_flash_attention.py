"""FlashAttention's forward pass, written plainly in both frameworks: a block of keys at a time with the online
softmax, it gives what the fused kernels give (PyTorch's ``scaled_dot_product_attention`` through Chapter 7's
layer, and ``keras.ops.dot_product_attention``) and the NumPy reference, with padding and causal masks and any
block size; bad input is the course's clear error."""

import numpy as np
import pytest
from conftest import to_numpy

from attention_course.ch10_modern_attention import keras as ch10_keras
from attention_course.ch10_modern_attention import reference as ref
from attention_course.ch10_modern_attention import torch as ch10_torch
from attention_course.core.errors import ConfigError, ShapeError

pytestmark = pytest.mark.chapter(10)
MODULES = {"keras": ch10_keras, "pytorch": ch10_torch}


def _inputs(seed=0, b=2, h=3, t_q=7, t_k=11, d=8, d_v=5):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=s).astype("float32") for s in ((b, h, t_q, d), (b, h, t_k, d), (b, h, t_k, d_v)))
    mask = np.ones((b, t_k), bool)
    mask[0, 8:] = False                                   # three pads in the first example
    return q, k, v, mask


def _as(framework, x):
    if framework == "pytorch":
        import torch

        return torch.as_tensor(x)
    return x


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("block", [1, 4, 64])
def test_the_tiled_pass_equals_the_reference(framework, causal, block):
    q, k, v, mask = _inputs(block)
    got = to_numpy(MODULES[framework].flash_attention(*(_as(framework, x) for x in (q, k, v, mask)), causal=causal,
                                                      block=block))
    expected = ref.explicit_attention(q.astype(float), k.astype(float), v.astype(float), mask[:, None], causal)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_the_tiled_pass_equals_pytorchs_fused_kernel():
    import torch
    import torch.nn.functional as F

    q, k, v, _ = _inputs(1, t_q=33, t_k=33)
    q, k, v = (torch.as_tensor(x) for x in (q, k, v))
    for causal in (False, True):
        fused = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        np.testing.assert_allclose(ch10_torch.flash_attention(q, k, v, causal=causal, block=8).numpy(),
                                   fused.numpy(), rtol=1e-5, atol=1e-5)


def test_the_tiled_pass_equals_keras_fused_kernel():
    from keras import ops

    q, k, v, _ = _inputs(2, t_q=33, t_k=33)
    for causal in (False, True):     # keras.ops.dot_product_attention takes (B, T, h, d)
        fused = ops.dot_product_attention(*(np.swapaxes(x, 1, 2) for x in (q, k, v)), is_causal=causal)
        np.testing.assert_allclose(to_numpy(ch10_keras.flash_attention(q, k, v, causal=causal, block=8)),
                                   np.swapaxes(to_numpy(fused), 1, 2), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_bad_input_is_a_clear_error(framework):
    q, k, v, mask = _inputs()
    f = MODULES[framework].flash_attention
    with pytest.raises(ConfigError, match="block"):
        f(*(_as(framework, x) for x in (q, k, v)), block=0)
    with pytest.raises(ShapeError):
        f(*(_as(framework, x) for x in (q[0], k[0], v[0])))
    with pytest.raises(ShapeError, match="mask"):
        f(*(_as(framework, x) for x in (q, k, v, mask[:, :5])))


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_linear_attention_in_parallel_and_step_by_step(framework):
    """Both frameworks' linear attention equals the NumPy reference, and decoding it step by step with the
    recurrent state gives the parallel form's outputs."""
    rng = np.random.default_rng(5)
    q, k, v = (rng.normal(size=s).astype("float32") for s in ((2, 3, 6, 4), (2, 3, 6, 4), (2, 3, 6, 5)))
    module = MODULES[framework]
    parallel = to_numpy(module.linear_attention(*(_as(framework, x) for x in (q, k, v))))
    np.testing.assert_allclose(parallel, ref.linear_attention(q, k, v), rtol=1e-5, atol=1e-5)
    state, norm = _as(framework, np.zeros((2, 3, 4, 5), "float32")), _as(framework, np.zeros((2, 3, 4), "float32"))
    for t in range(6):
        y, state, norm = module.linear_attention_step(state, norm, *(_as(framework, x[..., t, :]) for x in (q, k, v)))
        np.testing.assert_allclose(to_numpy(y), parallel[..., t, :], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_decayed_linear_attention_in_parallel_and_step_by_step(framework):
    """With RetNet's decay per head, both frameworks equal the NumPy reference in parallel, step by step and for
    the last queries alone (decoding after a prompt), and a bad decay is named."""
    rng = np.random.default_rng(6)
    q, k, v = (rng.normal(size=s).astype("float32") for s in ((2, 3, 6, 4), (2, 3, 6, 4), (2, 3, 6, 5)))
    module, decay = MODULES[framework], np.array([0.5, 0.9, 0.99], "float32")
    want = ref.linear_attention(q, k, v, decay=decay)
    parallel = to_numpy(module.linear_attention(*(_as(framework, x) for x in (q, k, v)), decay=decay))
    np.testing.assert_allclose(parallel, want, rtol=1e-5, atol=1e-5)
    last = module.linear_attention(*(_as(framework, x) for x in (q[..., -2:, :], k, v)), decay=decay)
    np.testing.assert_allclose(to_numpy(last), want[..., -2:, :], rtol=1e-5, atol=1e-5)
    state, norm = _as(framework, np.zeros((2, 3, 4, 5), "float32")), _as(framework, np.zeros((2, 3, 4), "float32"))
    for t in range(6):
        y, state, norm = module.linear_attention_step(state, norm, *(_as(framework, x[..., t, :]) for x in (q, k, v)),
                                                      decay=decay)
        np.testing.assert_allclose(to_numpy(y), want[..., t, :], rtol=1e-5, atol=1e-5)
    assert module.retention_decays(3).tolist() == [1 - 1 / 32, 1 - 1 / 64, 1 - 1 / 128]
    with pytest.raises(ConfigError, match="heads"):
        module.retention_decays(0)
    x = [_as(framework, a) for a in (q, k, v)]
    with pytest.raises(ConfigError, match=r"one factor per head, shape \(3,\).*got shape \(2,\)"):
        module.linear_attention(*x, decay=decay[:2])
    with pytest.raises(ConfigError, match="causal=False"):
        module.linear_attention(*x, causal=False, decay=decay)
    with pytest.raises(ConfigError, match=r"\(0, 1\]"):
        module.linear_attention(*x, decay=np.array([0.5, 1.5, 0.0], "float32"))


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_the_window_mask_sees_the_recent_keys_and_the_sinks(framework):
    got = to_numpy(MODULES[framework].window_mask(6, window=3, sinks=1))[0].astype(int)
    assert got.tolist() == [[1, 0, 0, 0, 0, 0],
                            [1, 1, 0, 0, 0, 0],
                            [1, 1, 1, 0, 0, 0],
                            [1, 1, 1, 1, 0, 0],
                            [1, 0, 1, 1, 1, 0],
                            [1, 0, 0, 1, 1, 1]]
    last = to_numpy(MODULES[framework].window_mask(2, 6, window=2))[0].astype(int)   # two decoding steps, 6 keys
    assert last.tolist() == [[0, 0, 0, 1, 1, 0], [0, 0, 0, 0, 1, 1]]
    with pytest.raises(ConfigError, match="window"):
        MODULES[framework].window_mask(4, window=0)
