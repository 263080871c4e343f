"""Chapter 8's argument checks (``within_context``), beside the generic ones of
:mod:`attention_course.core.validate`, which this module re-exports: the chapter's code says ``validate.…`` for
both."""

from __future__ import annotations

from attention_course.core.errors import ShapeError
from attention_course.core.validate import *  # noqa: F403  (the generic checks)


def within_context(length, context: int) -> None:
    """A language model reads at most ``context`` tokens: the cached ones and the new ones together."""
    if length is not None and length > context:
        raise ShapeError(f"LanguageModel reads at most context={context} tokens, but got {length} (the cached tokens "
                         f"and the input together): keep the last {context}, or build the model with a larger context")
