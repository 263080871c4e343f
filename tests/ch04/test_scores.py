"""Chapter 4 score functions: Keras ↔ PyTorch parity, properties against the NumPy references, agreement with
the frameworks' own attention kernels, clear errors, and exercise checkers that name each mistake."""

import inspect

import numpy as np
import pytest
import torch
from conftest import as_input, to_numpy
from hypothesis import given, settings
from hypothesis import strategies as st

import attention_course as ac
from attention_course import exercises
from attention_course.core.backend import backend
from attention_course.core.errors import ConfigError, ShapeError
from attention_course.core.parity import torch_to_keras
from attention_course.data import synthetic
from attention_course.exercises import ExerciseError, reference_score, score_params

RTOL, ATOL = 1e-5, 1e-6
SCORES = ("dot", "scaled_dot", "general", "concat", "additive")
LEARNED = ("general", "concat", "additive")
CLASSES = {"dot": "DotScore", "scaled_dot": "ScaledDotScore", "general": "GeneralScore", "concat": "ConcatScore",
           "additive": "AdditiveScore"}


def _args(score, d_q, d_k, units):
    return {"dot": (), "scaled_dot": (), "general": (d_q, d_k)}.get(score, (d_q, d_k, units))


def _inputs(seed, b=2, t_q=3, t_k=5, d_q=6, d_k=6, d_v=4):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=s).astype("float32") for s in [(b, t_q, d_q), (b, t_k, d_k), (b, t_k, d_v)])
    mask = rng.random((b, t_k)) > 0.3
    mask[:, -1] = True
    return q, k, v, mask


# --- the twins --------------------------------------------------------------------------------------------

def test_both_frameworks_name_the_same_scores():
    assert ac.torch.SCORES == ac.keras.SCORES == SCORES


@pytest.mark.parametrize("name", [*CLASSES.values(), "LinearConcatScore", "ScoredAttention"])
def test_same_signatures(name):
    t, k = getattr(ac.torch, name), getattr(ac.keras, name)

    def params(f):
        return [p for p in inspect.signature(f).parameters.values() if p.name not in {"self", "kwargs"}]

    assert params(t.__init__) == params(k.__init__)
    assert params(t.forward) == params(k.call)


@pytest.mark.parametrize("score", SCORES)
def test_score_modules_agree_with_shared_weights(score):
    d_k = 7 if score in LEARNED else 6                      # learned scores: d_q ≠ d_k is allowed
    q, k, _, _ = _inputs(0, d_k=d_k)
    torch.manual_seed(0)
    tm = getattr(ac.torch, CLASSES[score])(*_args(score, 6, d_k, 5))
    km = getattr(ac.keras, CLASSES[score])(*_args(score, 6, d_k, 5))
    km(q, k)
    torch_to_keras(tm, km)
    with torch.no_grad():
        expected = tm(torch.as_tensor(q), torch.as_tensor(k)).numpy()
    assert expected.shape == (2, 3, 5)
    np.testing.assert_allclose(np.asarray(km(q, k)), expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("score", SCORES)
def test_scored_attention_agrees_with_shared_weights(score):
    d_k = 7 if score in LEARNED else 6
    q, k, v, mask = _inputs(1, d_k=d_k)
    torch.manual_seed(1)
    tm, km = ac.torch.ScoredAttention(score, 6, d_k, 5), ac.keras.ScoredAttention(score, 6, d_k, 5)
    km(q, k, v, mask=mask)
    torch_to_keras(tm, km)
    with torch.no_grad():
        tc, tw = tm(*map(torch.as_tensor, (q, k, v)), mask=torch.as_tensor(mask), return_weights=True)
    kc, kw = km(q, k, v, mask=mask, return_weights=True)
    np.testing.assert_allclose(np.asarray(kw), tw.numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(np.asarray(kc), tc.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("score", SCORES)
def test_seq2seq_with_each_score_agrees(score):
    task = synthetic.sequence_task(16, min_len=2, max_len=9, seed=3)
    torch.manual_seed(2)
    tm = ac.torch.ScoredSeq2Seq(14, embed=8, hidden=12, score=score)
    km = ac.keras.ScoredSeq2Seq(14, embed=8, hidden=12, score=score)
    inputs = (task.src, task.tgt_in, task.src_mask)
    km(*inputs)
    torch_to_keras(tm, km)
    with torch.no_grad():
        expected = tm(*map(torch.as_tensor, inputs)).numpy()
    np.testing.assert_allclose(np.asarray(km(*inputs)), expected, rtol=RTOL, atol=ATOL)
    t_tokens, t_w = tm.generate(torch.as_tensor(task.src), 6, torch.as_tensor(task.src_mask))
    k_tokens, k_w = km.generate(task.src, 6, task.src_mask)
    np.testing.assert_array_equal(np.asarray(k_tokens), t_tokens.numpy())
    np.testing.assert_allclose(np.asarray(k_w), t_w.numpy(), rtol=RTOL, atol=ATOL)


def test_seq2seq_default_is_unchanged(fw):
    plain, dot = fw.Seq2Seq(14, 8, 12), fw.Seq2Seq(14, 8, 12, attention=True)
    assert not plain.use_attention and dot.use_attention
    assert type(dot.attention).__name__ == "DotProductAttention"
    scored = fw.ScoredSeq2Seq(14, 8, 12, score="additive")
    assert scored.use_attention and scored.attention.score_name == "additive"
    assert isinstance(scored, fw.Seq2Seq) and "score" not in inspect.signature(fw.Seq2Seq).parameters


def test_seq2seq_dot_score_equals_the_chapter_1_model():
    task = synthetic.sequence_task(8, min_len=2, max_len=7, seed=4)
    inputs = [torch.as_tensor(a) for a in (task.src, task.tgt_in, task.src_mask)]
    torch.manual_seed(3)
    chapter1 = ac.torch.Seq2Seq(14, 8, 12, attention=True)
    scored = ac.torch.ScoredSeq2Seq(14, 8, 12, score="dot")
    scored.load_state_dict(chapter1.state_dict())            # no attention parameters: same keys
    with torch.no_grad():
        np.testing.assert_allclose(scored(*inputs).numpy(), chapter1(*inputs).numpy(), rtol=1e-6, atol=1e-7)


# --- properties, in each framework ------------------------------------------------------------------------

def _layer_and_params(fw, score, d_q, d_k, units, q, k):
    if backend(fw).is_torch:
        torch.manual_seed(0)
    layer = fw.ScoredAttention(score, d_q, d_k, units)
    layer.score(as_input(fw, q), as_input(fw, k))           # builds the Keras sub-layers
    return layer, score_params(layer.score)


@st.composite
def score_inputs(draw):
    score = draw(st.sampled_from(SCORES))
    b, t_q, t_k = draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 6))
    d_q = draw(st.integers(1, 8))
    d_k = draw(st.integers(1, 8)) if score in LEARNED else d_q
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    q = (rng.normal(size=(b, t_q, d_q)) * 2).astype("float32")
    k = (rng.normal(size=(b, t_k, d_k)) * 2).astype("float32")
    v = rng.normal(size=(b, t_k, 3)).astype("float32")
    mask = rng.random((b, t_k)) > draw(st.floats(0.0, 1.0))
    return score, q, k, v, mask, draw(st.integers(1, 6))


@settings(max_examples=30, deadline=None)
@given(score_inputs())
def test_weights_are_a_distribution_over_visible_keys(fw, inputs):
    score, q, k, v, mask, units = inputs
    layer, params = _layer_and_params(fw, score, q.shape[-1], k.shape[-1], units, q, k)
    ctx, w = layer(*(as_input(fw, a) for a in (q, k, v)), mask=as_input(fw, mask), return_weights=True)
    ctx, w = to_numpy(ctx), to_numpy(w)
    assert not np.isnan(w).any() and not np.isnan(ctx).any(), "a fully masked row gives zeros, not NaN"
    visible = np.broadcast_to(mask[:, None, :], w.shape)
    assert (w[~visible] == 0).all(), "masked keys must get exactly zero weight"
    rows = mask.any(-1)
    np.testing.assert_allclose(w[rows].sum(-1), 1, rtol=1e-5)
    assert (w[~rows] == 0).all() and (ctx[~rows] == 0).all()
    ref_w = exercises.reference_masked_softmax(reference_score(score, q.astype(float), k.astype(float), params), mask)
    np.testing.assert_allclose(w, ref_w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ctx, ref_w @ v, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("score", SCORES)
def test_scores_match_the_numpy_references(fw, score):
    d_k = 5 if score in LEARNED else 6
    q, k, _, _ = _inputs(2, d_k=d_k)
    layer, params = _layer_and_params(fw, score, 6, d_k, 4, q, k)
    got = to_numpy(layer.score(as_input(fw, q), as_input(fw, k)))
    np.testing.assert_allclose(got, reference_score(score, q.astype(float), k.astype(float), params),
                               rtol=1e-4, atol=1e-5)


def test_scaled_dot_is_dot_over_sqrt_d(fw):
    q, k, _, _ = _inputs(3, d_q=16, d_k=16)
    dot = to_numpy(fw.DotScore()(as_input(fw, q), as_input(fw, k)))
    scaled = to_numpy(fw.ScaledDotScore()(as_input(fw, q), as_input(fw, k)))
    np.testing.assert_allclose(scaled, dot / 4.0, rtol=1e-6, atol=1e-7)   # √16 = 4


def test_general_with_identity_is_dot(fw):
    q, k, _, _ = _inputs(4)
    general = fw.GeneralScore(6, 6)
    general(as_input(fw, q), as_input(fw, k))
    if backend(fw).is_torch:
        with torch.no_grad():
            general.W_a.weight.copy_(torch.eye(6))
    else:
        general.W_a.set_weights([np.eye(6, dtype="float32")])
    np.testing.assert_allclose(to_numpy(general(as_input(fw, q), as_input(fw, k))),
                               to_numpy(fw.DotScore()(as_input(fw, q), as_input(fw, k))), rtol=1e-5, atol=1e-6)


def test_concat_equals_additive_when_W_a_stacks_W_and_U():
    """Same function family: W_a [q; k] = W q + U k with W_a = [W  U] (PyTorch: weights (units, d) side by side)."""
    q, k, _, _ = _inputs(5, d_k=7)
    torch.manual_seed(4)
    additive, concat = ac.torch.AdditiveScore(6, 7, 5), ac.torch.ConcatScore(6, 7, 5)
    with torch.no_grad():
        concat.W_a.weight.copy_(torch.cat([additive.W_a.weight, additive.U_a.weight], dim=1))
        concat.v_a.weight.copy_(additive.v_a.weight)
        a = additive(torch.as_tensor(q), torch.as_tensor(k)).numpy()
        c = concat(torch.as_tensor(q), torch.as_tensor(k)).numpy()
    np.testing.assert_allclose(c, a, rtol=1e-5, atol=1e-6)
    # and in Keras, the same stacking of the kernels (in, out) along the input axis
    ka, kc = ac.keras.AdditiveScore(6, 7, 5), ac.keras.ConcatScore(6, 7, 5)
    ka(q, k), kc(q, k)
    kc.W_a.set_weights([np.concatenate([ka.W_a.get_weights()[0], ka.U_a.get_weights()[0]], axis=0)])
    kc.v_a.set_weights(ka.v_a.get_weights())
    np.testing.assert_allclose(np.asarray(kc(q, k)), np.asarray(ka(q, k)), rtol=1e-5, atol=1e-6)


def test_concat_and_additive_have_the_same_number_of_parameters():
    concat, additive = ac.torch.ConcatScore(6, 7, 5), ac.torch.AdditiveScore(6, 7, 5)
    count = lambda m: sum(p.numel() for p in m.parameters())
    assert count(concat) == count(additive) == (6 + 7) * 5 + 5



# --- the slides' concat, W_a [q; k]: linear, so the query cannot change the weights --------------------------

def _linear_concat(fw, q, k, seed=0):
    if backend(fw).is_torch:
        torch.manual_seed(seed)
    layer = fw.LinearConcatScore(q.shape[-1], k.shape[-1])
    layer(as_input(fw, q), as_input(fw, k))                  # builds the Keras Dense
    return layer


def test_linear_concat_agrees_with_shared_weights():
    q, k, _, _ = _inputs(8, d_q=6, d_k=7)
    torch.manual_seed(5)
    tm, km = ac.torch.LinearConcatScore(6, 7), ac.keras.LinearConcatScore(6, 7)
    km(q, k)
    torch_to_keras(tm, km)
    with torch.no_grad():
        expected = tm(torch.as_tensor(q), torch.as_tensor(k)).numpy()
    assert expected.shape == (2, 3, 5)
    np.testing.assert_allclose(np.asarray(km(q, k)), expected, rtol=RTOL, atol=ATOL)


def test_linear_concat_matches_the_numpy_reference_and_splits_into_query_and_key_parts(fw):
    q, k, _, _ = _inputs(9, d_q=6, d_k=7)
    layer = _linear_concat(fw, q, k)
    params = score_params(layer)
    assert params["W"].shape == (13,)
    got = to_numpy(layer(as_input(fw, q), as_input(fw, k)))
    np.testing.assert_allclose(got, reference_score("linear_concat", q.astype(float), k.astype(float), params),
                               rtol=1e-4, atol=1e-5)
    w_q, w_k = params["W"][:6], params["W"][6:]              # W_a [q; k] = w_q·q + w_k·k
    np.testing.assert_allclose(got, (q @ w_q)[:, :, None] + (k @ w_k)[:, None, :], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_linear_concat_weights_do_not_depend_on_the_query(fw, seed):
    """Each query adds one number to all its scores; the softmax over the keys removes it: every query of an
    example gets the same weights, while the concat score with tanh gives different queries different weights."""
    q, k, v, mask = _inputs(10 + seed, t_q=4, d_q=6, d_k=7)
    q = q * 3.0                                              # queries far apart
    torch.manual_seed(seed)
    linear = fw.ScoredAttention("dot")                       # any attention: its score is replaced below
    linear.score = _linear_concat(fw, q, k, seed)
    scores = to_numpy(linear.score(as_input(fw, q), as_input(fw, k)))
    assert np.ptp(scores[:, :, 0] - scores[:, :, 1], axis=1).max() < 1e-4   # key differences: the same per query
    assert np.ptp(scores, axis=1).max() > 0.1                 # ... although the raw scores do move with the query
    _, w = linear(*(as_input(fw, a) for a in (q, k, v)), mask=as_input(fw, mask), return_weights=True)
    w = to_numpy(w)
    np.testing.assert_allclose(w, np.broadcast_to(w[:, :1], w.shape), rtol=1e-5, atol=1e-6)
    tanh_concat = fw.ScoredAttention("concat", 6, 7, 5)
    _, w_tanh = tanh_concat(*(as_input(fw, a) for a in (q, k, v)), mask=as_input(fw, mask), return_weights=True)
    assert np.abs(to_numpy(w_tanh) - to_numpy(w_tanh)[:, :1]).max() > 1e-3


def test_linear_concat_refuses_bad_sizes(fw):
    for bad in (0, 2.5, True, -3):
        with pytest.raises(ConfigError):
            fw.LinearConcatScore(bad, 4)
    layer = fw.LinearConcatScore(3, 4)
    q, k, _, _ = _inputs(11, d_q=3, d_k=5)
    with pytest.raises(ShapeError, match="LinearConcatScore was built for d_query=3 and d_key=4"):
        layer(as_input(fw, q), as_input(fw, k))


# --- agreement with the frameworks' own attention ----------------------------------------------------------

def test_scaled_dot_matches_torch_sdpa():
    q, k, v, mask = _inputs(6, b=3, t_q=4, t_k=7, d_q=8, d_k=8, d_v=5)
    mask[:, 0] = True                       # SDPA gives NaN for a fully masked row; ours gives zeros
    ctx = ac.torch.ScoredAttention("scaled_dot")(*map(torch.as_tensor, (q, k, v)), mask=torch.as_tensor(mask))
    # SDPA's boolean attn_mask means the same as ours, True = may attend, broadcast to (B, T_q, T_k)
    ref = torch.nn.functional.scaled_dot_product_attention(*map(torch.as_tensor, (q, k, v)),
                                                           attn_mask=torch.as_tensor(mask)[:, None, :])
    np.testing.assert_allclose(ctx.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


def test_scaled_dot_matches_keras_multi_head_attention_core():
    import keras

    q, k, v, mask = _inputs(7, b=3, t_q=4, t_k=7, d_q=8, d_k=8, d_v=8)
    mask[:, 0] = True
    ctx, w = ac.keras.ScoredAttention("scaled_dot")(q, k, v, mask=mask, return_weights=True)
    mha = keras.layers.MultiHeadAttention(num_heads=1, key_dim=8)
    mha(q, v, key=k)                                          # builds the layer (its projections are unused)
    heads = lambda x: x[:, :, None, :]                        # (B, T, d) → (B, T, 1 head, d), "pre-projected"
    mask3 = np.broadcast_to(mask[:, None, :], (3, 4, 7))      # Keras: (B, T_q, T_k), True = may attend
    out, scores = mha._compute_attention(heads(q), heads(k), heads(v), attention_mask=mask3,
                                         return_attention_scores=True)
    np.testing.assert_allclose(np.asarray(ctx), np.asarray(out)[:, :, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(w), np.asarray(scores)[:, 0], rtol=1e-5, atol=1e-6)
    # and keras.ops.dot_product_attention, which takes (B, T, heads, d) and a (B, heads, T_q, T_k) mask
    fused = keras.ops.dot_product_attention(heads(q), heads(k), heads(v), mask=mask3[:, None])
    np.testing.assert_allclose(np.asarray(ctx), np.asarray(fused)[:, :, 0], rtol=1e-5, atol=1e-6)


# --- errors -----------------------------------------------------------------------------------------------

def test_unknown_score_lists_the_names(fw):
    with pytest.raises(ConfigError, match="unknown score 'cosine'.*dot, scaled_dot, general, concat, additive"):
        fw.ScoredAttention("cosine")
    with pytest.raises(ConfigError, match="'additive' score is learned.*d_query"):
        fw.ScoredAttention("additive")
    with pytest.raises(ConfigError, match="unknown score 'bilinear'"):
        fw.ScoredSeq2Seq(14, 8, 12, score="bilinear")


@pytest.mark.parametrize(
    "score, q_shape, k_shape, v_shape, mask_shape, needle",
    [
        ("dot", (2, 3, 4), (2, 5, 6), (2, 5, 6), None, "query (2, 3, 4) has d=4, key (2, 5, 6) has d=6"),
        ("scaled_dot", (2, 3, 4), (2, 5, 4), (2, 6, 4), None, "key (2, 5, 4), value (2, 6, 4)"),
        ("additive", (2, 3, 4), (2, 5, 5), (2, 5, 2), None, "built for d_query=4 and d_key=6, but got query "
                                                            "(2, 3, 4) (d_q=4) and key (2, 5, 5) (d_k=5)"),
        ("general", (2, 3, 3), (2, 5, 6), (2, 5, 2), None, "built for d_query=4 and d_key=6"),
        ("concat", (2, 3, 4), (2, 5, 6), (2, 5, 2), (2, 3), "mask of shape (2, 3) does not fit query (2, 3, 4) "
                                                            "and key (2, 5, 6)"),
        ("additive", (2, 3, 4), (2, 5, 6), (2, 4, 2), None, "key (2, 5, 6), value (2, 4, 2)"),
        ("general", (2, 3, 4), (1, 5, 6), (1, 5, 2), None, "share the batch size: query (2, 3, 4)"),
        ("concat", (3, 4), (2, 5, 6), (2, 5, 2), None, "got query (3, 4), key (2, 5, 6)"),
    ],
)
def test_shape_errors_name_the_shapes(fw, score, q_shape, k_shape, v_shape, mask_shape, needle):
    layer = fw.ScoredAttention(score, 4, 6, 3)
    args = [as_input(fw, np.zeros(s, "float32")) for s in (q_shape, k_shape, v_shape)]
    mask = None if mask_shape is None else as_input(fw, np.ones(mask_shape, bool))
    with pytest.raises(ShapeError) as err:
        layer(*args, mask=mask)
    assert needle in str(err.value)


def test_learned_scores_accept_different_query_and_key_sizes(fw):
    q, k, v, mask = _inputs(8, d_q=3, d_k=9)
    for score in LEARNED:
        ctx = fw.ScoredAttention(score, 3, 9, 4)(*(as_input(fw, a) for a in (q, k, v)), mask=as_input(fw, mask))
        assert to_numpy(ctx).shape == (2, 3, 4)


# --- exercise checkers ------------------------------------------------------------------------------------

def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def projected_attention(axis=-1, scale=True, masking="keys", fill=-np.inf):
    def attend(q, k, v, mask):
        s = q @ k.transpose(0, 2, 1)
        s = s / np.sqrt(q.shape[-1]) if scale else s
        if masking == "keys":
            s = np.where(mask[:, None, :], s, fill)
        elif masking == "queries":
            s = np.where(mask[:, :, None], s, fill)
        w = _softmax(s, axis)
        return w @ v, w
    return attend


def test_scaled_dot_attention_checker_accepts_a_correct_answer():
    exercises.scaled_dot_attention(projected_attention(), seed=0)
    exercises.scaled_dot_attention(projected_attention(fill=-1e9), seed=1)


@pytest.mark.parametrize("wrong, needle", [
    (projected_attention(axis=1), "softmax over the wrong axis"),
    (projected_attention(axis=1, fill=-1e9), "softmax over the wrong axis"),
    (projected_attention(scale=False), "missing scale"),
    (projected_attention(masking=None), "mask not applied"),
    (projected_attention(masking="queries"), "mask broadcast wrongly, over the queries instead of the keys"),
    (projected_attention(masking="queries", fill=-1e9), "mask broadcast wrongly"),
    (projected_attention(scale=False, masking=None), r"\(1\) missing scale.*\(2\) mask not applied"),
    (lambda q, k, v, m: (projected_attention()(q, k, v, m)[1] @ k, projected_attention()(q, k, v, m)[1]), "context"),
])
def test_scaled_dot_attention_checker_names_the_mistake(wrong, needle):
    with np.errstate(all="ignore"), pytest.raises(ExerciseError, match=needle):
        exercises.scaled_dot_attention(wrong, seed=0)


def test_mask_over_queries_is_caught_when_shapes_differ():
    # a learner's function that only runs when T_q == T_k still gets a hint on the other trials
    def wrong(q, k, v, mask):
        s = np.where(mask[:, :, None], q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), -np.inf)
        w = _softmax(s)
        return w @ v, w

    def square_only(fn):
        return lambda q, k, v, m: fn(q, k, v, m) if q.shape[1] != k.shape[1] else projected_attention()(q, k, v, m)

    with np.errstate(all="ignore"), pytest.raises(ExerciseError, match=r"T_q ≠ T_k.*\(B, 1, T_k\)"):
        exercises.scaled_dot_attention(square_only(wrong), seed=0)


def _additive(q, k, W, U, v):
    return np.tanh((q @ W)[:, :, None] + (k @ U)[:, None]) @ v


@pytest.mark.parametrize("wrong, needle", [
    (lambda q, k, W, U, v: ((q @ W)[:, :, None] + (k @ U)[:, None]) @ v, "tanh is missing"),
    (lambda q, k, W, U, v: np.tanh(q @ W + k @ U) @ v, "Every query must meet every key"),
    (lambda q, k, W, U, v: _additive(q, k, W, U, v).transpose(0, 2, 1), r"the result is \(B, T_k, T_q\)"),
    (lambda q, k, W, U, v: _additive(q, k, U, W, v), "W and U are swapped"),
    (lambda q, k, W, U, v: np.tanh((q @ W)[:, :, None] + (k @ U)[:, None]).sum(-1), "v is missing"),
])
def test_additive_checker_names_the_mistake(wrong, needle):
    exercises.additive_score(_additive, seed=0)
    with pytest.raises(ExerciseError, match=needle):
        exercises.additive_score(wrong, seed=0)


def test_general_and_concat_checkers():
    exercises.general_score(lambda q, k, W: q @ W @ k.transpose(0, 2, 1), seed=0)
    with pytest.raises(ExerciseError, match="W is transposed"):
        exercises.general_score(lambda q, k, W: q @ W.T @ k.transpose(0, 2, 1), seed=0)

    def concat(q, k, W, v, order=(0, 1)):
        b, t_q, t_k = q.shape[0], q.shape[1], k.shape[1]
        parts = [np.broadcast_to(q[:, :, None], (b, t_q, t_k, q.shape[-1])),
                 np.broadcast_to(k[:, None], (b, t_q, t_k, k.shape[-1]))]
        return np.tanh(np.concatenate([parts[i] for i in order], -1) @ W) @ v

    exercises.concat_score(concat, seed=0)
    with pytest.raises(ExerciseError, match="wrong order"):
        exercises.concat_score(lambda q, k, W, v: concat(q, k, W, v, order=(1, 0)), seed=0)
    with pytest.raises(ExerciseError, match="tanh is missing"):
        exercises.concat_score(_no_tanh_concat, seed=0)


def _no_tanh_concat(q, k, W, v):
    d_q = q.shape[-1]
    return ((q @ W[:d_q])[:, :, None] + (k @ W[d_q:])[:, None]) @ v


# --- charts -----------------------------------------------------------------------------------------------

def test_chart_helpers_build_valid_specs_with_alt_text():
    import pandas as pd

    scaling = pd.DataFrame([{"d": d, "scores": s, "quantity": q, "value": float(d)}
                            for d in (2, 4) for s in ("a", "b") for q in ("variance", "entropy", "gradient")])
    costs = pd.DataFrame({"length": [16, 64] * 2, "ratio": [1.5, 9.0, 2.0, 20.0], "size": ["16"] * 2 + ["64"] * 2,
                          "framework": ["keras"] * 4})
    summary = pd.DataFrame({"framework": ["keras"] * 3, "model": ["none", "dot", "additive"],
                            "mean": [0.3, 0.6, 0.7], "std": [0.01, 0.02, 0.03]})
    charts = [ac.viz.scaling_chart(scaling, title="s", description="alt s", log_quantities=["variance"]),
              ac.viz.cost_chart(costs, title="c", description="alt c"),
              ac.viz.score_comparison(summary, x="model", baseline="none", order=["dot", "additive"],
                                      title="q", description="alt q")]
    for chart, alt_text in zip(charts, ["alt s", "alt c", "alt q"], strict=True):
        spec = chart.to_dict()                                  # validates against the Vega-Lite schema
        assert spec["description"] == alt_text



@pytest.mark.parametrize("score", ["concat", "additive"])
@pytest.mark.parametrize("t_q", [1, 3])
def test_keras_tanh_scores_feed_their_dense_layers_rows(score, t_q, monkeypatch):
    """TensorFlow 2.20 (Colab's) corrupts memory on a (B, 1, T_k, n) @ (n, m) product: a Dense layer on the 4-D
    pairs of a decoding step (T_q = 1) killed Chapter 4's Keras kernel in `make colab-check`. The newer TensorFlow
    here does not crash, so this checks the cause: every Dense inside the two tanh scores gets at most 3 axes."""
    import keras

    ranks, dense_call = [], keras.layers.Dense.call

    def recording_call(self, x, *args, **kwargs):
        ranks.append(len(x.shape))
        return dense_call(self, x, *args, **kwargs)

    monkeypatch.setattr(keras.layers.Dense, "call", recording_call)
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(4, t_q, 6)).astype("float32"), rng.normal(size=(4, 5, 6)).astype("float32")
    torch.manual_seed(0)
    tm = getattr(ac.torch, CLASSES[score])(*_args(score, 6, 6, 8))
    km = getattr(ac.keras, CLASSES[score])(*_args(score, 6, 6, 8))
    km(q, k)
    assert ranks and max(ranks) <= 3, ranks
    torch_to_keras(tm, km)
    with torch.no_grad():
        expected = tm(torch.as_tensor(q), torch.as_tensor(k)).numpy()
    assert expected.shape == (4, t_q, 5)
    np.testing.assert_allclose(np.asarray(km(q, k)), expected, rtol=RTOL, atol=ATOL)
