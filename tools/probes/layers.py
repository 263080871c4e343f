"""Bad input to the layers, models, training helpers and metrics of ``ac.torch`` and ``ac.keras``.

Masks that are not bool or 0/1 (an additive mask would be silently inverted), shapes that do not fit, arguments
that are not whole numbers or not positive, NumPy arrays and other dtypes, empty sequences, token ids outside the
vocabulary, NaN and inf where the mask hides them, float16 overflow, and training data that does not fit.
"""

from __future__ import annotations

import numpy as np

from attention_course.core.backend import backend

from . import Probe, to_input, to_numpy

B, TQ, TK, D, DV = 2, 3, 5, 4, 3
KEYS = np.array([[True, True, True, False, False], [True, True, True, True, False]])   # (B, TK): 2 and 1 pads


def rand(*shape, seed=0, dtype="float32"):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def qkv(fw, d=D, seed=0):
    return [to_input(fw, rand(*s, seed=seed + i)) for i, s in enumerate([(B, TQ, d), (B, TK, d), (B, TK, DV)])]


def additive(mask):
    """The additive form of a bool mask: 0 where visible, -inf where hidden."""
    return np.where(mask, 0.0, -np.inf).astype("float32")


def ids(vocab, shape, seed=0):
    return np.random.default_rng(seed).integers(3, vocab, size=shape)


def is_torch(fw):
    return backend(fw).is_torch


def call(fw, layer, *args, **kwargs):
    """Run a layer or model in inference mode (no gradients in PyTorch)."""
    if is_torch(fw):
        import torch

        layer.eval()
        with torch.no_grad():
            return layer(*args, **kwargs)
    return layer(*args, **kwargs)


# ---- masks: anything but bool or 0/1 is an error; 0/1 numbers work like bool --------------------------------

def attention_layer(fw, name, **kw):
    return {"dot": lambda: fw.DotProductAttention(**kw), "scored": lambda: fw.ScoredAttention("general", d_query=D,
                                                                                              **kw),
            "hard": lambda: fw.HardAttention(seed=0, **kw), "gumbel": lambda: fw.GumbelSoftmaxAttention(seed=0, **kw),
            "local": lambda: fw.LocalAttention("m", window=1, **kw)}[name]()


def layer_with_mask(name, mask):
    def run(fw):
        q, k, v = qkv(fw)
        call(fw, attention_layer(fw, name), q, k, v, mask=to_input(fw, mask(KEYS)))
    return run


def masked_softmax_with(mask):
    def run(fw):
        fw.masked_softmax(to_input(fw, rand(B, TQ, TK)), to_input(fw, mask(KEYS)))
    return run


def numeric_mask_works(dtype):
    def run(fw):
        q, k, v = qkv(fw)
        layer = fw.DotProductAttention()
        ctx, w = call(fw, layer, q, k, v, mask=to_input(fw, KEYS.astype(dtype)), return_weights=True)
        ref_ctx, ref_w = call(fw, layer, q, k, v, mask=to_input(fw, KEYS), return_weights=True)
        np.testing.assert_allclose(to_numpy(w), to_numpy(ref_w), err_msg=f"a {dtype} 0/1 mask acts like bool")
        np.testing.assert_allclose(to_numpy(ctx), to_numpy(ref_ctx))
    return run


def pooling_additive_mask(fw):
    call(fw, fw.AttentionPooling(D), to_input(fw, rand(B, TK, D)), to_input(fw, additive(KEYS)))


def feature_single_additive_mask(fw):
    call(fw, fw.FeatureAttention(D, single=True), to_input(fw, rand(B, TK, D)), mask=to_input(fw, additive(KEYS)))


def timestep_additive_mask(fw):
    call(fw, fw.TimestepAttention(TK), to_input(fw, rand(B, TK, D)), mask=to_input(fw, additive(KEYS)))


def seq2seq_additive_src_mask(fw):
    model = fw.Seq2Seq(12, embed=4, hidden=6, attention=True)
    call(fw, model, to_input(fw, ids(12, (B, TK))), to_input(fw, ids(12, (B, 4))), to_input(fw, additive(KEYS)))


def string_mask(fw):
    q, k, v = qkv(fw)
    call(fw, fw.DotProductAttention(), q, k, v, mask=np.array([["yes"] * TK] * B))


def list_mask(fw):
    q, k, v = qkv(fw)
    call(fw, fw.DotProductAttention(), q, k, v, mask=KEYS.tolist())


def nan_mask(fw):
    q, k, v = qkv(fw)
    call(fw, fw.DotProductAttention(), q, k, v, mask=to_input(fw, np.where(KEYS, 1.0, np.nan).astype("float32")))


# ---- shapes --------------------------------------------------------------------------------------------------

def softmax_2d_scores(fw):
    fw.masked_softmax(to_input(fw, rand(B, TK)), to_input(fw, KEYS))


def softmax_short_mask(fw):
    fw.masked_softmax(to_input(fw, rand(B, TQ, TK)), to_input(fw, KEYS[:, :3]))


def local_p_query_size(fw):
    q, k, v = qkv(fw, d=6)
    call(fw, fw.LocalAttention("p", window=1, dim=8), q, k, v)


def hard_noise_shape(fw):
    q, k, v = qkv(fw)
    call(fw, fw.HardAttention(), q, k, v, noise=to_input(fw, rand(B, TQ, TK + 1)))


def gumbel_softmax_noise_shape(fw):
    fw.gumbel_softmax(to_input(fw, rand(B, TK)), noise=to_input(fw, rand(B, 1)))


def pointer_longer_than_length(fw):
    call(fw, fw.PointerModel(10, 4, length=6, steps=3, dim=8), to_input(fw, ids(10, (B, 7))))


def one_to_many_batches_differ(fw):
    call(fw, fw.OneToMany(5, 9, embed=4, hidden=6), to_input(fw, ids(5, (B,))), to_input(fw, ids(9, (B + 1, 4))))


def seq2seq_batches_differ(fw):
    call(fw, fw.Seq2Seq(12, embed=4, hidden=6), to_input(fw, ids(12, (B, TK))), to_input(fw, ids(12, (B + 1, 4))))


def attention_gru_input_size(fw):
    call(fw, fw.AttentionGRU(4, 6), to_input(fw, rand(B, TK, 5)), to_input(fw, np.full((B, TK), 0.5, "float32")))


def lstm_input_size(fw):
    call(fw, fw.VariationalLSTM(4, 6), to_input(fw, rand(B, TK, 5)))


# ---- arguments: whole numbers, positive temperatures, rates in [0, 1) ---------------------------------------

def make(factory):
    def run(fw):
        factory(fw)
    return run


# ---- NumPy arrays, dtypes ------------------------------------------------------------------------------------

def numpy_int_sizes(fw):
    model = fw.Seq2Seq(np.int64(12), embed=np.int64(4), hidden=np.int32(6), attention=True)
    layer = fw.LocalAttention("m", window=np.int64(1))
    out = to_numpy(call(fw, model, to_input(fw, ids(12, (B, TK))), to_input(fw, ids(12, (B, 4)))))
    assert out.shape == (B, 4, 12) and np.isfinite(out).all(), out.shape
    assert layer.window == 1 and type(layer.window) is int


def numpy_float64_inputs(fw):
    q, k, v = (rand(*s, seed=i, dtype="float64") for i, s in enumerate([(B, TQ, D), (B, TK, D), (B, TK, DV)]))
    ctx = to_numpy(call(fw, fw.DotProductAttention(), q, k, v, mask=KEYS))
    ref = to_numpy(call(fw, fw.DotProductAttention(), *qkv(fw), mask=to_input(fw, KEYS)))
    assert ctx.dtype == np.float32, f"NumPy float64 inputs are computed in float32, got {ctx.dtype}"
    np.testing.assert_allclose(ctx, ref, rtol=1e-6)


def numpy_ids_to_models(fw):
    model = fw.ManyToOne(10, 3, embed=4, hidden=6)
    out = to_numpy(call(fw, model, ids(10, (B, TK))))
    assert out.shape == (B, 3) and np.isfinite(out).all(), out


def integer_query(fw):
    q, k, v = (to_input(fw, np.ones(s, "int64")) for s in [(B, TQ, D), (B, TK, D), (B, TK, DV)])
    call(fw, fw.DotProductAttention(), q, k, v)


def bool_states(fw):
    call(fw, fw.AttentionPooling(D), to_input(fw, np.ones((B, TK, D), bool)))


def integer_gates(fw):
    call(fw, fw.AttentionGRU(D, 6), to_input(fw, rand(B, TK, D)), to_input(fw, np.ones((B, TK), "int64")))


def float16_overflow(fw):
    big = np.full((1, 2, 8), 100.0, "float16")          # q·k = 8·100² = 80 000 > 65 504, float16's largest
    ctx, w = call(fw, fw.DotProductAttention(), to_input(fw, big), to_input(fw, big), to_input(fw, big),
                  return_weights=True)
    w, ctx = to_numpy(w).astype("float32"), to_numpy(ctx).astype("float32")
    assert np.isfinite(w).all() and np.isfinite(ctx).all(), f"overflow: weights {w}"
    np.testing.assert_allclose(w, 0.5, rtol=1e-3)


# ---- empty sequences -----------------------------------------------------------------------------------------

def local_no_keys(fw):
    q = to_input(fw, rand(B, TQ, D))
    k = to_input(fw, rand(B, 0, D))
    call(fw, fw.LocalAttention("m", window=1), q, k, k)


def local_no_queries(fw):
    q, k, v = qkv(fw)
    call(fw, fw.LocalAttention("p", window=1, dim=D), to_input(fw, rand(B, 0, D)), k, v)


def dot_no_keys(fw):
    q = to_input(fw, rand(B, TQ, D))
    k = to_input(fw, rand(B, 0, D))
    ctx = to_numpy(call(fw, fw.DotProductAttention(), q, k, to_input(fw, rand(B, 0, DV))))
    assert ctx.shape == (B, TQ, DV) and (ctx == 0).all(), f"no keys: a zero context, like a fully masked row: {ctx}"


def seq2seq_empty_src(fw):
    call(fw, fw.Seq2Seq(12, embed=4, hidden=6, attention=True), to_input(fw, np.zeros((B, 0), "int64")),
         to_input(fw, ids(12, (B, 4))))


def seq2seq_empty_tgt(fw):
    call(fw, fw.Seq2Seq(12, embed=4, hidden=6), to_input(fw, ids(12, (B, TK))), to_input(fw, np.zeros((B, 0), "int64")))


def many_to_one_empty(fw):
    call(fw, fw.ManyToOne(10, 3, embed=4, hidden=6), to_input(fw, np.zeros((B, 0), "int64")))


def generate_no_steps(fw):
    fw.Seq2Seq(12, embed=4, hidden=6).generate(to_input(fw, ids(12, (B, TK))), 0)


# ---- token ids -----------------------------------------------------------------------------------------------

def bad_ids(model_factory, bad, vocab=12, shape=(B, TK), extra=()):
    def run(fw):
        x = ids(vocab, shape)
        x = x.astype(type(bad)) if isinstance(bad, float) else x
        x.flat[-1] = bad
        call(fw, model_factory(fw), to_input(fw, x), *[to_input(fw, e) for e in extra])
    return run


SEQ2SEQ = lambda fw: fw.Seq2Seq(12, embed=4, hidden=6, attention=True)


# ---- NaN and inf where the mask hides them -------------------------------------------------------------------

def first(out):
    """The context of a layer that may return a tuple (context, …)."""
    return to_numpy(out[0] if isinstance(out, tuple) else out)


def poisoned_value(name, bad=np.nan):
    def run(fw):
        rng = np.random.default_rng(3)
        q, k, v = (rng.normal(size=s).astype("float32") for s in [(B, TQ, D), (B, TK, D), (B, TK, DV)])
        layer = attention_layer(fw, name)
        noise = {"noise": to_input(fw, rng.gumbel(size=(B, TQ, TK)).astype("float32"))} \
            if name in ("hard", "gumbel") else {}
        mask = to_input(fw, KEYS)
        clean = first(call(fw, layer, to_input(fw, q), to_input(fw, k), to_input(fw, v), mask=mask, **noise))
        v[~KEYS] = bad                                                        # the hidden value rows only
        got = first(call(fw, layer, to_input(fw, q), to_input(fw, k), to_input(fw, v), mask=mask, **noise))
        assert np.isfinite(got).all(), f"a hidden {bad} value row reached the output: {got}"
        np.testing.assert_allclose(got, clean, rtol=1e-6)
    return run


def poisoned_pooling(fw):
    states = rand(B, TK, D)
    layer = fw.AttentionPooling(D)
    clean = to_numpy(call(fw, layer, to_input(fw, states), to_input(fw, KEYS)))
    states[~KEYS] = np.nan
    got = to_numpy(call(fw, layer, to_input(fw, states), to_input(fw, KEYS)))
    assert np.isfinite(got).all(), f"a NaN pad state reached the pooled context: {got}"
    np.testing.assert_allclose(got, clean, rtol=1e-6)


def poisoned_feature_average(fw):
    x = rand(B, TK, D)
    layer = fw.FeatureAttention(D, single=True)
    _, clean = call(fw, layer, to_input(fw, x), mask=to_input(fw, KEYS), return_weights=True)
    x[~KEYS] = np.nan
    _, got = call(fw, layer, to_input(fw, x), mask=to_input(fw, KEYS), return_weights=True)
    got = to_numpy(got)
    assert np.isfinite(got).all(), f"a NaN pad reached the averaged feature weights: {got}"
    np.testing.assert_allclose(got, to_numpy(clean), rtol=1e-6)


# ---- NaN and inf where the mask shows them: the course's error, naming the argument --------------------------

def poisoned(name, where, bad=np.nan):
    """A NaN or inf in the query, or in a key that the mask shows (key 0 of example 0): without a check, a row of
    NaN or of zeros, without a word."""
    def run(fw):
        q, k, v = (rand(*s, seed=i) for i, s in enumerate([(B, TQ, D), (B, TK, D), (B, TK, DV)]))
        {"query": q, "key": k}[where][0, 0, 0] = bad
        call(fw, attention_layer(fw, name), *(to_input(fw, a) for a in (q, k, v)), mask=to_input(fw, KEYS))
    return run


def poisoned_hidden_key(name, bad=np.nan):
    """A NaN or inf in a key that the mask hides changes nothing."""
    def run(fw):
        rng = np.random.default_rng(3)
        q, k, v = (rng.normal(size=s).astype("float32") for s in [(B, TQ, D), (B, TK, D), (B, TK, DV)])
        noise = {"noise": to_input(fw, rng.gumbel(size=(B, TQ, TK)).astype("float32"))} \
            if name in ("hard", "gumbel") else {}
        layer, mask = attention_layer(fw, name), to_input(fw, KEYS)
        clean = first(call(fw, layer, to_input(fw, q), to_input(fw, k), to_input(fw, v), mask=mask, **noise))
        k[~KEYS] = bad                                                        # the hidden key rows only
        got = first(call(fw, layer, to_input(fw, q), to_input(fw, k), to_input(fw, v), mask=mask, **noise))
        assert np.isfinite(got).all(), f"a hidden {bad} key reached the output: {got}"
        np.testing.assert_allclose(got, clean, rtol=1e-6)
    return run


# ---- half precision: a float16 dtype policy in Keras, float16 tensors in PyTorch -----------------------------

def half(fw, array):
    """A float16 tensor of the framework (``to_input`` would give Keras a NumPy array, which it reads as float32)."""
    if is_torch(fw):
        return to_input(fw, array.astype("float16"))
    from keras import ops

    return ops.convert_to_tensor(array.astype("float16"), dtype="float16")


def half_layer(fw, name):
    """The layer computing in half precision: in Keras built under the float16 dtype policy (its sub-layers too); a
    PyTorch layer takes float16 tensors (and computes them in float32). ScoredAttention with the dot score."""
    make = (lambda: fw.ScoredAttention("dot")) if name == "scored" else (lambda: attention_layer(fw, name))
    if is_torch(fw):
        return make()
    import keras

    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float16")
    try:
        return make()
    finally:
        keras.config.set_dtype_policy(policy)


def float16_scores(name, lone: bool):
    """One float16 query against three keys, q·k = ±80 000 (float16 ends at ±65 504). ``lone``: only key 0 is
    visible, at -80 000; it must get all the weight (overflow to -inf, next to float16's lowest number as the fill
    of the hidden keys, gives it none). Otherwise every key is visible and key 0 scores +80 000: finite weights
    summing to 1 (inf - inf is NaN)."""
    def run(fw):
        q = np.full((1, 1, 8), 100.0)
        k = np.full((1, 3, 8), 100.0 if lone else -100.0)
        k[0, 0] = -100.0 if lone else 100.0
        v = np.eye(3)[None]
        mask = {"mask": to_input(fw, np.array([[True, False, False]]))} if lone else {}
        out = call(fw, half_layer(fw, name), half(fw, q), half(fw, k), half(fw, v), return_weights=True, **mask)
        w, ctx = to_numpy(out[-1]).astype("float32"), to_numpy(out[0]).astype("float32")
        assert np.isfinite(w).all() and np.isfinite(ctx).all(), f"float16: weights {w.tolist()}"
        np.testing.assert_allclose(w, [[[1.0, 0.0, 0.0]]], atol=1e-3, err_msg="key 0 gets all the weight")
        np.testing.assert_allclose(ctx, [[[1.0, 0.0, 0.0]]], atol=1e-3)
        if name == "hard":
            assert np.isfinite(to_numpy(out[2]).astype("float32")).all(), f"log_prob {to_numpy(out[2])}"
    return run


def float16_masked_softmax_lone_key(fw):
    """float16 scores whose one visible key scores -65 504, float16's lowest number: it gets all the weight (a fill
    of the same number for the hidden keys would tie with it and give it a third)."""
    scores = half(fw, np.array([[[-65504.0, 5.0, 5.0]]]))
    w = to_numpy(fw.masked_softmax(scores, to_input(fw, np.array([[True, False, False]])))).astype("float32")
    np.testing.assert_allclose(w, [[[1.0, 0.0, 0.0]]], atol=1e-3)


def float16_masked_softmax_huge(fw):
    """float16 scores at ±65 504: finite weights summing to 1."""
    w = to_numpy(fw.masked_softmax(half(fw, np.array([[[65504.0, 65504.0, -65504.0]]])))).astype("float32")
    assert np.isfinite(w).all(), w
    np.testing.assert_allclose(w, [[[0.5, 0.5, 0.0]]], atol=1e-3)


# ---- training helpers ----------------------------------------------------------------------------------------

def small_task(n=24, vocab=10, length=5, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(1, vocab, size=(n, length)), rng.integers(0, classes, size=n)


def classifier(fw):
    return fw.ManyToOne(10, 3, embed=4, hidden=6)


def fit_with(x=None, y=None, inputs=None, **kwargs):
    def run(fw):
        xs, ys = small_task()
        data = inputs(xs) if inputs is not None else (xs if x is None else x(xs),)
        fw.fit(classifier(fw), data, ys if y is None else y(ys), **{"epochs": 1, "batch_size": 8, **kwargs})
    return run


def late_bad_id(x):
    x = x.copy()
    x[-1, -1] = -1                                         # past the first batch: Keras meets it inside tf.function
    return x


def fit_late_additive_mask(fw):
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(3, 12, size=(24, 5)), rng.integers(3, 12, size=(24, 4))
    mask = np.ones((24, 5), "float32")
    mask[-1, 0] = -np.inf                                  # past the first batch
    fw.fit(SEQ2SEQ(fw), (src, tgt, mask), tgt, epochs=1, batch_size=8)


def accuracy_all_ignored(fw):
    xs, ys = small_task()
    fw.accuracy(classifier(fw), (xs,), np.zeros_like(ys), ignore_index=0)


def predict_lengths_differ(fw):
    model = fw.Seq2Seq(12, embed=4, hidden=6)
    rng = np.random.default_rng(0)
    fw.predict(model, (rng.integers(3, 12, size=(6, 5)), rng.integers(3, 12, size=(5, 4))))


def pointer(fw):
    return fw.PointerModel(10, 4, length=6, steps=3, dim=8)


def pointer_data(n=16):
    rng = np.random.default_rng(0)
    return rng.integers(0, 10, size=(n, 6)), rng.integers(0, 4, size=(n, 3))


def train_pointer_with(y=None, **kwargs):
    def run(fw):
        x, ys = pointer_data()
        fw.train_pointer(pointer(fw), x, ys if y is None else y(ys), **{"steps": 2, "batch_size": 4, **kwargs})
    return run


def reinforce_no_draws(fw):
    x, y = pointer_data()
    fw.reinforce_gradients(fw.PointerModel(10, 4, length=6, steps=3, dim=8, attention="hard"), x, y, draws=0)


# ---- metrics (NumPy, no framework) ---------------------------------------------------------------------------

def metric(name, pred, target, **kwargs):
    def run(fw):
        from attention_course.core import metrics

        getattr(metrics, name)(np.asarray(pred), np.asarray(target), **kwargs)
    return run


ALL_PAD = [[0, 0], [0, 0]]

def bad(area, name, run, per_framework=True):
    """A probe of an input that must be refused: returning normally means it was silently accepted."""
    def refused(fw):
        out = run(fw)
        raise AssertionError(f"accepted without an error (returned {type(out).__name__})")
    return Probe(area, name, refused, per_framework)


# bad(...): must raise the course's error; Probe(...): must give a right result (checked)
PROBES = [
    # masks
    bad("masks", "DotProductAttention additive mask (0 / -inf)", layer_with_mask("dot", additive)),
    bad("masks", "DotProductAttention mask 0 / -1e9", layer_with_mask("dot", lambda m: np.where(m, 0, -1e9))),
    bad("masks", "DotProductAttention mask of 0.5", layer_with_mask("dot", lambda m: m * 0.5)),
    bad("masks", "DotProductAttention mask of -1 / 1", layer_with_mask("dot", lambda m: np.where(m, 1, -1))),
    Probe("masks", "DotProductAttention float 0/1 mask", numeric_mask_works("float32")),
    Probe("masks", "DotProductAttention int 0/1 mask", numeric_mask_works("int64")),
    bad("masks", "DotProductAttention NaN in the mask", nan_mask),
    bad("masks", "DotProductAttention string mask", string_mask),
    bad("masks", "DotProductAttention list mask", list_mask),
    bad("masks", "masked_softmax additive mask", masked_softmax_with(additive)),
    bad("masks", "ScoredAttention additive mask", layer_with_mask("scored", additive)),
    bad("masks", "HardAttention additive mask", layer_with_mask("hard", additive)),
    bad("masks", "GumbelSoftmaxAttention additive mask", layer_with_mask("gumbel", additive)),
    bad("masks", "LocalAttention additive mask", layer_with_mask("local", additive)),
    bad("masks", "AttentionPooling additive mask", pooling_additive_mask),
    bad("masks", "FeatureAttention(single) additive mask", feature_single_additive_mask),
    bad("masks", "TimestepAttention additive mask", timestep_additive_mask),
    bad("masks", "Seq2Seq additive src_mask", seq2seq_additive_src_mask),
    # shapes
    bad("shapes", "masked_softmax 2-D scores", softmax_2d_scores),
    bad("shapes", "masked_softmax mask shorter than T_k", softmax_short_mask),
    bad("shapes", "LocalAttention(p) query size != dim", local_p_query_size),
    bad("shapes", "HardAttention noise of the wrong shape", hard_noise_shape),
    bad("shapes", "gumbel_softmax noise of the wrong shape", gumbel_softmax_noise_shape),
    bad("shapes", "PointerModel S > length", pointer_longer_than_length),
    bad("shapes", "OneToMany batch sizes differ", one_to_many_batches_differ),
    bad("shapes", "Seq2Seq batch sizes differ", seq2seq_batches_differ),
    bad("shapes", "AttentionGRU facts size != input_size", attention_gru_input_size),
    bad("shapes", "VariationalLSTM input size != input_size", lstm_input_size),
    # arguments
    bad("arguments", "LocalAttention window=2.5", make(lambda fw: fw.LocalAttention("m", window=2.5))),
    bad("arguments", "LocalAttention window=2.0", make(lambda fw: fw.LocalAttention("p", window=2.0, dim=4))),
    bad("arguments", "LocalAttention window=True", make(lambda fw: fw.LocalAttention("m", window=True))),
    bad("arguments", "LocalAttention(p) dim=0", make(lambda fw: fw.LocalAttention("p", window=2, dim=0))),
    bad("arguments", "GumbelSoftmaxAttention tau=-1", make(lambda fw: fw.GumbelSoftmaxAttention(tau=-1.0))),
    bad("arguments", "GumbelSoftmaxAttention tau=0", make(lambda fw: fw.GumbelSoftmaxAttention(tau=0))),
    Probe("arguments", "GumbelSoftmaxAttention tau=nan", make(lambda fw: fw.GumbelSoftmaxAttention(tau=float("nan")))),
    bad("arguments", "gumbel_softmax tau=0", make(lambda fw: fw.gumbel_softmax(to_input(fw, rand(B, TK)), tau=0.0))),
    bad("arguments", "PointerModel tau=-0.5", make(lambda fw: fw.PointerModel(10, 4, 6, 3, attention="gumbel",
                                                                               tau=-0.5))),
    bad("arguments", "PointerModel window=1.5", make(lambda fw: fw.PointerModel(10, 4, 6, 3, attention="local-m",
                                                                                 window=1.5))),
    bad("arguments", "Seq2Seq vocab=0", make(lambda fw: fw.Seq2Seq(0))),
    bad("arguments", "ManyToOne hidden=-4", make(lambda fw: fw.ManyToOne(10, 3, hidden=-4))),
    bad("arguments", "ScoredAttention d_query=2.5", make(lambda fw: fw.ScoredAttention("additive", d_query=2.5))),
    bad("arguments", "LinearConcatScore d_query=2.5", make(lambda fw: fw.LinearConcatScore(2.5, 4))),
    bad("arguments", "LinearConcatScore d_key=0", make(lambda fw: fw.LinearConcatScore(4, 0))),
    bad("shapes", "LinearConcatScore key size != d_key",
        lambda fw: call(fw, fw.LinearConcatScore(D, D + 1), *qkv(fw)[:2])),
    bad("arguments", "NERTagger dropout=1.5", make(lambda fw: fw.NERTagger(10, 3, dropout=1.5))),
    bad("arguments", "SentimentClassifier recurrent_dropout=-0.1",
          make(lambda fw: fw.SentimentClassifier(10, recurrent_dropout=-0.1))),
    bad("arguments", "FeatureAttention features=0", make(lambda fw: fw.FeatureAttention(0))),
    bad("arguments", "NERTagger place='middle'",
        make(lambda fw: fw.NERTagger(10, 3, attention="feature", place="middle"))),
    bad("arguments", "NERTagger repeat_vector max_len != embed",
        make(lambda fw: fw.NERTagger(10, 3, embed=4, attention="repeat_vector", max_len=6))),
    bad("shapes", "RepeatVectorAttention T != d",
        lambda fw: call(fw, fw.RepeatVectorAttention(4), to_input(fw, rand(B, 6, 4)))),
    bad("arguments", "Seq2Seq.generate steps=0", generate_no_steps),
    # NumPy arrays and dtypes
    Probe("dtypes", "Seq2Seq and LocalAttention NumPy int sizes", numpy_int_sizes),
    Probe("dtypes", "DotProductAttention NumPy float64 inputs", numpy_float64_inputs),
    Probe("dtypes", "ManyToOne NumPy int ids", numpy_ids_to_models),
    bad("dtypes", "DotProductAttention int64 query", integer_query),
    bad("dtypes", "AttentionPooling bool states", bool_states),
    bad("dtypes", "AttentionGRU int64 gates", integer_gates),
    Probe("dtypes", "DotProductAttention float16 overflow", float16_overflow),
    # empty sequences
    bad("empty", "LocalAttention S = 0 keys", local_no_keys),
    bad("empty", "LocalAttention(p) T_q = 0 queries", local_no_queries),
    Probe("empty", "DotProductAttention T_k = 0 keys", dot_no_keys),
    bad("empty", "Seq2Seq empty src", seq2seq_empty_src),
    bad("empty", "Seq2Seq empty tgt_in", seq2seq_empty_tgt),
    bad("empty", "ManyToOne empty x", many_to_one_empty),
    # token ids
    bad("ids", "Seq2Seq src id -1", bad_ids(SEQ2SEQ, -1, extra=(ids(12, (B, 4)),))),
    bad("ids", "Seq2Seq src id 1.5", bad_ids(SEQ2SEQ, 1.5, extra=(ids(12, (B, 4)),))),
    bad("ids", "Seq2Seq src id = vocab", bad_ids(SEQ2SEQ, 12, extra=(ids(12, (B, 4)),))),
    bad("ids", "OneToOne id -1", bad_ids(lambda fw: fw.OneToOne(10, 3, hidden=4), -1, vocab=10, shape=(4,))),
    bad("ids", "OneToMany tgt_in id 99", lambda fw: call(fw, fw.OneToMany(5, 9, embed=4, hidden=6),
                                                          to_input(fw, ids(5, (B,))),
                                                          to_input(fw, np.full((B, 4), 99)))),
    bad("ids", "ManyToMany id = vocab", bad_ids(lambda fw: fw.ManyToMany(10, 3, embed=4, hidden=6), 10, 10)),
    bad("ids", "NERTagger id -1", bad_ids(lambda fw: fw.NERTagger(10, 3, embed=4, hidden=6), -1, 10)),
    bad("ids", "SentimentClassifier id 2.5", bad_ids(lambda fw: fw.SentimentClassifier(10, 4, 6), 2.5, 10)),
    bad("ids", "BagOfWords id -1", bad_ids(lambda fw: fw.BagOfWords(10, 4), -1, 10)),
    bad("ids", "PointerModel id -1", bad_ids(lambda fw: fw.PointerModel(10, 4, 6, 3, dim=8), -1, 10, (B, 6))),
    # NaN and inf hidden by the mask
    Probe("nan", "DotProductAttention NaN in a hidden value row", poisoned_value("dot")),
    Probe("nan", "DotProductAttention inf in a hidden value row", poisoned_value("dot", np.inf)),
    Probe("nan", "ScoredAttention NaN in a hidden value row", poisoned_value("scored")),
    Probe("nan", "HardAttention NaN in a hidden value row", poisoned_value("hard")),
    Probe("nan", "GumbelSoftmaxAttention NaN in a hidden value row", poisoned_value("gumbel")),
    Probe("nan", "LocalAttention NaN in a hidden value row", poisoned_value("local")),
    Probe("nan", "AttentionPooling NaN in a pad state", poisoned_pooling),
    Probe("nan", "FeatureAttention(single) NaN in a pad", poisoned_feature_average),
    bad("nan", "DotProductAttention NaN in the query", poisoned("dot", "query")),
    bad("nan", "DotProductAttention NaN in a visible key", poisoned("dot", "key")),
    bad("nan", "DotProductAttention inf in the query", poisoned("dot", "query", np.inf)),
    bad("nan", "DotProductAttention inf in a visible key", poisoned("dot", "key", np.inf)),
    bad("nan", "ScoredAttention NaN in the query", poisoned("scored", "query")),
    bad("nan", "ScoredAttention NaN in a visible key", poisoned("scored", "key")),
    bad("nan", "ScoredAttention inf in the query", poisoned("scored", "query", np.inf)),
    bad("nan", "ScoredAttention inf in a visible key", poisoned("scored", "key", np.inf)),
    bad("nan", "HardAttention NaN in the query", poisoned("hard", "query")),
    bad("nan", "HardAttention NaN in a visible key", poisoned("hard", "key")),
    bad("nan", "HardAttention inf in the query", poisoned("hard", "query", np.inf)),
    bad("nan", "HardAttention inf in a visible key", poisoned("hard", "key", np.inf)),
    bad("nan", "GumbelSoftmaxAttention NaN in the query", poisoned("gumbel", "query")),
    bad("nan", "GumbelSoftmaxAttention NaN in a visible key", poisoned("gumbel", "key")),
    bad("nan", "GumbelSoftmaxAttention inf in the query", poisoned("gumbel", "query", np.inf)),
    bad("nan", "GumbelSoftmaxAttention inf in a visible key", poisoned("gumbel", "key", np.inf)),
    bad("nan", "LocalAttention NaN in the query", poisoned("local", "query")),
    bad("nan", "LocalAttention NaN in a visible key", poisoned("local", "key")),
    bad("nan", "LocalAttention inf in the query", poisoned("local", "query", np.inf)),
    bad("nan", "LocalAttention inf in a visible key", poisoned("local", "key", np.inf)),
    Probe("nan", "DotProductAttention NaN in a hidden key", poisoned_hidden_key("dot")),
    Probe("nan", "ScoredAttention NaN in a hidden key", poisoned_hidden_key("scored")),
    Probe("nan", "HardAttention NaN in a hidden key", poisoned_hidden_key("hard")),
    Probe("nan", "GumbelSoftmaxAttention NaN in a hidden key", poisoned_hidden_key("gumbel")),
    Probe("nan", "LocalAttention NaN in a hidden key", poisoned_hidden_key("local")),
    Probe("float16", "DotProductAttention float16: a lone visible key at -80 000", float16_scores("dot", lone=True)),
    Probe("float16", "DotProductAttention float16: scores of ±80 000", float16_scores("dot", lone=False)),
    Probe("float16", "ScoredAttention float16: a lone visible key at -80 000", float16_scores("scored", lone=True)),
    Probe("float16", "ScoredAttention float16: scores of ±80 000", float16_scores("scored", lone=False)),
    Probe("float16", "HardAttention float16: a lone visible key at -80 000", float16_scores("hard", lone=True)),
    Probe("float16", "HardAttention float16: scores of ±80 000", float16_scores("hard", lone=False)),
    Probe("float16", "GumbelSoftmaxAttention float16: a lone visible key at -80 000",
          float16_scores("gumbel", lone=True)),
    Probe("float16", "GumbelSoftmaxAttention float16: scores of ±80 000", float16_scores("gumbel", lone=False)),
    Probe("float16", "LocalAttention float16: a lone visible key at -80 000", float16_scores("local", lone=True)),
    Probe("float16", "LocalAttention float16: scores of ±80 000", float16_scores("local", lone=False)),
    Probe("float16", "masked_softmax float16: a lone visible key at -65 504", float16_masked_softmax_lone_key),
    Probe("float16", "masked_softmax float16: scores of ±65 504", float16_masked_softmax_huge),
    # training helpers
    bad("train", "fit inputs and targets differ in length", fit_with(y=lambda y: y[:-3])),
    bad("train", "fit inputs as a bare array", fit_with(inputs=lambda x: x)),
    bad("train", "fit targets out of range", fit_with(y=lambda y: y + 5)),
    bad("train", "fit float targets", fit_with(y=lambda y: y + 0.5)),
    bad("train", "fit every target ignored", fit_with(y=lambda y: np.zeros_like(y), ignore_index=0)),
    bad("train", "fit batch_size=0", fit_with(batch_size=0)),
    bad("train", "fit lr=-0.01", fit_with(lr=-0.01)),
    bad("train", "fit id -1 after the first batch", fit_with(x=late_bad_id)),
    bad("train", "fit additive src_mask after the first batch", fit_late_additive_mask),
    bad("train", "accuracy with every target ignored", accuracy_all_ignored),
    bad("train", "predict inputs of different lengths", predict_lengths_differ),
    bad("train", "train_pointer y of the wrong shape", train_pointer_with(y=lambda y: y[:, :2])),
    bad("train", "train_pointer steps=0", train_pointer_with(steps=0)),
    bad("train", "reinforce_gradients draws=0", reinforce_no_draws),
    # metrics
    bad("metrics", "token_accuracy every target a pad", metric("token_accuracy", ALL_PAD, ALL_PAD), False),
    bad("metrics", "token_accuracy shapes differ", metric("token_accuracy", [[1, 2, 3]], [[1, 2]]), False),
]
