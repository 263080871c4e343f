"""Bad input to the layers, models, training helpers and metrics, in both frameworks: nothing silently wrong
(masks that are not bool or 0/1, fractional windows, tau <= 0, lengths that differ, ids outside the vocabulary),
clear errors naming the argument (dtypes, empty sequences, shapes), no NaN from what a mask hides.
The full list of bad inputs tried is ``tools/probes/layers.py`` (``python tools/probe_inputs.py layers``)."""

import re

import numpy as np
import pytest
from conftest import as_input, to_numpy

import attention_course as ac
from attention_course.core import metrics
from attention_course.core.errors import ConfigError, InputError, ShapeError

B, TQ, TK, D, DV = 2, 3, 5, 4, 3
KEYS = np.array([[True, True, True, False, False], [True, True, True, True, False]])
MASK_RULE = "a mask is True/1 where a key may be attended and False/0 where it is hidden"


def _qkv(fw, d=D, seed=0):
    rng = np.random.default_rng(seed)
    return [as_input(fw, rng.normal(size=s).astype("float32")) for s in [(B, TQ, d), (B, TK, d), (B, TK, DV)]]


def _layer(fw, name):
    return {"dot": lambda: fw.DotProductAttention(), "scored": lambda: fw.ScoredAttention("additive", d_query=D),
            "hard": lambda: fw.HardAttention(seed=0), "gumbel": lambda: fw.GumbelSoftmaxAttention(seed=0),
            "local": lambda: fw.LocalAttention("m", window=1)}[name]()


def _run(fw, layer, *args, **kwargs):
    if fw is ac.torch:
        import torch

        with torch.no_grad():
            return layer(*args, **kwargs)
    return layer(*args, **kwargs)


def _context(out):
    return to_numpy(out[0] if isinstance(out, tuple) else out)


# ---- masks: bool or 0/1, nothing else ----------------------------------------------------------------------

@pytest.mark.parametrize("layer", ["dot", "scored", "hard", "gumbel", "local"])
@pytest.mark.parametrize("mask, shown", [
    (np.where(KEYS, 0.0, -np.inf), "-inf"), (np.where(KEYS, 0.0, -1e9), "-1e+09"), (KEYS * 0.5, "0.5"),
])
def test_a_mask_that_is_not_0_or_1_is_refused(fw, layer, mask, shown):
    q, k, v = _qkv(fw)
    with pytest.raises(InputError, match=re.escape(f"{MASK_RULE}; got values ") + rf".*{re.escape(shown)}"):
        _run(fw, _layer(fw, layer), q, k, v, mask=as_input(fw, mask.astype("float32")))


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32"])
def test_a_0_1_number_mask_acts_like_bool(fw, dtype):
    q, k, v = _qkv(fw)
    layer = fw.DotProductAttention()
    got = _run(fw, layer, q, k, v, mask=as_input(fw, KEYS.astype(dtype)), return_weights=True)
    ref = _run(fw, layer, q, k, v, mask=as_input(fw, KEYS), return_weights=True)
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def test_masked_softmax_refuses_an_additive_mask_and_checks_its_shapes(fw):
    scores = as_input(fw, np.zeros((B, TQ, TK), "float32"))
    with pytest.raises(InputError, match="pass \\(mask == 0\\) instead"):
        fw.masked_softmax(scores, as_input(fw, np.where(KEYS, 0.0, -np.inf).astype("float32")))
    with pytest.raises(ShapeError, match=r"expects scores \(batch, T_q, T_k\) with a mask; got scores \(2, 5\)"):
        fw.masked_softmax(as_input(fw, np.zeros((B, TK), "float32")), as_input(fw, KEYS))
    with pytest.raises(ShapeError, match=r"mask of shape \(2, 3\) does not fit scores \(2, 3, 5\)"):
        fw.masked_softmax(scores, as_input(fw, KEYS[:, :3]))


def test_models_and_blocks_refuse_an_additive_mask(fw):
    additive = as_input(fw, np.where(KEYS, 0.0, -np.inf).astype("float32"))
    states, ids = as_input(fw, np.ones((B, TK, D), "float32")), as_input(fw, np.ones((B, TK), "int64"))
    with pytest.raises(InputError, match="mask: " + re.escape(MASK_RULE)):
        _run(fw, fw.AttentionPooling(D), states, additive)
    with pytest.raises(InputError, match="src_mask: " + re.escape(MASK_RULE)):
        _run(fw, fw.Seq2Seq(12, embed=4, hidden=6, attention=True), ids, ids, additive)


# ---- arguments ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("window", [2.5, 2.0, True, "2"])
def test_window_must_be_a_whole_number(fw, window):
    with pytest.raises(ConfigError, match=r"window \(the half-width D\) must be a whole number \(int\)"):
        fw.LocalAttention("m", window=window)


@pytest.mark.parametrize("tau", [0, 0.0, -1.0, float("nan"), float("inf")])
def test_tau_must_be_positive(fw, tau):
    with pytest.raises(ConfigError, match="tau must be a finite number > 0"):
        fw.GumbelSoftmaxAttention(tau=tau)
    with pytest.raises(ConfigError, match="tau must be a finite number > 0"):
        fw.gumbel_softmax(as_input(fw, np.zeros((2, 4), "float32")), tau=tau)
    with pytest.raises(ConfigError, match="tau must be a finite number > 0"):
        fw.PointerModel(10, 4, 6, 3, attention="gumbel", tau=tau)


def test_local_p_takes_queries_of_size_dim(fw):
    q, k, v = _qkv(fw, d=6)
    with pytest.raises(ShapeError, match=r"LocalAttention\(mode='p'\) query was built for d=8 .* \(d=6\)"):
        _run(fw, fw.LocalAttention("p", window=1, dim=8), q, k, v)


@pytest.mark.parametrize("make, needle", [
    (lambda fw: fw.Seq2Seq(0), "vocab must be >= 1; got 0"),
    (lambda fw: fw.ScoredAttention("general", d_query=2.5), "d_query must be a whole number"),
    (lambda fw: fw.NERTagger(10, 3, dropout=1.5), r"dropout \(a dropout rate\) must be a number in \[0, 1\)"),
    (lambda fw: fw.LocalAttention("p", window=2, dim=0), r"dim \(the query size\) must be >= 1"),
])
def test_sizes_and_rates_are_checked_alike(fw, make, needle):
    with pytest.raises(ConfigError, match=needle):
        make(fw)


def test_numpy_integers_are_sizes_in_both_frameworks(fw):
    model = fw.Seq2Seq(np.int64(12), embed=np.int64(4), hidden=np.int32(6), attention=True)
    ids = as_input(fw, np.ones((B, TK), "int64"))
    assert to_numpy(_run(fw, model, ids, ids)).shape == (B, TK, 12)


# ---- NumPy arrays, dtypes, empty sequences -----------------------------------------------------------------

def test_numpy_arrays_work_and_float_arrays_become_float32(fw):
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=s) for s in [(B, TQ, D), (B, TK, D), (B, TK, DV)])     # float64
    got = _run(fw, fw.DotProductAttention(), q, k, v, mask=KEYS)
    assert to_numpy(got).dtype == np.float32
    ref = _run(fw, fw.DotProductAttention(), *(as_input(fw, a.astype("float32")) for a in (q, k, v)),
               mask=as_input(fw, KEYS))
    np.testing.assert_allclose(to_numpy(got), to_numpy(ref), rtol=1e-6)
    assert to_numpy(_run(fw, fw.ManyToOne(10, 3, embed=4, hidden=6), np.ones((B, TK), "int64"))).shape == (B, 3)


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_queries_must_be_floats(fw, dtype):
    q, k, v = (as_input(fw, np.ones(s, dtype)) for s in [(B, TQ, D), (B, TK, D), (B, TK, DV)])
    with pytest.raises(InputError, match=f"query must be a float tensor \\(e.g. float32\\); got {dtype} of shape "
                                         r"\(2, 3, 4\)"):
        _run(fw, fw.DotProductAttention(), q, k, v)


def test_anything_but_a_tensor_or_array_is_refused(fw):
    q, k, v = _qkv(fw)
    with pytest.raises(InputError, match="mask must be a .* tensor or a NumPy array; got list"):
        _run(fw, fw.DotProductAttention(), q, k, v, mask=KEYS.tolist())
    with pytest.raises(InputError, match="mask must hold numbers"):
        fw.masked_softmax(np.zeros((B, TQ, TK), "float32"), np.full((B, TK), "yes"))


def test_empty_sequences_are_refused(fw):
    q = as_input(fw, np.ones((B, TQ, D), "float32"))
    empty = as_input(fw, np.ones((B, 0, D), "float32"))
    with pytest.raises(ShapeError, match=r"key has no positions: shape \(2, 0, 4\) has S = 0"):
        _run(fw, fw.LocalAttention("m", window=1), q, empty, empty)
    ids, none = as_input(fw, np.ones((B, TK), "int64")), as_input(fw, np.ones((B, 0), "int64"))
    model = fw.Seq2Seq(12, embed=4, hidden=6, attention=True)
    with pytest.raises(ShapeError, match=r"src has no positions: shape \(2, 0\)"):
        _run(fw, model, none, ids)
    with pytest.raises(ShapeError, match=r"tgt_in has no positions: shape \(2, 0\)"):
        _run(fw, model, ids, none)
    with pytest.raises(ConfigError, match="steps must be >= 1; got 0"):
        model.generate(ids, 0)


# ---- token ids ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, needle", [
    (-1, r"got ids from -1 to "), (12, r"got ids from \d+ to 12"), (1.5, r"got a float\d+ tensor of shape \(2, 5\)"),
])
def test_ids_outside_the_vocabulary_are_refused(fw, bad, needle):
    src = np.full((B, TK), 4, dtype=type(bad))
    src[1, 2] = bad
    tgt = as_input(fw, np.ones((B, 4), "int64"))
    rule = re.escape("src must hold integer token ids in [0, 12) (the vocabulary size is 12); ")
    with pytest.raises(InputError, match=rule + needle):
        _run(fw, fw.Seq2Seq(12, embed=4, hidden=6), as_input(fw, src), tgt)


def test_the_same_message_in_both_frameworks():
    messages = []
    for fw in (ac.keras, ac.torch):
        x = np.array([[1, 2, -1]])
        with pytest.raises(InputError) as err:
            _run(fw, fw.ManyToMany(10, 3, embed=4, hidden=6), as_input(fw, x))
        messages.append(str(err.value))
    expected = "x must hold integer token ids in [0, 10) (the vocabulary size is 10); got ids from -1 to 2"
    assert messages == [expected, expected]


def test_pointer_model_checks_ids_and_length(fw):
    model = fw.PointerModel(10, 4, length=6, steps=3, dim=8)
    with pytest.raises(InputError, match=re.escape("x must hold integer token ids in [0, 10)")):
        _run(fw, model, as_input(fw, np.full((B, 6), 10)))
    with pytest.raises(ShapeError, match="x has 7 positions, but the model was built for length=6"):
        _run(fw, model, as_input(fw, np.ones((B, 7), "int64")))


# ---- NaN and inf hidden by the mask; float16 ---------------------------------------------------------------

@pytest.mark.parametrize("layer", ["dot", "scored", "hard", "gumbel", "local"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_hidden_nan_or_inf_value_does_not_reach_the_output(fw, layer, bad):
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=s).astype("float32") for s in [(B, TQ, D), (B, TK, D), (B, TK, DV)])
    noise = {"noise": as_input(fw, rng.gumbel(size=(B, TQ, TK)).astype("float32"))} \
        if layer in ("hard", "gumbel") else {}
    attend = _layer(fw, layer)
    clean = _context(_run(fw, attend, *(as_input(fw, a) for a in (q, k, v)), mask=as_input(fw, KEYS), **noise))
    v[~KEYS] = bad
    got = _context(_run(fw, attend, *(as_input(fw, a) for a in (q, k, v)), mask=as_input(fw, KEYS), **noise))
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, clean, rtol=1e-6)


def test_a_nan_pad_does_not_reach_the_pooled_context(fw):
    states = np.random.default_rng(4).normal(size=(B, TK, D)).astype("float32")
    pool = fw.AttentionPooling(D)
    clean = to_numpy(_run(fw, pool, as_input(fw, states), as_input(fw, KEYS)))
    states[~KEYS] = np.nan
    np.testing.assert_allclose(to_numpy(_run(fw, pool, as_input(fw, states), as_input(fw, KEYS))), clean, rtol=1e-6)


def test_float16_scores_do_not_overflow(fw):
    big = as_input(fw, np.full((1, 2, 8), 100.0, "float16"))          # q·k = 80 000 > 65 504
    ctx, w = _run(fw, fw.DotProductAttention(), big, big, big, return_weights=True)
    np.testing.assert_allclose(to_numpy(w).astype("float32"), 0.5, rtol=1e-3)
    assert np.isfinite(to_numpy(ctx).astype("float32")).all()


@pytest.mark.parametrize("layer", ["dot", "scored", "hard", "gumbel", "local"])
@pytest.mark.parametrize("where", ["query", "key"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_nan_or_inf_in_the_query_or_a_visible_key_is_refused_by_name(fw, layer, where, bad):
    rng = np.random.default_rng(5)
    q, k, v = (rng.normal(size=s).astype("float32") for s in [(B, TQ, D), (B, TK, D), (B, TK, DV)])
    {"query": q, "key": k}[where][1, 2, 3] = bad                       # key 2 of example 1 is visible
    with pytest.raises(InputError, match=rf"{where} must hold finite numbers.*got 1 \(the first at index \(1, 2, 3\)"):
        _run(fw, _layer(fw, layer), *(as_input(fw, a) for a in (q, k, v)), mask=as_input(fw, KEYS))


@pytest.mark.parametrize("layer", ["dot", "scored", "hard", "gumbel", "local"])
def test_a_nan_in_a_hidden_key_changes_nothing(fw, layer):
    rng = np.random.default_rng(6)
    q, k, v = (rng.normal(size=s).astype("float32") for s in [(B, TQ, D), (B, TK, D), (B, TK, DV)])
    noise = {"noise": as_input(fw, rng.gumbel(size=(B, TQ, TK)).astype("float32"))} \
        if layer in ("hard", "gumbel") else {}
    attend = _layer(fw, layer)
    clean = _context(_run(fw, attend, *(as_input(fw, a) for a in (q, k, v)), mask=as_input(fw, KEYS), **noise))
    k[~KEYS] = np.nan
    got = _context(_run(fw, attend, *(as_input(fw, a) for a in (q, k, v)), mask=as_input(fw, KEYS), **noise))
    np.testing.assert_allclose(got, clean, rtol=1e-6)


def _half(fw, array):
    """A float16 tensor of the framework (a NumPy array would reach a Keras layer as float32)."""
    if fw is ac.torch:
        return as_input(fw, array.astype("float16"))
    from keras import ops

    return ops.convert_to_tensor(array.astype("float16"), dtype="float16")


def _half_layer(fw, layer):
    """The layer built to compute in float16: in Keras under the float16 dtype policy, its sub-layers too (PyTorch
    takes float16 tensors and computes them in float32)."""
    make = (lambda: fw.ScoredAttention("dot")) if layer == "scored" else (lambda: _layer(fw, layer))
    if fw is ac.torch:
        return make()
    import keras

    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float16")
    try:
        return make()
    finally:
        keras.config.set_dtype_policy(policy)


@pytest.mark.parametrize("layer", ["dot", "scored", "hard", "gumbel", "local"])
@pytest.mark.parametrize("lone", [True, False], ids=["a lone visible key at -80000", "scores of +-80000"])
def test_float16_scores_beyond_its_range_give_the_weights_of_float32(fw, layer, lone):
    q = np.full((1, 1, 8), 100.0)                                      # q·k = ±80 000: float16 ends at ±65 504
    k = np.full((1, 3, 8), 100.0 if lone else -100.0)
    k[0, 0] = -100.0 if lone else 100.0                                # key 0: -80 000 alone, or +80 000 among all
    mask = {"mask": as_input(fw, np.array([[True, False, False]]))} if lone else {}
    out = _run(fw, _half_layer(fw, layer), _half(fw, q), _half(fw, k), _half(fw, np.eye(3)[None]),
               return_weights=True, **mask)
    weights, context = to_numpy(out[-1]).astype("float32"), to_numpy(out[0]).astype("float32")
    np.testing.assert_allclose(weights, [[[1.0, 0.0, 0.0]]], atol=1e-3)   # finite, summing to 1, all on key 0
    np.testing.assert_allclose(context, [[[1.0, 0.0, 0.0]]], atol=1e-3)
    if layer == "hard":
        np.testing.assert_allclose(to_numpy(out[2]).astype("float32"), 0.0, atol=1e-3)   # log π(key 0) = log 1


def test_float16_masked_softmax_gives_a_lone_visible_key_its_weight(fw):
    lone = fw.masked_softmax(_half(fw, np.array([[[-65504.0, 5.0, 5.0]]])), as_input(fw, np.array([[1, 0, 0]])))
    np.testing.assert_allclose(to_numpy(lone).astype("float32"), [[[1.0, 0.0, 0.0]]], atol=1e-3)
    huge = to_numpy(fw.masked_softmax(_half(fw, np.array([[[65504.0, 65504.0, -65504.0]]])))).astype("float32")
    np.testing.assert_allclose(huge, [[[0.5, 0.5, 0.0]]], atol=1e-3)


@pytest.mark.parametrize("policy", ["float16", "mixed_float16"])
def test_keras_models_of_chapters_1_to_4_run_under_a_float16_policy(policy):
    """Their attention computes in float32 whatever the policy; the sub-layers around it (GRUs, Dense, local-p's
    w_p) in float16: the two meet without a dtype error, and the outputs are finite."""
    import keras

    rng = np.random.default_rng(0)
    src, tgt, x = rng.integers(3, 12, (2, 5)), rng.integers(3, 12, (2, 4)), rng.integers(0, 10, (2, 6))
    before = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        outs = [ac.keras.Seq2Seq(12, 4, 6, attention=True)(src, tgt, np.ones((2, 5), bool)),
                ac.keras.ScoredSeq2Seq(12, 4, 6, score="general")(src, tgt, np.ones((2, 5), bool)),
                *(ac.keras.PointerModel(10, 4, 6, 3, dim=8, attention=a, window=1)(x)
                  for a in ("soft", "hard", "local-p"))]
    finally:
        keras.config.set_dtype_policy(before)
    for out in outs:
        assert np.isfinite(to_numpy(out[0] if isinstance(out, tuple) else out).astype("float32")).all()


# ---- training helpers and metrics --------------------------------------------------------------------------

def _task(n=24):
    rng = np.random.default_rng(0)
    return rng.integers(1, 10, size=(n, 5)), rng.integers(0, 3, size=n)


@pytest.mark.parametrize("change, error, needle", [
    (lambda x, y: ((x,), y[:-3]), ShapeError, "inputs\\[0\\]: 24, targets: 21"),
    (lambda x, y: (x, y), InputError, "inputs must be a non-empty tuple of arrays"),
    (lambda x, y: ((x,), y + 5), InputError, r"targets must be class ids in \[0, 3\) .* got ids from 5 to 7"),
    (lambda x, y: ((x,), y + 0.5), InputError, "targets must be integer class ids"),
])
def test_fit_refuses_data_that_does_not_fit(fw, change, error, needle):
    inputs, targets = change(*_task())
    with pytest.raises(error, match=needle):
        fw.fit(fw.ManyToOne(10, 3, embed=4, hidden=6), inputs, targets, epochs=1, batch_size=8)


def test_fit_finds_bad_ids_and_masks_past_the_first_batch(fw):
    x, y = _task()
    x[-1, -1] = -1                                 # Keras meets it inside tf.function: a graph assertion
    with pytest.raises(InputError, match=re.escape("x must hold integer token ids in [0, 10)")):
        fw.fit(fw.ManyToOne(10, 3, embed=4, hidden=6), (x,), y, epochs=1, batch_size=8)
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(3, 12, size=(24, 5)), rng.integers(3, 12, size=(24, 4))
    mask = np.ones((24, 5), "float32")
    mask[-1, 0] = -np.inf
    with pytest.raises(InputError, match="src_mask: " + re.escape(MASK_RULE)):
        fw.fit(fw.Seq2Seq(12, embed=4, hidden=6, attention=True), (src, tgt, mask), tgt, epochs=1, batch_size=8)


def test_accuracy_with_every_target_ignored_is_an_error(fw):
    x, y = _task()
    with pytest.raises(InputError, match="accuracy of no targets"):
        fw.accuracy(fw.ManyToOne(10, 3, embed=4, hidden=6), (x,), np.zeros_like(y), ignore_index=0)
    with pytest.raises(InputError, match="every target equals ignore_index=0"):
        fw.fit(fw.ManyToOne(10, 3, embed=4, hidden=6), (x,), np.zeros_like(y), epochs=1, ignore_index=0)


def test_metrics_refuse_nothing_to_count_and_shapes_that_differ():
    pads = np.zeros((2, 3), int)
    with pytest.raises(InputError, match="accuracy of no targets"):
        metrics.token_accuracy(pads, pads)
    with pytest.raises(ShapeError, match=r"pred must have the shape of target, \(1, 2\); got \(1, 3\)"):
        metrics.token_accuracy(np.array([[1, 2, 3]]), np.array([[1, 2]]))
    assert metrics.token_accuracy(np.array([1, 2, 0]), np.array([1, 2, 3]), pad=None) == pytest.approx(2 / 3)
