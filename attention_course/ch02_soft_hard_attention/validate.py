"""Chapter 2's argument checks (``training``), beside the generic ones of
:mod:`attention_course.core.validate`, which this module re-exports: the chapter's code says ``validate.…`` for
both."""

from __future__ import annotations

from attention_course.core.validate import *  # noqa: F403  (the generic checks)
from attention_course.core.validate import examples, sizes, targets


def training(x, y, logits_shape, **counts) -> None:
    """A training run: x (n, S) and y (n, T) with as many examples, y class ids for logits of
    ``logits_shape`` (·, T, classes), and ``counts`` (steps, batch_size, …) whole numbers >= 1."""
    examples((x,), y)
    targets(y, logits_shape)
    sizes(**counts)
