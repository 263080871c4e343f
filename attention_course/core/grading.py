"""What every exercise checker shares: checking the checker's own arguments, and calling the learner's function
with a time limit, its errors turned into a message that names the inputs it got.

The time limit is ``COURSE_CHECK_TIMEOUT`` seconds per call (default 30). The learner's function runs in a
thread; a thread cannot be stopped from outside, so a function that never returns keeps running in the
background, but the checker stops waiting and says so.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable

import numpy as np

from attention_course.core.errors import (
    ConfigError,
    EnvError,
    ExerciseError,
)

TIMEOUT_VAR = "COURSE_CHECK_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0


def _is_int(value) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def start(fn, trials, seed) -> np.random.Generator:
    """Check the arguments every checker takes; return the random generator of its trials.

    Raises :class:`~attention_course.core.errors.ConfigError` when ``fn`` is not callable, ``trials`` is not a
    positive integer (0 trials would "pass" without checking anything) or ``seed`` is neither None nor an
    integer >= 0.
    """
    if not callable(fn):
        raise ConfigError(f"pass your function itself, e.g. check(my_function), not what it returns; got "
                          f"{type(fn).__name__} {str(fn)[:60]!r}")
    if not _is_int(trials) or trials < 1:
        raise ConfigError(f"trials must be a positive integer (how many random inputs to check on); got {trials!r}")
    if seed is not None and (not _is_int(seed) or seed < 0):
        raise ConfigError(f"seed must be None or an integer >= 0; got {seed!r}")
    return np.random.default_rng(seed)


def time_limit() -> float:
    """Seconds one call of the learner's function may take: ``$COURSE_CHECK_TIMEOUT``, default 30."""
    return EnvError.positive(TIMEOUT_VAR, DEFAULT_TIMEOUT_S, float, "the seconds one call of your function may take")


def describe(inputs: dict) -> str:
    """``"query (2, 3, 4), key (2, 5, 4), tau 0.5"``: arrays by their shape, numbers by their value."""
    def one(value) -> str:
        if hasattr(value, "shape"):
            return str(tuple(value.shape))
        if isinstance(value, float | np.floating):
            return f"{value:.4g}"
        if isinstance(value, bool | int | np.integer):
            return repr(value)
        return f"(a {type(value).__name__})"

    return ", ".join(f"{name} {one(value)}" for name, value in inputs.items())


def call(fn: Callable, inputs: dict, hint: str = "", **kwargs):
    """``fn(*inputs.values(), **kwargs)`` on copies of the arrays (the learner cannot change the checker's
    inputs), in a thread with the caller's NumPy error settings, waiting at most :func:`time_limit` seconds.

    Raises :class:`ExerciseError` naming the inputs' shapes when ``fn`` raises or does not return in time
    (``hint`` is appended to the message when it raises). A ``NotImplementedError`` (the exercise stub) is
    passed on unchanged: it already says what to do.
    """
    limit = time_limit()
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs.values()]
    settings, box = np.geterr(), {}

    def target():
        try:
            with np.errstate(**settings):
                box["value"] = fn(*args, **kwargs)
        except BaseException as err:
            box["error"] = err

    thread = threading.Thread(target=contextvars.copy_context().run, args=(target,), name="exercise-check",
                              daemon=True)
    thread.start()
    thread.join(limit)
    where = describe({**inputs, **kwargs})
    if thread.is_alive():
        raise ExerciseError(
            f"your function did not return within {limit:g} s on {where}. Is there a loop that never ends? "
            f"The check stopped waiting, but your function may still be running in the background (restart the "
            f"kernel if the notebook becomes slow). To allow more time, set the environment variable "
            f"{TIMEOUT_VAR} to a number of seconds.")
    err = box.get("error")
    if err is None:
        return box["value"]
    if isinstance(err, NotImplementedError) or not isinstance(err, Exception):
        raise err
    raise ExerciseError(f"your function raised {type(err).__name__}: {err}\n  on {where}.{hint}") from err


def softmax(x, axis: int = -1, *, mask=None) -> np.ndarray:
    """The reference softmax of every checker, in NumPy: over ``axis``; with ``mask`` (broadcastable to ``x``, True
    where an entry may be attended) the hidden entries get -inf first, so exactly 0."""
    x = np.asarray(x)
    if mask is not None:
        x = np.where(mask, x, -np.inf)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis: int = -1) -> np.ndarray:
    x = np.asarray(x)
    x = x - x.max(axis=axis, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))
