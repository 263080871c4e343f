"""Chapter 8's argument checks (``within_context``, ``same_steps``), beside Chapter 7's (``model_width``, …) and the
generic ones of :mod:`attention_course.core.validate`, which this module re-exports: the chapter's code says
``validate.…`` for all of them."""

from __future__ import annotations

from attention_course.ch07_self_attention.validate import *  # noqa: F403  (Chapter 7's and the generic checks)
from attention_course.core.errors import ShapeError


def within_context(length, context: int) -> None:
    """A language model reads at most ``context`` tokens: the cached ones and the new ones together."""
    if length is not None and length > context:
        raise ShapeError(f"LanguageModel reads at most context={context} tokens, but got {length} (the cached tokens "
                         f"and the input together): keep the last {context}, or build the model with a larger context")


def same_steps(cached: tuple, new: tuple) -> None:
    """A key–value cache grows along the steps only: this step's keys (B, h, T, d_head) must match the cached ones
    in batch, heads and d_head."""
    fits = len(new) == len(cached) and all(a == b or None in (a, b)              # unknown while tracing: passes
                                           for i, (a, b) in enumerate(zip(cached, new, strict=True)) if i != 2)
    if not fits:
        raise ShapeError(f"this step's keys {new} do not fit the KVCache's {cached} (batch, heads, steps, d_head): a "
                         "cache belongs to one batch and one layer; start a new KVCache() for another batch")


def within_capacity(length, steps, capacity) -> None:
    """A ``StaticKVCache`` holds at most ``capacity`` steps: the ``length`` already written and this call's ``steps``
    (a length unknown while tracing passes; the compiled step is given a cache large enough)."""
    if isinstance(length, int) and isinstance(steps, int) and isinstance(capacity, int) and length + steps > capacity:
        raise ShapeError(f"a StaticKVCache of capacity {capacity} holds {length} steps and cannot take {steps} more: "
                         f"make it larger with cache.grown(capacity), or start a new one")
