"""Bad input to Chapter 10's layers: FlashAttention's tiled pass, grouped-query and latent attention, sliding-window
masks, linear attention, and the Llama with its parts and its loader.

Blocks, windows and head counts out of range, NaN behind a padding mask, masks of the wrong shape, ids outside the
vocabulary or longer than the model reads, a linear-attention state of another size, a checkpoint with its own
output layer; NaN or inf in a query or a visible key (once a row of zeros or NaN without a word), keys so negative
that linear attention's weights all vanish (once 0 / 0), token ids outside the llama2.c tokenizer's vocabulary (−1
once decoded as the last piece).
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


def flash_with(where: str, bad_value: float, mask=None):
    """flash_attention with one NaN or inf in the query, or in a key some query sees (the second example's)."""
    def run(fw):
        q, k, v = rand(B, H, T, D), rand(B, H, T, D, seed=1), rand(B, H, T, 3, seed=2)
        {"query": q, "key": k, "value": v}[where][1, 0, 2, 0] = bad_value
        return ch10(fw).flash_attention(*(to_input(fw, x) for x in (q, k, v)),
                                        None if mask is None else to_input(fw, mask), block=2)
    return run


def linear_with(where: str, bad_value: float, step: bool = False, **kwargs):
    """linear_attention (or one linear_attention_step) with one NaN or inf in the query, key or value."""
    def run(fw):
        q, k, v = rand(B, H, T, D), rand(B, H, T, D, seed=1), rand(B, H, T, 3, seed=2)
        {"query": q, "key": k, "value": v}[where][0, 1, 2, 1] = bad_value
        if not step:
            return ch10(fw).linear_attention(*(to_input(fw, x) for x in (q, k, v)), **kwargs)
        return ch10(fw).linear_attention_step(to_input(fw, np.zeros((B, H, D, 3), "float32")),
                                             to_input(fw, np.zeros((B, H, D), "float32")),
                                             *(to_input(fw, x[:, :, 2]) for x in (q, k, v)), **kwargs)
    return run


def linear_weights_vanish(fw):
    """Keys of −200: φ(k) = e^−200 is 0 in float32, so every weight is 0; the normaliser's ε gives zeros (the
    float64 reference's answer to within 1e-70), in parallel, with rotary positions and step by step."""
    from attention_course.ch10_modern_attention import reference

    q, v = rand(B, H, T, D), rand(B, H, T, 3, seed=2)
    k = np.full((B, H, T, D), -200.0, "float32")
    want = reference.linear_attention(q.astype(float), k.astype(float), v.astype(float))
    for rotary in (False, True):
        got = to_numpy(ch10(fw).linear_attention(*(to_input(fw, x) for x in (q, k, v)), rotary=rotary))
        np.testing.assert_allclose(got, want, atol=1e-7, err_msg="0 / 0 is not a weight")
    y, _, _ = ch10(fw).linear_attention_step(to_input(fw, np.zeros((B, H, D, 3), "float32")),
                                             to_input(fw, np.zeros((B, H, D), "float32")),
                                             *(to_input(fw, x[:, :, 0]) for x in (q, k, v)), position=0)
    np.testing.assert_allclose(to_numpy(y), 0.0, atol=1e-7, err_msg="a zero state read as 0 / 0")


def mla_ignores_nan_at_pads(fw):
    """A NaN in a padded token changes no real position's output, expanded or absorbed: the pads' latents are zeroed
    before any product."""
    layer = ch10(fw).MultiHeadLatentAttention(8, 2, 3, d_rope=2)
    x = rand(B, T, 8)
    for absorbed in (False, True):
        clean = to_numpy(call(fw, layer, to_input(fw, x), padding_mask=to_input(fw, PADS), absorbed=absorbed))
        dirty_x = x.copy()
        dirty_x[0, 4:] = np.nan
        dirty = to_numpy(call(fw, layer, to_input(fw, dirty_x), padding_mask=to_input(fw, PADS), absorbed=absorbed))
        np.testing.assert_allclose(dirty[PADS], clean[PADS], rtol=1e-5, atol=1e-6,
                                   err_msg="a NaN behind the mask reached a real position")


def linear_layer_call(nan: bool = False, mask: bool = False):
    """A rotary ``LinearAttention`` on an input holding a NaN, or asked for a window mask (it has no softmax)."""
    def run(fw):
        x = rand(B, T, 8)
        if nan:
            x[1, 3, 2] = np.nan
        window = ch10(fw).window_mask(T, window=2) if mask else None
        return call(fw, ch10(fw).LinearAttention(8, 2, 2, rotary=True), to_input(fw, x), mask=window, causal=True)
    return run


def tokenizer_decode(ids):
    """The llama2.c tokenizer of five pieces, written to a temporary file in its format, decoding ``ids``."""
    def run(_):
        import struct
        import tempfile
        from pathlib import Path

        from attention_course.ch10_modern_attention.llama2c import Tokenizer

        pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n", b" a", b"b"]
        raw = struct.pack("<I", 6) + b"".join(struct.pack("<fi", -float(i), len(p)) + p for i, p in enumerate(pieces))
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "tok5.bin"
            path.write_bytes(raw)
            return Tokenizer(path, len(pieces)).decode(ids)
    return run


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
    bad("modern", "flash_attention: NaN in a query", flash_with("query", np.nan)),
    bad("modern", "flash_attention: inf in a visible key", flash_with("key", np.inf, mask=PADS)),
    bad("modern", "flash_attention: -inf in a visible value", flash_with("value", -np.inf)),
    bad("modern", "linear_attention: NaN in a query", linear_with("query", np.nan)),
    bad("modern", "linear_attention(rotary=True): inf in a key", linear_with("key", np.inf, rotary=True)),
    bad("modern", "linear_attention(eps=0)", linear_with("key", 0.5, eps=0.0)),
    bad("modern", "linear_attention_step: NaN in a key", linear_with("key", np.nan, step=True)),
    bad("modern", "linear_attention_step(position=-1)", linear_with("key", 0.5, step=True, position=-1)),
    Probe("modern", "linear attention: keys so negative that every weight vanishes", linear_weights_vanish),
    Probe("modern", "MultiHeadLatentAttention: NaN behind the padding mask", mla_ignores_nan_at_pads),
    bad("modern", "MultiHeadLatentAttention: a 2-D mask", mla_call(mask=PADS)),
    bad("modern", "LinearAttention: NaN in its input", linear_layer_call(nan=True)),
    bad("modern", "LinearAttention with a window mask", linear_layer_call(mask=True)),
    bad("modern", "retention_decays(0)", lambda fw: ch10(fw).retention_decays(0)),
    bad("modern", "Tokenizer.decode: id -1", tokenizer_decode([1, 3, -1]), per_framework=False),
    bad("modern", "Tokenizer.decode: id = vocab", tokenizer_decode([1, 3, 5]), per_framework=False),
    bad("modern", "Tokenizer.decode: a string", tokenizer_decode("ab"), per_framework=False),
]
