"""Decoding an encoder-decoder in NumPy, whatever the framework: greedy search, beam search with GNMT's length
and coverage penalties (Wu et al. 2016), and exhaustive search (tiny vocabularies, for tests).

A model takes part through three methods (:class:`StepDecoder`); each framework's translator implements them.
All B sentences (times K beams) go through one ``step`` call per time step. The decoder never emits PAD or BOS
(their log-probs are set to -inf before the choice); a finished hypothesis is followed by PAD only.

    score(Y) = log P(Y) / lp(Y) + cp(Y)
    lp(Y) = ((5 + |Y|) / 6) ** alpha               |Y| counts the EOS
    cp(Y) = beta * Σ_i log(min(Σ_j a_ij, 1))      over the real source positions i, a_ij: attention of step j
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from attention_course.core import validate
from attention_course.core.backend import no_grad, to_numpy
from attention_course.core.errors import ConfigError, InputError, ShapeError
from attention_course.core.text import BOS, EOS, PAD

__all__ = ["Decoded", "Recompute", "StepDecoder", "beam_search", "beam_step", "exhaustive_search", "greedy_search",
           "sample", "tempered"]

MAX_SEQUENCES = 200_000   # exhaustive_search refuses more
EPS = 1e-6                # coverage: log(max(coverage, EPS)), so an ignored source position costs log(1e-6)


class StepDecoder(Protocol):
    """What the searches need from a model; ``State`` is whatever the model keeps (arrays, tensors, a list)."""

    def start(self, src: np.ndarray, src_mask: np.ndarray) -> Any:
        """Encode src (B, S) int ids with src_mask (B, S) bool; return the decoder state of the B rows."""

    def step(self, tokens: np.ndarray, state: Any) -> tuple[np.ndarray, Any, np.ndarray | None]:
        """tokens (N,) previous ids → log_probs (N, V) (log-softmax), new state, attention (N, S) or None."""

    def reorder(self, state: Any, index: np.ndarray) -> Any:
        """The rows ``index`` (N',) of the state (to expand B rows into B*K and to follow the beams)."""


@dataclass
class Decoded:
    """The best hypothesis of each of the B sentences."""

    tokens: list[list[int]]                # without BOS, EOS and PAD
    scores: np.ndarray                     # (B,) final scores: log P / lp + cp
    log_probs: np.ndarray                  # (B,) sums of the log-probs
    attention: list[np.ndarray] | None     # per sentence (len(tokens) + 1, S), the EOS step included; None if
                                           # the decoder gives none (no EOS step for a hypothesis cut at max_len)


class Recompute:
    """A Transformer (``start``, ``decode``, ``reorder``) decoded without its key–value cache: each step runs the
    whole prefix through the decoder again and keeps the last position's scores. It must give what the cached
    decoder gives (Chapter 8 checks this), only more slowly: step t does t times the work."""

    def __init__(self, model):
        self.model = model
        self.decode = getattr(model, "compiled_decode", model.decode)   # a Keras model runs it as one graph

    def start(self, src, src_mask):
        return {"state": self.model.start(src, src_mask), "tokens": []}

    def step(self, tokens, state):
        prefix = np.stack([*state["tokens"], np.asarray(tokens)], axis=1)           # (N, steps so far)
        inner = state["state"]
        with no_grad(self.model):   # a PyTorch model's cached step too
            logits = self.decode(prefix, inner["memory"], inner["mask"])[:, -1]
        logits = to_numpy(logits)
        log_probs = logits - logits.max(-1, keepdims=True)
        log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
        return log_probs, {**state, "tokens": [*state["tokens"], np.asarray(tokens)]}, None

    def reorder(self, state, index):
        return {"state": self.model.reorder(state["state"], index), "tokens": [t[index] for t in state["tokens"]]}


def beam_step(log_probs: np.ndarray, scores: np.ndarray, finished: np.ndarray, beam: int):
    """One step of beam search: the ``beam`` best extensions of each sentence, over its K×V candidates jointly.

    log_probs (B, K, V), scores (B, K) running sums of log-probs, finished (B, K) bool: a finished beam is
    extended only by PAD, at zero cost. At the first step the K beams are copies of one: pass scores
    [0, -inf, ..., -inf], so that only beam 0 is expanded. Returns scores, parent, token, each (B, beam),
    best first; the scores stay plain sums of log-probs (length normalisation comes at the end, once).
    """
    log_probs, scores, finished = np.asarray(log_probs), np.asarray(scores), np.asarray(finished)
    if log_probs.ndim != 3:
        raise ShapeError(f"log_probs must be (B, K, V): the next-token log-probs of K beams of B sentences; got "
                         f"shape {log_probs.shape}")
    b, k, v = log_probs.shape
    for name, x in (("scores", scores), ("finished", finished)):
        if x.shape != (b, k):
            raise ShapeError(f"{name} must be (B, K) = {(b, k)}, one per beam of log_probs {log_probs.shape}; got "
                             f"shape {x.shape}")
    validate.integer("beam", beam)
    if beam > k * v:
        raise ConfigError(f"beam={beam} is more than the K·V = {k}·{v} = {k * v} candidates of each sentence")
    _rankable("log_probs", log_probs, "log-probabilities")
    _rankable("scores", scores, "the beams' sums of log-probabilities")
    cand = np.where(finished[:, :, None], -np.inf, scores[:, :, None] + log_probs)  # (B, K, V)
    cand[:, :, PAD] = np.where(finished, scores, cand[:, :, PAD])
    flat = cand.reshape(b, k * v)
    best = np.argsort(-flat, axis=1, kind="stable")[:, :beam]                       # (B, beam), ties: first
    return np.take_along_axis(flat, best, 1), best // v, best % v


def greedy_search(decoder: StepDecoder, src, src_mask, *, max_len: int) -> Decoded:
    """The most likely token at each step, until EOS or ``max_len`` tokens."""
    src, src_mask = _inputs(src, src_mask, max_len)
    b, s = src.shape
    state = decoder.start(src, src_mask)
    tokens = np.full(b, BOS)
    total, finished = np.zeros(b), np.zeros(b, bool)
    history: list = []
    attn: list = []
    for _ in range(max_len):
        log_probs, state, a = _step(decoder, tokens, state, b, s)
        token = np.where(finished, PAD, log_probs.argmax(1))                        # (B,)
        total = total + np.where(finished, 0.0, log_probs[np.arange(b), token])
        history.append(token)
        attn.append(None if a is None else np.where(finished[:, None], 0.0, a))
        finished, tokens = finished | (token == EOS), token
        if finished.all():
            break
    seqs = np.stack(history, 1)                                                     # (B, T)
    lengths = np.where(finished, (seqs == EOS).argmax(1) + 1, seqs.shape[1])
    att = None if attn[0] is None else np.stack(attn, 1)                            # (B, T, S)
    return _decoded(seqs, lengths, total, total, att)


def beam_search(decoder: StepDecoder, src, src_mask, *, beam: int = 5, max_len: int, alpha: float = 0.0,
                beta: float = 0.0) -> Decoded:
    """Beam search with ``beam`` hypotheses per sentence, ranked at the end by log P / lp + cp.

    Stops when every beam has emitted EOS, or after ``max_len`` tokens (unfinished beams are ranked as they are).
    ``beam=1`` is greedy search.
    """
    src, src_mask = _inputs(src, src_mask, max_len)
    k = validate.integer("beam", beam)
    alpha, beta = _penalty("alpha", alpha), _penalty("beta", beta)
    b, s = src.shape
    state = decoder.reorder(decoder.start(src, src_mask), np.repeat(np.arange(b), k))  # B*K rows
    tokens = np.full((b, k), BOS)
    scores = np.full((b, k), -np.inf)
    scores[:, 0] = 0.0                                            # the K beams are copies: expand beam 0 only
    finished = np.zeros((b, k), bool)
    lengths = np.zeros((b, k), np.int64)
    seqs = np.zeros((b, k, 0), np.int64)                          # (B, K, t) tokens so far
    att: np.ndarray | None = np.zeros((b, k, 0, s))               # (B, K, t, S) attention so far
    for _ in range(max_len):
        log_probs, state, a = _step(decoder, tokens.reshape(-1), state, b * k, s)
        scores, parent, token = beam_step(log_probs.reshape(b, k, -1), scores, finished, k)
        state = decoder.reorder(state, (np.arange(b)[:, None] * k + parent).reshape(-1))
        was = np.take_along_axis(finished, parent, 1)             # (B, K) the parent had finished
        seqs = np.concatenate([_gather(seqs, parent), token[:, :, None]], 2)
        if a is None or att is None:
            att = None
        else:                                                     # the attention that chose the token
            a = np.where(was[:, :, None], 0.0, _gather(a.reshape(b, k, s), parent))
            att = np.concatenate([_gather(att, parent), a[:, :, None]], 2)
        lengths = np.take_along_axis(lengths, parent, 1) + ~was
        finished, tokens = was | (token == EOS), token
        if (finished | np.isneginf(scores)).all():
            break
    final = _final(scores, lengths, att, src_mask, alpha, beta)   # (B, K)
    best = final.argmax(1)[:, None]                               # (B, 1)
    pick = lambda x: _gather(x, best)[:, 0]
    return _decoded(pick(seqs), pick(lengths), pick(final), pick(scores), None if att is None else pick(att))


def exhaustive_search(decoder: StepDecoder, src, src_mask, *, max_len: int, alpha: float = 0.0,
                      beta: float = 0.0) -> Decoded:
    """The best of all sequences of at most ``max_len`` tokens by the final score of :func:`beam_search`
    (tiny vocabularies only: refuses more than 200,000 sequences). For tests."""
    src, src_mask = _inputs(src, src_mask, max_len)
    alpha, beta = _penalty("alpha", alpha), _penalty("beta", beta)
    b, s = src.shape
    state0 = decoder.start(src, src_mask)
    out = []
    for i in range(b):
        state = decoder.reorder(state0, np.array([i]))
        tokens, total = np.array([BOS]), np.zeros(1)
        seqs, att = np.zeros((1, 0), np.int64), np.zeros((1, 0, s))   # (N, t), (N, t, S) the unfinished prefixes
        done = []                                                     # (seqs, totals, attention) of finished ones
        for t in range(max_len):
            log_probs, state, a = _step(decoder, tokens, state, len(tokens), s)
            words = [w for w in range(log_probs.shape[1]) if w not in (PAD, BOS, EOS)]
            if t == 0 and sum(len(words) ** n for n in range(max_len + 1)) > MAX_SEQUENCES:
                raise ConfigError(f"exhaustive_search would score more than {MAX_SEQUENCES:,} sequences "
                                  f"({len(words)} words, max_len={max_len}): use a smaller vocabulary or max_len")
            has_att, a = a is not None, np.zeros((len(tokens), s)) if a is None else a
            done.append((np.concatenate([seqs, np.full((len(seqs), 1), EOS)], 1), total + log_probs[:, EOS],
                         np.concatenate([att, a[:, None]], 1)))
            rows = np.repeat(np.arange(len(tokens)), len(words))
            tokens = np.tile(words, len(seqs))
            total = total[rows] + log_probs[rows, tokens]
            seqs = np.concatenate([seqs[rows], tokens[:, None]], 1)
            att = np.concatenate([att[rows], a[rows, None]], 1)
            state = decoder.reorder(state, rows)
        best = None
        for sq, tot, at in [*done, (seqs, total, att)]:        # padded to max_len: one shape for _final
            w = max_len - sq.shape[1]
            sq, at = np.pad(sq, ((0, 0), (0, w))), np.pad(at, ((0, 0), (0, w), (0, 0)))
            lengths = np.full(len(sq), max_len - w)
            final = _final(tot[None], lengths[None], at[None] if has_att else None, src_mask[i : i + 1], alpha,
                           beta)[0]
            j = int(final.argmax())
            if best is None or final[j] > best[2]:
                best = (sq[j], lengths[j], final[j], tot[j], at[j])
        out.append(best)
    sq, lengths, final, tot, at = (np.stack(x) for x in zip(*out, strict=True))
    return _decoded(sq, lengths, final, tot, at if has_att else None)


# ---- sampling from a language model (Chapter 8) -------------------------------------------------------------

def tempered(log_probs: np.ndarray, temperature) -> np.ndarray:
    """softmax(log p / temperature) over the last axis, in float64: the distribution a sampler draws from. Below 1
    it sharpens p (towards the most likely token), above 1 it flattens it (towards uniform). ``temperature``: a
    number > 0, or one per row (an array that broadcasts against ``log_probs[..., :1]``)."""
    t = _temperatures(temperature)
    if np.any(t == 0):
        raise ConfigError("temperature must be > 0 here (0, greedy, has no distribution: use sample(...) with 0)")
    z = np.asarray(log_probs, dtype=np.float64) / t
    z = np.exp(z - z.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def _temperatures(temperature) -> np.ndarray:
    t = np.asarray(temperature)
    if t.dtype.kind not in "iuf" or not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ConfigError(f"temperature must be a finite number >= 0 (0 is greedy), or one per row; "
                          f"got {temperature!r}")
    return t.astype(np.float64)


def sample(model, prompt, *, steps: int, temperature=1.0, seed: int = 0) -> np.ndarray:
    """Continue each row of ``prompt`` (B, P) int ids by ``steps`` tokens from a language model, each drawn from
    ``tempered(log p, temperature)`` of the next token; ``temperature`` is one number or one per row, and 0 takes
    the most likely token (greedy). Returns (B, steps).

    The model takes part through ``start(prefix)`` (B, P') → state and ``step(tokens, state)`` → (log_probs (B, V),
    state, _), and reads at most ``model.context`` tokens: when its cache is full, it starts again from the last
    half of the text so far. The draws come from NumPy (seeded), so both frameworks' models sample alike."""
    text = np.asarray(prompt)
    validate.id_shape("prompt", text.shape)
    steps = validate.integer("steps", steps)
    t = _temperatures(temperature)
    if t.ndim > 1 or (t.ndim == 1 and len(t) != len(text)):
        raise ShapeError(f"temperature has shape {t.shape}: give one number, or one per prompt row "
                         f"(prompt shape {text.shape})")
    t = np.broadcast_to(t, (len(text),))
    greedy = t == 0
    window = int(getattr(model, "context", np.iinfo(np.int32).max))
    rng = np.random.default_rng(seed)

    def restart(keep: int):                          # the cache holds all of the last `keep` tokens but the newest
        return model.start(text[:, text.shape[1] - keep:-1]), keep - 1

    state, cached = restart(min(text.shape[1], window))
    for _ in range(steps):
        if cached == window:
            state, cached = restart(max(window // 2, 1))
        log_probs, state, _ = model.step(text[:, -1], state)
        cached += 1
        nxt = log_probs.argmax(-1)
        if not greedy.all():
            cdf = tempered(log_probs[~greedy], t[~greedy, None]).cumsum(-1)           # (rows, V)
            drawn = (cdf < rng.random((len(cdf), 1)) * cdf[:, -1:]).sum(-1)
            nxt[~greedy] = np.minimum(drawn, cdf.shape[-1] - 1)
        text = np.concatenate([text, nxt[:, None].astype(text.dtype)], axis=1)
    return text[:, text.shape[1] - steps:]


# ---- helpers -------------------------------------------------------------------------------------------------

def _inputs(src, src_mask, max_len):
    src, src_mask = np.asarray(src), np.asarray(src_mask)
    validate.id_shape("src", src.shape)
    validate.some_rows("src", src.shape)
    validate.same_shape("src_mask", src_mask.shape, src.shape, "src (B, S)")
    validate.mask_dtype("src_mask", src_mask.dtype, src_mask.shape)
    if src_mask.dtype != bool and not np.isin(src_mask, (0, 1)).all():
        raise validate.bad_mask("src_mask", np.unique(src_mask[~np.isin(src_mask, (0, 1))])[:4])
    validate.integer("max_len", max_len)
    return src, src_mask.astype(bool)


def _penalty(name, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) < math.inf:
        raise ConfigError(f"{name} must be a finite number >= 0 (0 turns the penalty off); got {value!r}")
    return float(value)


def _step(decoder, tokens, state, n, s):
    """decoder.step, its outputs checked and as float64; PAD and BOS are never chosen."""
    log_probs, state, attn = decoder.step(tokens, state)
    log_probs = np.array(log_probs, dtype=np.float64)
    if log_probs.ndim != 2 or log_probs.shape[0] != n:
        raise ShapeError(f"decoder.step must return log_probs (N, V) = ({n}, V) for {n} tokens; "
                         f"got {log_probs.shape}")
    if attn is not None:
        attn = np.asarray(attn, dtype=np.float64)
        if attn.shape != (n, s):
            raise ShapeError(f"decoder.step must return attention (N, S) = {(n, s)} or None; got {attn.shape}")
    if np.isnan(log_probs).any():
        rows = np.flatnonzero(np.isnan(log_probs).any(1))
        raise InputError(f"decoder.step returned NaN log-probs (rows {rows[:5].tolist()}): a search cannot rank "
                         f"NaN; the model has diverged, or its weights or inputs hold NaN")
    log_probs[:, [PAD, BOS]] = -np.inf
    return log_probs, state, attn


def _rankable(name: str, x: np.ndarray, what: str) -> None:
    """Numbers a search can rank: finite, or -inf (a token or beam never chosen); NaN would sort last and drop out
    without a word, +inf win every time."""
    bad = np.isnan(x) | np.isposinf(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(f"{name} must hold {what}: finite numbers, or -inf for one never chosen; got {x[first]} at "
                         f"index {first} ({int(bad.sum())} NaN or +inf in all): a search cannot rank them (the model "
                         f"has diverged, or its weights or inputs hold NaN)")


def _gather(x, index):
    """Rows ``index`` (B, K') of x (B, K, ...) along the beam axis."""
    return x[np.arange(len(x))[:, None], index]


def _final(scores, lengths, att, src_mask, alpha, beta):
    """Final scores (B, K): scores / lp + cp."""
    final = scores / ((5.0 + lengths) / 6.0) ** alpha
    if beta and att is not None:
        coverage = np.clip(att.sum(2), EPS, 1.0)                                 # (B, K, S)
        final = final + beta * (np.log(coverage) * src_mask[:, None]).sum(2)
    return final


def _decoded(seqs, lengths, final, total, att) -> Decoded:
    """seqs (B, T), lengths (B,), final and total (B,), att (B, T, S) or None, as a :class:`Decoded`."""
    tokens = [[int(t) for t in row[:n] if t not in (PAD, BOS, EOS)] for row, n in zip(seqs, lengths, strict=True)]
    attention = None if att is None else [a[:n] for a, n in zip(att, lengths, strict=True)]
    return Decoded(tokens, np.asarray(final, float), np.asarray(total, float), attention)

