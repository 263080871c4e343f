"""Chapter 4's argument checks (``score_shapes``, ``no_score``), beside the generic ones of
:mod:`attention_course.core.validate`, which this module re-exports: the chapter's code says ``validate.…`` for
both."""

from __future__ import annotations

from attention_course.core.errors import ConfigError, ShapeError
from attention_course.core.validate import *  # noqa: F403  (the generic checks)
from attention_course.core.validate import attention_shapes, shape_of


def score_shapes(score, query, key, value=None, mask=None) -> None:
    """Shape errors for a score layer (either framework). Dot scores need d_q == d_k; learned scores
    (``score.d_query``/``score.d_key`` set) accept any pair of sizes, but only the ones they were built for."""
    learned = getattr(score, "d_query", None) is not None
    attention_shapes(query, key, key if value is None else value, mask, same_d=not learned)
    q, k = shape_of(query), shape_of(key)
    if learned and (q[-1] != score.d_query or k[-1] != score.d_key):
        raise ShapeError(f"{type(score).__name__} was built for d_query={score.d_query} and d_key={score.d_key}, "
                         f"but got query {q} (d_q={q[-1]}) and key {k} (d_k={k[-1]})")


def no_score(name: str, method: str) -> ConfigError:
    """The error of a score that computes nothing: the base class itself, or a subclass without ``method``."""
    return ConfigError(f"{name} has no score to compute: ScoreFunction is the base of the score functions; a new "
                       f"score subclasses it and defines {method}(query, key) → scores (B, T_q, T_k), as DotScore "
                       "does, or make_score(name) builds one of SCORES")
