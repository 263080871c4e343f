"""Chapter 9's argument checks (``pretrained_weights``, ``wraps``, ``cls_attention``), beside the generic ones of
:mod:`attention_course.core.validate`, which this module re-exports: the chapter's code says ``validate.…`` for
both."""

from __future__ import annotations

import numpy as np

from attention_course.core.errors import ConfigError, InputError
from attention_course.core.validate import *  # noqa: F403  (the generic checks)


def pretrained_weights(weights, kind) -> None:
    """``load_pretrained`` takes the weights ``read_bert`` returns (or ``export_bert``), not a folder name."""
    if not isinstance(weights, kind):
        got = repr(weights) if isinstance(weights, str | bytes) or weights is None else type(weights).__name__
        raise InputError(f"load_pretrained takes a PretrainedBert, the weights read by "
                         f"pretrained.read_bert(folder) or written by export_bert(model); got {got}")


def wraps(who: str, model, kind, hint: str) -> None:
    """``model`` is the ``kind`` that ``who`` works on (a classifier is built on a ``Bert``, the explanation tests
    read a ``SentenceClassifier``); ``hint`` says what to pass instead."""
    if kind.__name__ not in {c.__name__ for c in type(model).__mro__}:    # a chapter cell's own class counts too
        raise ConfigError(f"{who} needs a {kind.__name__}; got {type(model).__name__}: {hint}")


def cls_attention(attention, mask) -> np.ndarray:
    """[CLS]'s replacement weights (B, h, T) as float32: finite, non-negative, summing to 1 over the T tokens, and 0
    on the padding that ``mask`` (B, T) hides, as the model's own weights are; a permutation of real tokens'
    weights keeps all of this."""
    a = np.asarray(attention, np.float32)
    rule = ("attention must hold, for each sentence and head, weights over the T tokens: finite, >= 0, summing to "
            "1, and 0 where mask hides a pad (permute the weights of real tokens only)")
    if not np.isfinite(a).all():
        raise InputError(f"{rule}; got {int((~np.isfinite(a)).sum())} NaN or infinite values")
    if (a < 0).any():
        raise InputError(f"{rule}; got values down to {float(a.min()):.3g}")
    sums = a.sum(-1)
    if not np.allclose(sums, 1, atol=1e-3):
        raise InputError(f"{rule}; got sums from {float(sums.min()):.4g} to {float(sums.max()):.4g}")
    hidden = ~np.asarray(mask, bool)[:, None, :]                                     # (B, 1, T)
    if (np.where(hidden, a, 0) > 1e-6).any():
        raise InputError(f"{rule}; got up to {float(np.where(hidden, a, 0).max()):.3g} on a pad")
    return a
