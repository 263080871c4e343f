"""Bad input to Chapter 11's layers: the pointer and its networks, convolutional attention and the marker reader,
context attention and the hierarchical and flat classifiers, multi-source attention and its translator, the copy
gate and the pointer-generator, monotonic attention and the speller.

NaN and inf behind a mask (it must reach nothing) and at a real position (the course's error), a row with no
visible key (zeros, or −inf log-probabilities: never NaN), pads read by a convolution, stopping probabilities that
saturate, attention rows that do not sum to 1, documents that are not right-padded, shapes, sizes and ids out of
range.
"""

from __future__ import annotations

import numpy as np

from . import Probe, to_input, to_numpy
from .layers import bad, call, is_torch, rand

B, N, D = 2, 6, 5
PADS = np.array([[True] * 4 + [False] * 2, [True] * N])                 # (B, N): two pads in the first row


def ch11(fw):
    """Chapter 11's module of the framework."""
    from attention_course.ch11_more_attention import keras, torch

    return torch if is_torch(fw) else keras


def outputs(fw, layer, *args, **kwargs):
    """The layer's outputs as NumPy arrays, a tuple."""
    out = call(fw, layer, *(a if a is None or isinstance(a, bool) else to_input(fw, a) for a in args), **kwargs)
    return tuple(to_numpy(o) for o in (out if isinstance(out, tuple) else (out,)))


def same_outputs(got, want, what):
    for g, w in zip(got, want, strict=True):
        assert np.isfinite(g[np.isfinite(w)]).all(), f"{what}: a NaN or inf reached the output: {g}"
        assert (np.isfinite(g) == np.isfinite(w)).all(), f"{what}: the output's −inf moved"
        np.testing.assert_allclose(g[np.isfinite(w)], w[np.isfinite(w)], rtol=1e-5, atol=1e-6, err_msg=what)


# ---- the pointer ---------------------------------------------------------------------------------------------

def pointer(fw):
    return ch11(fw).PointerAttention(D, 4, 7)


def pointer_call(enc_shape=(B, N, D), dec_shape=(B, 3, 4), mask=PADS, poison=None):
    def run(fw):
        encoded, decoded = rand(*enc_shape), rand(*dec_shape, seed=1)
        if poison is not None:
            encoded[poison] = np.nan
        return outputs(fw, pointer(fw), encoded, decoded, mask)
    return run


def pointer_ignores_nan_at_pads(fw):
    layer, encoded, decoded = pointer(fw), rand(B, N, D), rand(B, 3, 4, seed=1)
    clean = outputs(fw, layer, encoded, decoded, PADS)
    encoded[~PADS] = np.nan
    same_outputs(outputs(fw, layer, encoded, decoded, PADS), clean, "a NaN at a hidden input position")


def pointer_of_nothing(fw):
    """A list with no visible position points nowhere: log p = −inf everywhere (probabilities 0), never NaN."""
    mask = PADS.copy()
    mask[0] = False
    (log_p,) = outputs(fw, pointer(fw), rand(B, N, D), rand(B, 3, 4, seed=1), mask)
    assert np.isneginf(log_p[0]).all() and not np.isnan(log_p).any(), log_p
    np.testing.assert_allclose(np.exp(log_p[1]).sum(-1), 1, rtol=1e-5)


def sorting(fw, kind="pointer"):
    from attention_course.ch11_more_attention import experiment

    return experiment.sorting(B, (3, N), seed=0)


def network_call(make, change=lambda data: data.inputs):
    def run(fw):
        return outputs(fw, make(fw), *change(sorting(fw)))
    return run


def no_elements(data):
    x, previous, mask = data.inputs
    return x, previous, np.zeros_like(mask)


def nan_element(data):
    x, previous, mask = data.inputs
    x = x.copy()
    x[0, 0, 0] = np.nan
    return x, previous, mask


# ---- convolutional attention ---------------------------------------------------------------------------------

def conv(fw, width=3):
    return ch11(fw).ConvolutionalAttention(4, D, 8, width)


def conv_call(width=3, q_shape=(B, 4), k_shape=(B, N, D), mask=PADS, poison=None):
    def run(fw):
        query, keys = rand(*q_shape), rand(*k_shape, seed=1)
        if poison is not None:
            keys[poison] = np.inf
        return outputs(fw, conv(fw, width), query, keys, keys, mask)
    return run


def conv_reads_no_pad(fw):
    """A right-padded sequence scores as the same sequence unpadded, whatever its pads hold (1e4, NaN)."""
    layer, query, keys = conv(fw), rand(1, 4), rand(1, N, D, seed=1)
    alone = outputs(fw, layer, query, keys[:, :4], keys[:, :4], None, return_weights=True)
    keys[:, 4:] = 1e4
    keys[0, 5, 1] = np.nan
    context, weights = outputs(fw, layer, query, keys, keys, PADS[:1], return_weights=True)
    assert (weights[:, 4:] == 0).all(), weights
    same_outputs((context, weights[:, :4]), alone, "a pad next to a real key")


def conv_of_nothing(fw):
    mask = PADS.copy()
    mask[0] = False
    context, weights = outputs(fw, conv(fw), rand(B, 4), rand(B, N, D, seed=1), rand(B, N, D, seed=2), mask,
                               return_weights=True)
    assert (context[0] == 0).all() and (weights[0] == 0).all(), "a row of no visible key pooled something"
    np.testing.assert_allclose(weights[1].sum(), 1, rtol=1e-5)


def marker(fw):
    return ch11(fw).MarkerReader(12, 8, 3)


# ---- context attention and the classifiers -------------------------------------------------------------------

def context_ignores_nan_at_pads(fw):
    layer, states = ch11(fw).ContextAttention(D, 3), rand(B, N, D)
    clean = outputs(fw, layer, states, PADS, return_weights=True)
    states[~PADS] = np.nan
    same_outputs(outputs(fw, layer, states, PADS, return_weights=True), clean, "a NaN at a pad state")


def context_of_nothing(fw):
    pooled, weights = outputs(fw, ch11(fw).ContextAttention(D, 3), rand(B, N, D), np.zeros((B, N), bool),
                              return_weights=True)
    assert (pooled == 0).all() and (weights == 0).all(), "a row of pads pooled something"


def documents():
    ids = np.random.default_rng(0).integers(2, 30, size=(B, 3, 4))
    ids[0, 2:] = 0                                                       # an empty sentence, last
    ids[1, :, 3:] = 0                                                    # short sentences
    return ids


def han(fw):
    return ch11(fw).HierarchicalAttentionNetwork(30, 3, embed=8, hidden=4)


def han_call(change):
    def run(fw):
        return outputs(fw, han(fw), change(documents()))
    return run


def hole_in_a_sentence(ids):
    ids[1, 0, 1] = 0
    return ids


def empty_sentence_between(ids):
    ids[1, 1] = 0
    return ids


def flat(fw):
    return ch11(fw).FlatAttentionNetwork(30, 3, embed=8, hidden=4)


# ---- multi-source attention ----------------------------------------------------------------------------------

SOURCE_PADS = np.ones((B, 2, N), bool)
SOURCE_PADS[0, 1, 3:] = False


def multi(fw):
    return ch11(fw).MultiSourceAttention(4, D, 6, sources=2)


def multi_call(k_shape=(B, 2, N, D), mask=SOURCE_PADS, poison=None):
    def run(fw):
        keys = rand(*k_shape, seed=1)
        if poison is not None:
            keys[poison] = np.nan
        return outputs(fw, multi(fw), rand(B, 3, 4), keys, mask)
    return run


def multi_ignores_nan_at_pads(fw):
    layer, query, keys = multi(fw), rand(B, 3, 4), rand(B, 2, N, D, seed=1)
    clean = outputs(fw, layer, query, keys, SOURCE_PADS, return_weights=True)
    keys[~SOURCE_PADS] = np.nan
    same_outputs(outputs(fw, layer, query, keys, SOURCE_PADS, return_weights=True), clean, "a NaN at a hidden key")


def translator_call(sources_shape=(B, 2, N), tgt_shape=(B, 4)):
    def run(fw):
        model = ch11(fw).MultiSourceTranslator(12, 12, 2, embed=4, hidden=6)
        rng = np.random.default_rng(0)
        return outputs(fw, model, rng.integers(2, 12, size=sources_shape), rng.integers(2, 12, size=tgt_shape))
    return run


# ---- the copy gate and the pointer-generator -----------------------------------------------------------------

SRC_EXT = np.array([[7, 7, 2, 1], [6, 3, 8, 0]])


def gate_call(weights=lambda w: w, parts=(5, 4, 3), src_ext=SRC_EXT):
    def run(fw):
        rng = np.random.default_rng(5)
        w = rng.dirichlet(np.ones(4), size=(B, 3)).astype("float32")
        return outputs(fw, ch11(fw).CopyGate(5, 4, 3, extra=3), rand(B, 3, 6), weights(w).astype("float32"),
                       src_ext, *(rand(B, 3, n, seed=n) for n in parts))
    return run


def gate_takes_rounded_weights(fw):
    """Attention rounded to float16 sums to 1 only within its rounding: accepted, and P still sums to 1 as closely."""
    (log_p,) = gate_call(lambda w: w.astype("float16"))(fw)
    np.testing.assert_allclose(np.exp(log_p).sum(-1), 1, atol=2e-3)


def generator_call(src=(B, 5), ext=(B, 5), tgt=(B, 4), tgt_offset=0):
    def run(fw):
        model = ch11(fw).PointerGenerator(20, 15, 4, embed=8, hidden=6)
        return outputs(fw, model, np.full(src, 3), np.full(ext, 1), np.full(tgt, 2) + tgt_offset)
    return run


# ---- monotonic attention -------------------------------------------------------------------------------------

def monotonic(fw, **kwargs):
    layer = ch11(fw).MonotonicAttention(4, D, 7, **kwargs)
    return layer.eval() if is_torch(fw) else layer


def monotonic_call(q_shape=(B, 3, 4), k_shape=(B, N, D), mask=PADS, poison=None, **kwargs):
    def run(fw):
        query, keys = rand(*q_shape), rand(*k_shape, seed=1)
        if poison is not None:
            query[poison] = np.nan
        return outputs(fw, monotonic(fw), query, keys, mask, **kwargs)
    return run


def monotonic_ignores_nan_at_pads(hard):
    def run(fw):
        layer, query, keys = monotonic(fw, bias=0.0), rand(B, 3, 4), rand(B, N, D, seed=1)
        clean = outputs(fw, layer, query, keys, PADS, hard=hard, return_weights=True)
        keys[~PADS] = np.nan
        same_outputs(outputs(fw, layer, query, keys, PADS, hard=hard, return_weights=True), clean,
                     "a NaN at a padded key")
    return run


def monotonic_saturated(fw):
    """Stopping probabilities within 1e-6 of 1 at keys already passed (and exactly 1): the expected alignment is
    still the recurrence (Raffel et al.'s parallel form, dividing by Π (1 − p), loses the alignment there)."""
    from attention_course.ch11_more_attention import reference
    from attention_course.core.backend import backend

    rng = np.random.default_rng(3)
    p = rng.uniform(0, 1, (4, 5, N))
    near = rng.random(p.shape) < 0.5
    p[near] = 1 - 10.0 ** -rng.uniform(0, 6, near.sum())
    p[rng.random(p.shape) < 0.1] = 1.0
    p = p.astype("float32")

    class Given(ch11(fw).MonotonicAttention):
        def probabilities(self, query, keys, mask=None, *args):
            return backend(fw).as_input(p)

    layer = Given(4, D, 7)
    _, alpha = outputs(fw, layer.eval() if is_torch(fw) else layer, rand(4, 5, 4), rand(4, N, D), None,
                       return_weights=True)
    np.testing.assert_allclose(alpha, reference.monotonic_alignment(p.astype(float)), rtol=1e-4, atol=1e-6,
                               err_msg="the expected alignment with saturated stopping probabilities")


def monotonic_of_nothing(fw):
    context, alpha = outputs(fw, monotonic(fw), rand(B, 3, 4), rand(B, N, D, seed=1), np.zeros((B, N), bool),
                             return_weights=True)
    assert (alpha == 0).all() and (context == 0).all(), "a scan over no key stopped somewhere"


def speller_call(src_offset=0):
    def run(fw):
        model = ch11(fw).Speller(27, 12, embed=4, hidden=6)
        return outputs(fw, model, np.full((B, 5), 3) + src_offset, np.full((B, 4), 2))
    return run


# bad(...): must raise the course's error; Probe(...): must give a right result (checked)
PROBES = [
    # the pointer and its networks
    bad("pointer", "PointerAttention: mask of another length", pointer_call(mask=PADS[:, :4])),
    bad("pointer", "PointerAttention: NaN at a real input position", pointer_call(poison=(0, 1, 2))),
    bad("pointer", "PointerAttention: mask of 0.5", pointer_call(mask=np.full((B, N), 0.5, "float32"))),
    Probe("pointer", "PointerAttention: NaN at a hidden position", pointer_ignores_nan_at_pads),
    Probe("pointer", "PointerAttention: a list with no visible position", pointer_of_nothing),
    bad("pointer", "PointerNetwork: a list of no elements", network_call(lambda fw: ch11(fw).PointerNetwork(1, 8),
                                                                         no_elements)),
    bad("pointer", "PointerNetwork: NaN in a real element", network_call(lambda fw: ch11(fw).PointerNetwork(1, 8),
                                                                         nan_element)),
    bad("pointer", "PointerNetwork(hidden=0)", lambda fw: ch11(fw).PointerNetwork(1, 0)),
    bad("pointer", "FixedOutputNetwork(positions=0)", lambda fw: ch11(fw).FixedOutputNetwork(1, 8, 0)),
    # convolutional attention
    bad("conv", "ConvolutionalAttention(width=2)", lambda fw: conv(fw, width=2)),
    bad("conv", "ConvolutionalAttention: mask of another length", conv_call(mask=PADS[:, :3])),
    bad("conv", "ConvolutionalAttention: inf in a real key", conv_call(poison=(1, 2, 0))),
    bad("conv", "ConvolutionalAttention: a query per step (3-D)", conv_call(q_shape=(B, 3, 4))),
    Probe("conv", "ConvolutionalAttention: pads of 1e4 and NaN beside real keys", conv_reads_no_pad),
    Probe("conv", "ConvolutionalAttention: a row with no visible key", conv_of_nothing),
    bad("conv", "MarkerReader: id = vocab", lambda fw: outputs(fw, marker(fw), np.full((B, N), 12))),
    bad("conv", "MarkerReader: float ids", lambda fw: outputs(fw, marker(fw), np.ones((B, N), "float32"))),
    # context attention and the classifiers
    Probe("hierarchy", "ContextAttention: NaN at a pad state", context_ignores_nan_at_pads),
    Probe("hierarchy", "ContextAttention: a row of pads", context_of_nothing),
    bad("hierarchy", "ContextAttention: states of another width",
        lambda fw: outputs(fw, ch11(fw).ContextAttention(D, 3), rand(B, N, D + 1), PADS)),
    bad("hierarchy", "HierarchicalAttentionNetwork: a pad between two words", han_call(hole_in_a_sentence)),
    bad("hierarchy", "HierarchicalAttentionNetwork: an empty sentence before a full one",
        han_call(empty_sentence_between)),
    bad("hierarchy", "HierarchicalAttentionNetwork: 2-D ids", han_call(lambda ids: ids.reshape(B, -1))),
    bad("hierarchy", "HierarchicalAttentionNetwork: id = vocab", han_call(lambda ids: np.where(ids, 30, 0))),
    bad("hierarchy", "FlatAttentionNetwork: a pad between two words",
        lambda fw: outputs(fw, flat(fw), np.array([[3, 0, 4, 5], [3, 4, 0, 0]]))),
    # multi-source attention
    bad("multi", "MultiSourceAttention: keys of 3 sources for 2", multi_call(k_shape=(B, 3, N, D),
                                                                            mask=np.ones((B, 3, N), bool))),
    bad("multi", "MultiSourceAttention: mask of another length", multi_call(mask=SOURCE_PADS[..., :3])),
    bad("multi", "MultiSourceAttention: NaN at a real key", multi_call(poison=(1, 0, 2, 3))),
    Probe("multi", "MultiSourceAttention: NaN at a hidden key", multi_ignores_nan_at_pads),
    bad("multi", "MultiSourceTranslator: 3 sources for 2", translator_call(sources_shape=(B, 3, N))),
    bad("multi", "MultiSourceTranslator: tgt_in of another batch", translator_call(tgt_shape=(B + 1, 4))),
    # the copy gate and the pointer-generator
    bad("copy", "CopyGate: weights summing to 5", gate_call(lambda w: 5 * w)),
    bad("copy", "CopyGate: scores for weights", gate_call(lambda w: np.log(w))),
    bad("copy", "CopyGate: NaN weights", gate_call(lambda w: np.where(w > 0.3, np.nan, w))),
    bad("copy", "CopyGate: src_ext outside the extended vocabulary", gate_call(src_ext=SRC_EXT + 5)),
    bad("copy", "CopyGate: a context of another width", gate_call(parts=(6, 4, 3))),
    Probe("copy", "CopyGate: weights rounded to float16", gate_takes_rounded_weights),
    bad("copy", "PointerGenerator: tgt_in outside the extended vocabulary", generator_call(tgt_offset=30)),
    bad("copy", "PointerGenerator: src_ext of another length", generator_call(ext=(B, 3))),
    bad("copy", "PointerGenerator(extra=0)", lambda fw: ch11(fw).PointerGenerator(20, 15, 0)),
    # monotonic attention
    Probe("monotonic", "MonotonicAttention: saturated stopping probabilities", monotonic_saturated),
    Probe("monotonic", "MonotonicAttention: NaN at a padded key", monotonic_ignores_nan_at_pads(False)),
    Probe("monotonic", "MonotonicAttention(hard): NaN at a padded key", monotonic_ignores_nan_at_pads(True)),
    Probe("monotonic", "MonotonicAttention: no visible key", monotonic_of_nothing),
    bad("monotonic", "MonotonicAttention: NaN in a query", monotonic_call(poison=(0, 1, 2))),
    bad("monotonic", "MonotonicAttention: mask of another length", monotonic_call(mask=PADS[:, :4])),
    bad("monotonic", "MonotonicAttention: one query per example (2-D)", monotonic_call(q_shape=(B, 4))),
    bad("monotonic", "MonotonicAttention(noise=-1)", lambda fw: monotonic(fw, noise=-1.0)),
    bad("monotonic", "Speller(attention='local')", lambda fw: ch11(fw).Speller(27, 12, attention="local")),
    bad("monotonic", "Speller: letter id = vocab", speller_call(src_offset=24)),
]
