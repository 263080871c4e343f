"""The key-value cache per token: the formulas, checked against the tensors a grouped-query layer actually caches,
and the published shapes' well-known sizes (Llama 2 7B: half a mebibyte per token in float16)."""

import pytest
import torch

from attention_course.ch10_modern_attention import torch as ch10_torch
from attention_course.ch10_modern_attention.cache import PUBLISHED, CacheShape, cache_bytes_per_token
from attention_course.core.errors import ConfigError

pytestmark = pytest.mark.chapter(10)
BY_NAME = {s.name: s for s in PUBLISHED}


@pytest.mark.parametrize("kv_heads", [8, 4, 2, 1])
def test_the_formula_counts_what_the_layer_would_cache(kv_heads):
    layer = ch10_torch.GroupedQueryAttention(64, 8, kv_heads, bias=False)
    x = torch.zeros(1, 10, 64)
    k, v = layer.W_k(x), layer.W_v(x)                        # what a cache keeps of 10 tokens, before the repeat
    shape = CacheShape("one layer", "GQA", 1, 8, kv_heads, 8)
    assert (k.numel() + v.numel()) // 10 == shape.numbers_per_token
    assert cache_bytes_per_token(shape, 4) == (k.element_size() * (k.numel() + v.numel())) // 10


def test_published_shapes():
    assert cache_bytes_per_token(BY_NAME["Llama 2 7B"]) == 512 * 1024            # 0.5 MiB per token
    assert cache_bytes_per_token(BY_NAME["Mistral 7B"]) * 4 == cache_bytes_per_token(BY_NAME["Llama 2 7B"])
    assert BY_NAME["DeepSeek-V2"].numbers_per_token == 60 * 576                  # 4.5 d_head per layer
    assert BY_NAME["stories260K"].numbers_per_token == 5 * 2 * 4 * 8
    with pytest.raises(ConfigError, match="bytes_per_number"):
        cache_bytes_per_token(BY_NAME["Falcon 7B"], 0)
