"""Bad input to the exercise checkers: bad arguments are refused, a learner's function that raises or hangs
gets a clear message naming the inputs, in every checker."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from attention_course import exercises
from attention_course.core import grading as _run
from attention_course.core.errors import ConfigError, CourseError, EnvError

# every checker, with the name of the first input its learner's function gets
CHECKERS = {
    "attention_average": "query", "masked_softmax": "scores", "gumbel_softmax_sample": "logits",
    "local_p_weights": "scores", "attention_pooling": "states", "timestep_attention": "x", "feature_attention": "x",
    "paired_comparison": "a",
    "scaled_dot_attention": "query", "general_score": "query", "concat_score": "query", "additive_score": "query",
    "beam_step": "log_probs", "bahdanau_attention": "s_prev", "visual_attention": "h_prev", "correctness": "alpha",
    "heads": "x", "causal": "t_q", "rotary": "x", "multi_head": "x", "decoder_masks": "src_mask", "warmup": "step",
    "mlm_mask": "ids", "attention_entropy": "weights", "draw_filters": "gx",
    "online_softmax": "blocks", "grouped_heads": "kv", "window_cache": "cache", "linear_step": "state",
    "pointer_distribution": "encoded", "convolutional_scores": "query", "multi_source_attention": "query",
    "hierarchical_pooling": "states",
    "copy_distribution": "logits", "monotonic_alignment": "p",
}
#: How the first input is described when it is a number or a vector, not a batch.
NUMBER_FIRST = {"causal": r"t_q \d+, t_k \d+", "warmup": r"step \d+, d_model \d+",
                "draw_filters": r"gx [\d.]+, gy [\d.]+", "paired_comparison": r"a \(\d+,\), b \(\d+,\)"}


def checker(name):
    return getattr(exercises, name)


def test_every_checker_is_listed():
    listed = {n for n in exercises.__all__ if not n.startswith(("reference_", "score_params", "window_positions"))}
    assert listed - {"ExerciseError"} == set(CHECKERS)


@pytest.mark.parametrize("trials", [0, -3, 2.5, True, "5", None])
@pytest.mark.parametrize("name", CHECKERS)
def test_trials_must_be_positive(name, trials):
    def must_not_run(*args, **kwargs):
        raise AssertionError("the learner's function must not run")

    with pytest.raises(ConfigError, match=rf"trials must be a positive integer.*got {trials!r}"):
        checker(name)(must_not_run, trials=trials)


@pytest.mark.parametrize("name", CHECKERS)
def test_bad_function_and_seed(name):
    with pytest.raises(ConfigError, match="pass your function itself"):
        checker(name)(None)
    with pytest.raises(ConfigError, match="seed must be None or an integer >= 0; got -1"):
        checker(name)(lambda *a, **k: None, seed=-1)


@pytest.mark.parametrize("name", CHECKERS)
def test_a_raising_function_gets_the_shapes(name):
    def broken(*args, **kwargs):
        return {}["oops"]

    described = NUMBER_FIRST.get(name, rf"{CHECKERS[name]} \(\d+, \d+")
    raised = rf"your function raised KeyError: 'oops'\n  on {described}"
    with pytest.raises(exercises.ExerciseError, match=raised) as info:
        checker(name)(broken, seed=0)
    assert isinstance(info.value.__cause__, KeyError)


@pytest.mark.parametrize("name", CHECKERS)
def test_the_exercise_stub_is_passed_on(name):
    """The student copy's stub raises NotImplementedError: it reaches the notebook as it is (the message is
    already clear, and ``assign.run_until_first_exercise`` looks for it)."""
    def stub(*args, **kwargs):
        raise NotImplementedError("Exercise: write your solution here")

    with pytest.raises(NotImplementedError, match="Exercise: write your solution here"):
        checker(name)(stub, seed=0)


@pytest.fixture
def hung():
    """A learner's function that never returns (until the test ends and releases it)."""
    release = threading.Event()

    def never_returns(*args, **kwargs):
        release.wait(30)

    yield never_returns
    release.set()


@pytest.mark.parametrize("name", CHECKERS)
def test_a_hung_function_is_reported(name, hung, monkeypatch):
    monkeypatch.setenv("COURSE_CHECK_TIMEOUT", "0.2")
    # the message proves the checker gave up while the function still ran (it only returns when released)
    described = NUMBER_FIRST.get(name, rf"{CHECKERS[name]} \(")
    with pytest.raises(exercises.ExerciseError, match=rf"did not return within 0.2 s on {described}") as info:
        checker(name)(hung, seed=0)
    assert "COURSE_CHECK_TIMEOUT" in str(info.value)


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan"])
def test_bad_check_timeout(value, monkeypatch):
    monkeypatch.setenv("COURSE_CHECK_TIMEOUT", value)
    with pytest.raises(EnvError, match=rf"COURSE_CHECK_TIMEOUT must be a positive number.*'{value}'"):
        exercises.attention_average(lambda q, k, v: (q, k), seed=0)


def test_exercise_error_is_both_a_course_error_and_an_assertion():
    assert issubclass(exercises.ExerciseError, CourseError) and issubclass(exercises.ExerciseError, AssertionError)


def test_call_keeps_numpy_error_settings_and_copies_arrays():
    x = np.ones(3)

    def learner(a):
        a[0] = 99.0                           # must not change the checker's input
        return np.array(1.0) / np.array(0.0)  # raises only under the caller's errstate

    with np.errstate(divide="raise"), pytest.raises(exercises.ExerciseError, match="FloatingPointError"):
        _run.call(learner, {"a": x})
    assert x[0] == 1.0
    with np.errstate(divide="ignore"):
        assert _run.call(learner, {"a": x}) == np.inf
    got = _run.describe({"q": x, "tau": 0.5, "b": 1 / 3, "hard": False, "rng": np.random.default_rng(0)})
    assert got == "q (3,), tau 0.5, b 0.3333, hard False, rng (a Generator)"
