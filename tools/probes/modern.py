"""Bad input to Chapter 10's layers: FlashAttention's tiled pass, grouped-query and latent attention, sliding-window
masks, linear attention, and the Llama with its parts and its loader.

Blocks, windows and head counts out of range, NaN behind a padding mask, masks of the wrong shape, ids outside the
vocabulary or longer than the model reads, a linear-attention state of another size, a checkpoint with its own
output layer.
"""

from __future__ import annotations

import numpy as np

from . import Probe, to_input, to_numpy
from .layers import bad, call, is_torch, rand

B, H, T, D = 2, 2, 6, 4
PADS = np.array([[True] * 4 + [False] * 2, [True] * T])


def ch10(fw):
    """Chapter 10's module of the framework (the chapter is not yet in ``ac.torch`` / ``ac.keras``)."""
    from attention_course.ch10_modern_attention import keras, torch

    return torch if is_torch(fw) else keras


def flash(mask=None, block=2, shapes=((B, H, T, D), (B, H, T, D), (B, H, T, 3)), **kwargs):
    def run(fw):
        q, k, v = (to_input(fw, rand(*s, seed=i)) for i, s in enumerate(shapes))
        return ch10(fw).flash_attention(q, k, v, None if mask is None else to_input(fw, mask), block=block, **kwargs)
    return run


def flash_ignores_nan_at_pads(fw):
    """A NaN in a padded key or value changes no output: its weight is 0 and 0 × NaN must not reach the sum."""
    q, k, v = rand(B, H, T, D), rand(B, H, T, D, seed=1), rand(B, H, T, 3, seed=2)
    clean = to_numpy(ch10(fw).flash_attention(*(to_input(fw, x) for x in (q, k, v)), to_input(fw, PADS), block=2))
    k[0, :, 5], v[0, :, 5] = np.nan, np.nan
    dirty = to_numpy(ch10(fw).flash_attention(*(to_input(fw, x) for x in (q, k, v)), to_input(fw, PADS), block=2))
    np.testing.assert_allclose(dirty, clean, rtol=1e-5, atol=1e-6, err_msg="a NaN behind the mask reached the output")


def gqa_call(kv_heads=1, x_shape=(B, T, 8), **kwargs):
    def run(fw):
        return call(fw, ch10(fw).GroupedQueryAttention(8, 4, kv_heads), to_input(fw, rand(*x_shape)), **kwargs)
    return run


def mla_call(x_shape=(B, T, 8), **kwargs):
    def run(fw):
        return call(fw, ch10(fw).MultiHeadLatentAttention(8, 2, 3), to_input(fw, rand(*x_shape)), **kwargs)
    return run


def linear(shapes=((B, H, T, D), (B, H, T, D), (B, H, T, 3))):
    def run(fw):
        return ch10(fw).linear_attention(*(to_input(fw, rand(*s, seed=i)) for i, s in enumerate(shapes)))
    return run


def step_with_state(state_shape):
    def run(fw):
        q, k, v = rand(B, H, D), rand(B, H, D, seed=1), rand(B, H, 3, seed=2)
        return ch10(fw).linear_attention_step(to_input(fw, np.zeros(state_shape, "float32")),
                                             to_input(fw, np.zeros((B, H, D), "float32")),
                                             *(to_input(fw, x) for x in (q, k, v)))
    return run


def llama(fw, **kwargs):
    return ch10(fw).Llama(**{"vocab": 20, "d_model": 8, "heads": 2, "kv_heads": 1, "layers": 1, "hidden": 12,
                             "max_len": 8, **kwargs})


def llama_call(ids, **kwargs):
    def run(fw):
        return call(fw, llama(fw), to_input(fw, np.asarray(ids)), **kwargs)
    return run


def llama_part(fw, name):
    return {"rmsnorm": lambda: ch10(fw).RMSNorm(8, eps=-1.0), "swiglu": lambda: ch10(fw).SwiGLU(8, 0),
            "block": lambda: ch10(fw).LlamaBlock(8, 2, 3, 12)}[name]()


def untied_checkpoint(fw):
    from attention_course.ch10_modern_attention.llama2c import Llama2c

    config = {"dim": 8, "hidden_dim": 12, "n_layers": 1, "n_heads": 2, "n_kv_heads": 1, "vocab_size": 20,
              "seq_len": 8, "shared_classifier": 0, "head_dim": 4}
    return ch10(fw).load_llama2c(Llama2c(config, {}))


PROBES = [
    Probe("modern", "flash_attention: NaN behind the padding mask", flash_ignores_nan_at_pads),
    bad("modern", "flash_attention(block=0)", flash(block=0)),
    bad("modern", "flash_attention: 3-D query", flash(shapes=((B, T, D), (B, T, D), (B, T, 3)))),
    bad("modern", "flash_attention: mask of another length", flash(mask=PADS[:, :4])),
    bad("modern", "flash_attention: keys of another width", flash(shapes=((B, H, T, D), (B, H, T, D + 1),
                                                                          (B, H, T, 3)))),
    bad("modern", "GroupedQueryAttention(kv_heads=3) of 4 heads", gqa_call(kv_heads=3)),
    bad("modern", "GroupedQueryAttention(kv_heads=0)", gqa_call(kv_heads=0)),
    bad("modern", "GroupedQueryAttention: input of another width", gqa_call(x_shape=(B, T, 6))),
    bad("modern", "MultiHeadLatentAttention: input of another width", mla_call(x_shape=(B, T, 6))),
    bad("modern", "MultiHeadLatentAttention(d_latent=0)", lambda fw: ch10(fw).MultiHeadLatentAttention(8, 2, 0)),
    bad("modern", "window_mask(window=0)", lambda fw: ch10(fw).window_mask(4, window=0)),
    bad("modern", "window_mask(sinks=-1)", lambda fw: ch10(fw).window_mask(4, window=2, sinks=-1)),
    bad("modern", "linear_attention: values of another length", linear(((B, H, T, D), (B, H, T, D),
                                                                         (B, H, T - 1, 3)))),
    bad("modern", "linear_attention_step: a state of another size", step_with_state((B, H, D + 1, 3))),
    bad("modern", "RMSNorm(eps=-1)", lambda fw: llama_part(fw, "rmsnorm")),
    bad("modern", "SwiGLU(hidden=0)", lambda fw: llama_part(fw, "swiglu")),
    bad("modern", "LlamaBlock(kv_heads=3) of 2 heads", lambda fw: llama_part(fw, "block")),
    bad("modern", "Llama: id = vocab", llama_call(np.full((1, 4), 20))),
    bad("modern", "Llama: longer than max_len", llama_call(np.ones((1, 9), int))),
    bad("modern", "Llama: float ids", llama_call(np.ones((1, 4), "float32"))),
    bad("modern", "load_llama2c: a checkpoint with its own output layer", untied_checkpoint),
]
