"""What a key-value cache costs per token, for the ways today's models shrink it, as formulas and for published
model shapes. A decoder keeps, for every earlier token and every layer, what its attention needs of that token:

- multi-head attention (MHA) a key and a value per head: 2 · heads · d_head numbers;
- grouped-query attention (GQA, Ainslie et al., 2023) a key and a value per key-value head: 2 · kv_heads · d_head;
  multi-query attention (MQA, Shazeer, 2019) is kv_heads = 1;
- multi-head latent attention (MLA, DeepSeek-V2, 2024) one latent vector of d_latent numbers, from which every
  head's keys and values are projected back, plus one rotary key of d_rope numbers shared by the heads.

Nothing here imports a framework.
"""

from __future__ import annotations

from dataclasses import dataclass

from attention_course.core import validate

__all__ = ["PUBLISHED", "CacheShape", "cache_bytes_per_token", "rope_half"]


@dataclass(frozen=True)
class CacheShape:
    """The attention of a decoder, as far as its cache goes: ``kind`` is "MHA", "GQA", "MQA" or "MLA"; MLA's
    ``d_latent`` and ``d_rope`` replace the key-value heads."""

    name: str
    kind: str
    layers: int
    heads: int
    kv_heads: int
    d_head: int
    d_latent: int = 0
    d_rope: int = 0
    source: str = ""

    @property
    def numbers_per_token(self) -> int:
        """Numbers cached per token over all layers."""
        per_layer = self.d_latent + self.d_rope if self.kind == "MLA" else 2 * self.kv_heads * self.d_head
        return self.layers * per_layer


def rope_half(d_head: int) -> int:
    """The decoupled rotary part the course gives latent attention, as DeepSeek-V2 (64 for heads of 128): half a
    head, rounded down to an even number of features (rotary positions turn pairs)."""
    return validate.integer("d_head", d_head) // 4 * 2


def cache_bytes_per_token(shape: CacheShape, bytes_per_number: int = 2) -> int:
    """Bytes the cache grows by per token: ``numbers_per_token`` × ``bytes_per_number`` (2 for float16/bfloat16)."""
    (bytes_per_number,) = validate.sizes(bytes_per_number=bytes_per_number)
    return shape.numbers_per_token * bytes_per_number


#: Published configurations (the models' own config files), and the course's pretrained stories260K.
PUBLISHED = (
    CacheShape("stories260K", "GQA", 5, 8, 4, 8, source="llama2.c's stories260K.bin header"),
    CacheShape("Llama 2 7B", "MHA", 32, 32, 32, 128, source="meta-llama/Llama-2-7b-hf config.json"),
    CacheShape("Falcon 7B", "MQA", 32, 71, 1, 64, source="tiiuae/falcon-7b config.json (multi_query)"),
    CacheShape("Mistral 7B", "GQA", 32, 32, 8, 128, source="mistralai/Mistral-7B-v0.1 config.json"),
    CacheShape("Llama 2 70B", "GQA", 80, 64, 8, 128, source="meta-llama/Llama-2-70b-hf config.json"),
    CacheShape("DeepSeek-V2", "MLA", 60, 128, 128, 128, d_latent=512, d_rope=64,
               source="DeepSeek-V2 paper, Table 1 and config.json (kv_lora_rank 512, qk_rope_head_dim 64)"),
)
