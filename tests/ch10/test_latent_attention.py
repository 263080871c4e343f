"""Multi-head latent attention in both frameworks: the absorbed form (queries moved into the latent space, the
values' up-projection applied after the mix) equals the expanded form (every head's keys and values projected back
from the cached latent vectors), with masks; the frameworks agree with shared weights; the cache is the latent."""

import numpy as np
import pytest
import torch
from conftest import to_numpy

from attention_course.ch10_modern_attention import keras as ch10_keras
from attention_course.ch10_modern_attention import torch as ch10_torch
from attention_course.ch10_modern_attention.cache import CacheShape
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
