"""Chapter 5 decoding in NumPy: beam search against exhaustive search and greedy search on a fake decoder whose
next-token distribution depends on the whole prefix, the GNMT penalties, batching, errors, and the exercise
checker of one beam-search step, which names each mistake."""

import re
import threading
import zlib

import numpy as np
import pytest

from attention_course import exercises
from attention_course.core import decode
from attention_course.core.decode import beam_search, beam_step, exhaustive_search, greedy_search
from attention_course.core.errors import ConfigError, InputError, ShapeError
from attention_course.core.text import BOS, EOS, PAD

pytestmark = pytest.mark.chapter(5, 8)   # Chapters 5 and 8: `make test CHAPTERS=...` picks by it

SRC = np.array([[5, 6, 7], [8, 9, 0], [4, 0, 0]])          # (B, S) = (3, 3), padded at the end
MASK = SRC != PAD


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


class FakeDecoder:
    """Log-probs (V,) and attention (S,) of each row drawn from a random table keyed by its source sentence and
    its whole prefix. The state is a plain list of (source, mask, prefix), one per row."""

    def __init__(self, seed=0, vocab=6, sharp=1.0, attention=True):
        self.seed, self.vocab, self.sharp, self.attention = seed, vocab, sharp, attention
        self.steps = 0

    def start(self, src, src_mask):
        return [(tuple(map(int, s)), tuple(map(bool, m)), ()) for s, m in zip(src, src_mask, strict=True)]

    def row(self, src, mask, prefix):
        rng = np.random.default_rng([self.seed, zlib.crc32(repr((src, prefix)).encode())])
        a = np.where(mask, np.exp(rng.normal(size=len(mask))), 0.0)
        return _log_softmax(rng.normal(size=self.vocab) * self.sharp), a / a.sum()

    def step(self, tokens, state):
        self.steps += 1
        state = [(s, m, p + (int(t),)) for (s, m, p), t in zip(state, tokens, strict=True)]
        rows = [self.row(*st) for st in state]
        attention = np.stack([a for _, a in rows]) if self.attention else None
        return np.stack([lp for lp, _ in rows]), state, attention

    def reorder(self, state, index):
        return [state[int(i)] for i in index]


def _same(a, b):
    assert a.tokens == b.tokens
    np.testing.assert_allclose(a.scores, b.scores, rtol=1e-12)
    np.testing.assert_allclose(a.log_probs, b.log_probs, rtol=1e-12)
    assert (a.attention is None) == (b.attention is None)
    for x, y in zip(a.attention or [], b.attention or [], strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12)


# ---- the searches ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha, beta", [(0.0, 0.0), (0.6, 0.0), (0.6, 0.3)])
@pytest.mark.parametrize("seed", range(4))
def test_a_beam_as_wide_as_every_sequence_is_exhaustive_search(seed, alpha, beta):
    dec = FakeDecoder(seed)
    # 3 words (UNK, 4, 5) and EOS, max_len 4: 1 + 3 + 9 + 27 finished and 81 unfinished sequences
    wide = beam_search(dec, SRC, MASK, beam=121, max_len=4, alpha=alpha, beta=beta)
    _same(wide, exhaustive_search(dec, SRC, MASK, max_len=4, alpha=alpha, beta=beta))


@pytest.mark.parametrize("seed", range(4))
def test_beam_1_is_greedy(seed):
    dec = FakeDecoder(seed)
    _same(beam_search(dec, SRC, MASK, beam=1, max_len=6), greedy_search(dec, SRC, MASK, max_len=6))
    assert beam_search(dec, SRC, MASK, beam=1, max_len=6, alpha=0.6, beta=0.2).tokens == \
        greedy_search(dec, SRC, MASK, max_len=6).tokens


@pytest.mark.parametrize("alpha", [0.0, 0.6])
@pytest.mark.parametrize("seed", range(4))
def test_no_beam_beats_exhaustive_search(seed, alpha):
    dec = FakeDecoder(seed)
    best = exhaustive_search(dec, SRC, MASK, max_len=4, alpha=alpha).scores
    for k in (1, 2, 3, 5, 8, 20):
        got = beam_search(dec, SRC, MASK, beam=k, max_len=4, alpha=alpha)
        assert (got.scores <= best + 1e-12).all()
        if alpha == 0:
            np.testing.assert_array_equal(got.scores, got.log_probs)


def test_a_wider_beam_can_find_a_worse_translation():
    """Beam search is not monotone in the beam size: with 2 beams, the greedy path is dropped at step 2 for a
    prefix whose continuations all turn out worse. (So a chapter cannot assert that wider is always better.)"""
    dec, src = FakeDecoder(117), SRC[:1]
    one, two = (beam_search(dec, src, src != PAD, beam=k, max_len=5) for k in (1, 2))
    assert one.tokens == [[5, 1]] and two.tokens == [[5, 4, 1]]
    assert two.log_probs[0] < one.log_probs[0] - 0.5


@pytest.mark.parametrize("where, bad, rule", [
    ("log_probs", np.nan, "log_probs must hold log-probabilities"), ("log_probs", np.inf,
                                                                      "log_probs must hold log-probabilities"),
    ("scores", np.nan, "scores must hold the beams' sums of log-probabilities"),
    ("scores", np.inf, "scores must hold the beams' sums of log-probabilities"),
])
def test_beam_step_refuses_nan_and_plus_inf_that_it_cannot_rank(where, bad, rule):
    """A NaN candidate used to sort last and drop out without a word (a NaN score, a +inf one first)."""
    log_probs, scores = np.log(np.full((2, 2, 5), 0.2)), np.array([[0.0, -np.inf], [-1.0, -2.0]])
    {"log_probs": log_probs, "scores": scores}[where][1, 1, ...] = bad
    index = "(1, 1, 0)" if where == "log_probs" else "(1, 1)"
    with pytest.raises(InputError, match=re.escape(rule) + rf".*got {bad} at index {re.escape(index)}"):
        beam_step(log_probs, scores, np.zeros((2, 2), bool), 2)


def test_beam_step_takes_minus_inf_log_probs_and_scores():
    log_probs = np.log([[[0.3, 0.3, 0.7], [0.5, 0.5, 0.3]]])
    log_probs[0, 0, 0] = log_probs[0, 1, 2] = -np.inf                     # log 0: a token never chosen
    scores, parent, token = beam_step(log_probs, np.array([[0.0, -np.inf]]), np.zeros((1, 2), bool), 2)
    assert parent.tolist() == [[0, 0]] and token.tolist() == [[2, 1]]


def test_finished_hypotheses_never_grow(monkeypatch):
    steps = []

    def recorded(log_probs, scores, finished, beam):
        out = beam_step(log_probs, scores, finished, beam)
        steps.append((scores, finished, out))
        return out

    monkeypatch.setattr(decode, "beam_step", recorded)
    dec = FakeDecoder(1, sharp=2.0)
    got = beam_search(dec, SRC, MASK, beam=4, max_len=8, alpha=0.6)
    assert any(f.any() for _, f, _ in steps)
    for scores, finished, (new, parent, token) in steps:
        rows = np.arange(len(scores))[:, None]
        was = finished[rows, parent]
        assert (token[was] == PAD).all() and (new[was] == scores[rows, parent][was]).all()
    assert len(steps) == dec.steps
    for tokens, attention in zip(got.tokens, got.attention, strict=True):
        assert attention.shape == (len(tokens) + 1, 3)            # one step per token, and the EOS step
        assert not {PAD, BOS, EOS} & set(tokens)


def test_decoding_stops_when_every_beam_has_finished():
    class Short(FakeDecoder):                                   # EOS likely at every step
        def step(self, tokens, state):
            lp, state, a = super().step(tokens, state)
            lp[:, EOS] += 2.0
            return _log_softmax(lp), state, a

    for search in (greedy_search, lambda *a, **k: beam_search(*a, beam=3, **k)):
        dec = Short(0)
        search(dec, SRC, MASK, max_len=50)
        assert dec.steps < 20


def test_unfinished_hypotheses_are_ranked_at_max_len():
    dec = FakeDecoder(3)
    got = beam_search(dec, SRC, MASK, beam=3, max_len=1, alpha=0.6)
    exact = exhaustive_search(dec, SRC, MASK, max_len=1, alpha=0.6)
    _same(got, exact)
    for tokens, attention in zip(got.tokens, got.attention, strict=True):
        assert len(attention) == len(tokens) + (len(tokens) == 0)  # a cut hypothesis has no EOS step


def test_length_normalisation_is_applied_once():
    dec = FakeDecoder(2)
    got = beam_search(dec, SRC, MASK, beam=3, max_len=6, alpha=0.6)
    lengths = np.array([len(a) for a in got.attention])          # |Y|, the EOS counted
    np.testing.assert_allclose(got.scores, got.log_probs / ((5 + lengths) / 6) ** 0.6)


class Ignores:
    """Two translations of a 3-word source: word 4 (likelier, p = 0.6) then EOS attends to source words 1 and 2
    only; word 5 (p = 0.4) then EOS reads word 3 at its second step. The state is the word of step 1 (0 before)."""

    def start(self, src, src_mask):
        return np.zeros(len(src), np.int64)

    def step(self, tokens, state):
        word = np.where(tokens == BOS, 0, np.where(state == 0, tokens, state))
        lp = np.log(np.full((len(tokens), 6), 1e-6))
        lp[word == 0, 4:] = np.log([0.6, 0.4])
        lp[word != 0, EOS] = 0.0
        att = np.where((word == 5)[:, None], [0.0, 0.0, 1.0], [0.5, 0.5, 0.0])   # (N, S)
        return lp, word, att

    def reorder(self, state, index):
        return state[index]


def test_the_coverage_penalty_prefers_the_translation_that_reads_every_word():
    src = np.array([[7, 8, 9]])
    plain = beam_search(Ignores(), src, src != PAD, beam=2, max_len=3)
    covered = beam_search(Ignores(), src, src != PAD, beam=2, max_len=3, beta=0.2)
    assert plain.tokens == [[4]] and covered.tokens == [[5]]
    # coverage of [5, EOS]: 0.5, 0.5, 1 on the three words; of [4, EOS]: 1, 1, 0
    np.testing.assert_allclose(covered.scores, covered.log_probs + 0.2 * np.log([0.5, 0.5, 1.0]).sum())
    assert exhaustive_search(Ignores(), src, src != PAD, max_len=3, beta=0.2).tokens == [[5]]


def test_the_coverage_penalty_ignores_padding():
    src = np.array([[7, 8, 0]])
    got = beam_search(Ignores(), src, src != PAD, beam=2, max_len=3, beta=0.2)
    assert got.tokens == [[4]]                                  # word 3 is padding: "4" covers the sentence


@pytest.mark.parametrize("search", ["greedy", "beam", "exhaustive"])
def test_decoding_a_batch_is_decoding_each_sentence(search):
    run = {"greedy": lambda d, s, m: greedy_search(d, s, m, max_len=5),
           "beam": lambda d, s, m: beam_search(d, s, m, beam=3, max_len=5, alpha=0.6, beta=0.2),
           "exhaustive": lambda d, s, m: exhaustive_search(d, s, m, max_len=3, alpha=0.6)}[search]
    dec = FakeDecoder(5)
    together = run(dec, SRC, MASK)
    for i in range(len(SRC)):
        alone = run(dec, SRC[i : i + 1], MASK[i : i + 1])
        assert alone.tokens[0] == together.tokens[i]
        np.testing.assert_allclose(alone.scores[0], together.scores[i], rtol=1e-12)
        np.testing.assert_allclose(alone.attention[0], together.attention[i], rtol=1e-12)


def test_one_step_call_per_time_step():
    dec = FakeDecoder(0)
    beam_search(dec, SRC, MASK, beam=4, max_len=3)
    assert dec.steps <= 3


def test_a_decoder_without_attention():
    dec = FakeDecoder(0, attention=False)
    for got in (greedy_search(dec, SRC, MASK, max_len=4), beam_search(dec, SRC, MASK, max_len=4, beta=0.5),
                exhaustive_search(dec, SRC, MASK, max_len=3, beta=0.5)):
        assert got.attention is None
        np.testing.assert_array_equal(got.scores, got.log_probs)   # no coverage without attention


def test_beam_step_takes_the_top_k_jointly_and_expands_one_copy_at_the_first_step():
    with np.errstate(divide="ignore"):
        lp = np.log(np.array([[[0.0, 0, 0, 0.1, 0.5, 0.4], [0.0, 0, 0, 0.1, 0.5, 0.4]]]))   # (1, 2, 6)
    first = beam_step(lp, np.array([[0.0, -np.inf]]), np.zeros((1, 2), bool), 2)
    np.testing.assert_array_equal(first[1], [[0, 0]])            # both from beam 0, no copy
    np.testing.assert_array_equal(first[2], [[4, 5]])
    scores, parent, token = beam_step(lp, np.array([[-0.1, -5.0]]), np.array([[False, True]]), 2)
    np.testing.assert_allclose(scores, [[-0.1 + np.log(0.5), -0.1 + np.log(0.4)]])   # joint: beam 0 twice
    np.testing.assert_array_equal(parent, [[0, 0]])
    scores, parent, token = beam_step(lp, np.array([[-0.1, -0.2]]), np.array([[False, True]]), 2)
    np.testing.assert_allclose(scores, [[-0.2, -0.1 + np.log(0.5)]])   # the finished beam: PAD at zero cost
    np.testing.assert_array_equal(parent, [[1, 0]])
    np.testing.assert_array_equal(token, [[PAD, 4]])


# ---- errors ----------------------------------------------------------------------------------------------------

def test_bad_arguments_are_named():
    dec = FakeDecoder(0)
    with pytest.raises(ConfigError, match="beam must be >= 1; got 0"):
        beam_search(dec, SRC, MASK, beam=0, max_len=3)
    with pytest.raises(ConfigError, match="max_len must be >= 1; got 0"):
        greedy_search(dec, SRC, MASK, max_len=0)
    with pytest.raises(ConfigError, match=r"max_len must be a whole number"):
        beam_search(dec, SRC, MASK, max_len=2.5)
    with pytest.raises(ShapeError, match=r"src_mask must have the shape of src \(B, S\), \(3, 3\); got \(3, 2\)"):
        beam_search(dec, SRC, MASK[:, :2], max_len=3)
    with pytest.raises(ShapeError, match=r"src must be 2-D token ids \(batch, T\); got shape \(3,\)"):
        greedy_search(dec, SRC[:, 0], MASK[:, 0], max_len=3)
    with pytest.raises(ConfigError, match="alpha must be a finite number >= 0.*got -0.5"):
        beam_search(dec, SRC, MASK, max_len=3, alpha=-0.5)
    with pytest.raises(ConfigError, match="more than 200,000 sequences"):
        exhaustive_search(FakeDecoder(0, vocab=20), SRC, MASK, max_len=5)


def test_a_decoder_that_returns_the_wrong_shapes():
    class Wrong(FakeDecoder):
        def step(self, tokens, state):
            lp, state, a = super().step(tokens, state)
            return lp, state, a[:, :2]

    with pytest.raises(ShapeError, match=r"attention \(N, S\) = \(9, 3\) or None; got \(9, 2\)"):
        beam_search(Wrong(0), SRC, MASK, beam=3, max_len=3)


# ---- the exercise checker ----------------------------------------------------------------------------------------

def _top(cand, beam):
    b, k, v = cand.shape
    flat = cand.reshape(b, -1)
    best = np.argsort(-flat, axis=1)[:, :beam]
    return np.take_along_axis(flat, best, 1), best // v, best % v


def _candidates(lp, s, f):
    c = np.where(f[:, :, None], -np.inf, s[:, :, None] + lp)
    c[:, :, PAD] = np.where(f, s, c[:, :, PAD])
    return c


def per_beam(lp, s, f, beam):
    c = _candidates(lp, s, f)
    return c.max(-1), np.broadcast_to(np.arange(c.shape[1]), c.shape[:2]).copy(), c.argmax(-1)


def beam_0_only(lp, s, f, beam):
    top = np.argsort(-_candidates(lp, s, f), axis=-1)[:, 0, :beam]    # top K over V of beam 0, not of all
    return np.take_along_axis(_candidates(lp, s, f)[:, 0], top, 1), np.zeros_like(top), top


def copies_expanded(lp, s, f, beam):
    return _top(_candidates(lp, np.where(np.isinf(s), 0.0, s), f), beam)


def keeps_growing(lp, s, f, beam):
    return _top(s[:, :, None] + lp, beam)


def pad_with_a_cost(lp, s, f, beam):
    c = np.where(f[:, :, None], -np.inf, s[:, :, None] + lp)
    c[:, :, PAD] = np.where(f, s + lp[:, :, PAD], c[:, :, PAD])
    return _top(c, beam)


def finished_dropped(lp, s, f, beam):
    return _top(np.where(f[:, :, None], -np.inf, s[:, :, None] + lp), beam)


def length_normalised(lp, s, f, beam):
    scores, parent, token = beam_step(lp, s, f, beam)
    return scores / ((5 + 2) / 6) ** 0.6, parent, token


def indices_swapped(lp, s, f, beam):
    scores, parent, token = beam_step(lp, s, f, beam)
    flat = parent * lp.shape[2] + token
    return scores, flat // lp.shape[1] % lp.shape[1], flat % lp.shape[2]


def wrong_axis(lp, s, f, beam):
    """Flattened over (V, K) instead of (K, V), the indices decoded as if over (K, V)."""
    b, k, v = lp.shape
    flat = _candidates(lp, s, f).transpose(0, 2, 1).reshape(b, -1)
    best = np.argsort(-flat, axis=1)[:, :beam]
    return np.take_along_axis(flat, best, 1), best // v, best % v


def no_parent_score(lp, s, f, beam):
    scores, parent, token = beam_step(lp, s, f, beam)
    return lp[np.arange(len(s))[:, None], parent, token], parent, token


def nan_scores(lp, s, f, beam):
    scores, parent, token = beam_step(lp, s, f, beam)
    scores[:, -1] = np.nan
    return scores, parent, token


@pytest.mark.parametrize("seed", [0, 1, None])
def test_the_beam_step_checker_passes_a_correct_step(seed, capsys):
    exercises.beam_step(beam_step, seed=seed)
    reordered = lambda lp, s, f, beam: tuple(x[:, ::-1] for x in beam_step(lp, s, f, beam))
    exercises.beam_step(reordered, seed=seed)                  # the K results may come in any order
    in_float32 = lambda lp, s, f, beam: beam_step(lp.astype("float32"), s.astype("float32"), f, beam)
    exercises.beam_step(in_float32, seed=seed, trials=6)
    assert capsys.readouterr().out == ("✓ beam step: correct on 20 random inputs\n" * 2
                                       + "✓ beam step: correct on 6 random inputs\n")


@pytest.mark.parametrize("seed", [0, 1, None])
@pytest.mark.parametrize("wrong, needle", [
    (per_beam, "take the top K over all K×V candidates of a sentence jointly"),
    (beam_0_only, "take the top K over all K×V candidates of a sentence jointly"),
    (copies_expanded, "the first step is not de-duplicated"),
    (keeps_growing, r"finished hypotheses keep growing.*took token \d+, not PAD"),
    (pad_with_a_cost, "finished hypotheses keep growing.*took PAD, but its score changed"),
    (finished_dropped, "a finished hypothesis was dropped"),
    (length_normalised, "is the length normalisation applied in the step.*applied twice"),
    (indices_swapped, r"parent or token indices are not: .*parent = i // V and token = i % V"),
    (wrong_axis, r"parent or token indices are not"),
    (no_parent_score, "the scores do not include the parent's score"),
    (nan_scores, "the scores contain NaN"),
    (lambda lp, s, f, beam: beam_step(lp, s, f, beam)[:2], r"return a triple \(scores, parent, token\)"),
    (lambda lp, s, f, beam: tuple(x[:, :-1] for x in beam_step(lp, s, f, beam)), r"scores has shape \(\d, \d\); "
     r"expected \(B, K\)"),
    (lambda lp, s, f, beam: (lambda r: (r[0], r[1].astype(float), r[2]))(beam_step(lp, s, f, beam)),
     "parent and token must be integer indices; got float64"),
    (lambda lp, s, f, beam: (lambda r: (r[0], r[1], r[2] + lp.shape[2]))(beam_step(lp, s, f, beam)),
     r"token in \[0, V\)"),
])
def test_the_beam_step_checker_names_each_mistake(wrong, needle, seed):
    with np.errstate(all="ignore"), pytest.raises(exercises.ExerciseError, match=needle):
        exercises.beam_step(wrong, seed=seed)


def test_the_beam_step_checker_refuses_bad_arguments_and_reports_errors(monkeypatch):
    with pytest.raises(ConfigError, match="trials must be a positive integer"):
        exercises.beam_step(beam_step, trials=0)
    with pytest.raises(ConfigError, match="pass your function itself"):
        exercises.beam_step(None)
    with pytest.raises(exercises.ExerciseError, match=r"raised KeyError: 'oops'\n  on log_probs \(\d+, \d+, \d+\), "
                                                   r"scores \(\d+, \d+\), finished \(\d+, \d+\), beam \d"):
        exercises.beam_step(lambda lp, s, f, beam: {}["oops"], seed=0)
    def stub(log_probs, scores, finished, beam):
        raise NotImplementedError("Exercise: write your solution here")

    with pytest.raises(NotImplementedError, match="write your solution"):
        exercises.beam_step(stub)
    monkeypatch.setenv("COURSE_CHECK_TIMEOUT", "0.2")
    release = threading.Event()
    try:
        with pytest.raises(exercises.ExerciseError, match=r"did not return within 0.2 s on log_probs \("):
            exercises.beam_step(lambda *a: release.wait(30), seed=0)
    finally:
        release.set()
