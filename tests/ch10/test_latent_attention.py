"""Multi-head latent attention in both frameworks: the absorbed form (queries moved into the latent space, the
values' up-projection applied after the mix) equals the expanded form (every head's keys and values projected back
from the cached latent vectors), with masks and with the decoupled rotary part; the frameworks agree with shared
weights; the cache is the latent (and the shared rotary key); rotary positions make the layer see order."""

import numpy as np
import pytest
import torch
from conftest import to_numpy

from attention_course.ch10_modern_attention import keras as ch10_keras
from attention_course.ch10_modern_attention import torch as ch10_torch
from attention_course.ch10_modern_attention.cache import CacheShape, rope_half
from attention_course.core.errors import ConfigError

pytestmark = pytest.mark.chapter(10)
X = np.random.default_rng(1).normal(size=(2, 6, 16)).astype("float32")
PADS = np.array([[True] * 4 + [False] * 2, [True] * 6])


def test_absorbed_equals_expanded_in_pytorch():
    torch.manual_seed(0)
    layer = ch10_torch.MultiHeadLatentAttention(16, 4, 6).eval()
    x = torch.as_tensor(X)
    with torch.no_grad():
        for kwargs in ({"causal": True}, {"padding_mask": torch.as_tensor(PADS)}):
            np.testing.assert_allclose(layer(x, absorbed=True, **kwargs).numpy(), layer(x, **kwargs).numpy(),
                                       rtol=1e-5, atol=1e-6)
        assert layer.W_dkv(x).shape[-1] == 6 == CacheShape("mla", "MLA", 1, 4, 4, 4, d_latent=6).numbers_per_token


def test_absorbed_equals_expanded_in_keras_and_the_frameworks_agree():
    torch.manual_seed(0)
    tm = ch10_torch.MultiHeadLatentAttention(16, 4, 6).eval()
    km = ch10_keras.MultiHeadLatentAttention(16, 4, 6)
    km(X)
    for name in ("W_q", "W_dkv", "W_uk", "W_uv", "W_o"):
        getattr(km, name).set_weights([getattr(tm, name).weight.detach().numpy().T])
    for kwargs in ({"causal": True}, {"padding_mask": PADS}):
        expanded = to_numpy(km(X, **kwargs))
        np.testing.assert_allclose(to_numpy(km(X, absorbed=True, **kwargs)), expanded, rtol=1e-5, atol=1e-5)
        with torch.no_grad():
            theirs = tm(torch.as_tensor(X), **{k: torch.as_tensor(v) if k == "padding_mask" else v
                                               for k, v in kwargs.items()})
        np.testing.assert_allclose(expanded, theirs.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("module", [ch10_keras, ch10_torch], ids=["keras", "pytorch"])
def test_sizes_are_checked(module):
    with pytest.raises(ConfigError, match="d_latent"):
        module.MultiHeadLatentAttention(16, 4, 0)
    with pytest.raises(ConfigError, match="heads"):
        module.MultiHeadLatentAttention(16, 3, 6)
    with pytest.raises(ConfigError, match="d_rope=3: rotary positions turn pairs"):
        module.MultiHeadLatentAttention(16, 4, 6, d_rope=3)


def _shared(d_rope: int):
    """The same latent attention with decoupled rotary keys in both frameworks (PyTorch's weights copied)."""
    torch.manual_seed(1)
    tm = ch10_torch.MultiHeadLatentAttention(16, 4, 6, d_rope=d_rope).eval()
    km = ch10_keras.MultiHeadLatentAttention(16, 4, 6, d_rope=d_rope)
    km(X)
    for name in ("W_q", "W_dkv", "W_uk", "W_uv", "W_o", *(("W_qr", "W_kr") if d_rope else ())):
        getattr(km, name).set_weights([getattr(tm, name).weight.detach().numpy().T])
    return tm, km


def test_the_decoupled_rotary_part_absorbs_and_agrees_in_both_frameworks():
    """With DeepSeek-V2's decoupled rotary query and shared rotary key the absorbed form still equals the expanded
    one, the weights too, and PyTorch and Keras give the same outputs; the cache per token is d_latent + d_rope."""
    tm, km = _shared(4)
    for kwargs in ({"causal": True}, {"padding_mask": PADS}):
        with torch.no_grad():
            t_kwargs = {k: torch.as_tensor(v) if k == "padding_mask" else v for k, v in kwargs.items()}
            out, weights = tm(torch.as_tensor(X), return_weights=True, **t_kwargs)
            out_a, weights_a = tm(torch.as_tensor(X), absorbed=True, return_weights=True, **t_kwargs)
        np.testing.assert_allclose(out_a.numpy(), out.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(weights_a.numpy(), weights.numpy(), rtol=1e-5, atol=1e-6)
        for absorbed in (False, True):
            np.testing.assert_allclose(to_numpy(km(X, absorbed=absorbed, **kwargs)), out.numpy(), rtol=1e-5,
                                       atol=1e-5)
    assert CacheShape("mla", "MLA", 1, 4, 4, 4, d_latent=6, d_rope=4).numbers_per_token == 6 + 4
    assert [rope_half(d) for d in (2, 6, 16, 128)] == [0, 2, 8, 64]
    with pytest.raises(ConfigError, match="d_head"):
        rope_half(0)


@pytest.mark.parametrize("d_rope", [0, 4])
def test_only_the_rotary_part_sees_the_order_of_the_tokens(d_rope):
    """Without a mask or causality, attention without positions is permutation-equivariant: reversing the tokens
    reverses the outputs. The decoupled rotary part breaks that, in both forms."""
    tm, _ = _shared(d_rope) if d_rope else (ch10_torch.MultiHeadLatentAttention(16, 4, 6).eval(), None)
    x = torch.as_tensor(X)
    with torch.no_grad():
        for absorbed in (False, True):
            reversed_out = tm(x.flip(1), absorbed=absorbed).flip(1)
            same = torch.allclose(reversed_out, tm(x, absorbed=absorbed), atol=1e-5)
            assert same == (d_rope == 0), (d_rope, absorbed)


@pytest.mark.parametrize("module", [ch10_keras, ch10_torch], ids=["keras", "pytorch"])
def test_a_latent_llama_uses_it_in_every_block_with_a_rotary_part(module):
    """``Llama(..., latent=n)``: every block's attention is latent attention with n latent numbers and a rotary part
    of half a head; its weights are causal; latent and linear attention together are refused."""
    model = module.Llama(30, 16, 4, 4, 2, 24, max_len=8, latent=6)
    ids = np.arange(10).reshape(2, 5) % 30
    logits, weights = model(torch.as_tensor(ids) if module is ch10_torch else ids, return_weights=True)
    assert tuple(logits.shape) == (2, 5, 30) and len(weights) == 2
    assert all(type(b.attention).__name__ == "MultiHeadLatentAttention" for b in model.blocks)
    assert all((b.attention.d_latent, b.attention.d_rope) == (6, 2) for b in model.blocks)
    w = to_numpy(weights[0])
    assert w.shape == (2, 4, 5, 5) and np.allclose(np.triu(w, 1), 0) and np.allclose(w.sum(-1), 1, atol=1e-5)
    with pytest.raises(ConfigError, match="choose linear=True or latent=6"):
        module.Llama(30, 16, 4, 4, 1, 24, linear=True, latent=6)


def _written(framework: str, layer, x: np.ndarray, **kwargs) -> list[np.ndarray]:
    """Every tensor one call of ``layer`` on ``x`` writes, as NumPy: PyTorch's through a dispatch mode that sees each
    operation's outputs, Keras' as the outputs of every operation of the traced graph."""
    if framework == "pytorch":
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten

        class Record(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.outputs = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                self.outputs += [t.detach().clone() for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
                return out

        with torch.no_grad(), Record() as record:
            layer(torch.as_tensor(x), **kwargs)
        return [t.numpy() for t in record.outputs if t.is_floating_point()]
    import tensorflow as tf

    wrapped = tf.compat.v1.wrap_function(lambda inputs: layer(inputs, **kwargs), [tf.TensorSpec(x.shape, tf.float32)])
    fetches = [t for op in wrapped.graph.get_operations() if op.type != "Placeholder" for t in op.outputs
               if t.dtype == tf.float32]
    return [t.numpy() for t in wrapped.prune(feeds=wrapped.graph.inputs[0], fetches=fetches)(tf.constant(x))]


def _holds(arrays: list[np.ndarray], every_head: np.ndarray, heads: int) -> bool:
    """Whether one of ``arrays`` is ``every_head`` (B, T, d_model), every head's keys or values, in any of the
    layouts a layer keeps them in: (B, T, d_model), (B·T, d_model), (B, T, h, d_head) or (B, h, T, d_head)."""
    b, t, d = every_head.shape
    for a in arrays:
        if a.size != every_head.size:
            continue
        layouts = [a.reshape(b, t, d)]
        if a.shape == (b, heads, t, d // heads):
            layouts.append(a.transpose(0, 2, 1, 3).reshape(b, t, d))
        if any(np.allclose(layout, every_head, rtol=1e-5, atol=1e-6) for layout in layouts):
            return True
    return False


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
@pytest.mark.parametrize("d_rope", [0, 4])
def test_the_absorbed_form_never_forms_the_keys_or_the_values(framework, d_rope):
    """What the text says the absorbed form computes: the queries moved into the latent space (q W_uk,h per head),
    scores against the latent c itself, W_uv,h applied after the mix. Of every tensor it writes, none holds every
    head's keys c W_uk or values c W_uv, in any layout; the expanded form does write them (so the search finds
    them when they are there)."""
    tm, km = _shared(d_rope)
    layer = {"pytorch": tm, "keras": km}[framework]
    w = {name: getattr(tm, name).weight.detach().numpy() for name in ("W_dkv", "W_uk", "W_uv")}
    c = X @ w["W_dkv"].T                                                       # (B, T, d_latent)
    keys, values = c @ w["W_uk"].T, c @ w["W_uv"].T                            # (B, T, d_model) each
    for absorbed in (False, True):
        written = _written(framework, layer, X, causal=True, absorbed=absorbed)
        assert _holds(written, keys, 4) == _holds(written, values, 4) == (not absorbed), (framework, absorbed)


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
@pytest.mark.parametrize("d_rope", [0, 4])
def test_a_nan_at_a_padded_position_reaches_no_real_position(framework, d_rope):
    """The first example's last two tokens are pads, and NaN: the real positions' outputs are those of the clean
    input, in both forms, with and without the rotary part (the pads' latents, keys and values are set to zero before
    any product, as multi-head attention does: a weight of 0 times NaN is NaN)."""
    tm, km = _shared(d_rope)
    dirty = X.copy()
    dirty[0, 4:] = np.nan
    for absorbed in (False, True):
        for causal in (False, True):
            if framework == "pytorch":
                with torch.no_grad():
                    clean, got = (tm(torch.as_tensor(x), padding_mask=torch.as_tensor(PADS), causal=causal,
                                     absorbed=absorbed).numpy() for x in (X, dirty))
            else:
                clean, got = (to_numpy(km(x, padding_mask=PADS, causal=causal, absorbed=absorbed)) for x in (X, dirty))
            real = PADS[..., None] & np.ones_like(got, bool)
            assert np.isfinite(got[real]).all(), (absorbed, causal)
            np.testing.assert_allclose(got[real], clean[real], rtol=1e-5, atol=1e-6)
