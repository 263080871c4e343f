"""Grouped-query attention in both frameworks: with as many key-value heads as query heads it is Chapter 7's
multi-head attention, with fewer it is multi-head attention on keys and values repeated for each group of query
heads; the two frameworks agree with shared weights; the key-value projections shrink with the heads."""

import numpy as np
import pytest
import torch
from conftest import to_numpy

import attention_course as ac
from attention_course.ch10_modern_attention import keras as ch10_keras
from attention_course.ch10_modern_attention import torch as ch10_torch
from attention_course.core.errors import ConfigError

pytestmark = pytest.mark.chapter(7, 10)
D, H = 16, 4
X = np.random.default_rng(0).normal(size=(2, 5, D)).astype("float32")
PADS = np.array([[True] * 4 + [False], [True] * 5])


def _torch_mha_from(gqa):
    """Chapter 7's layer holding a GQA's weights, its key-value heads repeated for their groups."""
    group = gqa.heads // gqa.kv_heads
    mha = ac.torch.MultiHeadAttention(D, H)
    d_head = D // H
    with torch.no_grad():
        mha.W_q.load_state_dict(gqa.W_q.state_dict())
        mha.W_o.load_state_dict(gqa.W_o.state_dict())
        for ours, theirs in ((mha.W_k, gqa.W_k), (mha.W_v, gqa.W_v)):
            w = theirs.weight.view(gqa.kv_heads, d_head, D).repeat_interleave(group, 0).reshape(D, D)
            b = theirs.bias.view(gqa.kv_heads, d_head).repeat_interleave(group, 0).reshape(D)
            ours.weight.copy_(w)
            ours.bias.copy_(b)
    return mha.eval()


@pytest.mark.parametrize("kv_heads", [4, 2, 1])
def test_grouped_query_attention_is_multi_head_attention_on_repeated_keys_and_values(kv_heads):
    torch.manual_seed(kv_heads)
    gqa = ch10_torch.GroupedQueryAttention(D, H, kv_heads).eval()
    assert gqa.W_k.out_features == kv_heads * D // H
    mha = _torch_mha_from(gqa)
    x = torch.as_tensor(X)
    with torch.no_grad():
        for kwargs in ({"padding_mask": torch.as_tensor(PADS)}, {"causal": True}):
            np.testing.assert_allclose(gqa(x, **kwargs).numpy(), mha(x, **kwargs).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kv_heads", [2, 1])
def test_both_frameworks_agree_with_shared_weights(kv_heads):
    torch.manual_seed(0)
    tm = ch10_torch.GroupedQueryAttention(D, H, kv_heads, rotary=True).eval()
    km = ch10_keras.GroupedQueryAttention(D, H, kv_heads, rotary=True)
    km(X)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        t = getattr(tm, name)
        getattr(km, name).set_weights([t.weight.detach().numpy().T, t.bias.detach().numpy()])
    with torch.no_grad():
        expected = tm(torch.as_tensor(X), padding_mask=torch.as_tensor(PADS), causal=True).numpy()
    np.testing.assert_allclose(to_numpy(km(X, padding_mask=PADS, causal=True)), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("module", [ch10_keras, ch10_torch], ids=["keras", "pytorch"])
def test_key_value_heads_must_divide_the_query_heads(module):
    with pytest.raises(ConfigError, match="kv_heads=3 does not divide heads=4"):
        module.GroupedQueryAttention(D, H, 3)
    with pytest.raises(ConfigError, match="kv_heads"):
        module.GroupedQueryAttention(D, H, 0)
