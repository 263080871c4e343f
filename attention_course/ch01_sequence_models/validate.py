"""Chapter 1's argument checks (``softmax_shapes``), beside the generic ones of
:mod:`attention_course.core.validate`, which this module re-exports: the chapter's code says ``validate.…`` for
both."""

from __future__ import annotations

from attention_course.core.errors import ShapeError
from attention_course.core.validate import *  # noqa: F403  (the generic checks)


def softmax_shapes(scores, mask) -> None:
    """masked_softmax: scores (B, T_q, T_k), mask (B, T_k) or broadcastable to (B, T_q, T_k)."""
    if mask is None:
        return
    if len(scores) != 3:
        raise ShapeError(f"masked_softmax expects scores (batch, T_q, T_k) with a mask; got scores {scores}")
    b, t_q, t_k = scores
    if len(mask) == 2:
        ok = all(None in (m, s) or m == s for m, s in zip(mask, (b, t_k), strict=True))   # None: unknown
        hint = f"a 2-D key mask must be (batch, T_k) = {(b, t_k)}"
    else:
        ok = len(mask) == 3 and all(None in (m, s) or m in (1, s) for m, s in zip(mask, scores, strict=True))
        hint = f"a mask must be (batch, T_k) = {(b, t_k)} or broadcast to (batch, T_q, T_k) = {scores}"
    if not ok:
        raise ShapeError(f"mask of shape {mask} does not fit scores {scores}: {hint}")
