"""Arrays for Chapter 3, prepared once here so that the notebook and ``tools/chapter3_full.py`` train on exactly
the same splits, vocabularies and padding.

* :func:`prepare_ner`: the GMB/Kaggle NER corpus, a seeded 80/20 split of the sentences, words and BIO tags
  as ids padded at the end (id 0 is the pad, in the words and in the tags).
* :func:`prepare_sentiment`: the UCI Amazon and Yelp sentences, a seeded split, ids padded at the start.
* :func:`sentiment_words`: the words most tied to one label in the training part of such a split.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from attention_course.core import validate
from attention_course.core.errors import ConfigError
from attention_course.core.text import Vocab, pad_batch, tokenize
from attention_course.data.loaders import load_ner, load_sentiment

__all__ = ["prepare_ner", "prepare_sentiment", "sentiment_words"]


def _positive(name: str, value, none_ok: bool = False) -> None:
    """Raise :class:`ConfigError` unless ``value`` is a positive int (or ``None`` when ``none_ok``)."""
    if none_ok and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ConfigError(f"{name} must be a positive integer{' or None (all)' if none_ok else ''}; got {value!r}")


def prepare_ner(max_len: int, n_train: int | None = None, n_test: int | None = None, seed: int = 0,
                sentences=None) -> dict:
    """Split the NER sentences 80/20 (a ``seed``-ed permutation), keep those of at most ``max_len`` words (the
    first ``n_train``/``n_test`` of them, or all with None), build the vocabulary from the training words only
    (unseen test words become ``<unk>``) and pad words and tags to ``max_len``.

    ``sentences``: the output of :func:`~attention_course.data.load_ner` if already loaded.
    Returns a dict: ``sentences``, ``split_all`` (the whole 80/20 split, index arrays), ``split`` (the kept
    sentences), ``tags`` (``"<pad>"`` first, then the 17 BIO tags sorted), ``vocab``, ``max_len`` and
    ``X_train``, ``Y_train``, ``X_test``, ``Y_test``, int64 arrays ``(n, max_len)``.
    """
    _positive("max_len", max_len)
    _positive("n_train", n_train, none_ok=True)
    _positive("n_test", n_test, none_ok=True)
    sentences = load_ner() if sentences is None else sentences
    order = np.random.default_rng(seed).permutation(len(sentences))
    n_test_all = len(sentences) // 5
    split_all = {"test": order[:n_test_all], "train": order[n_test_all:]}
    split = {}
    for part, n in (("train", n_train), ("test", n_test)):
        keep = [i for i in split_all[part] if len(sentences[i].words) <= max_len]
        split[part] = np.array(keep[:n] if n else keep, dtype=np.int64)
    tags = ["<pad>", *sorted({t for s in sentences for t in s.tags})]
    tag_id = {t: i for i, t in enumerate(tags)}
    vocab = Vocab.build(sentences[i].words for i in split["train"])
    data = {"sentences": sentences, "split_all": split_all, "split": split, "tags": tags, "vocab": vocab,
            "max_len": max_len}
    for part, idx in split.items():
        data[f"X_{part}"] = pad_batch([vocab.encode(sentences[i].words) for i in idx], max_len=max_len).ids
        data[f"Y_{part}"] = pad_batch([[tag_id[t] for t in sentences[i].tags] for i in idx], max_len=max_len).ids
    return data


def prepare_sentiment(seed: int, max_len: int = 32, n_val: int = 400, sources=("amazon", "yelp"), *,
                      padding: str = "pre", tokenizer: str = "course", split: str = "random") -> dict:
    """The sentences of ``sources`` (in that order), tokenized; a ``seed``-ed split with ``n_val`` validation
    sentences; the vocabulary of the training part; ids padded and cut **at the start** to ``max_len`` (the last
    ``max_len`` tokens are kept, and the last position of every row is a real token).

    The article's choices, for Chapter 3's comparison: ``padding="post"`` pads after the words;
    ``tokenizer="keras"`` splits as Keras' ``Tokenizer`` does (lowercase, punctuation dropped); ``split="last"``
    validates on the last ``n_val`` sentences in file order, as Keras' ``validation_split`` does (no shuffling).

    Returns a dict: ``tokens`` (lists of str), ``y`` (0/1), ``vocab``, ``X`` (all sentences, ``(n, max_len)``),
    ``mask`` (``X != 0``: True on real tokens), ``train`` and ``val`` (index arrays).
    """
    import pandas as pd

    _positive("max_len", max_len)
    _positive("n_val", n_val)
    frame = pd.concat([load_sentiment(src) for src in sources], ignore_index=True)
    if n_val >= len(frame):
        raise ConfigError(f"n_val={n_val} leaves no training sentence: the sources {tuple(sources)} hold "
                          f"{len(frame)} sentences; choose n_val < {len(frame)}")
    validate.choice("padding", padding, ("pre", "post"))
    validate.choice("tokenizer", tokenizer, ("course", "keras"))
    validate.choice("split", split, ("random", "last"))
    tokens = [(tokenize if tokenizer == "course" else keras_words)(s) for s in frame["sentence"]]
    if split == "random":
        order = np.random.default_rng(seed).permutation(len(frame))
        val, train = order[:n_val], order[n_val:]
    else:                                          # Keras' validation_split: the last n_val rows, as they come
        val, train = np.arange(len(frame) - n_val, len(frame)), np.arange(len(frame) - n_val)
    vocab = Vocab.build(tokens[i] for i in train)
    X = pad_batch([vocab.encode(t) for t in tokens], max_len=max_len, truncate="pre", padding=padding).ids
    return {"tokens": tokens, "y": frame["label"].to_numpy(), "vocab": vocab, "X": X, "mask": X != 0,
            "train": train, "val": val}


KERAS_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'      # keras.preprocessing.text.Tokenizer's default


def keras_words(text: str) -> list[str]:
    """Words as Keras' ``Tokenizer`` splits them: lowercase, every character of its default filters (most
    punctuation) replaced by a space, split on spaces. ``keras_words("Don't panic, Arthur!")`` →
    ``["don't", "panic", "arthur"]``."""
    return [w for w in text.lower().translate(str.maketrans(KERAS_FILTERS, " " * len(KERAS_FILTERS))).split(" ") if w]


def sentiment_words(data: dict, top: int = 40, min_count: int = 5) -> list[str]:
    """The ``top`` words most tied to one label in the **training** part of :func:`prepare_sentiment`'s
    ``data``: the largest |log odds| between positive and negative sentences (add-one smoothed, counting each
    word once per sentence) among the words seen in at least ``min_count`` sentences, strongest first."""
    pos: Counter[str] = Counter()
    neg: Counter[str] = Counter()
    for i in data["train"]:
        (pos if data["y"][i] == 1 else neg).update(set(data["tokens"][i]))
    scored = {w: abs(np.log((pos[w] + 1) / (neg[w] + 1))) for w in pos | neg if pos[w] + neg[w] >= min_count}
    return sorted(scored, key=lambda word: scored[word], reverse=True)[:top]
