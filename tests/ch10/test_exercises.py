"""Chapter 10's exercise checkers pass a right answer and name each common mistake they claim to recognise."""

import numpy as np
import pytest

import attention_course as ac
from attention_course.core.errors import ExerciseError

pytestmark = pytest.mark.chapter(10)


@np.errstate(over="ignore")                  # the unshifted mistake overflows on purpose
def _online(blocks, rescale=True, last_max_only=False, shift=True):
    m = total = None
    for block in blocks:
        top = block.max(-1, keepdims=True)
        if m is None:
            m, total = top, np.exp(block - (top if shift else 0)).sum(-1, keepdims=True)
            continue
        m_new = top if last_max_only else np.maximum(m, top)
        total = total * (np.exp(m - m_new) if rescale else 1) + np.exp(block - (m_new if shift else 0)).sum(
            -1, keepdims=True)
        m = m_new
    return m, total


def _two_pass(blocks):
    x = np.concatenate(list(blocks), axis=-1)
    m = x.max(-1, keepdims=True)
    return m, np.exp(x - m).sum(-1, keepdims=True)


def test_online_softmax_checker(capsys):
    ac.exercises.online_softmax(_online)
    assert "online softmax: correct" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="exp\\(m_old − m_new\\)"):
        ac.exercises.online_softmax(lambda b: _online(b, rescale=False), seed=0)
    with pytest.raises(ExerciseError, match="overflowed"):
        ac.exercises.online_softmax(lambda b: _online(b, shift=False), seed=0)
    with pytest.raises(ExerciseError):
        ac.exercises.online_softmax(lambda b: _online(b, last_max_only=True), seed=0)


def test_online_softmax_checker_allows_one_pass_only():
    def twice(blocks):                      # reads the one-shot iterator twice: the second pass finds nothing
        blocks = iter(blocks)
        first = list(blocks)
        return _two_pass(list(blocks) or [np.zeros((first[0].shape[0], 1))])

    assert _two_pass([np.ones((1, 2))])[1][0, 0] == 2
    with pytest.raises(ExerciseError):
        ac.exercises.online_softmax(twice, seed=0)


def test_grouped_heads_checker(capsys):
    ac.exercises.grouped_heads(lambda kv, heads: np.repeat(kv, heads // kv.shape[1], axis=1))
    assert "grouped heads: correct" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="not i % kv_heads"):
        ac.exercises.grouped_heads(lambda kv, heads: np.tile(kv, (1, heads // kv.shape[1], 1, 1)), seed=0)
    with pytest.raises(ExerciseError, match="return shape"):
        ac.exercises.grouped_heads(lambda kv, heads: kv, seed=0)


def _window(cache, key, window, sinks, keep_sinks=True, extra=0):
    cache = np.concatenate([cache, key[None]])
    if len(cache) > sinks + window + extra:
        head = cache[:sinks] if keep_sinks else cache[:0]
        cache = np.concatenate([head, cache[len(cache) - window - extra:]])
    return cache


def test_window_cache_checker(capsys):
    ac.exercises.window_cache(_window)
    assert "sliding-window cache with sinks: correct" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="never evicted"):
        ac.exercises.window_cache(lambda c, k, w, s: _window(c, k, w, s, keep_sinks=False), trials=6, seed=0)
    with pytest.raises(ExerciseError, match="evict the oldest"):
        ac.exercises.window_cache(lambda c, k, w, s: _window(c, k, w, s, extra=1), seed=0)
    with pytest.raises(ExerciseError, match="newest key is always kept"):
        ac.exercises.window_cache(lambda c, k, w, s: c if len(c) else k[None], seed=0)


def _phi(x):
    return np.where(x > 0, x + 1, np.exp(x))


@np.errstate(invalid="ignore", divide="ignore")   # the old-state mistake divides 0 by 0 at the first step
def _linear(state, norm, q, k, v, feature=True, updated=True, normalise=True):
    fk = _phi(k) if feature else k
    new_state, new_norm = state + np.outer(fk, v), norm + (_phi(k) if feature else k)
    use_state, use_norm = (new_state, new_norm) if updated else (state, norm)
    y = _phi(q) @ use_state
    if normalise:
        y = y / (_phi(q) @ use_norm)
    return y, new_state, new_norm


def test_linear_step_checker(capsys):
    ac.exercises.linear_step(_linear)
    assert "linear attention step: correct" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="not k vᵀ"):
        ac.exercises.linear_step(lambda *a: _linear(*a, feature=False), seed=0)
    with pytest.raises(ExerciseError, match="updated state"):
        ac.exercises.linear_step(lambda *a: _linear(*a, updated=False), seed=0)
    with pytest.raises(ExerciseError, match="divide by"):
        ac.exercises.linear_step(lambda *a: _linear(*a, normalise=False), seed=0)
