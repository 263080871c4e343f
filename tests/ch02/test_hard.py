"""Chapter 2: hard attention (REINFORCE, Gumbel-softmax) and local attention, in both frameworks: parity with
shared weights and shared noise, properties, unbiasedness of REINFORCE, sampling frequencies, errors, the
exercise checkers and the charts."""

import inspect

import numpy as np
import pytest
import torch
from conftest import as_input, cost_of, to_numpy

import attention_course as ac
from attention_course import exercises
from attention_course.core.errors import ConfigError, ShapeError
from attention_course.core.parity import torch_to_keras
from attention_course.data import synthetic
from attention_course.exercises import reference_local_weights

RTOL, ATOL = 1e-5, 1e-6
LAYERS = ["HardAttention", "GumbelSoftmaxAttention", "LocalAttention", "PointerModel"]
FUNCTIONS = ["gumbel_noise", "gumbel_softmax", "train_pointer", "reinforce_gradients"]


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _qkv(rng, b=2, tq=5, s=9, d=6, dv=4):
    return tuple(rng.normal(size=shape).astype("float32") for shape in [(b, tq, d), (b, s, d), (b, s, dv)])


def _torch(*arrays):
    return [None if a is None else torch.as_tensor(a) for a in arrays]


def _params(f):
    return [p for p in inspect.signature(f).parameters.values() if p.name not in {"self", "kwargs"}]


# ---- the twins have the same names and signatures ---------------------------------------------------------

def test_chapter_names_in_both_frameworks():
    for name in LAYERS + FUNCTIONS:
        assert name in ac.torch.__all__ and name in ac.keras.__all__, name



def test_chapter_2_shows_its_layers_before_the_pointer_experiment():
    for fw, file in ((ac.torch, "torch"), (ac.keras, "keras")):
        layers = ("HardAttention", "GumbelSoftmaxAttention", "LocalAttention", "gumbel_softmax", "gumbel_noise")
        experiment = ("PointerModel", "train_pointer", "reinforce_gradients")
        for name in layers + experiment:
            assert getattr(fw, name).__module__ == f"attention_course.ch02_soft_hard_attention.{file}", name
        line = {name: inspect.getsourcelines(getattr(fw, name))[1] for name in layers + experiment}
        assert max(line[n] for n in layers) < min(line[n] for n in experiment), line


@pytest.mark.parametrize("name", LAYERS)
def test_same_layer_signatures(name):
    t, k = getattr(ac.torch, name), getattr(ac.keras, name)
    assert _params(t.__init__) == _params(k.__init__)
    assert _params(t.forward) == _params(k.call)
    for method in ("centres", "distribution"):
        if hasattr(t, method):
            assert _params(getattr(t, method)) == _params(getattr(k, method))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_same_function_signatures(name):
    t, k = inspect.signature(getattr(ac.torch, name)), inspect.signature(getattr(ac.keras, name))
    assert [(p.name, p.default, p.kind) for p in t.parameters.values()] == \
        [(p.name, p.default, p.kind) for p in k.parameters.values()]


# ---- parity with shared weights and shared noise ----------------------------------------------------------

@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("tau", [1.0, 0.3])
def test_gumbel_softmax_agrees(hard, tau):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 4, 7)).astype("float32")
    noise = rng.gumbel(size=logits.shape).astype("float32")
    t = ac.torch.gumbel_softmax(torch.as_tensor(logits), tau, hard, torch.as_tensor(noise)).numpy()
    k = np.asarray(ac.keras.gumbel_softmax(logits, tau, hard, noise))
    np.testing.assert_allclose(k, t, rtol=RTOL, atol=ATOL)
    soft = _softmax((logits + noise) / tau)
    expected = np.eye(7)[soft.argmax(-1)] if hard else soft
    np.testing.assert_allclose(t, expected, rtol=1e-5, atol=1e-6)


def test_straight_through_gradient_agrees_and_equals_the_soft_gradient():
    import tensorflow as tf

    rng = np.random.default_rng(1)
    logits = rng.normal(size=(2, 3, 6)).astype("float32")
    noise = rng.gumbel(size=logits.shape).astype("float32")
    c = rng.normal(size=logits.shape).astype("float32")                 # a fixed downstream loss Σ c·w
    grads = {}
    for hard in (False, True):
        lt = torch.tensor(logits, requires_grad=True)
        (ac.torch.gumbel_softmax(lt, 0.5, hard, torch.as_tensor(noise)) * torch.as_tensor(c)).sum().backward()
        lk = tf.Variable(logits)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(ac.keras.gumbel_softmax(lk, 0.5, hard, noise) * c)
        np.testing.assert_allclose(tape.gradient(loss, lk).numpy(), lt.grad.numpy(), rtol=1e-4, atol=1e-6)
        grads[hard] = lt.grad.numpy()
    # straight-through: the forward value is one-hot, the gradient is exactly the soft sample's
    np.testing.assert_allclose(grads[True], grads[False], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("greedy", [False, True])
def test_hard_attention_agrees(greedy):
    rng = np.random.default_rng(2)
    q, k, v = _qkv(rng)
    mask = rng.random((2, 9)) > 0.3
    mask[1] = False                                                       # a fully masked example
    noise = rng.gumbel(size=(2, 5, 9)).astype("float32")
    t_out = ac.torch.HardAttention(scale=True)(*_torch(q, k, v), mask=torch.as_tensor(mask),
                                                noise=torch.as_tensor(noise), greedy=greedy, return_weights=True)
    k_out = ac.keras.HardAttention(scale=True)(q, k, v, mask=mask, noise=noise, greedy=greedy, return_weights=True)
    for a, b in zip(t_out, k_out, strict=True):
        np.testing.assert_allclose(np.asarray(b), a.numpy(), rtol=RTOL, atol=ATOL)
    context, index, log_prob, pi = (a.numpy() for a in t_out)
    scores = np.where(mask[:, None], q @ k.transpose(0, 2, 1) / np.sqrt(6), -np.inf)
    with np.errstate(invalid="ignore"):
        logp = scores - np.log(np.exp(scores - scores.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
            - scores.max(-1, keepdims=True)
    expected = (logp if greedy else logp + noise)[0].argmax(-1)           # Gumbel-max on the visible keys
    np.testing.assert_array_equal(index[0], expected)
    np.testing.assert_allclose(context[0], v[0][expected], rtol=1e-6)
    np.testing.assert_allclose(log_prob[0], np.take_along_axis(logp[0], expected[:, None], -1)[:, 0], rtol=1e-5)
    assert (context[1] == 0).all() and (log_prob[1] == 0).all() and (pi[1] == 0).all()
    assert not np.isnan(pi).any()


def test_gumbel_attention_agrees():
    rng = np.random.default_rng(3)
    q, k, v = _qkv(rng)
    mask = rng.random((2, 5, 9)) > 0.4
    mask[0, 0] = False
    noise = rng.gumbel(size=(2, 5, 9)).astype("float32")
    for greedy in (False, True):
        tc, tw = ac.torch.GumbelSoftmaxAttention(tau=0.5)(*_torch(q, k, v), mask=torch.as_tensor(mask),
                                                            noise=torch.as_tensor(noise), greedy=greedy,
                                                            return_weights=True)
        kc, kw = ac.keras.GumbelSoftmaxAttention(tau=0.5)(q, k, v, mask=mask, noise=noise, greedy=greedy,
                                                          return_weights=True)
        np.testing.assert_allclose(np.asarray(kw), tw.numpy(), rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(np.asarray(kc), tc.numpy(), rtol=RTOL, atol=ATOL)
        w = tw.numpy()
        assert (w[~mask] == 0).all() and (w[0, 0] == 0).all() and not np.isnan(w).any()
        np.testing.assert_allclose(w.sum(-1)[mask.any(-1)], 1, atol=1e-6)   # one-hot rows


def _local_pair(mode, window, d=6, scale=False):
    t = ac.torch.LocalAttention(mode=mode, window=window, dim=d, scale=scale)
    k = ac.keras.LocalAttention(mode=mode, window=window, dim=d, scale=scale)
    return t, k


@pytest.mark.parametrize("mode", ["m", "p"])
@pytest.mark.parametrize("mask_kind", [None, "2d", "3d"])
def test_local_attention_agrees(mode, mask_kind):
    rng = np.random.default_rng(4)
    q, k, v = _qkv(rng, b=3, tq=7, s=11)
    mask = {None: None, "2d": rng.random((3, 11)) > 0.3, "3d": rng.random((3, 7, 11)) > 0.3}[mask_kind]
    tl, kl = _local_pair(mode, 2, scale=True)
    kl(q, k, v)
    if mode == "p":
        torch_to_keras(tl, kl)
    with torch.no_grad():
        tc, tw = tl(*_torch(q, k, v), mask=None if mask is None else torch.as_tensor(mask), return_weights=True)
        tp = tl.centres(torch.as_tensor(q), 11)
    kc, kw = kl(q, k, v, mask=mask, return_weights=True)
    np.testing.assert_allclose(np.asarray(kw), tw.numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(np.asarray(kc), tc.numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(np.asarray(kl.centres(q, 11)), tp.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("attention", ["soft", "hard", "gumbel", "local-m", "local-p"])
def test_pointer_model_agrees(attention):
    x, _ = synthetic.shifted_copy_task(6, length=12, shift=2, seed=1)
    noise = np.random.default_rng(5).gumbel(size=(6, 10, 12)).astype("float32")
    torch.manual_seed(0)
    tm = ac.torch.PointerModel(14, 10, 12, 10, dim=8, attention=attention, window=2)
    km = ac.keras.PointerModel(14, 10, 12, 10, dim=8, attention=attention, window=2)
    km(x)
    torch_to_keras(tm, km)
    for greedy in (False, True):
        with torch.no_grad():
            t_out = tm(torch.as_tensor(x), noise=torch.as_tensor(noise), greedy=greedy)
        k_out = km(x, noise=noise, greedy=greedy)
        for a, b in zip(t_out, k_out, strict=True):
            np.testing.assert_allclose(np.asarray(b), a.numpy(), rtol=RTOL, atol=ATOL)
    with torch.no_grad():
        np.testing.assert_allclose(np.asarray(km.distribution(x)), tm.distribution(torch.as_tensor(x)).numpy(),
                                   rtol=RTOL, atol=ATOL)


def test_reinforce_gradients_agree():
    x, y = synthetic.shifted_copy_task(8, length=10, shift=2, seed=2)
    torch.manual_seed(1)
    tm = ac.torch.PointerModel(14, 10, 10, 8, dim=8, attention="hard")
    km = ac.keras.PointerModel(14, 10, 10, 8, dim=8, attention="hard")
    km(x)
    torch_to_keras(tm, km)
    for baseline in (None, -2.3):
        t, t_r = ac.torch.reinforce_gradients(tm, x, y, draws=3, baseline=baseline, seed=7)
        k, k_r = ac.keras.reinforce_gradients(km, x, y, draws=3, baseline=baseline, seed=7)
        assert t.shape == k.shape == (3, (8 + 10) * 8) and t_r.shape == (3,)
        np.testing.assert_allclose(k, t, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(k_r, t_r, rtol=1e-5)


@pytest.mark.parametrize("attention, baseline", [("soft", True), ("hard", True), ("hard", False), ("gumbel", True),
                                                  ("local-p", True)])
def test_training_loops_take_the_same_steps(attention, baseline):
    """Same weights, data and noise: the two training loops (Adam, REINFORCE baseline, entropy bonus) agree."""
    x, y = synthetic.shifted_copy_task(200, length=12, shift=2, seed=1)
    torch.manual_seed(0)
    tm = ac.torch.PointerModel(14, 10, 12, 10, dim=8, attention=attention, window=2)
    km = ac.keras.PointerModel(14, 10, 12, 10, dim=8, attention=attention, window=2)
    km(x[:2])
    torch_to_keras(tm, km)
    kw = dict(steps=30, eval_every=10, baseline=baseline, entropy=0.05, seed=3)
    t_hist = ac.torch.train_pointer(tm, x, y, **kw)["history"]
    k_hist = ac.keras.train_pointer(km, x, y, **kw)["history"]
    np.testing.assert_allclose([h["loss"] for h in k_hist[1:]], [h["loss"] for h in t_hist[1:]], rtol=1e-3)
    np.testing.assert_allclose(np.asarray(km.step.embeddings), tm.step.weight.detach().numpy(), atol=2e-3)


def test_keras_embeddings_start_independent():
    """Each Keras embedding gets its own initializer (a shared unseeded one would repeat the same numbers)."""
    km = ac.keras.PointerModel(14, 10, 32, 29, dim=8, attention="local-p")
    km(np.zeros((1, 32), "int64"))
    step, position = np.asarray(km.step.embeddings), np.asarray(km.position.embeddings)
    assert not np.allclose(step, position[:29])
    assert abs(np.std(step) - 1) < 0.2                     # N(0, 1), PyTorch's nn.Embedding initialisation


# ---- properties -------------------------------------------------------------------------------------------

def _run_local(fw, mode, window, q, k, v, mask=None, scale=False):
    layer = fw.LocalAttention(mode=mode, window=window, dim=q.shape[-1], scale=scale)
    m = None if mask is None else as_input(fw, mask)
    ctx, w = layer(as_input(fw, q), as_input(fw, k), as_input(fw, v), mask=m, return_weights=True)
    return layer, to_numpy(ctx), to_numpy(w)


@pytest.mark.parametrize("seed", range(4))
def test_local_m_is_a_distribution_inside_its_window(fw, seed):
    rng = np.random.default_rng(seed)
    s, tq, window = int(rng.integers(5, 14)), int(rng.integers(2, 12)), int(rng.integers(0, 4))
    q, k, v = _qkv(rng, b=2, tq=tq, s=s)
    _, ctx, w = _run_local(fw, "m", window, q, k, v)
    t, pos = np.arange(tq)[:, None], np.arange(s)[None]
    inside = np.broadcast_to(np.abs(pos - t) <= window, w.shape)
    assert (w[~inside] == 0).all(), "weights outside the window must be exactly 0"
    rows = inside.any(-1)                              # local-m queries past the end of the source see nothing
    np.testing.assert_allclose(w.sum(-1)[rows], 1, rtol=1e-5)
    assert (w[~rows] == 0).all() and not np.isnan(ctx).any()
    ref = reference_local_weights(q @ k.transpose(0, 2, 1), np.broadcast_to(np.arange(tq), (2, tq)), window,
                                  gaussian=False)
    np.testing.assert_allclose(w, np.nan_to_num(ref), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ctx, w @ v, rtol=1e-4, atol=1e-5)


def test_local_p_is_window_softmax_times_gaussian(fw):
    rng = np.random.default_rng(11)
    q, k, v = _qkv(rng, b=2, tq=6, s=15)
    layer, ctx, w = _run_local(fw, "p", 3, q, k, v)
    p = to_numpy(layer.centres(as_input(fw, q), 15))
    assert ((p > 0) & (p < 15)).all()
    ref = reference_local_weights(q @ k.transpose(0, 2, 1), p, 3)     # σ = D/2, not renormalised
    np.testing.assert_allclose(w, ref, rtol=1e-4, atol=1e-6)
    centre = np.floor(p + 0.5)[..., None]
    assert (w[np.abs(np.arange(15) - centre) > 3] == 0).all()
    assert (w.sum(-1) <= 1 + 1e-6).all()
    np.testing.assert_allclose(ctx, w @ v, rtol=1e-4, atol=1e-5)


def test_local_with_a_window_covering_everything_is_global(fw):
    """local-m with D >= S (every query's window holds every key) equals global dot-product attention;
    local-p with D >= S equals global attention times the Gaussian exp(-(s - p_t)² / (2 (D/2)²))."""
    rng = np.random.default_rng(12)
    q, k, v = _qkv(rng, b=2, tq=5, s=7)
    mask = rng.random((2, 7)) > 0.3
    gc, gw = fw.DotProductAttention(scale=True)(*(as_input(fw, a) for a in (q, k, v)),
                                                 mask=as_input(fw, mask), return_weights=True)
    _, lc, lw = _run_local(fw, "m", 12, q, k, v, mask=mask, scale=True)
    np.testing.assert_allclose(lw, to_numpy(gw), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(lc, to_numpy(gc), rtol=1e-5, atol=1e-6)
    layer, _, pw = _run_local(fw, "p", 14, q, k, v, mask=mask, scale=True)
    p = to_numpy(layer.centres(as_input(fw, q), 7))
    gauss = np.exp(-((np.arange(7) - p[..., None]) ** 2) / (2 * 7.0**2))
    np.testing.assert_allclose(pw, to_numpy(gw) * gauss, rtol=1e-5, atol=1e-7)


def test_fully_masked_rows_give_zeros_not_nan(fw):
    rng = np.random.default_rng(13)
    q, k, v = _qkv(rng, b=2, tq=4, s=6)
    mask = np.zeros((2, 6), bool)
    mask[1, 2] = True
    for mode in ("m", "p"):
        _, ctx, w = _run_local(fw, mode, 1, q, k, v, mask=mask)
        assert not np.isnan(w).any() and not np.isnan(ctx).any()
        assert (w[0] == 0).all() and (ctx[0] == 0).all()
    out = fw.HardAttention()(*(as_input(fw, a) for a in (q, k, v)), mask=as_input(fw, mask), return_weights=True)
    assert all(not np.isnan(to_numpy(a)).any() for a in out)
    assert (to_numpy(out[0])[0] == 0).all() and (to_numpy(out[1])[1] == 2).all()


def test_local_attention_gathers_only_the_window(fw):
    """A long source with a narrow window: the weights are only materialised on request."""
    rng = np.random.default_rng(14)
    q, k, v = _qkv(rng, b=1, tq=3000, s=3000, d=4, dv=2)
    layer = fw.LocalAttention(mode="m", window=1, dim=4)
    ctx = to_numpy(layer(*(as_input(fw, a) for a in (q, k, v))))
    expected = np.stack([reference_local_weights(q[0, t:t + 1] @ k[0].T, np.array([t]), 1, gaussian=False)[0]
                         [max(t - 1, 0):t + 2] @ v[0, max(t - 1, 0):t + 2] for t in (0, 1500, 2999)])
    np.testing.assert_allclose(ctx[0, [0, 1500, 2999]], expected, rtol=1e-4, atol=1e-5)


def test_no_gradient_reaches_the_scores_through_a_sample():
    import tensorflow as tf

    rng = np.random.default_rng(15)
    q, k, v = _qkv(rng)
    qt, vt = torch.tensor(q, requires_grad=True), torch.tensor(v, requires_grad=True)
    ctx, _, _ = ac.torch.HardAttention()(qt, torch.as_tensor(k), vt)
    dq, dv = torch.autograd.grad(ctx.sum(), (qt, vt), allow_unused=True)
    assert dq is None and dv is not None, "the sample index is piecewise constant: no gradient to the scores"
    qk, vk = tf.Variable(q), tf.Variable(v)
    with tf.GradientTape() as tape:
        ctx, _, _ = ac.keras.HardAttention()(qk, k, vk)
        loss = tf.reduce_sum(ctx)
    dq, dv = tape.gradient(loss, [qk, vk])
    assert dq is None and dv is not None


# ---- REINFORCE is unbiased; the baseline reduces its variance ----------------------------------------------

def _reinforce_estimates(fw_name, logits, reward, baseline, n, seed):
    """n single-sample estimates of ∇_logits E_{s~softmax(logits)}[r_s], through the framework's HardAttention
    (query = logits, keys = the identity, so the scores are the logits)."""
    k = logits.shape[0]
    query = np.tile(logits.astype("float32"), (n, 1, 1))                  # (n, 1, K): one sample per row
    key = np.tile(np.eye(k, dtype="float32"), (n, 1, 1))                   # (n, K, K)
    noise = np.random.default_rng(seed).gumbel(size=(n, 1, k)).astype("float32")
    if fw_name == "pytorch":
        qt = torch.tensor(query, requires_grad=True)
        _, index, log_prob = ac.torch.HardAttention()(qt, torch.as_tensor(key), torch.as_tensor(key),
                                                       noise=torch.as_tensor(noise))
        r = torch.as_tensor(reward, dtype=torch.float32)[index]
        ((r - baseline) * log_prob).sum().backward()
        return qt.grad.numpy()[:, 0].astype(np.float64)
    import tensorflow as tf

    qk = tf.Variable(query)
    with tf.GradientTape() as tape:
        _, index, log_prob = ac.keras.HardAttention()(qk, key, key, noise=noise)
        r = tf.gather(tf.constant(reward, tf.float32), index)
        surrogate = tf.reduce_sum((r - baseline) * log_prob)
    return tape.gradient(surrogate, qk).numpy()[:, 0].astype(np.float64)


@pytest.mark.parametrize("fw_name", ["keras", "pytorch"])
def test_reinforce_is_unbiased_and_the_baseline_reduces_variance(fw_name):
    logits = np.array([0.5, -1.0, 1.2, 0.0, -0.3])
    reward = np.array([1.0, 3.0, 0.5, 2.0, 1.5]) + 5.0                    # an offset makes the baseline matter
    pi = _softmax(logits)
    exact = pi * (reward - pi @ reward)                                    # ∂/∂θ_j Σ π_s r_s = π_j (r_j - E r)
    variances = {}
    for baseline in (0.0, float(pi @ reward)):
        est = _reinforce_estimates(fw_name, logits, reward, baseline, 20_000, seed=3)
        se = est.std(0, ddof=1) / np.sqrt(len(est))
        assert (np.abs(est.mean(0) - exact) < 4 * se + 1e-6).all(), (baseline, est.mean(0), exact, se)
        variances[baseline] = est.var(0).sum()
    no_b, with_b = variances.values()
    assert with_b < no_b / 10, variances


# ---- samples follow the softmax ----------------------------------------------------------------------------

def _chi2(counts, probs):
    n = counts.sum()
    return float(((counts - n * probs) ** 2 / (n * probs)).sum())


@pytest.mark.parametrize("fw_name", ["keras", "pytorch"])
def test_gumbel_samples_follow_the_softmax(fw_name):
    logits = np.array([1.0, -0.5, 0.3, 2.0, 0.0], "float32")
    probs = _softmax(logits.astype(np.float64))
    n = 20_000
    tiled = np.tile(logits, (n, 1))
    if fw_name == "pytorch":
        torch.manual_seed(0)
        soft = ac.torch.gumbel_softmax(torch.as_tensor(tiled), tau=0.7).numpy()
        hard = ac.torch.gumbel_softmax(torch.as_tensor(tiled), tau=0.7, hard=True).numpy()
    else:
        import keras

        keras.utils.set_random_seed(0)
        soft = np.asarray(ac.keras.gumbel_softmax(tiled, tau=0.7))
        hard = np.asarray(ac.keras.gumbel_softmax(tiled, tau=0.7, hard=True))
    np.testing.assert_allclose(soft.sum(-1), 1, rtol=1e-5)
    for sample in (soft, hard):
        counts = np.bincount(sample.argmax(-1), minlength=5)
        assert _chi2(counts, probs) < 20.5, (counts / n, probs)            # df 4: p ≈ 4e-4
    assert set(np.unique(hard.round(6))) <= {0.0, 1.0} and np.allclose(hard.sum(-1), 1)


@pytest.mark.parametrize("fw_name", ["keras", "pytorch"])
def test_hard_attention_samples_follow_the_softmax(fw_name):
    logits = np.array([0.2, 1.5, -0.7, 0.9], "float32")
    probs = _softmax(logits.astype(np.float64))
    n = 20_000
    q = np.tile(logits, (n, 1, 1))
    key = np.tile(np.eye(4, dtype="float32"), (n, 1, 1))
    fw = ac.torch if fw_name == "pytorch" else ac.keras
    layer = fw.HardAttention(seed=3)
    _, index, log_prob = layer(*(as_input(fw, a) for a in (q, key, key)))
    counts = np.bincount(to_numpy(index).reshape(-1), minlength=4)
    assert _chi2(counts, probs) < 18.5, (counts / n, probs)                # df 3: p ≈ 3e-4
    np.testing.assert_allclose(to_numpy(log_prob)[:, 0], np.log(probs)[to_numpy(index)[:, 0]], rtol=1e-5)


# ---- errors ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, needle", [
    (dict(mode="x"), "unknown local attention mode 'x'"),
    (dict(mode="p", window=2), "give dim="),
    (dict(mode="p", window=0, dim=4), "must be >= 1"),
    (dict(mode="m", window=-1), "must be >= 0"),
])
def test_local_attention_config_errors(fw, kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        fw.LocalAttention(**kwargs)


def test_pointer_model_rejects_unknown_attention(fw):
    with pytest.raises(ConfigError, match="unknown attention 'sparse'"):
        fw.PointerModel(14, 10, 12, 10, attention="sparse")


@pytest.mark.parametrize("layer", ["LocalAttention", "HardAttention", "GumbelSoftmaxAttention"])
def test_shape_errors_name_the_shapes(fw, layer):
    q, k = np.zeros((2, 3, 4), "float32"), np.zeros((2, 5, 6), "float32")
    with pytest.raises(ShapeError, match=r"query \(2, 3, 4\) has d=4, key \(2, 5, 6\) has d=6"):
        getattr(fw, layer)()(as_input(fw, q), as_input(fw, k), as_input(fw, k))
    k = np.zeros((2, 5, 4), "float32")
    with pytest.raises(ShapeError, match=r"mask of shape \(2, 3\)"):
        getattr(fw, layer)()(as_input(fw, q), as_input(fw, k), as_input(fw, k),
                             mask=as_input(fw, np.ones((2, 3), bool)))


# ---- data, training, timing --------------------------------------------------------------------------------

def test_shifted_copy_task():
    x, y = synthetic.shifted_copy_task(50, length=20, shift=4, n_symbols=7, seed=3)
    assert x.shape == (50, 20) and y.shape == (50, 16)
    np.testing.assert_array_equal(y, x[:, 4:] - synthetic.FIRST_SYMBOL)
    assert x.min() >= synthetic.FIRST_SYMBOL and y.max() < 7
    np.testing.assert_array_equal(x, synthetic.shifted_copy_task(50, length=20, shift=4, n_symbols=7, seed=3)[0])
    with pytest.raises(ConfigError, match="shift"):
        synthetic.shifted_copy_task(5, length=4, shift=4)


@pytest.mark.parametrize("attention", ["soft", "hard"])
def test_training_learns_the_pointer_task(fw, attention):
    x, y = synthetic.shifted_copy_task(2000, length=10, shift=2, seed=4)
    if fw is ac.torch:
        torch.manual_seed(0)
    else:
        import keras

        keras.utils.set_random_seed(0)
    model = fw.PointerModel(14, 10, 10, 8, dim=16, attention=attention)
    run = fw.train_pointer(model, x, y, steps=200, lr=1e-2, entropy=0.05, eval_every=100, probe=x[:2])
    history = run["history"]
    assert [h["step"] for h in history] == [0, 100, 200]
    assert history[-1]["accuracy"] > 0.9 and history[0]["accuracy"] < 0.5
    assert history[-1]["entropy"] < history[0]["entropy"]
    assert len(run["snapshots"]) == 3 and run["snapshots"][0][1].shape == (2, 8, 10)


def test_local_writes_less_than_global_on_long_sequences(fw):
    # a counted cost (elements of every tensor one forward pass writes), never a wall-clock time
    long_global, long_local = (cost_of(fw).tensor_elements(k, 4096, window=4) for k in ("global", "local-p"))
    assert long_global["largest"] == 4096 * 4096                      # the (1, S, S) score matrix
    assert long_local["largest"] == 4096 * 9 * 32                     # the gathered windows (1, S, 2D+1, d)
    assert 0 < long_local["elements"] < long_global["elements"] / 2
    short_global, short_local = (cost_of(fw).tensor_elements(k, 64, window=4) for k in ("global", "local-p"))
    assert short_local["elements"] > short_global["elements"]         # no saving on short sequences
    wider = cost_of(fw).tensor_elements("local-p", 4096, window=8)
    assert wider["elements"] > long_local["elements"]


def test_cost_counts_agree_between_frameworks():
    import attention_course as ac

    for kind in ("global", "local-m", "dot", "additive", "score-additive", "score-concat"):
        k = ac.bench.keras_cost.tensor_elements(kind, 64, dim=16)
        t = ac.bench.torch_cost.tensor_elements(kind, 64, dim=16)
        assert k["largest"] == t["largest"], kind
        assert abs(k["elements"] - t["elements"]) <= 0.5 * t["elements"], (kind, k, t)


# ---- exercise checkers ------------------------------------------------------------------------------------

def _gumbel(lg, rng):
    return -np.log(-np.log(rng.random(lg.shape)))


def _sampler(soft):
    def fn(logits, tau, rng, hard=False):
        y = soft(logits, tau, rng)
        return np.eye(y.shape[-1])[y.argmax(-1)] if hard else y

    return fn


def test_gumbel_checker_accepts_the_reference():
    for seed in range(3):
        exercises.gumbel_softmax_sample(exercises.reference_gumbel_softmax, seed=seed)
        exercises.gumbel_softmax_sample(_sampler(lambda lg, t, r: _softmax((lg + r.gumbel(size=lg.shape)) / t)),
                                     seed=seed)


@pytest.mark.parametrize("wrong, needle", [
    (_sampler(lambda lg, t, r: _softmax((lg + r.normal(size=lg.shape)) / t)), "Gaussian"),
    (_sampler(lambda lg, t, r: _softmax((lg + r.random(lg.shape)) / t)), "added as it is"),
    (_sampler(lambda lg, t, r: _softmax((lg + np.log(-np.log(r.random(lg.shape)))) / t)), "wrong sign"),
    (_sampler(lambda lg, t, r: _softmax((lg - np.log(r.random(lg.shape))) / t)), "one log is missing"),
    (_sampler(lambda lg, t, r: _softmax(lg / t)), "no noise"),
    (_sampler(lambda lg, t, r: _softmax(lg / t + _gumbel(lg, r))), "only the logits are divided by τ"),
    (_sampler(lambda lg, t, r: _softmax((lg + _gumbel(lg, r)) * t)), "multiply by τ"),
    (_sampler(lambda lg, t, r: _softmax((lg + _gumbel(lg, r)).T / t).T), "right axis"),
    (lambda lg, t, r, hard=False: _softmax((lg + _gumbel(lg, r)) / t), "must be a one-hot vector"),
    (lambda lg, t, r, hard=False: np.eye(lg.shape[-1])[lg.argmax(-1)] if hard else _softmax((lg + _gumbel(lg, r)) / t),
     "argmax of the logits"),
])
def test_gumbel_checker_names_mistakes(wrong, needle):
    for seed in range(3):
        with np.errstate(all="ignore"), pytest.raises(exercises.ExerciseError, match=needle):
            exercises.gumbel_softmax_sample(wrong, seed=seed)


def _gauss(p, s, sigma, squared_twice=True):
    return np.exp(-((np.arange(s) - p[:, None]) ** 2) / ((2 if squared_twice else 1) * sigma**2))


def _window(p, s, d):
    return np.abs(np.arange(s) - np.floor(p + 0.5)[:, None]) <= d


@pytest.mark.parametrize("wrong, needle", [
    (lambda sc, p, d: reference_local_weights(sc, p, d, sigma=d), "σ = D/2"),
    (lambda sc, p, d: reference_local_weights(sc, p, d, gaussian=False), "no Gaussian factor"),
    (lambda sc, p, d: _softmax(sc) * _gauss(p, sc.shape[1], d / 2), "not truncated"),
    (lambda sc, p, d: _softmax(sc) * _window(p, sc.shape[1], d) * _gauss(p, sc.shape[1], d / 2), "whole sequence"),
    (lambda sc, p, d: reference_local_weights(sc, p, d, gaussian=False) * _gauss(np.floor(p + 0.5), sc.shape[1], d / 2),
     "rounded centre"),
    (lambda sc, p, d: (lambda w: w / w.sum(-1, keepdims=True))(reference_local_weights(sc, p, d)), "renormalised"),
    (lambda sc, p, d: reference_local_weights(sc, p, d, gaussian=False) * _gauss(p, sc.shape[1], d / 2, False),
     "lacks the 2"),
    (lambda sc, p, d: reference_local_weights(sc, np.floor(p), d, gaussian=False) * _gauss(p, sc.shape[1], d / 2),
     r"truncated \(int\(p\)\)"),
    (lambda sc, p, d: reference_local_weights(sc, p, d).T, "shape"),
])
def test_local_p_checker_names_mistakes(wrong, needle):
    exercises.local_p_weights(lambda sc, p, d: reference_local_weights(sc, p, d), seed=0)
    for seed in range(3):
        with pytest.raises(exercises.ExerciseError, match=needle):
            exercises.local_p_weights(wrong, seed=seed)


# ---- charts ------------------------------------------------------------------------------------------------

def test_charts_build_with_descriptions():
    import pandas as pd

    dist = pd.DataFrame([{"variant": v, "step": st, "position": p, "weight": 0.1, "answer": p == 3}
                         for v in ("soft", "hard") for st in (0, 10, 20) for p in range(6)])
    samples = pd.DataFrame([{"variant": v, "step": st, "output step": t, "position": t + 1, "answer position": t + 1}
                            for v in ("soft", "hard") for st in (0, 10, 20) for t in range(4)])
    gumbel = pd.DataFrame([{"tau": tau, "row": r, "position": p, "weight": 0.25}
                           for tau in (0.5, 1.0) for r in ("softmax(logits)", "sample 1") for p in range(4)])
    window = pd.DataFrame([{"variant": v, "t": t, "position": p, "weight": 0.2, "lo": t, "hi": t + 2,
                            "centre": t + 1.2, "answer": t + 1} for v in ("local-m", "local-p")
                           for t in range(3) for p in range(t, t + 3)])
    timing = pd.DataFrame([{"length": n, "milliseconds": n / 100, "attention": a, "framework": "pytorch"}
                           for n in (128, 256) for a in ("global", "local")])
    charts = [
        ac.viz.distribution_over_training(dist, samples, description="d1"),
        ac.viz.distribution_over_training(dist, description="d2"),
        ac.viz.gumbel_samples(gumbel, description="d3"),
        ac.viz.local_window(window, description="d4"),
        ac.viz.timing(timing, x="length", title="t", description="d5"),
    ]
    for i, chart in enumerate(charts, start=1):
        spec = chart.to_dict()
        assert spec["description"] == f"d{i}"  # not timed
        nested = spec.get("hconcat", []) + spec.get("vconcat", [])
        assert "params" in spec or any("params" in c for c in nested)  # not timed
    with pytest.raises(ValueError, match="missing"):
        ac.viz.timing(timing.drop(columns="framework"), x="length", title="t")
