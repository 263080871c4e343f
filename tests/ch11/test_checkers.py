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


def test_copy_distribution_passes_the_reference_and_names_mistakes(capsys):
    exercises.copy_distribution(reference.pointer_generator)
    assert "✓ copy distribution" in capsys.readouterr().out

    def swapped(logits, weights, src_ext, p_gen, extra):
        return reference.pointer_generator(logits, weights, src_ext, 1 - p_gen, extra)

    def overwritten(logits, weights, src_ext, p_gen, extra):       # a word twice keeps only its last weight
        vocab = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
        out = np.concatenate([vocab, np.zeros((*logits.shape[:2], extra))], -1) * p_gen[..., None]
        for i in range(len(src_ext)):
            out[i][:, src_ext[i]] += (1 - p_gen[i])[:, None] * weights[i]     # fancy += adds a repeated id once
        return out

    def no_gate(logits, weights, src_ext, p_gen, extra):
        return reference.pointer_generator(logits, weights, src_ext, np.full_like(p_gen, 0.5), extra)

    for wrong, message in ((swapped, "weighs the vocabulary"), (overwritten, "do not overwrite"),
                           (no_gate, "P\\(w\\) = p_gen")):
        with pytest.raises(ExerciseError, match=message):
            exercises.copy_distribution(wrong, seed=0)


def test_monotonic_alignment_passes_the_reference_and_names_mistakes(capsys):
    exercises.monotonic_alignment(reference.monotonic_alignment)
    assert "✓ monotonic alignment" in capsys.readouterr().out

    def restarted(p):                                   # every step starts from the first key again
        return np.concatenate([reference.monotonic_alignment(p[:, i:i + 1]) for i in range(p.shape[1])], axis=1)

    def normalised(p):
        alpha = reference.monotonic_alignment(p)
        return alpha / alpha.sum(-1, keepdims=True)

    def no_stop(p):                                     # β without the stopping probability
        return reference.monotonic_alignment(p) / p

    for wrong, message in ((restarted, "where the step before stopped"), (normalised, "is not a softmax"),
                           (no_stop, "α_ij = p_ij β_ij")):
        with pytest.raises(ExerciseError, match=message):
            exercises.monotonic_alignment(wrong, seed=0)


@pytest.mark.parametrize("floor", [1e-10, 1e-30, 0.0])
def test_monotonic_alignment_refuses_the_parallel_form_whose_products_underflow(floor):
    """Raffel et al.'s parallel form divides by Π_{l<j} (1 − p_il): right for moderate p, wrong once keys already
    passed have p near 1 (its product, clipped at ``floor`` or not, loses the alignment's mass), in float64 too."""
    def parallel(p):
        b, t, s = p.shape
        previous, alpha = np.eye(s)[np.zeros(b, int)], np.zeros((b, t, s))
        for i in range(t):
            kept = np.cumprod(np.pad(1 - p[:, i, :-1], ((0, 0), (1, 0)), constant_values=1.0), 1)
            with np.errstate(divide="ignore", invalid="ignore"):
                previous = alpha[:, i] = p[:, i] * kept * np.cumsum(previous / np.maximum(kept, floor), 1)
        return alpha

    moderate = np.random.default_rng(0).uniform(0.05, 0.95, size=(3, 4, 5))
    np.testing.assert_allclose(parallel(moderate), reference.monotonic_alignment(moderate), atol=1e-9)
    with pytest.raises(ExerciseError, match="near 1"):
        exercises.monotonic_alignment(parallel, seed=0)


def test_hierarchical_pooling_passes_the_reference_and_names_mistakes(capsys):
    exercises.hierarchical_pooling(lambda *args: reference.hierarchical_pooling(*args)[0])
    assert "✓ hierarchical pooling" in capsys.readouterr().out

    def flat(states, mask, W_w, b_w, c_w, W_s, b_s, c_s):          # one softmax over the document's words
        b, s, t, h = states.shape
        return reference.context_attention(states.reshape(b, s * t, h), mask.reshape(b, s * t), W_w, b_w, c_w)[0]

    def empty_weighed(states, mask, *weights):                     # an empty sentence's zero vector gets a weight
        return reference.hierarchical_pooling(states, mask | ~mask.any(-1, keepdims=True), *weights)[0]

    def one_level(states, mask, W_w, b_w, c_w, W_s, b_s, c_s):    # the sentences averaged, not weighed
        b, s, t, h = states.shape
        sentences = reference.context_attention(states.reshape(b * s, t, h), mask.reshape(b * s, t), W_w, b_w,
                                                c_w)[0]
        return sentences.reshape(b, s, h).mean(1)

    for wrong, message in ((flat, "one softmax over every word"), (empty_weighed, "no vector to weigh"),
                           (one_level, "then over the sentences")):
        with pytest.raises(ExerciseError, match=message):
            exercises.hierarchical_pooling(wrong, seed=0)
