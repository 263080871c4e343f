"""Rotary positions in linear attention, as RoFormer's linear variant places them (Su et al., eq. 19): φ(q) and φ(k)
are rotated *after* the feature map in the numerator, Σ_j (R_i φ(q_i))ᵀ(R_j φ(k_j)) v_j, and the normaliser
Σ_j φ(q_i)ᵀφ(k_j) stays unrotated and positive. Then a query's similarity to a key depends on their offset alone,
the parallel form equals the recurrent one step by step, and both frameworks equal the NumPy reference; a query
whose weights all vanish gets zeros (the normaliser's ε), not 0 / 0."""

import numpy as np
import pytest
import torch
from conftest import to_numpy

from attention_course.ch10_modern_attention import keras as ch10_keras
from attention_course.ch10_modern_attention import reference as ref
from attention_course.ch10_modern_attention import torch as ch10_torch
from attention_course.core.parity import torch_to_keras

pytestmark = pytest.mark.chapter(10)
MODULES = {"keras": ch10_keras, "pytorch": ch10_torch}
T = 110
Q0, K0, K1 = (np.array(v, "float32") for v in ([1.3, -0.4, 0.8, 2.1], [0.9, 1.7, -1.2, 0.3], [-0.5, 0.6, 1.1, -0.8]))


def _as(framework, x):
    return torch.as_tensor(x) if framework == "pytorch" else x


def _one_head():
    """A one-head ``LinearAttention`` (d_model 4) whose weights make token e0 ask Q0, token e1 offer K0 with the
    value (1, 0, 0, 0), token e2 offer K1 with the value 0, and every other token (e3) offer a key of −30 in every
    feature, whose φ is e^−30: nothing. W_o is the identity. The PyTorch layer and its Keras twin."""
    kq, kk, kv = np.zeros((4, 4), "float32"), np.full((4, 4), -30.0, "float32"), np.zeros((4, 4), "float32")
    kq[0], kk[1], kk[2], kv[1, 0] = Q0, K0, K1, 1.0
    tm = ch10_torch.LinearAttention(4, 1, 1, bias=False, rotary=True).eval()
    with torch.no_grad():
        for name, kernel in (("W_q", kq), ("W_k", kk), ("W_v", kv), ("W_o", np.eye(4, dtype="float32"))):
            getattr(tm, name).weight.copy_(torch.as_tensor(kernel.T))
    km = ch10_keras.LinearAttention(4, 1, 1, bias=False, rotary=True)
    km(np.zeros((1, 2, 4), "float32"), causal=True)                                     # built
    torch_to_keras(tm, km)
    return {"pytorch": tm, "keras": km}


def _sequence(i: int, j: int, r: int) -> np.ndarray:
    """(1, T, 4): the asking token at position i, K0's token at j, K1's at r, filler elsewhere."""
    x = np.zeros((1, T, 4), "float32")
    x[0, :, 3] = 1.0
    for position, token in ((i, 0), (j, 1), (r, 2)):
        x[0, position] = np.eye(4, dtype="float32")[token]
    return x


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_the_rotary_similarity_depends_on_the_offset_alone(framework):
    """The same query 3 positions after K0 and 4 after K1, at positions 5, 15 and 105: the output at the query is
    (R_i φ(Q0))·(R_j φ(K0)) / (φ(Q0)·φ(K0) + φ(Q0)·φ(K1) + …), the same at every shift, and the NumPy reference's.
    (Rotating q and k before φ, as the layer once did, gives 7.8, 5.0 and 6.1 for the rotated similarity.)"""
    layer = _one_head()[framework]
    phi = ref.elu_feature_map
    outputs = []
    for shift in (0, 10, 100):
        i, j, r = 5 + shift, 2 + shift, 1 + shift
        x = _as(framework, _sequence(i, j, r))
        with torch.no_grad():
            out = to_numpy(layer(x, causal=True))[0, i, 0]
        num = (ref.rotate(phi(Q0.astype(float))[None], i) @ ref.rotate(phi(K0.astype(float))[None], j).T).item()
        den = phi(Q0) @ phi(K0) + phi(Q0) @ phi(K1) + (i - 1) * phi(Q0) @ phi(np.full(4, -30.0)) + ref.LINEAR_EPS
        np.testing.assert_allclose(out, num / den, rtol=1e-5, err_msg=f"shift {shift}")
        outputs.append(out)
    np.testing.assert_allclose(outputs, outputs[0], rtol=1e-5)
    # the rotated similarity does depend on the offset: one position further away it is another number
    assert abs((ref.rotate(phi(Q0)[None], 6) @ ref.rotate(phi(K0)[None], 2).T).item()
               - (ref.rotate(phi(Q0)[None], 5) @ ref.rotate(phi(K0)[None], 2).T).item()) > 0.1


def test_the_reference_similarity_is_relative():
    """(R_i a)·(R_j b) = aᵀ R_{j−i} b: the reference's rotation makes a product of rotated vectors a function of the
    offset, for many offsets and shifts."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
    for offset in (0, 1, 3, 17):
        values = [(ref.rotate(a, j + offset) @ ref.rotate(b, j).T).item() for j in (0, 5, 40, 1000)]
        np.testing.assert_allclose(values, values[0], rtol=1e-9)


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
@pytest.mark.parametrize("decayed", [False, True])
def test_rotary_linear_attention_in_parallel_and_step_by_step(framework, decayed):
    """``linear_attention(rotary=True)`` equals the NumPy reference, for all queries and for the last two alone
    (decoding after a prompt); ``linear_attention_step(position=t)`` gives the parallel form's outputs step by
    step; and the two frameworks agree. With and without RetNet's decay."""
    rng = np.random.default_rng(7)
    q, k, v = (rng.normal(size=s).astype("float32") for s in ((2, 3, 9, 4), (2, 3, 9, 4), (2, 3, 9, 5)))
    module = MODULES[framework]
    decay = np.array([0.5, 0.9, 0.99], "float32") if decayed else None
    want = ref.linear_attention(q.astype(float), k.astype(float), v.astype(float), decay=decay, rotary=True)
    np.testing.assert_allclose(ref.linear_attention_recurrent(q.astype(float), k.astype(float), v.astype(float),
                                                              decay=decay, rotary=True), want, rtol=1e-10)
    assert not np.allclose(want, ref.linear_attention(q, k, v, decay=decay), atol=1e-3)   # the positions count
    x = [_as(framework, a) for a in (q, k, v)]
    parallel = to_numpy(module.linear_attention(*x, decay=decay, rotary=True))
    np.testing.assert_allclose(parallel, want, rtol=1e-5, atol=1e-5)
    last = module.linear_attention(_as(framework, q[..., -2:, :]), x[1], x[2], decay=decay, rotary=True)
    np.testing.assert_allclose(to_numpy(last), want[..., -2:, :], rtol=1e-5, atol=1e-5)
    state, norm = _as(framework, np.zeros((2, 3, 4, 5), "float32")), _as(framework, np.zeros((2, 3, 4), "float32"))
    for t in range(9):
        y, state, norm = module.linear_attention_step(state, norm, *(_as(framework, a[..., t, :]) for a in (q, k, v)),
                                                      decay=decay, position=t)
        np.testing.assert_allclose(to_numpy(y), parallel[..., t, :], rtol=1e-5, atol=1e-5)


def test_the_rotary_layer_agrees_in_both_frameworks():
    """``LinearAttention(rotary=True)`` with PyTorch's weights copied into Keras: the same outputs, and the layer is
    ``linear_attention(rotary=True)`` on its projections."""
    torch.manual_seed(0)
    x = np.random.default_rng(2).normal(size=(2, 7, 16)).astype("float32")
    for decay in (False, True):
        tm = ch10_torch.LinearAttention(16, 4, 2, rotary=True, decay=decay).eval()
        km = ch10_keras.LinearAttention(16, 4, 2, rotary=True, decay=decay)
        km(x, causal=True)                                                              # built
        torch_to_keras(tm, km)
        with torch.no_grad():
            expected = tm(torch.as_tensor(x), causal=True)
            q, k, v, _ = tm.project(torch.as_tensor(x))
            by_hand = tm.W_o(ch10_torch.merge_heads(ch10_torch.linear_attention(q, k, v, decay=tm.decay,
                                                                                rotary=True)))
        np.testing.assert_allclose(by_hand.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(to_numpy(km(x, causal=True)), expected.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_a_query_whose_weights_vanish_gets_zeros(framework):
    """Keys of −200 make φ(k) = e^−200, 0 in float32: every weight of every query is 0. The normaliser's ε turns
    0 / 0 into 0, in parallel and step by step from a zero state, as the reference (in float64) says."""
    rng = np.random.default_rng(8)
    q, v = rng.normal(size=(1, 2, 5, 4)).astype("float32"), rng.normal(size=(1, 2, 5, 3)).astype("float32")
    k = np.full((1, 2, 5, 4), -200.0, "float32")
    module = MODULES[framework]
    want = ref.linear_attention(q.astype(float), k.astype(float), v.astype(float))
    np.testing.assert_allclose(want, 0.0, atol=1e-70)
    for rotary in (False, True):
        got = to_numpy(module.linear_attention(*(_as(framework, a) for a in (q, k, v)), rotary=rotary))
        assert np.isfinite(got).all(), got
        np.testing.assert_allclose(got, want, atol=1e-7)
    state, norm = _as(framework, np.zeros((1, 2, 4, 3), "float32")), _as(framework, np.zeros((1, 2, 4), "float32"))
    for t in range(5):
        y, state, norm = module.linear_attention_step(state, norm, *(_as(framework, a[..., t, :]) for a in (q, k, v)),
                                                      position=t)
        assert np.isfinite(to_numpy(y)).all() and np.allclose(to_numpy(y), 0.0), to_numpy(y)
