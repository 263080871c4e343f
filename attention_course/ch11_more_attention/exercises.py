"""Exercise checkers of Chapter 11 (more ways to attend), in NumPy.

``pointer_distribution``: ``fn(encoded, decoded, W_1, W_2, v, mask)`` returns a pointer network's output,
log p (B, T, N): u_tj = vᵀ tanh(W_1ᵀ e_j + W_2ᵀ d_t) for encoded (B, N, e), decoded (B, T, d), W_1 (e, u), W_2 (d, u),
v (u,), then a log-softmax over the input positions j, with −inf where ``mask`` (B, N) is False.

``convolutional_scores``: ``fn(query, keys, kernel, bias, W_q, v)`` returns the scores (B, N) of convolutional
attention: e_j = vᵀ tanh(Σ_o kernel[o]ᵀ k_{j + o − width // 2} + bias + W_qᵀ q), over the ``width`` keys centred on
key j (zeros beyond the ends), for query (B, d_q), keys (B, N, d_k), kernel (width, d_k, u), bias (u,), W_q (d_q, u),
v (u,).

``hierarchical_pooling``: ``fn(states, mask, W_w, b_w, c_w, W_s, b_s, c_s)`` returns a hierarchical attention
network's document vector (B, H): attention pooling u = tanh(Wᵀ h + b), a = softmax(u · c) over each sentence's real
words (W_w, b_w, c_w) gives the sentence vectors, and the same pooling over the sentences that hold a real word
(W_s, b_s, c_s) gives the document, for word states (B, S, T, H) and mask (B, S, T).

``multi_source_attention``: ``fn(query, keys, mask, W_c, b_c)`` returns multi-source attention's output h̃ (B, T, d):
for each source k its own softmax over its own S positions of the dot scores q_t · k^k_j (−inf where ``mask`` is
False), c^k_t the weighted sum of its keys, then h̃_t = tanh([q_t; c¹_t; …; cᴷ_t] W_c + b_c), for query (B, T, d),
keys (B, K, S, d), mask (B, K, S), W_c (d + K·d, d), b_c (d,).

``copy_distribution``: ``fn(logits, weights, src_ext, p_gen, extra)`` returns the pointer-generator's final
distribution P (B, T, V + extra): p_gen times the softmax of ``logits`` (B, T, V), padded with ``extra`` zeros, plus
(1 − p_gen) times the attention ``weights`` (B, T, S) added up over the source positions j into the ids ``src_ext``
(B, S) of their words (a word twice in the source gets both weights); ``p_gen`` (B, T).

``monotonic_alignment``: ``fn(p)`` returns monotonic attention's expected alignment α (B, T, S) from the stopping
probabilities p (B, T, S): q_ij = (1 − p_i,j−1) q_i,j−1 + α_i−1,j, α_ij = p_ij q_ij, from α_0 = (1, 0, …, 0). Every
other trial draws saturated probabilities, many within 1e-6 of 1 and some exactly 1, as a trained model gives them:
Raffel et al.'s parallel form, which divides by Π_{l<j} (1 − p_il), fails there.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attention_course.ch01_sequence_models.exercises import _pass
from attention_course.ch11_more_attention.reference import (
    context_attention,
    multi_source,
    pointer_generator,
    pointer_log_probs,
)
from attention_course.ch11_more_attention.reference import convolutional_scores as _scores
from attention_course.ch11_more_attention.reference import hierarchical_pooling as document_vector
from attention_course.ch11_more_attention.reference import monotonic_alignment as expected_alignment
from attention_course.core.grading import ExerciseError, call, start

__all__ = ["pointer_distribution", "convolutional_scores", "hierarchical_pooling", "multi_source_attention",
           "copy_distribution", "monotonic_alignment"]


def pointer_distribution(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(encoded, decoded, W_1, W_2, v, mask) -> log p (B, T, N)``, the pointer's output."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        b, n, t = int(rng.integers(1, 4)), int(rng.integers(2, 7)), int(rng.integers(1, 5))
        e, d, u = (int(rng.integers(1, 6)) for _ in range(3))
        args = {"encoded": rng.normal(size=(b, n, e)), "decoded": rng.normal(size=(b, t, d)),
                "W_1": rng.normal(size=(e, u)), "W_2": rng.normal(size=(d, u)), "v": rng.normal(size=u),
                "mask": np.arange(n)[None] < rng.integers(1, n + 1, size=(b, 1))}
        want = pointer_log_probs(*args.values())
        got = np.asarray(call(fn, args), float)
        if got.shape != want.shape:
            raise ExerciseError(f"for encoded {args['encoded'].shape} and decoded {args['decoded'].shape}, return "
                                f"log p of shape {want.shape} (B, T, N): one distribution over the N inputs per step;"
                                f" got {got.shape}")
        real: np.ndarray = np.broadcast_to(np.asarray(args["mask"], bool)[:, None], want.shape)
        if np.allclose(got[real], want[real], atol=1e-6) and (got[~real] == -np.inf).all():
            continue
        if np.allclose(got[real], np.exp(want[real]), atol=1e-6):
            raise ExerciseError("return the logarithm of the probabilities (a log-softmax), not the probabilities")
        if not (got[~real] == -np.inf).all() and (~real).any():
            raise ExerciseError("a position the mask hides must get −inf: the pointer may only point at real inputs")
        raise ExerciseError("u_tj = v · tanh(W_1ᵀ e_j + W_2ᵀ d_t), then a log-softmax over the positions j (the last "
                            f"axis), for every step t; for the first example, first step, expected "
                            f"{np.round(want[0, 0], 3)}, got {np.round(got[0, 0], 3)}")
    _pass("pointer distribution", trials)


def convolutional_scores(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(query, keys, kernel, bias, W_q, v) -> scores (B, N)``, convolutional attention's scores."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        b, n, width = int(rng.integers(1, 4)), int(rng.integers(3, 8)), int(rng.choice([1, 3, 5]))
        dq, dk, u = (int(rng.integers(1, 5)) for _ in range(3))
        args = {"query": rng.normal(size=(b, dq)), "keys": rng.normal(size=(b, n, dk)),
                "kernel": rng.normal(size=(width, dk, u)), "bias": rng.normal(size=u),
                "W_q": rng.normal(size=(dq, u)), "v": rng.normal(size=u)}
        want = _scores(*args.values())
        got = np.asarray(call(fn, args), float)
        if width > 1 and got.shape == (b, n - width + 1):
            raise ExerciseError(f"with {n} keys and a window of {width}, return one score per key, (B, {n}): pad "
                                f"{width // 2} zero keys at each end")
        if got.shape != want.shape:
            raise ExerciseError(f"return one score per key, shape {want.shape}; got {got.shape}")
        if np.allclose(got, want, atol=1e-6):
            continue
        flipped = _scores(*{**args, "kernel": args["kernel"][::-1]}.values())
        if width > 1 and np.allclose(got, flipped, atol=1e-6):
            raise ExerciseError("kernel[o] weighs key j + o − width // 2: kernel[0] is the key furthest before j, "
                                "not after it")
        raise ExerciseError(f"for keys {args['keys'].shape} and a window of {width}: expected "
                            f"{np.round(want[0], 3)} for the first example, got {np.round(got[0], 3)}")
    _pass("convolutional attention scores", trials)


def hierarchical_pooling(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(states, mask, W_w, b_w, c_w, W_s, b_s, c_s) -> document (B, H)``, two levels of attention pooling."""
    rng = start(fn, trials, seed)
    for trial in range(trials):
        b, s, t, h, u = (int(rng.integers(low, high)) for low, high in ((1, 4), (2, 5), (2, 6), (1, 5), (1, 5)))
        mask = np.arange(t)[None, None] < rng.integers(1, t + 1, size=(b, s, 1))           # (B, S, T), words first
        if trial == 0:
            mask[0, -1] = False                                                             # an empty sentence
        args = {"states": rng.normal(size=(b, s, t, h)), "mask": mask,
                **{f"{name}_{level}": rng.normal(size=shape) for level in "ws"
                   for name, shape in (("W", (h, u)), ("b", (u,)), ("c", (u,)))}}
        want = document_vector(*args.values())[0]
        got = np.asarray(call(fn, args), float)
        if got.shape != want.shape:
            raise ExerciseError(f"for word states {args['states'].shape} return one vector per document, shape "
                                f"{want.shape} (B, H); got {got.shape}")
        if np.allclose(got, want, atol=1e-6):
            continue
        words = args["states"].reshape(b, s * t, h)
        flat = context_attention(words, mask.reshape(b, s * t), args["W_w"], args["b_w"], args["c_w"])[0]
        if np.allclose(got, flat, atol=1e-6):
            raise ExerciseError("that is one softmax over every word of the document: pool each sentence's words "
                                "into a sentence vector first, then pool the sentences")
        every = document_vector(args["states"], mask | ~mask.any(-1, keepdims=True), *list(args.values())[2:])[0]
        if not mask.any(-1).all() and np.allclose(got, every, atol=1e-6):
            raise ExerciseError("a sentence with no real word has no vector to weigh: leave it out of the "
                                "sentences' softmax (its weight must be 0)")
        raise ExerciseError(f"u = tanh(Wᵀ h + b), a = softmax(u · c) over the real words of each sentence, then "
                            f"over the sentences; for the first document expected {np.round(want[0], 3)}, got "
                            f"{np.round(got[0], 3)}")
    _pass("hierarchical pooling", trials)


def _one_softmax_over_all(query, keys, mask, W_c, b_c) -> np.ndarray:
    """The mistake of one softmax over every source's positions together, as attention over one long source."""
    b, k, s, d = keys.shape
    scores = np.einsum("btd,bksd->btks", query, keys).reshape(b, -1, k * s)
    scores = np.where(mask.reshape(b, 1, k * s), scores, -np.inf)
    a = np.exp(scores - scores.max(-1, keepdims=True))
    a = (a / a.sum(-1, keepdims=True)).reshape(b, -1, k, s)
    contexts = [a[:, :, i] @ keys[:, i] for i in range(k)]
    return np.tanh(np.concatenate([query, *contexts], -1) @ W_c + b_c)


def multi_source_attention(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(query, keys, mask, W_c, b_c) -> h̃ (B, T, d)``, multi-source attention with dot scores."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        b, t, k, n, d = (int(rng.integers(low, high)) for low, high in ((1, 4), (1, 4), (2, 4), (2, 6), (1, 5)))
        args = {"query": rng.normal(size=(b, t, d)), "keys": rng.normal(size=(b, k, n, d)),
                "mask": np.arange(n) < rng.integers(1, n + 1, size=(b, k, 1)),
                "W_c": rng.normal(size=(d + k * d, d)), "b_c": rng.normal(size=d)}
        want, _ = multi_source(*args.values())
        got = np.asarray(call(fn, args), float)
        if got.shape != want.shape:
            raise ExerciseError(f"for query {args['query'].shape} and keys {args['keys'].shape}, return h̃ of shape "
                                f"{want.shape} (B, T, d): one vector per query, the sources' contexts joined with it "
                                f"by W_c {args['W_c'].shape}; got {got.shape}")
        if np.allclose(got, want, atol=1e-6):
            continue
        if np.allclose(got, _one_softmax_over_all(*args.values()), atol=1e-6):
            raise ExerciseError("each source gets its own softmax over its own positions: one softmax over all the "
                                "sources' positions together lets one source take the weight the other needs")
        if np.allclose(got, multi_source(*{**args, "mask": None}.values())[0], atol=1e-6) and not args["mask"].all():
            raise ExerciseError("a position the mask hides must get no weight (a score of −inf before the softmax)")
        raise ExerciseError(f"per source k: a^k = softmax_j(q_t · k^k_j), c^k_t = Σ_j a^k_tj k^k_j; then "
                            f"h̃_t = tanh([q_t; c¹_t; …; cᴷ_t] W_c + b_c). For the first example, first query, expected "
                            f"{np.round(want[0, 0], 3)}, got {np.round(got[0, 0], 3)}")
    _pass("multi-source attention", trials)


def copy_distribution(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(logits, weights, src_ext, p_gen, extra) -> P (B, T, V + extra)``, the pointer-generator's output."""
    rng = start(fn, trials, seed)
    for trial in range(trials):
        b, t, s, v, extra = (int(rng.integers(low, high)) for low, high in ((1, 4), (1, 4), (2, 7), (2, 8), (1, 4)))
        weights = rng.random((b, t, s))
        src_ext = rng.integers(0, v + extra, (b, s))
        if trial == 0:
            src_ext[0, 1] = src_ext[0, 0]                                   # a word twice in the source
        args = {"logits": rng.normal(size=(b, t, v)), "weights": weights / weights.sum(-1, keepdims=True),
                "src_ext": src_ext, "p_gen": rng.random((b, t)), "extra": extra}
        want = pointer_generator(*args.values())
        got = np.asarray(call(fn, args), float)
        if got.shape != want.shape:
            raise ExerciseError(f"for logits {args['logits'].shape} and extra={extra}, return P of shape {want.shape} "
                                f"(B, T, V + extra): the extended vocabulary; got {got.shape}")
        if np.allclose(got, want, atol=1e-6):
            continue
        swapped = pointer_generator(*{**args, "p_gen": 1 - args["p_gen"]}.values())
        if np.allclose(got, swapped, atol=1e-6):
            raise ExerciseError("p_gen is the probability of generating: it weighs the vocabulary's distribution, and "
                                "1 − p_gen the copying")
        if not np.allclose(got.sum(-1), 1, atol=1e-6):
            raise ExerciseError("each step's P must sum to 1 over the extended vocabulary: add the copied weights "
                                "into the words' ids (a word twice in the source gets both of its weights), do not "
                                "overwrite them")
        raise ExerciseError(f"P(w) = p_gen P_vocab(w) + (1 − p_gen) Σ_(j: src_ext_j = w) a_tj; for the first example, "
                            f"first step, expected {np.round(want[0, 0], 3)}, got {np.round(got[0, 0], 3)}")
    _pass("copy distribution", trials)


def _stopping_probabilities(rng, shape, saturated: bool) -> np.ndarray:
    """p in [0.05, 0.95]; or ``saturated``: half of them within 10⁻⁶ … 1 of 1, and one in ten exactly 1."""
    p = rng.uniform(0.05, 0.95, size=shape)
    if saturated:
        near = rng.random(shape) < 0.5
        p[near] = 1 - 10.0 ** -rng.uniform(0, 6, size=int(near.sum()))
        p[rng.random(shape) < 0.1] = 1.0
    return p


def monotonic_alignment(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(p) -> α (B, T, S)``, monotonic attention's expected alignment from stopping probabilities p, on
    moderate and on saturated p (every other trial)."""
    rng = start(fn, trials, seed)
    for trial in range(trials):
        b, t, s = int(rng.integers(1, 4)), int(rng.integers(2, 6)), int(rng.integers(2, 7))
        args = {"p": _stopping_probabilities(rng, (b, t, s), saturated=trial % 2 == 1)}
        want = expected_alignment(args["p"])
        with np.errstate(all="ignore"):                          # a division by an underflowed product: judged below
            got = np.asarray(call(fn, args), float)
        if got.shape != want.shape:
            raise ExerciseError(f"for p of shape {args['p'].shape}, return α of the same shape (B, T, S); got "
                                f"{got.shape}")
        if np.allclose(got, want, atol=1e-6):
            continue
        tame = np.clip(args["p"], 0.05, 0.95)
        if trial % 2 == 1 and np.allclose(np.asarray(call(fn, {"p": tame}), float), expected_alignment(tame),
                                          atol=1e-6):
            raise ExerciseError("right for moderate p, wrong when some p_ij are near 1 (a trained model's are): a "
                                "division by the product Π (1 − p_il), as in the parallel form, loses the alignment "
                                "once that product underflows; the recurrence β_ij = (1 − p_i,j−1) β_i,j−1 + "
                                "α_i−1,j only multiplies and adds")
        restarted = np.concatenate([expected_alignment(args["p"][:, i:i + 1]) for i in range(t)], axis=1)
        if np.allclose(got, restarted, atol=1e-6):
            raise ExerciseError("every step must start where the step before stopped: carry α_(i−1) into step i "
                                "(β_ij = (1 − p_i,j−1) β_i,j−1 + α_i−1,j), not α_0 again")
        if np.allclose(got.sum(-1), 1, atol=1e-6):
            raise ExerciseError("α is not a softmax: a row sums to less than 1 when the scan may run off the end; "
                                "α_ij = p_ij β_ij, with no normalisation")
        raise ExerciseError(f"β_ij = (1 − p_i,j−1) β_i,j−1 + α_i−1,j, α_ij = p_ij β_ij, from α_0 = (1, 0, …, 0); for "
                            f"the first example, first step, expected {np.round(want[0, 0], 3)}, got "
                            f"{np.round(got[0, 0], 3)}")
    _pass("monotonic alignment", trials)
