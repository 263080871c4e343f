"""Metrics on NumPy arrays: token accuracy (overall and per example), attention entropy, the NER reports of
Chapter 3."""

from __future__ import annotations

import numpy as np

from attention_course.core import validate
from attention_course.core.errors import InputError


def _kept(pred, target, pad) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """pred and target as arrays of one shape, and where the target is not ``pad`` (None: everywhere)."""
    pred, target = np.asarray(pred), np.asarray(target)
    validate.same_shape("pred", pred.shape, target.shape, "target")
    return pred, target, (target != pad) if pad is not None else np.ones(target.shape, bool)


def token_accuracy(pred: np.ndarray, target: np.ndarray, pad: int | None = 0) -> float:
    """Share of non-pad target positions predicted right. pred, target (n, T) (or (n,)); ``pad=None`` counts
    every position. No position left to count is an error, not NaN."""
    pred, target, keep = _kept(pred, target, pad)
    validate.counted(int(keep.sum()), pad)
    return float(((pred == target) & keep).sum() / keep.sum())


def per_example_accuracy(pred: np.ndarray, target: np.ndarray, pad: int | None = 0) -> np.ndarray:
    """Token accuracy of each example (n,), counting only its non-pad target positions (Chapters 1 and 4 plot
    it against the source length). Every example needs a position to count."""
    pred, target, keep = _kept(pred, target, pad)
    counts = keep.reshape(len(keep), -1).sum(axis=1)
    if (counts == 0).any():
        rows = np.flatnonzero(counts == 0)
        raise InputError(f"accuracy of no targets: example(s) {rows[:5].tolist()} have every target equal to the "
                         f"pad id {pad}, so there is nothing to count")
    return ((pred == target) & keep).reshape(len(keep), -1).sum(axis=1) / counts


def mean_entropy(dist: np.ndarray) -> float:
    """The mean entropy (nats) of attention distributions over the last axis; rows that sum to less than 1
    (local-p's window weights) are renormalised first."""
    p = dist / np.maximum(dist.sum(-1, keepdims=True), 1e-12)       # local-p rows sum to < 1: renormalise
    return float(-(p * np.log(np.where(p > 0, p, 1.0))).sum(-1).mean())

# ---- Chapter 3: NER reports by entity type, the padding that inflates them, attention mass on pads ----------

ENTITY_TYPES = ("geo", "gpe", "per", "org", "tim", "art", "nat", "eve")


def merge_entity_tag(tag: str) -> str:
    """The entity type of a BIO tag: ``"B-geo"`` and ``"I-geo"`` → ``"geo"``; ``"O"`` stays ``"O"``."""
    if tag == "O":
        return "O"
    prefix, sep, kind = tag.partition("-")
    if not sep or prefix not in ("B", "I") or not kind:
        raise ValueError(f"not a BIO tag: {tag!r} (expected 'O', 'B-<type>' or 'I-<type>')")
    return kind


def token_report(true_tags, pred_tags, labels=ENTITY_TYPES + ("O",)):
    """Token-level per-class precision, recall, F1 and support, BIO tags merged by entity type (the way a
    flat ``classification_report`` over all tokens reports NER). ``true_tags``/``pred_tags``: flat sequences
    of tag strings (BIO or already merged). Returns a DataFrame: one row per label, then the micro (with ``O``
    among the labels: the token accuracy), macro and support-weighted averages, and the micro average over the
    entity types alone (``O`` left out)."""
    import pandas as pd
    from sklearn.metrics import precision_recall_fscore_support

    t = [merge_entity_tag(x) if "-" in x else x for x in true_tags]
    p = [merge_entity_tag(x) if "-" in x else x for x in pred_tags]
    labels = list(labels)
    prec, rec, f1, sup = precision_recall_fscore_support(t, p, labels=labels, zero_division=0)
    df = pd.DataFrame({"precision": prec, "recall": rec, "f1": f1, "support": sup}, index=labels)
    for avg in ("micro", "macro", "weighted"):
        pr, rc, f, _ = precision_recall_fscore_support(t, p, labels=labels, average=avg, zero_division=0)
        df.loc[f"{avg} avg"] = [pr, rc, f, int(sup.sum())]
    entities = [x for x in labels if x != "O"]                    # micro over the entity types only
    pr, rc, f, _ = precision_recall_fscore_support(t, p, labels=entities, average="micro", zero_division=0)
    df.loc["entity micro avg"] = [pr, rc, f, int(df.loc[entities, "support"].sum())]
    df["support"] = df["support"].astype(int)
    return df


def entity_report(true_seqs, pred_seqs):
    """Entity-level precision, recall, F1 and support per entity type (seqeval, CoNLL rules: an entity is
    right only when its type and both of its boundaries are). ``true_seqs``/``pred_seqs``: lists of BIO tag
    lists, one per sentence, without padding. Returns a DataFrame like :func:`token_report`."""
    import pandas as pd
    from seqeval.metrics import classification_report as report

    rep = report(list(map(list, true_seqs)), list(map(list, pred_seqs)), output_dict=True, zero_division=0)
    rows = {k: v for k, v in rep.items() if k in ENTITY_TYPES}
    df = pd.DataFrame(rows).T.reindex([k for k in ENTITY_TYPES if k in rows])
    for avg in ("micro avg", "macro avg", "weighted avg"):
        if avg in rep:
            df.loc[avg] = pd.Series(rep[avg])
    df = df.rename(columns={"f1-score": "f1"})[["precision", "recall", "f1", "support"]]
    df["support"] = df["support"].astype(int)
    return df


def padding_inflation(lengths, n_o: int, max_len: int) -> dict[str, int]:
    """How padding inflates the ``O`` row of a token report: with every sentence padded to ``max_len`` and the
    pads labelled ``O`` (as a padded label array usually is), a report over all positions counts
    ``pads + n_o`` "O tokens". ``lengths``: the sentence lengths; ``n_o``: the real ``O`` tokens among them."""
    import numpy as np

    lengths = np.asarray(lengths)
    if (lengths > max_len).any():
        raise ValueError(f"a sentence of length {int(lengths.max())} does not fit max_len={max_len}")
    positions = int(len(lengths) * max_len)
    pads = positions - int(lengths.sum())
    return {"sentences": int(len(lengths)), "tokens": int(lengths.sum()), "real_O": int(n_o), "pads": pads,
            "positions": positions, "O_with_pads": pads + int(n_o)}


def passed_fraction(embeddings, weights) -> np.ndarray:
    """How much of each token's embedding an attention block lets through, ||a_t ∘ e_t|| / ||e_t||: embeddings
    (B, T, d); weights (B, T) (timestep-wise) or (B, T, d) (feature-wise) → (B, T)."""
    embeddings, weights = np.asarray(embeddings), np.asarray(weights)
    w = weights[..., None] if weights.ndim == 2 else weights
    return np.linalg.norm(embeddings * w, axis=-1) / np.linalg.norm(embeddings, axis=-1)


def pad_mass(weights, mask) -> np.ndarray:
    """The attention mass each example puts on its pads: weights (n, T), mask (n, T) True on real tokens →
    (n,), the sum of the weights where the mask is False."""
    weights, mask = np.asarray(weights), np.asarray(mask, dtype=bool)
    if weights.shape != mask.shape:
        raise ValueError(f"weights {weights.shape} and mask {mask.shape} must have the same shape (n, T)")
    return (weights * ~mask).sum(axis=1)


def focus_ratio(weights, ids, mask, word_ids) -> float:
    """How much more attention a set of words gets than the other real tokens: the mean weight on the tokens
    whose id is in ``word_ids`` divided by the mean weight on the other real tokens. weights, ids, mask (n, T),
    mask True on real tokens."""
    weights, ids, mask = np.asarray(weights), np.asarray(ids), np.asarray(mask, dtype=bool)
    if not weights.shape == ids.shape == mask.shape:
        raise ValueError(f"weights {weights.shape}, ids {ids.shape} and mask {mask.shape} must have one shape (n, T)")
    hit = np.isin(ids, list(word_ids))
    return float(weights[hit & mask].mean() / weights[~hit & mask].mean())
