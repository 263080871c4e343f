"""Chapter 11's hierarchical attention (Yang et al. 2016): ContextAttention is softmax(tanh(W h + b)ᵀ c) pooling over
the real steps; the hierarchical, flat and (Chapter 3's) bag-of-words classifiers agree across frameworks;
padding (words, whole sentences) changes nothing; BBC News becomes documents whose vocabulary comes from the
training split alone; bad input is a clear error."""

import numpy as np
import pytest
import torch

import attention_course as ac
from attention_course.ch11_more_attention import experiment as c11
from attention_course.core.backend import backend
from attention_course.core.errors import ShapeError
from attention_course.core.parity import torch_to_keras

pytestmark = pytest.mark.chapter(11)


def _documents(seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, 40, size=(3, 4, 6))
    ids[0, 2:] = 0                                   # two empty sentences at the end
    ids[1, :, 4:] = 0                                # short sentences
    ids[2, 1, 3:] = 0
    flat = np.zeros((3, 24), np.int64)
    for i in range(3):
        real = ids[i][ids[i] != 0]
        flat[i, :len(real)] = real
    return ids, flat


def _twins(kind):
    torch.manual_seed(0)
    make = {"hierarchical": lambda fw: fw.HierarchicalAttentionNetwork(40, 5, embed=8, hidden=6),
            "flat": lambda fw: fw.FlatAttentionNetwork(40, 5, embed=8, hidden=6),
            "bag of words": lambda fw: fw.BagOfWords(40, embed=8, classes=5)}[kind]   # Chapter 3's
    t, k = make(ac.torch), make(ac.keras)
    ids, flat = _documents()
    torch_to_keras(t, k, _inputs(kind))
    return t, k


def _inputs(kind):
    ids, flat = _documents()
    return {"hierarchical": (ids,), "flat": (flat,), "bag of words": (flat, flat != 0)}[kind]


def test_context_attention_is_the_formula():
    layer = ac.torch.ContextAttention(5, 3)
    states = np.random.default_rng(1).normal(size=(2, 4, 5)).astype("float32")
    mask = np.array([[True, True, True, False], [True] * 4])
    pooled, weights = backend(ac.torch).run(layer, states, mask, return_weights=True)
    W, b = layer.W.weight.detach().numpy(), layer.W.bias.detach().numpy()
    c = layer.context.weight.detach().numpy()[0]
    scores = np.tanh(states @ W.T + b) @ c
    scores = np.where(mask, scores, -np.inf)
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(weights, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pooled, np.einsum("bt,bth->bh", expected, states), rtol=1e-5, atol=1e-5)
    nothing = backend(ac.torch).run(layer, states, np.zeros((2, 4), bool))            # no real step: zeros
    assert np.array_equal(nothing, np.zeros((2, 5), np.float32))


@pytest.mark.parametrize("kind", c11.NEWS_MODELS)
def test_the_classifiers_agree_across_frameworks(kind):
    t, k = _twins(kind)
    ours, theirs = (backend(fw).run(m, *_inputs(kind), return_weights=True) for fw, m in ((ac.torch, t), (ac.keras, k)))
    assert ours[0].shape == (3, 5)
    for a, b in zip(ours, theirs, strict=True):
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_the_hierarchy_weighs_real_words_and_sentences_only():
    t, _ = _twins("hierarchical")
    ids, _ = _documents()
    logits, words, sentences = backend(ac.torch).run(t, ids, return_weights=True)
    real = ids != 0
    assert np.all(words[~real] == 0) and np.all(sentences[~real.any(-1)] == 0)
    np.testing.assert_allclose(words.sum(-1)[real.any(-1)], 1, rtol=1e-5)
    np.testing.assert_allclose(sentences.sum(-1), 1, rtol=1e-5)
    longer = np.zeros((3, 6, 9), np.int64)                          # more padding, same documents: same scores
    longer[:, :4, :6] = ids
    np.testing.assert_allclose(backend(ac.torch).run(t, longer), logits, rtol=1e-5, atol=1e-5)


def test_bad_documents_are_named():
    t, k = _twins("hierarchical")
    for fw, model in ((ac.torch, t), (ac.keras, k)):
        with pytest.raises(ShapeError, match=r"\(batch, S, W\): S sentences of W words; got shape \(3, 24\)"):
            backend(fw).run(model, _documents()[1])


def test_bbc_news_as_documents(monkeypatch):
    import os

    if not os.environ.get("COURSE_DATA_DIR"):
        pytest.skip("set COURSE_DATA_DIR to a folder with the course data to run this test")
    sizes = {**c11.NEWS_SIZES["quick"], "sentences": 5, "words": 7, "vocab": 300}
    vocabulary, train, val, test = c11.news(sizes, seed=0)
    assert len(vocabulary) == 300 and vocabulary[:2] == ["<pad>", "<unk>"]
    assert train.ids.shape[1:] == (5, 7) and train.flat.shape[1] == 35 and len(test.labels) == len(test.titles)
    assert len(train.labels) + len(val.labels) + len(test.labels) == 2127
    first = train.words[0]
    assert train.ids[0, 0, :len(first[0])].tolist() == [vocabulary.index(w) if w in vocabulary else 1
                                                       for w in first[0]]
    assert (train.flat != 0).sum() == (train.ids != 0).sum()       # the same words, in one right-padded row
    counted = {w for doc in train.words for s in doc for w in s}
    assert set(vocabulary[2:]) <= counted                         # the vocabulary comes from the training split


@pytest.mark.parametrize("fw", ["torch", "keras"])
def test_context_attention_is_the_reference(fw):
    """In both frameworks, ContextAttention is ``reference.context_attention``, a row of pads included."""
    from attention_course.ch11_more_attention import reference

    module = getattr(ac, fw)
    layer = module.ContextAttention(5, 3)
    states = np.random.default_rng(2).normal(size=(3, 4, 5)).astype("float32")
    mask = np.array([[True, True, True, False], [True] * 4, [False] * 4])
    pooled, weights = backend(module).run(layer, states, mask, return_weights=True)
    if fw == "torch":
        W, b, c = layer.W.weight.detach().numpy().T, layer.W.bias.detach().numpy(), layer.context.weight.detach()[0]
    else:
        W, b, c = np.asarray(layer.W.kernel), np.asarray(layer.W.bias), np.asarray(layer.context.kernel)[:, 0]
    want_pooled, want_weights = reference.context_attention(states, mask, W, b, np.asarray(c))
    np.testing.assert_allclose(weights, want_weights, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pooled, want_pooled, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("where", ["an empty sentence between two", "a pad between two words"])
def test_documents_that_are_not_right_padded_are_refused_in_both_frameworks(where):
    """A pad before a word (a hole in a sentence), or an empty sentence before one with words: PyTorch's packed
    GRUs read the first `length` steps of each row, Keras' the unmasked ones, so the two would read other words;
    both refuse, naming the document and sentence."""
    from attention_course.core.errors import InputError

    t, k = _twins("hierarchical")
    ids, flat = _documents()
    bad = ids.copy()
    if where == "an empty sentence between two":
        bad[1, 1] = 0                                                      # sentences 0, 2 and 3 keep their words
        match = r"document 1.*sentence 1 has no word but a later one has"
    else:
        bad[1, 2, 1] = 0                                                   # words 0, 2 and 3 of sentence 2 stay
        match = r"document 1, sentence 2.*a pad before a word"
    for fw, model in ((ac.torch, t), (ac.keras, k)):
        with pytest.raises(InputError, match=match):
            backend(fw).run(model, bad)
    holed = flat.copy()
    holed[0, 1] = 0
    ft, fk = _twins("flat")
    for fw, model in ((ac.torch, ft), (ac.keras, fk)):
        with pytest.raises(InputError, match=r"document 0.*a pad before a word"):
            backend(fw).run(model, holed)


def test_an_empty_document_pools_to_zeros_in_both_frameworks():
    t, k = _twins("hierarchical")
    ids, _ = _documents()
    ids[2] = 0
    ours, theirs = (backend(fw).run(m, ids, return_weights=True) for fw, m in ((ac.torch, t), (ac.keras, k)))
    assert (ours[1][2] == 0).all() and (ours[2][2] == 0).all()
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fw", ["torch", "keras"])
def test_nan_in_a_pad_state_reaches_no_pooled_vector_and_in_a_real_one_is_a_clear_error(fw):
    from attention_course.core.errors import InputError

    module = getattr(ac, fw)
    layer = module.ContextAttention(5, 3)
    states = np.random.default_rng(2).normal(size=(2, 4, 5)).astype("float32")
    mask = np.array([[True, True, True, False], [True] * 4])
    clean = backend(module).run(layer, states, mask)
    states[0, 3] = np.nan
    np.testing.assert_allclose(backend(module).run(layer, states, mask), clean, rtol=1e-6)
    states[1, 0, 0] = np.inf
    with pytest.raises(InputError, match="states must hold finite numbers"):
        backend(module).run(layer, states, mask)
