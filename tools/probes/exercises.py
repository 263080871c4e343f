"""Bad input to the exercise checkers (:mod:`attention_course.exercises`): bad arguments of the checker itself, and
a learner's function that raises or never returns. Each is probed on every checker."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager

from . import Probe

# every checker, with the name of the first input its learner's function gets
CHECKERS = {
    "attention_average": "query", "masked_softmax": "scores", "gumbel_softmax_sample": "logits",
    "local_p_weights": "scores", "attention_pooling": "states", "timestep_attention": "x",
    "scaled_dot_attention": "query", "general_score": "query", "concat_score": "query", "additive_score": "query",
}


@contextmanager
def check_timeout(value: str):
    """``COURSE_CHECK_TIMEOUT=value`` for the duration of the block."""
    saved = os.environ.get("COURSE_CHECK_TIMEOUT")
    os.environ["COURSE_CHECK_TIMEOUT"] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("COURSE_CHECK_TIMEOUT", None)
        else:
            os.environ["COURSE_CHECK_TIMEOUT"] = saved


def must_not_run(*args, **kwargs):
    raise AssertionError("the learner's function ran although the checker's arguments are bad")


def zero_trials(name):
    def run(fw):
        from attention_course import exercises

        getattr(exercises, name)(must_not_run, trials=0)
    return run


def learner_raises(name):
    def run(fw):
        from attention_course import exercises

        def broken(*args, **kwargs):
            return {}["oops"]

        try:
            getattr(exercises, name)(broken, seed=0)
        except exercises.ExerciseError as err:
            assert f"your function raised KeyError: 'oops'\n  on {CHECKERS[name]} (" in str(err), str(err)
            raise
    return run


def learner_hangs(name):
    def run(fw):
        from attention_course import exercises

        release = threading.Event()
        try:
            with check_timeout("0.3"):
                getattr(exercises, name)(lambda *a, **k: release.wait(60), seed=0)
        except exercises.ExerciseError as err:
            assert f"did not return within 0.3 s on {CHECKERS[name]} (" in str(err), str(err)
            raise
        finally:
            release.set()
    return run


def negative_trials(fw):
    from attention_course import exercises

    exercises.masked_softmax(must_not_run, trials=-5)


def not_a_function(fw):
    from attention_course import exercises

    exercises.attention_average(None)


def negative_seed(fw):
    from attention_course import exercises

    exercises.general_score(must_not_run, seed=-1)


def bad_timeout_variable(fw):
    from attention_course import exercises

    with check_timeout("abc"):
        exercises.attention_average(must_not_run, seed=0)


def exercise_stub(fw):
    """The student copy's stub: its NotImplementedError reaches the notebook unchanged (handled)."""
    from attention_course import exercises

    def stub(*args, **kwargs):
        raise NotImplementedError("Exercise: write your solution here")

    try:
        exercises.scaled_dot_attention(stub, seed=0)
    except NotImplementedError as err:
        assert "Exercise: write your solution here" in str(err)
        return
    raise AssertionError("the stub's NotImplementedError did not reach the caller")


PROBES = [
    *(Probe("exercises", f"{name}(trials=0)", zero_trials(name), False) for name in CHECKERS),
    *(Probe("exercises", f"{name}: learner's function raises", learner_raises(name), False) for name in CHECKERS),
    *(Probe("exercises", f"{name}: learner's function hangs", learner_hangs(name), False) for name in CHECKERS),
    Probe("exercises", "masked_softmax(trials=-5)", negative_trials, False),
    Probe("exercises", "attention_average(None)", not_a_function, False),
    Probe("exercises", "general_score(seed=-1)", negative_seed, False),
    Probe("exercises", "COURSE_CHECK_TIMEOUT=abc", bad_timeout_variable, False),
    Probe("exercises", "exercise stub (NotImplementedError)", exercise_stub, False),
]
