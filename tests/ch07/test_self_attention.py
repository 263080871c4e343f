"""Chapter 7: scaled dot-product attention over heads (the fused and the explicit path agree, masks hide what
they say, a query that sees nothing gets zeros), single-head and multi-head attention in both frameworks with
shared weights, parity with torch.nn.MultiheadAttention and keras.layers.MultiHeadAttention both ways, the
properties the chapter relies on (permutation equivariance, causality, RoPE's relative positions), and errors."""

import keras
import numpy as np
import pytest
import torch
from conftest import cost_of, to_numpy

import attention_course as ac
from attention_course.core.errors import ConfigError, ShapeError
from attention_course.core.parity import torch_to_keras

pytestmark = pytest.mark.chapter(7, 8, 9)   # Chapters 7, 8 and 9: `make test CHAPTERS=...` picks by it

RTOL, ATOL = 1e-5, 1e-5
B, T, D, H = 3, 7, 16, 4


def _x(seed=0, b=B, t=T, d=D):
    return np.random.default_rng(seed).normal(size=(b, t, d)).astype(np.float32)


def _padding(b=B, t=T):
    mask = np.ones((b, t), bool)
    mask[1, 4:] = False                      # a padded sentence
    mask[2, 1:] = False                      # one real token
    return mask


def _mha(fw, **kw):
    torch.manual_seed(0)
    keras.utils.set_random_seed(0)
    return fw.MultiHeadAttention(D, H, **kw)


def _heads(seed=0, b=B, h=H, t_q=T, t_k=T, d=8):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s).astype(np.float32) for s in ((b, h, t_q, d), (b, h, t_k, d), (b, h, t_k, d))]


def _reference(q, k, v, visible):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores = np.where(visible, scores, -np.inf)
    top = np.max(np.where(np.isfinite(scores), scores, -1e30), -1, keepdims=True)
    w = np.where(visible, np.exp(scores - top), 0.0)
    w = w / np.maximum(w.sum(-1, keepdims=True), 1e-30)
    return w @ v, w


# ---- scaled dot-product attention ------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["none", "padding", "causal", "both", "full mask", "decoder step"])
def test_fused_and_explicit_paths_match_a_numpy_reference(fw, case):
    t_q = 3 if case == "decoder step" else T
    q, k, v = _heads(1, t_q=t_q)
    mask = {"padding": _padding(), "both": _padding()}.get(case)
    if case == "full mask":
        mask = np.random.default_rng(2).random((B, T, T)) > 0.5
        mask[0, 2] = False                                   # a query that may see no key
    causal = case in ("causal", "both", "decoder step")
    visible = np.ones((B, 1, t_q, T), bool)
    if mask is not None:
        visible = visible & (mask[:, None, None, :] if mask.ndim == 2 else mask[:, None])
    if causal:
        visible = visible & np.tri(t_q, T, T - t_q, dtype=bool)
    want, want_w = _reference(q, k, v, visible)
    masks = {"padding_mask": mask} if mask is not None and mask.ndim == 2 else {"mask": mask}   # (B, T_k): padding
    fast = to_numpy(fw.scaled_dot_product_attention(q, k, v, causal=causal, **masks))
    slow, weights = fw.scaled_dot_product_attention(q, k, v, causal=causal, return_weights=True, **masks)
    for got in (fast, to_numpy(slow)):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(to_numpy(weights), want_w, rtol=RTOL, atol=ATOL)
    assert (to_numpy(weights)[~np.broadcast_to(visible, want_w.shape)] == 0).all()


def test_causal_mask_sees_the_past_and_the_last_queries(fw):
    assert np.array_equal(to_numpy(fw.causal_mask(4)), np.tri(4, dtype=bool)[None])           # (1, T_q, T_k)
    assert np.array_equal(to_numpy(fw.causal_mask(2, 5)), [[[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]])


def test_split_and_merge_heads_are_inverse_and_keep_feature_blocks(fw):
    x = _x()
    heads = to_numpy(fw.split_heads(fw_tensor(fw, x), H))
    assert heads.shape == (B, H, T, D // H)
    np.testing.assert_array_equal(heads[:, 1], x[:, :, D // H:2 * D // H])        # head 1 = features 4..7
    np.testing.assert_array_equal(to_numpy(fw.merge_heads(fw_tensor(fw, heads))), x)


def fw_tensor(fw, x):
    return torch.as_tensor(x) if fw is ac.torch else keras.ops.convert_to_tensor(x)


# ---- the layers ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"bias": False}, {"rotary": True}])
def test_multi_head_attention_twins_agree(kw):
    x, mask = _x(), _padding()
    t, k = _mha(ac.torch, **kw), _mha(ac.keras, **kw)
    torch_to_keras(t, k, (x,))
    for args in ({"padding_mask": mask}, {"causal": True}, {"padding_mask": mask, "causal": True},
                 {"mask": mask[:, None, :] & np.tri(T, dtype=bool)}):
        out_t, w_t = t(x, **args, return_weights=True)
        out_k, w_k = k(x, **args, return_weights=True)
        np.testing.assert_allclose(to_numpy(out_t), to_numpy(out_k), rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(to_numpy(w_t), to_numpy(w_k), rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(to_numpy(t(x, **args)), to_numpy(out_t), rtol=RTOL, atol=ATOL)   # fast path
        np.testing.assert_allclose(to_numpy(k(x, **args)), to_numpy(out_k), rtol=RTOL, atol=ATOL)


def test_cross_attention_takes_keys_of_another_length(fw):
    m = _mha(fw)
    out, w = m(_x(1, t=3), _x(2, t=9), padding_mask=np.ones((B, 9), bool), return_weights=True)
    assert tuple(out.shape) == (B, 3, D) and tuple(w.shape) == (B, H, 3, 9)


def test_single_head_self_attention_twins_agree_and_equal_one_head():
    x = _x()
    torch.manual_seed(0)
    t = ac.torch.SelfAttention(D, 6)
    k = ac.keras.SelfAttention(D, 6)
    torch_to_keras(t, k, (x,))
    out_t, w_t = t(x, causal=True, return_weights=True)
    np.testing.assert_allclose(to_numpy(out_t), to_numpy(k(x, causal=True)), rtol=RTOL, atol=ATOL)
    q, kk, v = (x @ to_numpy(w.weight).T for w in (t.W_query, t.W_key, t.W_value))
    want, want_w = _reference(q[:, None], kk[:, None], v[:, None], np.tri(T, dtype=bool))
    np.testing.assert_allclose(to_numpy(out_t), want[:, 0], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(to_numpy(w_t), want_w[:, 0], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("bias", [True, False])
def test_parity_with_torch_multihead_attention_both_ways(bias):
    x, mask = _x(), _padding()
    ours = _mha(ac.torch, bias=bias)
    theirs = ac.torch.as_framework_layer(ours)
    causal = torch.as_tensor(~np.tri(T, dtype=bool))                         # PyTorch: True = hidden
    pad = torch.as_tensor(~mask)
    out, w = theirs(*(torch.as_tensor(x),) * 3, key_padding_mask=pad, attn_mask=causal, need_weights=True,
                    average_attn_weights=False)
    ours_out, ours_w = ours(x, padding_mask=mask, causal=True, return_weights=True)
    rows = mask.any(1)                                                       # PyTorch gives NaN where nothing is seen
    keep = np.tri(T, dtype=bool)[None].repeat(B, 0) & mask[:, None, :]
    seen = keep.any(-1)
    np.testing.assert_allclose(to_numpy(ours_out)[seen], to_numpy(out)[seen], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(to_numpy(ours_w)[seen[:, None].repeat(H, 1)],
                               to_numpy(w)[seen[:, None].repeat(H, 1)], rtol=RTOL, atol=ATOL)
    assert rows.all()
    back = ac.torch.from_framework_layer(theirs)
    for a, b in zip(ours.state_dict().values(), back.state_dict().values(), strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


@pytest.mark.parametrize("bias", [True, False])
def test_parity_with_keras_multi_head_attention_both_ways(bias):
    x, mask = _x(), _padding()
    ours = _mha(ac.keras, bias=bias)
    ours(x)
    theirs = ac.keras.as_framework_layer(ours)
    full = mask[:, None, :] & np.tri(T, dtype=bool)[None]                     # (B, T_q, T_k), True = seen
    seen = full.any(-1)
    out, w = theirs(x, x, x, attention_mask=full, return_attention_scores=True)
    ours_out, ours_w = ours(x, mask=full, return_weights=True)
    np.testing.assert_allclose(to_numpy(ours_out)[seen], to_numpy(out)[seen], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(to_numpy(ours_w)[seen[:, None].repeat(H, 1)],
                               to_numpy(w)[seen[:, None].repeat(H, 1)], rtol=RTOL, atol=ATOL)
    back = ac.keras.from_framework_layer(theirs)
    for a, b in zip(ours.weights, back.weights, strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


# ---- properties ------------------------------------------------------------------------------------------------

def test_self_attention_without_positions_is_permutation_equivariant(fw):
    m, x = _mha(fw), _x()
    perm = np.random.default_rng(3).permutation(T)
    np.testing.assert_allclose(to_numpy(m(x[:, perm])), to_numpy(m(x))[:, perm], rtol=1e-4, atol=1e-5)
    with_positions = fw.SinusoidalPositions(D)
    moved = to_numpy(m(with_positions(x[:, perm])))
    assert not np.allclose(moved, to_numpy(m(with_positions(x)))[:, perm], atol=1e-3)


def test_causal_attention_does_not_look_ahead(fw):
    m, x = _mha(fw), _x()
    y = x.copy()
    y[:, 4:] = _x(9)[:, 4:]                                                  # change the future
    np.testing.assert_allclose(to_numpy(m(y, causal=True))[:, :4], to_numpy(m(x, causal=True))[:, :4],
                               rtol=1e-5, atol=1e-5)


def test_rope_keeps_norms_and_scores_depend_on_the_offset_only(fw):
    rng = np.random.default_rng(4)
    q = np.repeat(rng.normal(size=(1, 1, 1, 8)).astype(np.float32), 12, axis=2)     # the same query at every p
    k = np.repeat(rng.normal(size=(1, 1, 1, 8)).astype(np.float32), 12, axis=2)
    rq, rk = to_numpy(fw.rope(q)), to_numpy(fw.rope(k))
    np.testing.assert_allclose(np.linalg.norm(rq, axis=-1), np.linalg.norm(q, axis=-1), rtol=1e-5)
    scores = rq[0, 0] @ rk[0, 0].T                                            # (12, 12)
    for offset in (-3, 0, 2):
        np.testing.assert_allclose(np.diagonal(scores, offset), np.diagonal(scores, offset)[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(to_numpy(fw.rope(q))[:, :, 5:], to_numpy(fw.rope(q[:, :, 5:], offset=5)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rq[0, 0, 0], q[0, 0, 0])                      # position 0 is not rotated


def test_positions_twins_agree():
    x = _x()
    np.testing.assert_allclose(to_numpy(ac.torch.SinusoidalPositions(D)(x)),
                               to_numpy(ac.keras.SinusoidalPositions(D)(x)), rtol=1e-5, atol=1e-5)
    torch.manual_seed(0)
    t, k = ac.torch.LearnedPositions(10, D), ac.keras.LearnedPositions(10, D)
    k(x)
    k.table.embeddings.assign(to_numpy(t.table.weight))
    np.testing.assert_allclose(to_numpy(t(x)), to_numpy(k(x)), rtol=RTOL, atol=ATOL)
    q = _heads(5)[0]
    np.testing.assert_allclose(to_numpy(ac.torch.rope(q, offset=3)), to_numpy(ac.keras.rope(q, offset=3)),
                               rtol=1e-5, atol=1e-5)


def test_learned_positions_start_alike_in_both_frameworks():
    # the twins' tables start from the same distribution, N(0, 1) (Keras' default embedding would be U(±0.05))
    torch.manual_seed(0)
    keras.utils.set_random_seed(0)
    k = ac.keras.LearnedPositions(256, 64)
    k(np.zeros((1, 4, 64), np.float32))
    for table in (to_numpy(ac.torch.LearnedPositions(256, 64).table.weight), to_numpy(k.table.embeddings)):
        assert abs(table.mean()) < 0.04 and 0.97 < table.std() < 1.03 and np.abs(table).max() > 3, table.std()


@pytest.mark.parametrize("backward", [False, True])
def test_every_benchmarked_attention_runs(fw, backward):
    for kind in (*cost_of(fw).MHA_KINDS, *cost_of(fw).FLASH_KINDS):      # Chapter 7's and Chapter 10's cases
        cost_of(fw).attention_pass(kind, 8, batch=2, heads=2, d_head=4, backward=backward)()
    with pytest.raises(ValueError, match="unknown attention kind 'sparse'"):
        cost_of(fw).attention_pass("sparse", 8)


def test_attention_flops_count_what_torch_counts():
    # the benchmark's TFLOP/s divide ac.bench.attention_flops by the time: check the count against PyTorch's own
    # counter of matrix-product FLOPs (which does not count the fused kernel on a CPU: compare the differences)
    import torch  # noqa: F401
    from torch.utils.flop_counter import FlopCounterMode

    counted = {}
    for kind in ac.bench.torch_cost.MHA_KINDS:
        for backward in (False, True):
            run = ac.bench.torch_cost.attention_pass(kind, 32, batch=2, heads=2, d_head=8, backward=backward)
            with FlopCounterMode(display=False) as counter:
                run()
            counted[kind, backward] = counter.get_total_flops()
    for backward in (False, True):
        def ours(kind, backward=backward):
            return ac.bench.attention_flops(kind, 32, batch=2, heads=2, d_head=8, backward=backward)

        assert counted["explicit", backward] == ours("explicit") == 4 * 2 * 2 * 32 ** 2 * 8 * (3 if backward else 1)
        for layer in ("course", "framework"):      # the layers add the four projections to their attention core
            assert counted[layer, backward] - counted["fused", backward] == ours(layer) - ours("fused")


# ---- bad inputs ------------------------------------------------------------------------------------------------

def test_bad_arguments_name_the_rule(fw):
    with pytest.raises(ConfigError, match="d_model=10 does not split into heads=4"):
        fw.MultiHeadAttention(10, 4)
    with pytest.raises(ConfigError, match="d_head = d_model / heads must be even"):
        fw.MultiHeadAttention(12, 4, rotary=True)
    m = _mha(fw)
    with pytest.raises(ShapeError, match=r"built for d_model=16, but got an input of shape \(3, 7, 8\)"):
        m(_x(d=8))
    with pytest.raises(ShapeError, match=r"padding_mask of shape \(3, 5\) must be \(batch, T_k\) = \(3, 7\)"):
        m(_x(), padding_mask=np.ones((B, 5), bool))
    with pytest.raises(ShapeError, match=r"mask of shape \(3, 1, 5\) does not fit"):
        m(_x(), mask=np.ones((B, 1, 5), bool))
    with pytest.raises(ShapeError, match="LearnedPositions has vectors for 4 positions, but the input has T=7"):
        fw.LearnedPositions(4, D)(_x())
    with pytest.raises(ShapeError, match=r"rope expects x of shape \(batch, heads, T, d_head\) with d_head even"):
        fw.rope(np.zeros((1, 2, 3, 5), np.float32))
    q, k, v = _heads()
    with pytest.raises(ShapeError, match="scaled_dot_product_attention expects 4-D"):
        fw.scaled_dot_product_attention(q[0], k[0], v[0])
    with pytest.raises(ShapeError, match=r"mask of shape \(3, 1, 6\) does not fit query \(3, 4, 7, 8\)"):
        fw.scaled_dot_product_attention(q, k, v, np.ones((B, 1, 6), bool))
    with pytest.raises(ShapeError, match=r"padding_mask of shape \(3, 6\) must be \(batch, T_k\) = \(3, 7\)"):
        fw.scaled_dot_product_attention(q, k, v, padding_mask=np.ones((B, 6), bool))
    with pytest.raises(ShapeError, match=r"mask of shape \(3, 2, 7, 7\) must be 3-D"):
        m(_x(), mask=np.ones((B, 2, T, T), bool))


# ---- the exercise checkers -------------------------------------------------------------------------------------

def _split(x, h):
    b, t, d = x.shape
    return x.reshape(b, t, h, d // h).transpose(0, 2, 1, 3)


def _merge(x):
    b, h, t, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)


def test_heads_checker_passes_the_answer_and_names_mistakes(capsys):
    ac.exercises.heads(_split, _merge)
    assert "split and merge heads" in capsys.readouterr().out
    with pytest.raises(ac.exercises.ExerciseError, match="heads split along the wrong axis"):
        ac.exercises.heads(lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1), _merge)
    with pytest.raises(ac.exercises.ExerciseError, match="interleaved"):
        ac.exercises.heads(lambda x, h: x.reshape(*x.shape[:2], -1, h).transpose(0, 3, 1, 2), _merge)
    with pytest.raises(ac.exercises.ExerciseError, match="merge: the heads are not moved back"):
        ac.exercises.heads(_split, lambda x: x.reshape(x.shape[0], x.shape[2], -1))


def test_causal_checker_passes_the_answer_and_names_mistakes():
    ac.exercises.causal(lambda q, k: np.tri(q, k, k - q, dtype=bool))
    mistakes = {
        "see the future": lambda q, k: ~np.tri(q, k, k - q - 1, dtype=bool),
        "must see itself": lambda q, k: np.tri(q, k, k - q - 1, dtype=bool),
        "inverted": lambda q, k: ~np.tri(q, k, k - q, dtype=bool),
        "the last T_q positions": lambda q, k: np.tri(q, k, dtype=bool),
        "bool mask": lambda q, k: np.tri(q, k, k - q),
    }
    for needle, fn in mistakes.items():
        with pytest.raises(ac.exercises.ExerciseError, match=needle):
            ac.exercises.causal(fn)


def _rope(x, base, pairs="adjacent", power=2.0, sign=1.0, start=0):
    t, d = x.shape
    angle = (np.arange(t) + start)[:, None] * base ** (-power * np.arange(d // 2) / d)
    cos, sin = np.cos(angle), sign * np.sin(angle)
    out = x.copy()
    idx = (np.arange(0, d, 2), np.arange(1, d, 2)) if pairs == "adjacent" else (np.arange(d // 2), np.arange(d // 2, d))
    a, b = x[:, idx[0]], x[:, idx[1]]
    out[:, idx[0]], out[:, idx[1]] = a * cos - b * sin, a * sin + b * cos
    return out


def test_rotary_checker_passes_the_answer_and_names_mistakes():
    ac.exercises.rotary(_rope)
    ac.exercises.rotary(lambda x, base: ac.torch.rope(x[None, None], base=base)[0, 0].double().numpy())
    mistakes = {"wrong pairs": {"pairs": "halves"}, "base\\^\\(-i/d\\)": {"power": 1.0},
                "wrong way": {"sign": -1.0}, "positions start at 0": {"start": 1}}
    for needle, kw in mistakes.items():
        with pytest.raises(ac.exercises.ExerciseError, match=needle):
            ac.exercises.rotary(lambda x, base, kw=kw: _rope(x, base, **kw))


def _multi_head(x, W_q, W_k, W_v, W_o, heads, causal, scale=None, out=True):
    q, k, v = (_split(x @ w, heads) for w in (W_q, W_k, W_v))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1] if scale is None else scale)
    if causal:
        s = np.where(np.tri(x.shape[1], dtype=bool), s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    merged = _merge(w / w.sum(-1, keepdims=True) @ v)
    return merged @ W_o if out else merged


def test_multi_head_checker_passes_the_answer_and_names_mistakes():
    ac.exercises.multi_head(_multi_head)
    with pytest.raises(ac.exercises.ExerciseError, match="scaled by sqrt\\(d_model\\)"):
        ac.exercises.multi_head(lambda x, *w: _multi_head(x, *w[:4], *w[4:], scale=x.shape[-1]))
    with pytest.raises(ac.exercises.ExerciseError, match="W_o is missing"):
        ac.exercises.multi_head(lambda x, *w: _multi_head(x, *w, out=False))
    with pytest.raises(ac.exercises.ExerciseError, match="causal mask is missing"):
        ac.exercises.multi_head(lambda x, *w: _multi_head(x, *w[:5], False))


def test_a_nan_at_a_hidden_key_stays_there(fw):
    """A NaN (or inf) in a padded position the mask hides does not reach the example's real positions, as in
    Chapter 1's DotProductAttention: the hidden keys and values are zeros before the projections."""
    mha = fw.MultiHeadAttention(8, 2)
    x = np.random.default_rng(0).normal(size=(2, 4, 8)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)
    clean = to_numpy(mha(x, x, x, padding_mask=mask))
    for bad in (np.nan, np.inf):
        dirty = x.copy()
        dirty[0, 3] = bad
        out = to_numpy(mha(x, dirty, dirty, padding_mask=mask))         # keys and values from the padded input
        np.testing.assert_allclose(out, clean, rtol=1e-5, atol=1e-6)
        out = to_numpy(mha(dirty, padding_mask=mask))                  # self-attention: only the pad's own row
        assert np.isfinite(out[0, :3]).all() and np.isfinite(out[1]).all()
        np.testing.assert_allclose(out[0, :3], clean[0, :3], rtol=1e-5, atol=1e-6)


def test_a_causal_mask_is_never_read_as_a_padding_mask(fw):
    """causal_mask(T) is (1, T, T): with a batch of T examples it still means "the past", as causal=True does
    (a (T, T) mask would have been read as a (batch, T_k) padding mask)."""
    mha = fw.MultiHeadAttention(8, 2)
    x = np.random.default_rng(1).normal(size=(4, 4, 8)).astype(np.float32)
    np.testing.assert_allclose(to_numpy(mha(x, mask=fw.causal_mask(4))), to_numpy(mha(x, causal=True)),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make, rule", [
    (lambda fw: fw.causal_mask(0), "t_q must be >= 1"),
    (lambda fw: fw.causal_mask(3, 0), "t_k must be >= 1"),
    (lambda fw: fw.SinusoidalPositions(0), "d_model must be >= 1"),
    (lambda fw: fw.LearnedPositions(0, 8), "max_len must be >= 1"),
])
def test_sizes_of_zero_are_refused(fw, make, rule):
    with pytest.raises(ConfigError, match=rule):
        make(fw)


# ---- a mask says what it is -------------------------------------------------------------------------------------

def _lengths_mask(t):
    return np.arange(t)[None, :] < np.arange(t, 0, -1)[:, None]          # (T, T): example i has T − i real tokens


def test_a_2d_mask_is_refused_even_when_the_batch_is_t(fw):
    """With a batch of T examples a (T, T) attention mask and a (batch, T) padding mask have the same shape; a 2-D
    ``mask`` was read as padding. Now ``mask`` is 3-D and a padding mask goes to ``padding_mask``, in every layer."""
    t = 5
    x = _x(3, b=t, t=t, d=8)
    tri = np.tri(t, dtype=bool)                                          # "the past", (T_q, T_k)
    calls = {"MultiHeadAttention": lambda m: fw.MultiHeadAttention(8, 2)(x, mask=m),
             "SelfAttention": lambda m: fw.SelfAttention(8, 8)(x, mask=m),
             "scaled_dot_product_attention": lambda m: fw.scaled_dot_product_attention(
                 *_heads(b=t, t_q=t, t_k=t), mask=m)}
    for call in calls.values():
        for mask in (tri, _lengths_mask(t)):
            with pytest.raises(ShapeError, match=r"mask of shape \(5, 5\) is 2-D.*padding_mask=.*\(1, T_q, T_k\)"):
                call(mask)
        call(tri[None])                                                  # (1, T_q, T_k): the past, for every example


def test_a_padding_mask_hides_each_examples_pads_with_a_batch_of_t(fw):
    t = 5
    pad = _lengths_mask(t)                                               # (B, T_k) with B = T
    q, k, v = _heads(4, b=t, h=2, t_q=t, t_k=t)
    for causal in (False, True):
        visible = np.broadcast_to(pad[:, None, None, :], (t, 2, t, t))
        if causal:
            visible = visible & np.tri(t, dtype=bool)
        want, want_w = _reference(q, k, v, visible)
        fast = fw.scaled_dot_product_attention(q, k, v, causal=causal, padding_mask=pad)
        slow, w = fw.scaled_dot_product_attention(q, k, v, causal=causal, return_weights=True, padding_mask=pad)
        for got in (fast, slow):
            np.testing.assert_allclose(to_numpy(got), want, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(to_numpy(w), want_w, rtol=RTOL, atol=ATOL)
    x = _x(5, b=t, t=t, d=8)
    mha = fw.MultiHeadAttention(8, 2)
    out, w = mha(x, padding_mask=pad, return_weights=True)
    assert (to_numpy(w)[~np.broadcast_to(pad[:, None, None, :], (t, 2, t, t))] == 0).all()     # no pad is seen
    np.testing.assert_allclose(to_numpy(out), to_numpy(mha(x, mask=pad[:, None, :])), rtol=RTOL, atol=ATOL)
    both = to_numpy(mha(x, mask=fw.causal_mask(t), padding_mask=pad))                         # the two together
    np.testing.assert_allclose(both, to_numpy(mha(x, causal=True, padding_mask=pad)), rtol=RTOL, atol=ATOL)
    one = fw.SelfAttention(8, 8)
    np.testing.assert_allclose(to_numpy(one(x, padding_mask=pad)), to_numpy(one(x, mask=pad[:, None, :])),
                               rtol=RTOL, atol=ATOL)
    with pytest.raises(ShapeError, match=r"padding_mask of shape \(5, 6\) must be \(batch, T_k\) = \(5, 5\)"):
        mha(x, padding_mask=np.ones((t, t + 1), bool))
    with pytest.raises(ShapeError, match=r"padding_mask of shape \(1, 5, 5\) must be \(batch, T_k\)"):
        mha(x, padding_mask=pad[None])
