"""Chapter 9, is attention an explanation? Jain & Wallace's two tests on the fine-tuned classifier: permuting the [CLS]
row of the last layer's attention, and attention against gradients. Importing this module loads no framework."""

from __future__ import annotations

from types import ModuleType

import numpy as np

from attention_course.ch09_bert.heads import run_inference
from attention_course.ch09_bert.pretraining import softmax
from attention_course.core.backend import to_numpy

__all__ = ["classify", "permutation_test", "total_variation", "attention_and_gradients"]


CHUNK = 128     # sentences per forward pass in these tests: small batches keep the memory down


def classify(fw: ModuleType, model, ids, mask) -> tuple[np.ndarray, np.ndarray]:
    """``model`` (a ``SentenceClassifier``) in eval mode on ids and mask (B, T): the class probabilities (B, classes)
    and the last layer's attention from [CLS] (B, h, T), as NumPy arrays."""
    probs, rows = [], []
    for start in range(0, len(ids), CHUNK):
        chunk = slice(start, start + CHUNK)
        logits, attention = run_inference(fw, model, ids[chunk], mask[chunk], return_weights=True)
        probs.append(softmax(to_numpy(logits)))
        rows.append(to_numpy(attention[-1])[:, :, 0, :])
    return np.concatenate(probs), np.concatenate(rows)


def total_variation(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Half the L1 distance between distributions along the last axis: 0 when equal, 1 when disjoint."""
    return 0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum(-1)


def permutation_test(fw: ModuleType, model, ids, mask, permutations: int = 20, seed: int = 0):
    """Jain & Wallace's permutation test on the last layer's [CLS] attention: for each sentence, shuffle that row's
    weights over its real tokens (the same shuffle in every head), ``permutations`` times, and measure how far the
    output distribution moves (total variation distance). A DataFrame with one row per sentence: the median and
    largest distance, the share of shuffles that change the predicted class, and the largest attention weight
    (averaged over heads) the sentence's [CLS] puts on one token."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    probs, own = classify(fw, model, ids, mask)                                       # (B, classes), (B, h, T)
    n = np.asarray(mask).sum(1)
    shuffled = np.repeat(own, permutations, axis=0)                                   # (B · P, h, T)
    for k, real in enumerate(np.repeat(n, permutations)):
        row = shuffled[k]                                                             # (h, T), a view
        row[:, :real] = row[:, rng.permutation(real)]
    rows = np.repeat(np.arange(len(ids)), permutations)
    logits = np.concatenate([fw.logits_with_cls_attention(model, ids[rows[i:i + CHUNK]], mask[rows[i:i + CHUNK]],
                                                          shuffled[i:i + CHUNK]) for i in range(0, len(rows), CHUNK)])
    moved = total_variation(softmax(logits), probs[rows]).reshape(len(ids), permutations)
    flipped = (softmax(logits).argmax(-1) != probs[rows].argmax(-1)).reshape(len(ids), permutations)
    return pd.DataFrame({"median distance": np.median(moved, 1), "largest distance": moved.max(1),
                         "flips": flipped.mean(1), "largest weight": own.mean(1).max(-1), "tokens": n})


def attention_and_gradients(fw: ModuleType, model, ids, mask):
    """Per sentence, Kendall's τ between two rankings of its word pieces ([CLS] and [SEP] left out): by the last
    layer's [CLS] attention (averaged over heads) and by the gradient of the predicted logit with respect to each
    piece's input vector (``token_gradients``). A DataFrame: τ and the number of pieces ranked."""
    import pandas as pd
    from scipy.stats import kendalltau

    _, own = classify(fw, model, ids, mask)
    attention = own.mean(1)                                                          # (B, T)
    gradients = np.concatenate([fw.token_gradients(model, ids[i:i + CHUNK], mask[i:i + CHUNK])
                                for i in range(0, len(ids), CHUNK)])                  # (B, T)
    rows = []
    for a, g, n in zip(attention, gradients, np.asarray(mask).sum(1), strict=True):
        words = slice(1, n - 1)                                                       # between [CLS] and [SEP]
        rows.append({"tau": float(kendalltau(a[words], g[words]).statistic), "pieces": int(n - 2)})
    return pd.DataFrame(rows)
