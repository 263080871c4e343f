"""Chapter 11's exercise checkers: a right answer passes, and each common mistake gets its own message."""

import numpy as np
import pytest

from attention_course import exercises
from attention_course.ch11_more_attention import reference
from attention_course.core.errors import ExerciseError

pytestmark = pytest.mark.chapter(11)


def test_pointer_distribution_passes_the_reference_and_names_mistakes(capsys):
    exercises.pointer_distribution(reference.pointer_log_probs)
    assert "✓ pointer distribution" in capsys.readouterr().out

    def probabilities(*args):
        return np.exp(reference.pointer_log_probs(*args))

    def unmasked(encoded, decoded, W_1, W_2, v, mask):
        return reference.pointer_log_probs(encoded, decoded, W_1, W_2, v)

    def over_steps(encoded, decoded, W_1, W_2, v, mask):
        scores = np.tanh((encoded @ W_1)[:, None] + (decoded @ W_2)[:, :, None]) @ v
        return np.where(mask[:, None], scores - np.log(np.exp(scores).sum(1, keepdims=True)), -np.inf)

    for wrong, message in ((probabilities, "not the probabilities"), (unmasked, "must get −inf"),
                           (over_steps, "over the positions j")):
        with pytest.raises(ExerciseError, match=message):
            exercises.pointer_distribution(wrong, seed=0)


def test_convolutional_scores_passes_the_reference_and_names_mistakes(capsys):
    exercises.convolutional_scores(reference.convolutional_scores)
    assert "✓ convolutional attention scores" in capsys.readouterr().out

    def valid_only(query, keys, kernel, bias, W_q, v):
        width = len(kernel)
        features = sum(keys[:, o:keys.shape[1] - width + 1 + o] @ kernel[o] for o in range(width)) + bias
        return np.tanh(features + (query @ W_q)[:, None]) @ v

    def flipped(query, keys, kernel, bias, W_q, v):
        return reference.convolutional_scores(query, keys, kernel[::-1], bias, W_q, v)

    def no_query(query, keys, kernel, bias, W_q, v):
        return reference.convolutional_scores(query * 0, keys, kernel, bias, W_q, v)

    for wrong, message in ((valid_only, "pad"), (flipped, "furthest before j"), (no_query, "expected")):
        with pytest.raises(ExerciseError, match=message):
            exercises.convolutional_scores(wrong, seed=1)


def test_multi_source_attention_passes_the_reference_and_names_mistakes(capsys):
    def right(query, keys, mask, W_c, b_c):
        return reference.multi_source(query, keys, mask, W_c, b_c)[0]

    exercises.multi_source_attention(right)
    assert "✓ multi-source attention" in capsys.readouterr().out

    def one_softmax(query, keys, mask, W_c, b_c):
        b, k, s, d = keys.shape
        merged = keys.reshape(b, 1, k * s, d)
        _, a = reference.multi_source(query, merged, mask.reshape(b, 1, k * s), np.zeros((2 * d, d)), np.zeros(d))
        contexts = [a[:, 0, :, i * s:(i + 1) * s] @ keys[:, i] for i in range(k)]
        return np.tanh(np.concatenate([query, *contexts], -1) @ W_c + b_c)

    def unmasked(query, keys, mask, W_c, b_c):
        return reference.multi_source(query, keys, None, W_c, b_c)[0]

    def no_query(query, keys, mask, W_c, b_c):
        h, _ = reference.multi_source(query * 0, keys, mask, W_c, b_c)
        return h

    for wrong, message in ((one_softmax, "its own softmax"), (unmasked, "must get no weight"),
                           (no_query, "per source k")):
        with pytest.raises(ExerciseError, match=message):
            exercises.multi_source_attention(wrong, seed=0)
