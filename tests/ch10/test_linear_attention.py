"""Linear attention in a Llama: ``LinearAttention`` is grouped-query attention with ``linear_attention`` in place of
the softmax (same projections; rotary positions after the feature map), the two frameworks agree with shared
weights, a ``linear=True`` Llama uses it in every block, and what it cannot do (masks, non-causal attention,
weights) is a clear error."""

import numpy as np
import pytest
import torch
from conftest import to_numpy

from attention_course.ch07_self_attention.torch import merge_heads
from attention_course.ch10_modern_attention import keras as ch10_keras
from attention_course.ch10_modern_attention import torch as ch10_torch
from attention_course.core.errors import ConfigError

pytestmark = pytest.mark.chapter(10)
D, H = 16, 4
X = np.random.default_rng(0).normal(size=(2, 6, D)).astype("float32")


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_linear_attention_layer_is_the_feature_map_on_the_projections(kv_heads):
    torch.manual_seed(kv_heads)
    layer = ch10_torch.LinearAttention(D, H, kv_heads, bias=False, rotary=True).eval()
    x = torch.as_tensor(X)
    with torch.no_grad():
        q, k, v, _ = layer.project(x)
        expected = layer.W_o(merge_heads(ch10_torch.linear_attention(q, k, v, rotary=True)))
        np.testing.assert_allclose(layer(x, causal=True).numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
        # causal: the first position sees itself only, so changing the last token leaves it alone
        later = x.clone()
        later[:, -1] += 1.0
        np.testing.assert_allclose(layer(later, causal=True)[:, 0].numpy(), layer(x, causal=True)[:, 0].numpy(),
                                   atol=1e-6)


def test_both_frameworks_agree_with_shared_weights():
    torch.manual_seed(0)
    tm = ch10_torch.LinearAttention(D, H, 2, rotary=True).eval()
    km = ch10_keras.LinearAttention(D, H, 2, rotary=True)
    km(X, causal=True)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        t = getattr(tm, name)
        getattr(km, name).set_weights([t.weight.detach().numpy().T, t.bias.detach().numpy()])
    with torch.no_grad():
        expected = tm(torch.as_tensor(X), causal=True).numpy()
    np.testing.assert_allclose(to_numpy(km(X, causal=True)), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("module", [ch10_keras, ch10_torch], ids=["keras", "pytorch"])
def test_a_linear_llama_uses_it_and_refuses_what_it_cannot_do(module):
    model = module.Llama(30, D, H, H, 2, 24, max_len=8, linear=True)
    assert all(type(block.attention).__name__ == "LinearAttention" for block in model.blocks)
    assert type(module.Llama(30, D, H, H, 1, 24).blocks[0].attention).__name__ == "GroupedQueryAttention"
    ids = np.zeros((1, 5), dtype=np.int64)
    x = torch.as_tensor(X) if module is ch10_torch else X
    layer = module.LinearAttention(D, H, H)
    for kwargs in ({"causal": False}, {"causal": True, "return_weights": True}):
        with pytest.raises(ConfigError, match="LinearAttention attends causally"):
            layer(x, **kwargs)
    with pytest.raises(ConfigError, match="no mask"):
        model(torch.as_tensor(ids) if module is ch10_torch else ids, mask=module.window_mask(5, window=2))


def test_the_benchmarked_decoding_steps_run_and_only_softmax_grows_with_the_context(fw):
    """``make bench``'s ch10-decode case: both steps run in both frameworks, and PyTorch's own counter of
    matrix-product FLOPs finds softmax attention's step growing in proportion to the context and linear attention's
    the same at every length."""
    from conftest import cost_of
    from torch.utils.flop_counter import FlopCounterMode

    for kind in cost_of(fw).DECODE_KINDS:
        cost_of(fw).decode_step(kind, 16, heads=2, d_head=4)()
    with pytest.raises(ValueError, match="unknown decoding kind 'sparse'"):
        cost_of(fw).decode_step("sparse", 16)
    from attention_course.bench import torch_cost

    flops = {}
    for kind in torch_cost.DECODE_KINDS:
        for length in (16, 64):
            run = torch_cost.decode_step(kind, length, heads=2, d_head=4)
            with FlopCounterMode(display=False) as counter:
                run()
            flops[kind, length] = counter.get_total_flops()
    assert flops["softmax", 64] == 4 * flops["softmax", 16] == 4 * (2 * 2 * 2 * 16 * 4)   # q·K and a·V: 2hTd each
    assert flops["linear", 64] == flops["linear", 16] > 0


@pytest.mark.parametrize("module", [ch10_keras, ch10_torch], ids=["keras", "pytorch"])
def test_a_decayed_llama_forgets_at_retnets_rates(module):
    """``decay=True`` gives every block's linear attention RetNet's rates (fixed, not learned: the same parameters
    as without decay); decay without linear attention is refused by name."""
    model = module.Llama(30, D, H, H, 2, 24, max_len=8, linear=True, decay=True)
    plain = module.Llama(30, D, H, H, 2, 24, max_len=8, linear=True)
    ids = np.zeros((1, 5), dtype=np.int64)
    for llama in (model, plain):                                  # built
        llama(torch.as_tensor(ids) if module is ch10_torch else ids)
    for block in model.blocks:
        np.testing.assert_allclose(to_numpy(block.attention.decay), 1 - 2.0 ** -np.arange(5, 5 + H), rtol=1e-6)
    assert all(block.attention.decay is None for block in plain.blocks)
    count = (lambda m: sum(p.numel() for p in m.parameters())) if module is ch10_torch else (
        lambda m: sum(int(np.prod(w.shape)) for w in m.trainable_weights))
    assert count(model) == count(plain)
    with pytest.raises(ConfigError, match="give linear=True"):
        module.Llama(30, D, H, H, 1, 24, decay=True)
