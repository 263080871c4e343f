"""Exercise checker of Chapter 5 (translation): one attention step of Bahdanau's decoder, in NumPy.

s_prev (B, H) the decoder's previous state, h (B, S, D) the encoder states, mask (B, S) bool (True on real
tokens, at least one per row), W (H, u), U (D, u), v (u,) → context (B, D), alpha (B, S):
e_j = v · tanh(s_prev W + h_j U), alpha = softmax over the real source positions, context = Σ_j alpha_j h_j.

Exercise checker of Chapter 5 (beam search): one step of beam search, as
:func:`attention_course.core.decode.beam_step`.

log_probs (B, K, V), scores (B, K) running sums of log-probs, finished (B, K) bool, beam = K → scores, parent,
token, each (B, K). The checker runs the learner's function on three kinds of crafted inputs in turn: a first
step (the K beams are copies of one; the copies have score -inf), a middle step, and a step where some beams
have finished. PAD and BOS have log-prob -inf, as beam search passes them. The K results may come in any order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attention_course.ch01_sequence_models.exercises import _close, _diagnose, _pass
from attention_course.core import decode
from attention_course.core.grading import ExerciseError, call, log_softmax, softmax, start
from attention_course.core.text import BOS, PAD

__all__ = ["bahdanau_attention", "beam_step"]


def _reference(s_prev, h, mask, W, U, v):
    e = np.tanh((s_prev @ W)[:, None] + h @ U) @ v                 # (B, S)
    alpha = softmax(e, mask=mask)
    return (alpha[:, :, None] * h).sum(1), alpha


def bahdanau_attention(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(s_prev, h, mask, W, U, v) -> (context, alpha)``, one step of Bahdanau's attention."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        b, s, hid, d, u = (int(x) for x in rng.integers(2, 5, size=5))
        s = s + 1                                                    # at least 3 source positions
        s_prev, h = rng.normal(size=(b, hid)), rng.normal(size=(b, s, d))
        mask = np.arange(s)[None] < rng.integers(1, s + 1, size=(b, 1))
        mask[0] = True                                              # one row without pads, the others with
        W, U, v = rng.normal(size=(hid, u)), rng.normal(size=(d, u)), rng.normal(size=u)
        inputs = {"s_prev": s_prev, "h": h, "mask": mask, "W": W, "U": U, "v": v}
        got = call(fn, inputs)
        if not isinstance(got, tuple) or len(got) != 2:
            raise ExerciseError("return a pair (context, alpha): context (B, D), alpha (B, S)")
        context, alpha = (np.asarray(x, dtype=np.float64) for x in got)
        ref_context, ref_alpha = _reference(s_prev, h, mask, W, U, v)
        if alpha.shape != ref_alpha.shape or context.shape != ref_context.shape:
            raise ExerciseError(f"alpha must have shape {ref_alpha.shape} (B, S) and context {ref_context.shape} "
                                f"(B, D); got {alpha.shape} and {context.shape}")
        if not _close(alpha, ref_alpha):
            e = np.tanh((s_prev @ W)[:, None] + h @ U) @ v
            raise ExerciseError("alpha: " + _diagnose(alpha, {
                "the mask is not applied: padded source positions get weight (they must get exactly 0)":
                    softmax(e, mask=np.ones_like(mask)),
                "the softmax runs over the batch axis; it belongs over the source positions (axis 1)":
                    softmax(e, axis=0, mask=mask) if mask.all() else softmax(e, axis=0, mask=np.ones_like(mask)),
                "tanh is missing: e_j = v · tanh(s_prev W + h_j U)":
                    softmax((s_prev @ W)[:, None] @ v[:, None][..., 0] + h @ U @ v, mask=mask),
                "W and U are swapped, or the query is not s_prev": softmax(np.tanh(h @ U) @ v, mask=mask),
            }))
        if not _close(context, ref_context):
            raise ExerciseError("context: " + _diagnose(context, {
                "the context sums the encoder states without the weights: c = Σ_j alpha_j h_j": h.sum(1),
                "the context is the plain mean of the encoder states; weight each h_j by alpha_j": h.mean(1),
            }))
    _pass("Bahdanau attention step", trials)


_JOINT = ("these are not the K best candidates of the sentence: take the top K over all K×V candidates of a "
          "sentence jointly (reshape the (B, K, V) candidate scores to (B, K*V)), not per beam or over another axis")


_FIRST = ("the first step is not de-duplicated: all K beams are copies of one, and only beam 0 may be expanded "
          "(the copies come with score -inf; add the scores to the log-probs and keep the -inf), otherwise the "
          "same hypothesis fills several beams")


_PARENT = ("the scores are right but the parent or token indices are not: for a flat index i into the K*V "
           "candidates of a sentence, parent = i // V and token = i % V")


_GROWING = ("finished hypotheses keep growing: a beam that has emitted EOS may only be extended by PAD (id 0) at "
            "zero cost, so its score stays the same (put -inf on its other tokens and its score on PAD)")


_DROPPED = ("a finished hypothesis was dropped: a beam that has emitted EOS stays a candidate, extended by PAD "
            "(id 0) with its score unchanged, and competes with the others")


_NO_SUM = ("the scores do not include the parent's score: a candidate scores the parent's running score + the "
           "token's log-prob")


_NORMALISED = ("the returned scores are not plain sums of log-probs (the parent's score + the token's log-prob): "
               "is the length normalisation applied in the step? It belongs to the final ranking only; applied in "
               "the step as well, it would be applied twice")


_NAN = ("the scores contain NaN: keep the -inf scores as they are (-inf + a log-prob is -inf; -inf - (-inf) and "
        "0 × -inf are NaN)")


def _case(rng, kind: str):
    """Inputs of one trial: ``kind`` "first", "middle" or "finished"; ties and near-ties are avoided."""
    while True:
        b, k = int(rng.integers(2, 4)), int(rng.integers(2, 5))
        v = k + int(rng.integers(3, 6))                           # at least K + 1 tokens besides PAD and BOS
        logits = rng.normal(size=(b, k, v)) * 2
        logits[..., [PAD, BOS]] = -np.inf
        log_probs = log_softmax(logits)
        scores = -np.cumsum(rng.uniform(0.2, 1.5, size=(b, k)), axis=1)
        finished = np.zeros((b, k), bool)
        if kind == "first":
            log_probs[:, 1:] = log_probs[:, :1]
            scores = np.where(np.arange(k) == 0, 0.0, -np.inf) * np.ones((b, 1))
        if kind == "finished":                                    # one finished beam per sentence, among the best
            f = rng.integers(0, min(k, 2), size=b)
            finished[np.arange(b), f] = True
            # what a model says after EOS: every token possible, one almost sure: PAD in sentence 0 (a wrong
            # step changes the score), a word in the others (a wrong step extends the hypothesis)
            row = rng.normal(size=(b, v))
            row[np.arange(b), np.where(np.arange(b) == 0, PAD, rng.integers(4, v, size=b))] = 8.0
            log_probs[np.arange(b), f] = log_softmax(row)
        s, p, t = decode.beam_step(log_probs, scores, finished, k)
        every = decode.beam_step(log_probs, scores, finished, k * v)[0]         # all candidates, best first
        kept = np.take_along_axis(finished, p, 1).sum() == finished.sum()   # no finished beam falls out,
        margin = (scores[finished] - 0.1 > s[finished.any(1), -1]).all()    # even when its score drops a bit
        spread = (-np.diff(every[:, : k + 1], axis=1) > 1e-3).all()        # no near-ties around the top K
        twice = any(len(set(row)) < k for row in p)                        # a beam extended twice,
        joint = kind == "first" or (twice and (p > 0).any())               # and not only beam 0
        if np.isfinite(s).all() and kept and margin and spread and joint:
            return log_probs, scores, finished, (s, p, t)


def _sorted(s, p, t):
    """The K results of each sentence in one order: best score first."""
    order = np.lexsort((t, p, -s), axis=1)
    return tuple(np.take_along_axis(x, order, 1) for x in (s, p, t))


def _same(a, b) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-6, atol=1e-6))


def _beam_mistake(kind, got, ref, log_probs, scores, finished) -> str | None:
    """The mistake that explains the learner's (scores, parent, token), None if they are right."""
    s, p, t = _sorted(*got)
    rs, rp, rt = _sorted(*ref)
    if _same(s, rs) and (p == rp).all() and (t == rt).all():
        return None
    if _same(s, rs):
        return _PARENT
    if np.isnan(s).any():
        return _NAN
    rows, k = np.arange(len(s))[:, None], s.shape[1]
    if kind == "first" and _same(s, decode.beam_step(log_probs, np.zeros_like(scores), finished, k)[0]):
        return _FIRST                                                   # as if every copy had score 0
    was = finished[rows, p] & np.isfinite(s)
    if (was & (t != PAD)).any():
        return f"{_GROWING} (here a finished beam took token {t[was & (t != PAD)][0]}, not PAD)"
    if (was & ~np.isclose(s, scores[rows, p])).any():
        return f"{_GROWING} (here a finished beam took PAD, but its score changed)"
    if finished.any() and _same(s, decode.beam_step(log_probs, np.where(finished, -np.inf, scores), finished, k)[0]):
        return _DROPPED                                                 # as if finished beams were gone
    cand = np.where(finished[:, :, None], -np.inf, scores[:, :, None] + log_probs)
    cand[:, :, PAD] = np.where(finished, scores, cand[:, :, PAD])
    if _same(s, cand[rows, p, t]):
        return _JOINT                                                   # real candidates, not the K best
    if _same(s, log_probs[rows, p, t]):
        return _NO_SUM
    pairs = [{(int(a), int(b)) for a, b in zip(*x, strict=True)} for x in zip(p, t, strict=True)]
    ref_pairs = [{(int(a), int(b)) for a, b in zip(*x, strict=True)} for x in zip(rp, rt, strict=True)]
    with np.errstate(all="ignore"):
        ratio = s / cand[rows, p, t]                                    # the same factor for every candidate?
    ratio = ratio[np.isfinite(ratio)]
    if pairs == ref_pairs or (ratio.size and ratio.max() - ratio.min() < 1e-6):
        return _NORMALISED
    return "it differs from the reference in a way none of the common mistakes explains"


def beam_step(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(log_probs, scores, finished, beam) -> (scores, parent, token)``: one step of beam search.

    log_probs (B, K, V), scores (B, K), finished (B, K) bool, beam = K → scores, parent, token, each (B, K): the
    K best extensions over the K×V candidates of each sentence jointly, a finished beam extended only by PAD at
    zero cost, the scores plain sums of log-probs.
    """
    rng = start(fn, trials, seed)
    kinds = ("first", "middle", "finished")
    for trial in range(trials):
        kind = kinds[trial % 3]
        log_probs, scores, finished, ref = _case(rng, kind)
        b, k, v = log_probs.shape
        shapes = f"log_probs {log_probs.shape}, scores {scores.shape}, finished {finished.shape}, beam {k}"
        with np.errstate(all="ignore"):
            out = call(fn, {"log_probs": log_probs, "scores": scores, "finished": finished, "beam": k})
        if not (isinstance(out, tuple | list) and len(out) == 3):
            raise ExerciseError("return a triple (scores, parent, token)")
        got = tuple(np.asarray(o) for o in out)
        for name, x in zip(("scores", "parent", "token"), got, strict=True):
            if x.shape != (b, k):
                raise ExerciseError(f"{name} has shape {x.shape}; expected (B, K) = {(b, k)} for {shapes}")
        s, p, t = got
        if p.dtype.kind not in "iu" or t.dtype.kind not in "iu":
            raise ExerciseError(f"parent and token must be integer indices; got {p.dtype} and {t.dtype}")
        if p.min() < 0 or p.max() >= k or t.min() < 0 or t.max() >= v:
            raise ExerciseError(f"parent must be in [0, K) = [0, {k}) and token in [0, V) = [0, {v}); got parents "
                                f"{p.min()}..{p.max()} and tokens {t.min()}..{t.max()} for {shapes}")
        mistake = _beam_mistake(kind, (s.astype(np.float64), p, t), ref, log_probs, scores, finished)
        if mistake:
            raise ExerciseError(f"beam step is wrong (trial {trial + 1}, {kind} step, {shapes}): {mistake}")
    _pass("beam step", trials)
