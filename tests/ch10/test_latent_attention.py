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
        for kwargs in ({"causal": True}, {"mask": torch.as_tensor(PADS)}):
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
    for kwargs in ({"causal": True}, {"mask": PADS}):
        expanded = to_numpy(km(X, **kwargs))
        np.testing.assert_allclose(to_numpy(km(X, absorbed=True, **kwargs)), expanded, rtol=1e-5, atol=1e-5)
        with torch.no_grad():
            theirs = tm(torch.as_tensor(X), **{k: torch.as_tensor(v) if k == "mask" else v for k, v in kwargs.items()})
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
    for name in ("W_q", "W_dkv", "W_uk", "W_uv", "W_o", "W_qr", "W_kr"):
        getattr(km, name).set_weights([getattr(tm, name).weight.detach().numpy().T])
    return tm, km


def test_the_decoupled_rotary_part_absorbs_and_agrees_in_both_frameworks():
    """With DeepSeek-V2's decoupled rotary query and shared rotary key the absorbed form still equals the expanded
    one, the weights too, and PyTorch and Keras give the same outputs; the cache per token is d_latent + d_rope."""
    tm, km = _shared(4)
    for kwargs in ({"causal": True}, {"mask": PADS}):
        with torch.no_grad():
            t_kwargs = {k: torch.as_tensor(v) if k == "mask" else v for k, v in kwargs.items()}
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
