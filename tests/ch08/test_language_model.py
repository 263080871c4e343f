"""Chapter 8's decoder-only Transformer: the twins agree with shared weights, a block is the decoder layer without
its cross-attention, the model is causal, cached generation equals the full forward pass, sampling (temperature,
greedy, the context window) and the character data and baselines of Tiny Shakespeare."""

import keras
import numpy as np
import pytest
import torch
from conftest import to_numpy

import attention_course as ac
from attention_course.ch08_transformer import experiment as c8
from attention_course.core import decode
from attention_course.core.errors import ConfigError, ShapeError
from attention_course.core.parity import torch_to_keras

pytestmark = pytest.mark.chapter(8)   # Chapter 8: `make test CHAPTERS=...` picks by it

RTOL, ATOL = 1e-5, 1e-5
V, D, H, FF = 23, 16, 4, 32


def _ids(seed=0, shape=(3, 9)):
    return np.random.default_rng(seed).integers(0, V, size=shape)


def _twins(seed=0, context=16):
    torch.manual_seed(seed)
    keras.utils.set_random_seed(seed)
    t = ac.torch.LanguageModel(V, d_model=D, heads=H, layers=2, d_ff=FF, dropout=0.0, context=context).eval()
    k = ac.keras.LanguageModel(V, d_model=D, heads=H, layers=2, d_ff=FF, dropout=0.0, context=context)
    torch_to_keras(t, k, (_ids(shape=(2, 4)),))
    return t, k


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_language_model_twins_agree_with_their_weights():
    t, k = _twins()
    ids = _ids(1)
    with torch.no_grad():
        logits, weights = t(ids, return_weights=True)
    logits_k, weights_k = k(ids, return_weights=True)
    assert tuple(logits.shape) == (3, 9, V) and len(weights) == 2
    np.testing.assert_allclose(to_numpy(logits_k), logits.numpy(), rtol=RTOL, atol=ATOL)
    for w_t, w_k in zip(weights, weights_k, strict=True):
        np.testing.assert_allclose(to_numpy(w_k), w_t.numpy(), rtol=RTOL, atol=ATOL)
        assert np.allclose(np.triu(w_t.numpy(), 1), 0)                              # no position sees its future


def test_language_model_is_causal(fw):
    torch.manual_seed(0)
    keras.utils.set_random_seed(0)
    model = fw.LanguageModel(V, d_model=D, heads=H, layers=2, d_ff=FF, dropout=0.0, context=16)
    ids = _ids()
    changed = ids.copy()
    changed[:, 5:] = (changed[:, 5:] + 1) % V                                      # a different future
    a, b = to_numpy(model(ids)), to_numpy(model(changed))
    np.testing.assert_allclose(a[:, :5], b[:, :5], rtol=RTOL, atol=ATOL)
    assert not np.allclose(a[:, 5:], b[:, 5:])


def test_a_decoder_layer_without_cross_attention_is_a_causal_encoder_layer():
    # torch: silence the cross-attention (W_o = 0, so that sub-layer adds nothing; pre-LN: y + 0 = y) and copy the
    # rest into a causal EncoderLayer: the two compute the same
    torch.manual_seed(0)
    decoder = ac.torch.DecoderLayer(D, H, FF, dropout=0.0, norm_first=True).eval()
    block = ac.torch.EncoderLayer(D, H, FF, dropout=0.0, norm_first=True, causal=True).eval()
    with torch.no_grad():
        decoder.cross_attention.W_o.weight.zero_()
        decoder.cross_attention.W_o.bias.zero_()
    for mine, theirs in (("self_attention", "self_attention"), ("feed_forward", "feed_forward"),
                         ("norm_1", "norm_1"), ("norm_2", "norm_3")):
        getattr(block, mine).load_state_dict(getattr(decoder, theirs).state_dict())
    y, memory = torch.randn(2, 6, D), torch.randn(2, 4, D)
    with torch.no_grad():
        np.testing.assert_allclose(block(y).numpy(), decoder(y, memory).numpy(), rtol=RTOL, atol=ATOL)
        decoder.cross_attention.W_o.bias.fill_(0.1)                                  # the memory matters again
        assert not np.allclose(block(y).numpy(), decoder(y, memory).numpy(), atol=1e-3)


def test_a_keras_decoder_layer_without_cross_attention_is_a_causal_encoder_layer():
    keras.utils.set_random_seed(0)
    decoder = ac.keras.DecoderLayer(D, H, FF, dropout=0.0, norm_first=True)
    block = ac.keras.EncoderLayer(D, H, FF, dropout=0.0, norm_first=True, causal=True)
    rng = np.random.default_rng(0)
    y, memory = rng.normal(size=(2, 6, D)).astype("float32"), rng.normal(size=(2, 4, D)).astype("float32")
    decoder(y, memory), block(y)                                                    # build the weights
    W_o = decoder.cross_attention.W_o
    W_o.set_weights([np.zeros_like(w) for w in W_o.get_weights()])
    for mine, theirs in ((block.self_attention, decoder.self_attention), (block.feed_forward, decoder.feed_forward),
                         (block.norm_1, decoder.norm_1), (block.norm_2, decoder.norm_3)):
        mine.set_weights(theirs.get_weights())
    np.testing.assert_allclose(to_numpy(block(y)), to_numpy(decoder(y, memory)), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("fw_name", ["torch", "keras"])
def test_cached_steps_equal_the_full_forward_pass(fw_name):
    model = dict(zip(("torch", "keras"), _twins(2), strict=True))[fw_name]
    ids = _ids(3)
    full = _log_softmax(to_numpy(model(ids)))                                         # every prefix at once
    state = model.start(ids[:, :3])                                                 # a prompt of 3, then 1 by 1
    assert len(state["caches"][0]) == 3
    for i in range(3, ids.shape[1]):
        log_probs, state, _ = model.step(ids[:, i], state)
        np.testing.assert_allclose(log_probs, full[:, i], rtol=1e-4, atol=1e-4)
    assert len(state["caches"][1]) == ids.shape[1]


def test_the_context_is_a_limit_with_a_clear_error(fw):
    model = fw.LanguageModel(V, d_model=D, heads=H, layers=1, d_ff=FF, context=8)
    with pytest.raises(ShapeError, match=r"context=8 tokens, but got 9"):
        model(_ids(shape=(2, 9)))
    with pytest.raises(ShapeError, match="context=8"):
        model.step(np.zeros(2, int), {**model.start(_ids(shape=(2, 4))), "steps": 8})


def test_sampling_is_seeded_and_the_same_in_both_frameworks():
    t, k = _twins(4, context=8)
    prompt = _ids(5, shape=(2, 3))
    # 20 steps through a context of 8: the window restarts from the last half several times
    a = decode.sample(t, prompt, steps=20, temperature=[0.7, 1.3], seed=1)
    assert a.shape == (2, 20) and a.min() >= 0 and a.max() < V
    np.testing.assert_array_equal(a, decode.sample(t, prompt, steps=20, temperature=[0.7, 1.3], seed=1))
    np.testing.assert_array_equal(a, decode.sample(k, prompt, steps=20, temperature=[0.7, 1.3], seed=1))
    assert not np.array_equal(a, decode.sample(t, prompt, steps=20, temperature=[0.7, 1.3], seed=2))


class _Counter:
    """A fake language model over 5 tokens that always prefers (last token + 1) mod 5, and records its windows."""

    context = 4

    def __init__(self):
        self.starts = []

    def start(self, prefix):
        self.starts.append(np.asarray(prefix).copy())
        return {"steps": prefix.shape[1]}

    def step(self, tokens, state):
        assert state["steps"] < self.context                                         # never past the context
        log_probs = np.full((len(tokens), 5), -5.0)
        log_probs[np.arange(len(tokens)), (np.asarray(tokens) + 1) % 5] = 0.0
        return log_probs, {"steps": state["steps"] + 1}, None


def test_greedy_sampling_and_the_context_window():
    model = _Counter()
    out = decode.sample(model, np.array([[0, 1, 2, 3, 4, 0]]), steps=7, temperature=0)
    np.testing.assert_array_equal(out, [[1, 2, 3, 4, 0, 1, 2]])                    # always the most likely
    np.testing.assert_array_equal(model.starts[0], [[2, 3, 4]])                    # the last 4, less the newest
    assert all(s.shape[1] == 1 for s in model.starts[1:])                           # then the last half, less one
    np.testing.assert_array_equal(model.starts[1], [[0]])                          # (text so far: … 0, 1)


def test_temperature_sharpens_or_flattens_and_bad_values_are_named():
    log_probs = np.log(np.array([[0.6, 0.3, 0.1]]))
    np.testing.assert_allclose(decode.tempered(log_probs, 1.0), np.exp(log_probs))
    cold, hot = decode.tempered(log_probs, 0.5), decode.tempered(log_probs, 2.0)
    assert cold[0, 0] > 0.6 > hot[0, 0] > 1 / 3                                     # towards the mode, towards uniform
    np.testing.assert_allclose(cold, [[36, 9, 1]] / np.float64(46))                 # p² renormalised
    model = _Counter()
    for bad in (-1.0, float("nan"), "hot", None):
        with pytest.raises(ConfigError, match="temperature"):
            decode.sample(model, np.zeros((1, 2), int), steps=2, temperature=bad)
    with pytest.raises(ShapeError, match="one per prompt row"):
        decode.sample(model, np.zeros((2, 2), int), steps=2, temperature=[1.0, 1.0, 1.0])
    with pytest.raises(ConfigError, match="greedy"):
        decode.tempered(log_probs, 0)


# ---- the data: characters of Tiny Shakespeare, windows, baselines ------------------------------------------

TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n" * 20


def test_characters_split_by_position_and_round_trip():
    chars = c8.characters(TEXT)
    assert chars.vocabulary == "".join(sorted(set(TEXT)))
    assert len(chars.train) + len(chars.val) == len(TEXT)
    assert chars.decode(np.concatenate([chars.train, chars.val])) == TEXT           # nothing lost or moved
    assert len(chars.val) == len(TEXT) - int(len(TEXT) * 0.9)                       # the last tenth held out
    with pytest.raises(ValueError, match="'Z'"):
        chars.encode("Zounds")


def test_windows_are_next_character_pairs():
    ids = np.arange(100)
    x, y = c8.windows(ids, 8, 50, seed=0)
    assert x.shape == y.shape == (50, 8)
    np.testing.assert_array_equal(y, x + 1)                                         # the next one at every position
    np.testing.assert_array_equal(x, c8.windows(ids, 8, 50, seed=0)[0])             # seeded
    with pytest.raises(ValueError, match="context"):
        c8.windows(np.arange(8), 8, 1)


def test_ngram_baselines_on_tiny_shakespeare():
    chars = c8.characters(ac.data.load_tinyshakespeare())
    vocab = len(chars.vocabulary)
    assert vocab == 65 and len(chars.train) == 1_003_854
    unigram = c8.ngram_loss(chars.train, chars.val, vocab, 1)
    bigram = c8.ngram_loss(chars.train, chars.val, vocab, 2)
    assert bigram < unigram - 0.5 < np.log(vocab)                                   # each bit of context helps
    with pytest.raises(ValueError, match="order"):
        c8.ngram_loss(chars.train, chars.val, vocab, 3)


def test_a_small_language_model_beats_the_unigram_baseline(fw):
    chars = c8.characters(TEXT * 5)
    vocab = len(chars.vocabulary)
    sizes = {**c8.LM_SIZES["quick"], "context": 16, "windows": 512, "epochs": 2, "val_windows": 32}
    torch.manual_seed(0)
    keras.utils.set_random_seed(0)
    model = fw.LanguageModel(vocab, d_model=32, heads=2, layers=1, d_ff=64, dropout=0.0, context=16)
    history = c8.train_lm(fw, model, chars, sizes, seed=0)
    assert len(history.metrics["val_loss"]) == 2
    assert min(history.metrics["val_loss"]) < c8.ngram_loss(chars.train, chars.val, vocab, 1)
