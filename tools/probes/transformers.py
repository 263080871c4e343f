"""Bad input to Chapter 7's and 8's layers: multi-head attention and its masks, the causal mask, positions and
rotary embeddings, the key–value cache, the encoder and decoder layers, the Transformer and the language model.

NaN or inf behind a mask, masks of every ambiguous shape, sizes that do not divide, ids outside the vocabulary,
contexts longer than a model reads, and a cache fed another batch.
"""

from __future__ import annotations

import numpy as np

from . import Probe, to_input, to_numpy
from .layers import bad, call, ids, is_torch, rand

B, T, D, H = 2, 4, 8, 2
PADS = np.array([[True, True, True, False], [True, True, True, True]])        # (B, T): one pad in example 0


def mha(fw, **kwargs):
    return fw.MultiHeadAttention(D, H, **kwargs)


def nan_behind_the_mask(value):
    """A NaN or inf at a padded key reaches no real position (a weight of 0 times NaN would be NaN)."""
    def run(fw):
        layer = mha(fw)
        x = rand(B, T, D)
        clean = to_numpy(call(fw, layer, to_input(fw, x), padding_mask=to_input(fw, PADS)))
        dirty = x.copy()
        dirty[0, 3] = value
        out = to_numpy(call(fw, layer, to_input(fw, dirty), padding_mask=to_input(fw, PADS)))
        np.testing.assert_allclose(out[0, :3], clean[0, :3], rtol=1e-5, atol=1e-6,
                                   err_msg="a hidden pad changed the real positions")
        np.testing.assert_allclose(out[1], clean[1], rtol=1e-5, atol=1e-6)
    return run


def causal_mask_with_batch_t(fw):
    """causal_mask(T) passed as mask= with a batch of exactly T examples still means "the past"."""
    layer = mha(fw)
    x = to_input(fw, rand(T, T, D))
    np.testing.assert_allclose(to_numpy(call(fw, layer, x, mask=fw.causal_mask(T))),
                               to_numpy(call(fw, layer, x, causal=True)), rtol=1e-5, atol=1e-6)


def mha_call(mask=None, x_shape=(B, T, D), padding_mask=None, **kwargs):
    def run(fw):
        masks = {name: to_input(fw, m) for name, m in (("mask", mask), ("padding_mask", padding_mask))
                 if m is not None}
        return call(fw, mha(fw), to_input(fw, rand(*x_shape)), **masks, **kwargs)
    return run


def padding_with_a_batch_of_t(fw):
    """With B = T, a (B, T) padding mask hides each example's own pads, and a (T, T) mask as mask= is refused."""
    pads = np.tril(np.ones((T, T), bool))[::-1].copy()                 # example b keeps its first T - b keys
    layer = mha(fw)
    x = rand(T, T, D)
    out = to_numpy(call(fw, layer, to_input(fw, x), padding_mask=to_input(fw, pads)))
    for b in range(T):
        real = int(pads[b].sum())
        alone = to_numpy(call(fw, layer, to_input(fw, x[b:b + 1, :real])))
        np.testing.assert_allclose(out[b, :real], alone[0], rtol=1e-5, atol=1e-6,
                                   err_msg=f"example {b} saw a pad")


def sdpa(q_shape, k_shape, v_shape, mask=None):
    def run(fw):
        q, k, v = (to_input(fw, rand(*s, seed=i)) for i, s in enumerate((q_shape, k_shape, v_shape)))
        return fw.scaled_dot_product_attention(q, k, v, None if mask is None else to_input(fw, mask))
    return run


def cache_fed_another_batch(fw):
    layer = fw.CachedMultiHeadAttention(D, H)
    cache = fw.KVCache()
    call(fw, layer, to_input(fw, rand(B, 1, D)), cache=cache)
    return call(fw, layer, to_input(fw, rand(B + 1, 1, D)), cache=cache)


def cache_with_a_stale_mask(fw):
    """A (B, T_k) mask of this call's keys only, while the cache holds earlier ones too."""
    layer = fw.CachedMultiHeadAttention(D, H)
    cache = fw.KVCache()
    call(fw, layer, to_input(fw, rand(B, 2, D)), cache=cache)
    return call(fw, layer, to_input(fw, rand(B, 1, D)), padding_mask=to_input(fw, np.ones((B, 1), bool)),
                cache=cache)


def static_cache_decoding(fw, steps=T):
    """StaticKVCache of capacity T: ``steps`` one-token calls (T of them equal the causal sequence; T + 1 is one
    too many)."""
    layer = fw.CachedMultiHeadAttention(D, H)
    x = rand(B, T + 1, D)
    full = to_numpy(call(fw, layer, to_input(fw, x[:, :T]), causal=True))
    cache = fw.StaticKVCache.empty(B, H, T, D // H)
    out = [to_numpy(call(fw, layer, to_input(fw, x[:, i:i + 1]), cache=cache)) for i in range(steps)]
    np.testing.assert_allclose(np.concatenate(out[:T], 1), full, rtol=1e-5, atol=1e-6)


def cache_matches_recomputing(fw):
    """Decoding step by step with a cache gives what the whole causal sequence gives."""
    layer = fw.CachedMultiHeadAttention(D, H)
    x = rand(B, T, D)
    full = to_numpy(call(fw, layer, to_input(fw, x), causal=True))
    cache = fw.KVCache()
    steps = [to_numpy(call(fw, layer, to_input(fw, x[:, t:t + 1]), cache=cache)) for t in range(T)]
    np.testing.assert_allclose(np.concatenate(steps, 1), full, rtol=1e-4, atol=1e-5)


def transformer(fw):
    return fw.Transformer(12, 12, d_model=D, heads=H, layers=1, d_ff=16)


def transformer_call(src_mask="ones", src=None, tgt=None):
    def run(fw):
        src_ids = ids(12, (B, 5)) if src is None else np.asarray(src)
        tgt_ids = ids(12, (B, 3), seed=1) if tgt is None else np.asarray(tgt)
        mask = np.ones(src_ids.shape, bool) if isinstance(src_mask, str) else src_mask
        return call(fw, transformer(fw), to_input(fw, src_ids), None if mask is None else to_input(fw, mask),
                    to_input(fw, tgt_ids))
    return run


def transformer_without_a_mask_is_all_visible(fw):
    model = transformer(fw)
    src, tgt = ids(12, (B, 5)), ids(12, (B, 3), seed=1)
    a = to_numpy(call(fw, model, to_input(fw, src), None, to_input(fw, tgt)))
    b = to_numpy(call(fw, model, to_input(fw, src), to_input(fw, np.ones((B, 5), bool)), to_input(fw, tgt)))
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def language_model_beyond_its_context(fw):
    model = fw.LanguageModel(12, d_model=D, heads=H, layers=1, d_ff=16, context=6)
    return call(fw, model, to_input(fw, ids(12, (B, 7))))


def rope_of(shape):
    def run(fw):
        return fw.rope(to_input(fw, rand(*shape)))
    return run


def rope_keeps_norms(fw):
    x = rand(B, H, T, D // H)
    np.testing.assert_allclose(np.linalg.norm(to_numpy(fw.rope(to_input(fw, x))), axis=-1),
                               np.linalg.norm(x, axis=-1), rtol=1e-5)


def framework_layer_round_trip(fw):
    """as_framework_layer then from_framework_layer gives back a layer that computes the same."""
    layer = mha(fw)
    x = to_input(fw, rand(B, T, D))
    before = to_numpy(call(fw, layer, x))
    if is_torch(fw):
        import torch

        theirs = fw.as_framework_layer(layer).eval()
        with torch.no_grad():
            np.testing.assert_allclose(to_numpy(theirs(x, x, x, need_weights=False)[0]), before, rtol=1e-4, atol=1e-5)
    else:
        theirs = fw.as_framework_layer(layer)
        np.testing.assert_allclose(to_numpy(theirs(x, x, x)), before, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(to_numpy(call(fw, fw.from_framework_layer(theirs), x)), before, rtol=1e-4, atol=1e-5)


def heads_round_trip(fw):
    x = rand(B, T, D)
    np.testing.assert_allclose(to_numpy(fw.merge_heads(fw.split_heads(to_input(fw, x), H))), x)


# bad(...): must raise the course's error; Probe(...): must give a right result (checked)
PROBES = [
    Probe("mha", "NaN at a hidden key stays there", nan_behind_the_mask(np.nan)),
    Probe("mha", "inf at a hidden key stays there", nan_behind_the_mask(np.inf)),
    Probe("mha", "causal_mask(T) with a batch of T is causal", causal_mask_with_batch_t),
    bad("mha", "heads do not divide d_model", lambda fw: fw.MultiHeadAttention(10, 3)),
    bad("mha", "rotary with an odd head size", lambda fw: fw.MultiHeadAttention(6, 2, rotary=True)),
    bad("mha", "input narrower than d_model", mha_call(x_shape=(B, T, D - 2))),
    bad("mha", "2-D input (no batch)", mha_call(x_shape=(T, D))),
    bad("mha", "padding_mask (B, T+1)", mha_call(padding_mask=np.ones((B, T + 1), bool))),
    bad("mha", "mask (T, T) for a batch of 2", mha_call(mask=np.ones((T, T), bool))),
    bad("mha", "mask (T, T) for a batch of T", mha_call(mask=np.ones((T, T), bool), x_shape=(T, T, D))),
    bad("mha", "padding_mask (T, T) with a batch of 2", mha_call(padding_mask=np.ones((T, T), bool))),
    Probe("mha", "padding_mask with a batch of T hides each example's pads", padding_with_a_batch_of_t),
    bad("mha", "additive padding mask (0 / -inf)",
        mha_call(padding_mask=np.where(PADS, 0.0, -np.inf).astype("float32"))),
    bad("mha", "mask of 4-D shape", mha_call(mask=np.ones((B, 1, T, T), bool))),
    bad("sdpa", "keys and values of different lengths", sdpa((B, H, T, 4), (B, H, T, 4), (B, H, T + 1, 4))),
    bad("sdpa", "query and key widths differ", sdpa((B, H, T, 4), (B, H, T, 3), (B, H, T, 4))),
    bad("sdpa", "3-D query (no heads axis)", sdpa((B, T, 4), (B, T, 4), (B, T, 4))),
    bad("sdpa", "mask (B, T+1)", sdpa((B, H, T, 4), (B, H, T, 4), (B, H, T, 4), mask=np.ones((B, T + 1), bool))),
    bad("positions", "causal_mask(0)", lambda fw: fw.causal_mask(0)),
    bad("positions", "rope of an odd width", rope_of((B, H, T, 3))),
    Probe("positions", "rope keeps every vector's length", rope_keeps_norms),
    bad("positions", "SinusoidalPositions(d_model=0)", lambda fw: fw.SinusoidalPositions(0)),
    bad("positions", "LearnedPositions beyond max_len",
        lambda fw: call(fw, fw.LearnedPositions(3, D), to_input(fw, rand(B, 4, D)))),
    bad("cache", "a cache fed another batch size", cache_fed_another_batch),
    bad("cache", "a mask of this call's keys only", cache_with_a_stale_mask),
    Probe("cache", "cached steps equal the causal sequence", cache_matches_recomputing),
    Probe("cache", "StaticKVCache steps equal the causal sequence", static_cache_decoding),
    bad("cache", "a StaticKVCache written past its capacity", lambda fw: static_cache_decoding(fw, T + 1)),
    bad("layers", "EncoderLayer(d_ff=0)", lambda fw: fw.EncoderLayer(D, H, 0)),
    bad("layers", "EncoderLayer(dropout=1.5)", lambda fw: fw.EncoderLayer(D, H, 16, dropout=1.5)),
    bad("layers", "EncoderLayer(eps=-1)", lambda fw: fw.EncoderLayer(D, H, 16, eps=-1)),
    bad("layers", "FeedForward(activation='swish')", lambda fw: fw.FeedForward(D, 16, activation="swish")),
    bad("layers", "DecoderLayer(heads=3) with d_model 8", lambda fw: fw.DecoderLayer(D, 3, 16)),
    Probe("transformer", "src_mask=None means every token is real", transformer_without_a_mask_is_all_visible),
    bad("transformer", "src id outside the vocabulary", transformer_call(src=[[1, 2, 40, 3, 4], [1, 2, 3, 4, 5]])),
    bad("transformer", "negative target id", transformer_call(tgt=[[1, -2, 3], [1, 2, 3]])),
    bad("transformer", "src_mask of another length", transformer_call(src_mask=np.ones((B, 4), bool))),
    bad("transformer", "batches of different sizes", transformer_call(tgt=[[1, 2, 3]])),
    bad("transformer", "float ids", transformer_call(src=np.ones((B, 5), "float32"))),
    bad("lm", "a sequence longer than the context", language_model_beyond_its_context),
    bad("lm", "LanguageModel(context=0)", lambda fw: fw.LanguageModel(12, d_model=D, heads=H, context=0)),
    Probe("heads", "merge_heads undoes split_heads", heads_round_trip),
    bad("heads", "split_heads into heads that do not divide d",
        lambda fw: fw.split_heads(to_input(fw, rand(B, T, D)), 3)),
    bad("heads", "merge_heads of a 3-D tensor", lambda fw: fw.merge_heads(to_input(fw, rand(B, T, D)))),
    bad("mixers", "SelfAttention input of another width",
        lambda fw: call(fw, fw.SelfAttention(D, 4), to_input(fw, rand(B, T, D + 1)))),
    bad("mixers", "CausalConv(kernel=0)", lambda fw: fw.CausalConv(D, kernel=0)),
    bad("mixers", "RecallNet with an unknown mixer", lambda fw: fw.RecallNet("lstm", 10, 4)),
    bad("mixers", "LookbackNet with unknown positions", lambda fw: fw.LookbackNet("alibi", 4, 16)),
    Probe("framework", "the framework's own layer computes the same, both ways", framework_layer_round_trip),
]
