"""Metrics on NumPy arrays: token and sequence accuracy, accuracy by length, per-class reports, BLEU."""

from __future__ import annotations

import numpy as np


def token_accuracy(pred: np.ndarray, target: np.ndarray, pad: int = 0) -> float:
    """Share of non-pad target positions predicted right. pred, target (n, T)."""
    keep = target != pad
    return float(((pred == target) & keep).sum() / keep.sum())


def per_example_accuracy(pred: np.ndarray, target: np.ndarray, pad: int = 0) -> np.ndarray:
    """Token accuracy of each example (n,), counting only its non-pad target positions."""
    keep = target != pad
    return ((pred == target) & keep).sum(axis=1) / np.maximum(keep.sum(axis=1), 1)


def sequence_accuracy(pred: np.ndarray, target: np.ndarray, pad: int = 0) -> float:
    """Share of examples whose every non-pad target position is right."""
    keep = target != pad
    return float((((pred == target) | ~keep).all(axis=1)).mean())


def accuracy_by_length(pred: np.ndarray, target: np.ndarray, lengths: np.ndarray, pad: int = 0) -> dict[int, float]:
    """Mean per-example token accuracy for each source length: {length: accuracy}."""
    acc = per_example_accuracy(pred, target, pad)
    return {int(n): float(acc[lengths == n].mean()) for n in np.unique(lengths)}


def classification_report(y_true, y_pred, labels=None, target_names=None) -> str:
    """scikit-learn's per-class precision, recall, F1 and support, as text."""
    from sklearn.metrics import classification_report as report

    return report(y_true, y_pred, labels=labels, target_names=target_names, zero_division=0, digits=3)


def bleu(hypotheses: list[str], references: list[str]) -> float:
    """Corpus BLEU (sacreBLEU, 0–100) of detokenised hypotheses against one reference each."""
    import sacrebleu

    return float(sacrebleu.corpus_bleu(hypotheses, [references]).score)
