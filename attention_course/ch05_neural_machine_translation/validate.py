"""Chapter 5's argument checks (``term_shapes``, ``agreement_shapes``, ``reverse_pair``), beside the generic ones of
:mod:`attention_course.core.validate`, which this module re-exports: the chapter's code says ``validate.…`` for
both."""

from __future__ import annotations

from attention_course.core.errors import ConfigError, ShapeError
from attention_course.core.validate import *  # noqa: F403  (the generic checks)
from attention_course.core.validate import shape_of


def term_shapes(alphas, src_mask, tgt_mask) -> None:
    """A training term's inputs: weights (B, T, S), the source mask (B, S) and the target mask (B, T)."""
    a, s, t = shape_of(alphas), shape_of(src_mask), shape_of(tgt_mask)
    if len(a) != 3 or s != (a[0], a[2]) or t != (a[0], a[1]):
        raise ShapeError(f"attention weights (B, T, S) = {a} need a source mask (B, S) and a target mask (B, T); "
                         f"got src_mask {s} and tgt_mask {t}")


def reverse_pair(reverse, reverse_data, agreement_weight: float) -> None:
    """The agreement term needs both the Y→X model and the reversed pairs; either alone is a mistake."""
    if (reverse is None) != (reverse_data is None):
        raise ConfigError("reverse (the Y→X model) and reverse_data (the same pairs, reversed) go together: give "
                          "both or neither")
    if agreement_weight and reverse is None:
        raise ConfigError(f"agreement_weight={agreement_weight} needs the Y→X model to agree with: pass reverse "
                          "and reverse_data (reversed_arrays of the training pairs)")


def agreement_shapes(a_xy, a_yx, tgt_mask) -> None:
    """The agreement term's inputs: the X→Y weights (B, T, S), the Y→X ones (B, S, T), the target mask (B, T)."""
    a, r, t = shape_of(a_xy), shape_of(a_yx), shape_of(tgt_mask)
    if len(a) != 3 or r != (a[0], a[2], a[1]) or t != (a[0], a[1]):
        raise ShapeError(f"the X→Y weights (B, T, S) = {a} need Y→X weights (B, S, T) on the same pairs and a target "
                         f"mask (B, T); got {r} and {t}")
