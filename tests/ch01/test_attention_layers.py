"""Properties of the attention layers, in both frameworks, against the NumPy reference."""

import numpy as np
import pytest
from conftest import as_input, to_numpy
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_course.core.errors import ShapeError
from attention_course.exercises import reference_attention


@st.composite
def attention_inputs(draw):
    b, tq, tk = draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 6))
    d, dv = draw(st.integers(1, 8)), draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    q = (rng.normal(size=(b, tq, d)) * 2).astype("float32")
    k = (rng.normal(size=(b, tk, d)) * 2).astype("float32")
    v = rng.normal(size=(b, tk, dv)).astype("float32")
    mask = rng.random((b, tk)) > draw(st.floats(0.0, 1.0))
    return q, k, v, mask


def run(fw, q, k, v, mask=None, scale=False):
    layer = fw.DotProductAttention(scale=scale)
    m = None if mask is None else as_input(fw, mask)
    ctx, w = layer(as_input(fw, q), as_input(fw, k), as_input(fw, v), mask=m, return_weights=True)
    return to_numpy(ctx), to_numpy(w)


@settings(max_examples=40, deadline=None)
@given(attention_inputs())
def test_weights_are_a_distribution_over_visible_keys(fw, inputs):
    q, k, v, mask = inputs
    ctx, w = run(fw, q, k, v, mask)
    assert not np.isnan(w).any() and not np.isnan(ctx).any()
    visible = mask[:, None, :].repeat(q.shape[1], axis=1)
    assert (w[~visible] == 0).all(), "masked keys must get exactly zero weight"
    rows_with_keys = mask.any(-1)
    np.testing.assert_allclose(w[rows_with_keys].sum(-1), 1, rtol=1e-5)
    assert (w[~rows_with_keys] == 0).all(), "a fully masked row gives zeros, not NaN"
    ref_ctx, ref_w = reference_attention(q.astype(float), k.astype(float), v.astype(float), mask)
    np.testing.assert_allclose(w, ref_w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ctx, ref_ctx, rtol=1e-4, atol=1e-4)


def test_fully_masked_batch_gives_zeros(fw):
    q = np.ones((2, 3, 4), "float32")
    mask = np.zeros((2, 5), bool)
    ctx, w = run(fw, q, q[:, :1].repeat(5, 1), q[:, :1].repeat(5, 1), mask)
    assert not np.isnan(w).any() and (w == 0).all() and (ctx == 0).all()


def test_scaled_equals_dot_over_sqrt_d(fw):
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=s).astype("float32") for s in [(2, 3, 16), (2, 4, 16), (2, 4, 5)])
    _, w_scaled = run(fw, q, k, v, scale=True)
    _, w_manual = run(fw, q / 4.0, k, v)        # √16 = 4
    np.testing.assert_allclose(w_scaled, w_manual, rtol=1e-5, atol=1e-7)


def test_permuting_keys_and_values_changes_nothing(fw):
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=s).astype("float32") for s in [(1, 3, 8), (1, 6, 8), (1, 6, 4)])
    perm = rng.permutation(6)
    ctx, w = run(fw, q, k, v)
    ctx_p, w_p = run(fw, q, k[:, perm], v[:, perm])
    np.testing.assert_allclose(ctx, ctx_p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w[..., perm], w_p, rtol=1e-5, atol=1e-7)


def test_3d_mask_per_query(fw):
    rng = np.random.default_rng(2)
    q, k, v = (rng.normal(size=s).astype("float32") for s in [(1, 3, 4), (1, 3, 4), (1, 3, 2)])
    causal = np.tril(np.ones((3, 3), bool))[None]
    _, w = run(fw, q, k, v, causal)
    assert (w[0][~causal[0]] == 0).all()
    np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-5)


def test_masked_softmax_function(fw):
    scores = np.array([[[1.0, 2.0, 3.0]]], "float32")
    w = to_numpy(fw.masked_softmax(as_input(fw, scores), as_input(fw, np.array([[True, False, True]]))))
    assert w[0, 0, 1] == 0
    np.testing.assert_allclose(w[0, 0, [0, 2]], np.exp([1, 3]) / np.exp([1, 3]).sum(), rtol=1e-6)


@pytest.mark.parametrize(
    "q_shape, k_shape, v_shape, mask_shape, needle",
    [
        ((2, 3, 4), (2, 5, 6), (2, 5, 6), None, "query (2, 3, 4) has d=4, key (2, 5, 6) has d=6"),
        ((2, 3, 4), (2, 5, 4), (2, 6, 4), None, "same number of positions T_k: key (2, 5, 4), value (2, 6, 4)"),
        ((2, 3, 4), (2, 5, 4), (2, 5, 4), (2, 3), "mask of shape (2, 3) does not fit query (2, 3, 4)"),
        ((2, 3, 4), (2, 5, 4), (2, 5, 4), (2, 5, 3), "mask of shape (2, 5, 3)"),
        ((3, 4), (2, 5, 4), (2, 5, 4), None, "got query (3, 4)"),
        ((2, 3, 4), (1, 5, 4), (1, 5, 4), None, "share the batch size"),
    ],
)
def test_shape_errors_name_the_shapes(fw, q_shape, k_shape, v_shape, mask_shape, needle):
    args = [np.zeros(s, "float32") for s in (q_shape, k_shape, v_shape)]
    mask = None if mask_shape is None else as_input(fw, np.ones(mask_shape, bool))
    with pytest.raises(ShapeError) as err:
        fw.DotProductAttention()(*[as_input(fw, a) for a in args], mask=mask)
    assert needle in str(err.value)
