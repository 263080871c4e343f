"""Chapter 11's pointer-generator (See et al. 2017): CopyGate's output is the NumPy reference's mixture of the
vocabulary and the attention over the source (a word twice in the source adds both weights), a distribution over the
extended vocabulary, in both frameworks; the translators agree across frameworks, with and without copying; the task
translates words and copies names, the test names are never in training; bad input is a clear error; a small run
copies unseen names with the gate and cannot without it."""

import numpy as np
import pytest
import torch

import attention_course as ac
from attention_course.ch11_more_attention import experiment as c11
from attention_course.ch11_more_attention import keras as ch11_keras
from attention_course.ch11_more_attention import reference
from attention_course.ch11_more_attention import torch as ch11_torch
from attention_course.core.backend import backend
from attention_course.core.errors import ConfigError, InputError, ShapeError
from attention_course.core.parity import torch_to_keras
from attention_course.core.text import BOS, UNK

pytestmark = pytest.mark.chapter(11)

RNG = np.random.default_rng(5)
LOGITS = RNG.normal(size=(2, 3, 6)).astype("float32")
WEIGHTS = RNG.dirichlet(np.ones(4), size=(2, 3)).astype("float32")
SRC_EXT = np.array([[7, 7, 2, 1], [6, 3, 8, 0]])                       # 7 twice; 6, 7 and 8 are extra ids
PARTS = [RNG.normal(size=(2, 3, n)).astype("float32") for n in (5, 4, 3)]   # context, state, embedded


def _gate_value(layer, fw):
    """p_gen as the layer computes it, from its own weights."""
    joined = np.concatenate(PARTS, -1)
    if fw is ch11_torch:
        w, b = layer.w.weight.detach().numpy()[0], layer.w.bias.detach().numpy()[0]
    else:
        w, b = np.asarray(layer.w.kernel)[:, 0], np.asarray(layer.w.bias)[0]
    return 1 / (1 + np.exp(-(joined @ w + b)))


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_the_copy_gate_is_the_reference_mixture(fw):
    layer = fw.CopyGate(5, 4, 3, extra=3)
    log_p, p_gen = backend(layer).run(layer, LOGITS, WEIGHTS, SRC_EXT, *PARTS, return_gate=True)
    np.testing.assert_allclose(p_gen, _gate_value(layer, fw), rtol=1e-5)
    want = reference.pointer_generator(LOGITS, WEIGHTS, SRC_EXT, p_gen, 3)
    np.testing.assert_allclose(np.exp(log_p), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.exp(log_p).sum(-1), 1, rtol=1e-5)
    copied = (1 - p_gen[0]) * (WEIGHTS[0, :, 0] + WEIGHTS[0, :, 1])      # word 7, twice in the source
    np.testing.assert_allclose(np.exp(log_p[0, :, 7]), copied, rtol=1e-5)
    assert (np.exp(log_p[1, :, 7]) < 1e-11).all()                          # not in the second source, not generable


def test_the_translators_agree_across_frameworks_with_and_without_copying():
    data = c11.named_sentences({**c11.COPY_SIZES["quick"], "length": 6}, 4, seed=1)
    for copy in (True, False):
        torch.manual_seed(0)
        t = ch11_torch.PointerGenerator(data.src_vocab, data.tgt_vocab, 6, embed=8, hidden=6, copy=copy)
        k = ch11_keras.PointerGenerator(data.src_vocab, data.tgt_vocab, 6, embed=8, hidden=6, copy=copy)
        torch_to_keras(t, k, (data.src, data.src_ext, data.tgt_in))
        ours = backend(t).run(t, data.src, data.src_ext, data.tgt_in, return_weights=True)
        theirs = backend(k).run(k, data.src, data.src_ext, data.tgt_in, return_weights=True)
        assert ours[0].shape == (4, 6, data.tgt_vocab + 6 if copy else data.tgt_vocab)
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
        if not copy:
            assert (ours[2] == 1).all()                                    # it only ever generates


def test_the_task_translates_words_and_copies_names():
    sizes = {**c11.COPY_SIZES["quick"], "length": 10}
    train, test = c11.named_sentences(sizes, 300, seed=2), c11.named_sentences(sizes, 300, seed=3, test=True)
    words, known = sizes["words"], sizes["known"]
    assert train.src_vocab == 2 + words + known and train.tgt_vocab == 3 + words + known
    w = ~train.is_name
    np.testing.assert_array_equal(train.target[w], 3 + (7 * (train.src[w] - 2) + 3) % words)   # a permutation
    assert (train.src_ext[w] == UNK).all()                                 # words are not copied
    names = train.is_name
    assert (train.src_ext[names] == train.target[names]).all()            # a name is its own translation
    assert ((train.target >= train.tgt_vocab) == (names & (train.src == UNK))).all()
    assert (test.src[test.is_name] == UNK).all() and (test.target[test.is_name] >= test.tgt_vocab).all()
    assert (test.target < test.tgt_vocab + sizes["length"]).all() and (train.tgt_in[:, 0] == BOS).all()
    np.testing.assert_array_equal(train.tgt_in[:, 1:], train.target[:, :-1])
    row = np.flatnonzero(test.is_name.sum(1) >= 2)[0]                   # the k-th new name of a sentence: V + k
    firsts = list(dict.fromkeys(test.target[row][test.is_name[row]]))
    assert firsts == list(range(test.tgt_vocab, test.tgt_vocab + len(firsts)))
    with pytest.raises(ConfigError, match="known names"):
        c11.named_sentences({**sizes, "known": 300}, 3, seed=0)            # no training name left unknown


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_bad_input_is_a_clear_error(fw):
    gate = fw.CopyGate(5, 4, 3, extra=3)
    with pytest.raises(ShapeError, match="a copy gate takes"):
        gate(LOGITS, WEIGHTS[:, :, :3], SRC_EXT, *PARTS)
    with pytest.raises(InputError, match=r"extended vocabulary, \[0, 9\)"):
        gate(LOGITS, WEIGHTS, SRC_EXT + 5, *PARTS)
    model = fw.PointerGenerator(20, 15, 4, embed=8, hidden=6)
    src, ext, tgt_in = np.full((2, 5), 3), np.full((2, 5), UNK), np.full((2, 4), BOS)
    with pytest.raises(InputError, match=r"tgt_in must be integer ids in the extended vocabulary, \[0, 19\)"):
        model(src, ext, tgt_in + 30)
    with pytest.raises(ShapeError, match="src_ext"):
        model(src, ext[:, :3], tgt_in)
    with pytest.raises(ConfigError, match="extra"):
        fw.PointerGenerator(20, 15, 0)


def test_the_gate_copies_names_never_seen_and_the_plain_translator_cannot():
    sizes = {**c11.COPY_SIZES["quick"], "n_train": 2000, "n_test": 100, "length": 6, "epochs": 4, "batch_size": 64,
             "lr": 5e-3}
    table, _, _ = c11.copying(ac.torch, sizes, seed=0)
    row = table.set_index("model")
    assert row.loc["pointer-generator", "names right"] > 0.8, table
    assert row.loc["no copying", "names right"] == 0, table               # no id for a name it never saw
    assert row.loc["pointer-generator", "p_gen at names"] < 0.3 < 0.7 < row.loc["pointer-generator", "p_gen at words"]
    assert row.loc["pointer-generator", "BLEU"] > row.loc["no copying", "BLEU"] + 10, table


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_attention_rows_that_are_not_distributions_are_refused(fw):
    """The copied share is (1 − p_gen) Σ_j a_tj: rows that do not sum to 1 (scores, weights left unnormalised, NaN)
    would make P sum to anything but 1. Float16 weights, rounded, are accepted."""
    gate = fw.CopyGate(5, 4, 3, extra=3)
    for bad, shown in ((WEIGHTS * 5, "5"), (np.exp(LOGITS[..., :4]), ""), (WEIGHTS - 0.1, ""),
                       (np.where(WEIGHTS > 0.3, np.nan, WEIGHTS), "nan")):
        with pytest.raises(InputError, match=rf"weights must be the attention over the source.*sum to 1.*{shown}"):
            gate(LOGITS, bad.astype("float32"), SRC_EXT, *PARTS)
    half = WEIGHTS.astype("float16")
    assert not np.allclose(half.astype("float64").sum(-1), 1, rtol=0, atol=1e-6)      # rounded: not exactly 1
    log_p = backend(gate).run(gate, LOGITS, half.astype("float32"), SRC_EXT, *PARTS)
    np.testing.assert_allclose(np.exp(log_p).sum(-1), 1, atol=2e-3)
