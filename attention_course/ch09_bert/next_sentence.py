"""Chapter 9, next-sentence prediction (and ALBERT's sentence order): sentence pairs from the pretraining texts, and
the word-overlap baseline. Importing this module loads no framework."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from attention_course.ch09_bert.pretraining import CLS, SEP, pretraining_texts

__all__ = ["NSP", "sentences", "SentencePairs", "encode_pairs", "next_sentence_data", "overlap_baseline"]


#: Next-sentence prediction, as a task on its own over the pretrained encoder (both profiles): sentence pairs for
#: training and for testing (half of them real successors), their length in pieces, and the training (as
#: ``FINETUNE``).
NSP: dict[str, Any] = {"train": 10000, "test": 1000, "max_len": 64, "epochs": 2, "batch_size": 32, "lr": 1e-3,
                       "warmup": 0.1}

_SPEAKER = re.compile(r"^[A-Z][A-Za-z ]*:\s*")        # a Shakespeare speech starts with its speaker's name
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")


def sentences(text: str) -> list[str]:
    """A paragraph or speech cut into sentences: after ``.``, ``!`` or ``?`` and before a capital letter or a
    quotation mark (the speaker's name of a speech left out)."""
    return [s for s in _SENTENCE_END.split(_SPEAKER.sub("", text)) if s]


@dataclass
class SentencePairs:
    """Sentence pairs as BERT reads them, ``[CLS] A [SEP] B [SEP]``: ids, mask and segments (N, T), ``y`` 1 where B
    follows A in the text and 0 where it does not, and A's and B's texts."""

    ids: np.ndarray
    mask: np.ndarray
    segments: np.ndarray
    y: np.ndarray
    first: list[str]
    second: list[str]

    @property
    def inputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What a ``SentenceClassifier`` takes: ids, mask, segments."""
        return self.ids, self.mask, self.segments


def encode_pairs(tokenizer, first: list[str], second: list[str], y, max_len: int) -> SentencePairs:
    """``[CLS] A [SEP] B [SEP]`` for each pair, B's pieces and its [SEP] in segment 1; a pair longer than ``max_len``
    pieces loses pieces from the end of the longer of A and B, one at a time, as BERT's fine-tuning code does
    (``_truncate_seq_pair``; its pre-training data cuts the front or the end at random). (The
    cut is made here: the tokenizer's own truncation keeps every cut-off piece as an extra encoding, 170 MB for ten
    thousand pairs that the kernel does not give back.)"""
    tokenizer.no_padding()
    tokenizer.no_truncation()
    rows = []
    for a, b in zip(tokenizer.encode_batch(list(first), add_special_tokens=False),
                    tokenizer.encode_batch(list(second), add_special_tokens=False), strict=True):
        a, b = list(a.ids), list(b.ids)
        while len(a) + len(b) > max_len - 3:
            (a if len(a) > len(b) else b).pop()
        rows.append(([CLS, *a, SEP], [*b, SEP]))
    width = max(len(a) + len(b) for a, b in rows)
    ids, segments = np.zeros((len(rows), width), np.int64), np.zeros((len(rows), width), np.int64)
    mask = np.zeros((len(rows), width), bool)
    for i, (a, b) in enumerate(rows):
        n = len(a) + len(b)
        ids[i, :n], segments[i, len(a):n], mask[i, :n] = a + b, 1, True
    return SentencePairs(ids, mask, segments, np.asarray(y, np.int64), list(first), list(second))


def next_sentence_data(tokenizer, sizes: dict[str, Any], texts: list[str] | None = None,
                       seed: int = 0) -> dict[str, SentencePairs]:
    """BERT's next-sentence task on ``texts`` (default ``pretraining_texts()``, a document per string): each example
    takes a sentence A and, for half of the examples, the sentence after it (y = 1), else a sentence drawn at random
    from any document of its side of the split, never the one after A (y = 0). The documents are split at random, a
    tenth of them for the test. Returns ``train``, ``test`` and ``swapped``: the test's real pairs, and the same
    pairs in the wrong order (B then A) as the negatives, the sentence-order task ALBERT put in NSP's place."""
    rng = np.random.default_rng(seed)
    texts = pretraining_texts() if texts is None else texts
    documents = [s for s in (sentences(t) for t in texts) if len(s) > 1]
    held_out = rng.random(len(documents)) < 0.1

    def pairs(docs: list[list[str]], count: int):
        pool = [s for d in docs for s in d]                                          # every sentence, for negatives
        where = [(d, i) for d, doc in enumerate(docs) for i in range(len(doc) - 1)]
        if count > len(where):
            raise ValueError(f"asked for {count:,} sentence pairs, but the documents hold {len(where):,}")
        pick = rng.choice(len(where), size=count, replace=False)
        first = [docs[where[k][0]][where[k][1]] for k in pick]
        real = [docs[where[k][0]][where[k][1] + 1] for k in pick]
        y = rng.permutation(count) < count // 2                                        # half of them real
        second = [b if keep else _other(pool, b, rng) for b, keep in zip(real, y, strict=True)]
        return first, real, second, y

    train_docs = [d for d, out in zip(documents, held_out, strict=True) if not out]
    test_docs = [d for d, out in zip(documents, held_out, strict=True) if out]
    first, _, second, y = pairs(train_docs, sizes["train"])
    train = encode_pairs(tokenizer, first, second, y, sizes["max_len"])
    first, real, second, y = pairs(test_docs, sizes["test"])
    test = encode_pairs(tokenizer, first, second, y, sizes["max_len"])
    order = [(a, b) if keep else (b, a) for a, b, keep in zip(first, real, y, strict=True)]
    swapped = encode_pairs(tokenizer, [a for a, _ in order], [b for _, b in order], y, sizes["max_len"])
    return {"train": train, "test": test, "swapped": swapped}


def _other(pool: list[str], sentence: str, rng) -> str:
    """A sentence of ``pool`` drawn at random, other than ``sentence``."""
    while (drawn := pool[rng.integers(len(pool))]) == sentence:
        pass
    return drawn


def overlap_baseline(pairs: dict[str, SentencePairs]) -> dict[str, float]:
    """A model of the next-sentence task that sees only the words A and B share: the cosine between their TF-IDF
    vectors (the weights learned on the training pairs), through a logistic regression fitted on the training
    pairs. The cosine does not change when A and B swap places, so the model is blind to order. Returns its
    accuracy on each set of ``pairs`` (``next_sentence_data``)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    train = pairs["train"]
    tfidf = TfidfVectorizer().fit(train.first + train.second)

    def cosine(p: SentencePairs) -> np.ndarray:                                   # (N, 1); rows have unit norm
        return np.asarray(tfidf.transform(p.first).multiply(tfidf.transform(p.second)).sum(1))

    model = LogisticRegression().fit(cosine(train), train.y)
    return {name: float(model.score(cosine(p), p.y)) for name, p in pairs.items()}
