"""Chapter 2's argument checks (``tau``, ``training``, ``noise_shape``), beside the generic ones of
:mod:`attention_course.core.validate`, which this module re-exports: the chapter's code says ``validate.…`` for
both."""

from __future__ import annotations

import numbers

from attention_course.core.errors import ShapeError
from attention_course.core.validate import *  # noqa: F403  (the generic checks)
from attention_course.core.validate import examples, positive, sizes, targets


def training(x, y, logits_shape, **counts) -> None:
    """A training run: x (n, S) and y (n, T) with as many examples, y class ids for logits of
    ``logits_shape`` (·, T, classes), and ``counts`` (steps, batch_size, …) whole numbers >= 1."""
    examples((x,), y)
    targets(y, logits_shape)
    sizes(**counts)


def noise_shape(shape) -> tuple:
    """The shape of a noise tensor: sizes >= 0 (a tuple, or one number for a vector); a size only known when a
    traced graph runs passes as it is."""
    dims = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if any(isinstance(n, (bool, float)) or (isinstance(n, numbers.Integral) and int(n) < 0) for n in dims):
        raise ShapeError(f"a noise shape is whole numbers >= 0, e.g. (batch, T); got {shape!r}")
    return dims


def tau(value) -> None:
    """The Gumbel-softmax temperature: a number > 0 (small tau gives nearly one-hot samples; 0 divides by zero)."""
    positive("tau", value, " (the Gumbel-softmax temperature: small tau gives nearly one-hot samples, tau = 0 "
                           "divides by zero)")
