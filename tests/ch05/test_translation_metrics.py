"""Chapter 5's evaluation code (sacreBLEU scores, BLEU by length, AER, coverage, over/under-translation) and the
synthetic language pair with gold alignments."""

import numpy as np
import pytest
import sacrebleu

from attention_course.ch05_neural_machine_translation import metrics as tm
from attention_course.data import synthetic

pytestmark = pytest.mark.chapter(5, 8)   # Chapters 5 and 8: `make test CHAPTERS=...` picks by it

HYPS = ["The cat sat on the mat.", "A dog barked loudly at the mailman.", "It is raining today"]
REFS = ["The cat sat on a mat.", "The dog barked at the mailman.", "It rains today."]


# ---- sacreBLEU scores -------------------------------------------------------------------------------------------

def test_bleu_agrees_with_sacrebleu():
    score = tm.bleu(HYPS, REFS)
    direct = sacrebleu.corpus_bleu(HYPS, [REFS], lowercase=True)
    assert score.score == pytest.approx(direct.score)
    assert 0 < score.score < 100
    cased = tm.bleu(HYPS, REFS, lowercase=False)
    assert cased.score == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS]).score)
    assert "case:mixed" in cased.signature and "case:lc" in score.signature


def test_bleu_of_identical_text_is_100_and_its_str_shows_the_signature():
    score = tm.bleu(REFS, REFS)
    assert score.score == pytest.approx(100.0)
    assert score.signature == f"nrefs:1|case:lc|eff:no|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
    assert str(score) == f"BLEU 100.0 ({score.signature})"
    assert str(tm.Score(23.44, "sig")) == "BLEU 23.4 (sig)"
    with pytest.raises(AttributeError):
        score.score = 1.0  # type: ignore[misc]


def test_chrf_agrees_with_sacrebleu():
    score = tm.chrf(HYPS, REFS)
    lowered = sacrebleu.corpus_chrf([h.lower() for h in HYPS], [[r.lower() for r in REFS]])
    assert score.score == pytest.approx(lowered.score)
    assert tm.chrf(HYPS, REFS, lowercase=False).score == pytest.approx(sacrebleu.corpus_chrf(HYPS, [REFS]).score)
    assert str(score).startswith("chrF2 ") and "nc:6" in score.signature
    assert tm.chrf(REFS, REFS).score == pytest.approx(100.0)


def test_mismatched_lengths_name_both():
    with pytest.raises(ValueError, match="3 hypotheses but 2 references"):
        tm.bleu(HYPS, REFS[:2])
    with pytest.raises(ValueError, match="2 hypotheses but 3 references"):
        tm.chrf(HYPS[:2], REFS)
    with pytest.raises(ValueError, match="1 hypotheses but 0 references"):
        tm.repeated_words(["a"], [])
    with pytest.raises(ValueError, match="detokenised strings"):
        tm.bleu([["the", "cat"]], ["the cat"])  # type: ignore[list-item]


def test_bleu_by_length_buckets():
    hyps = HYPS + ["one two three four five six seven eight nine ten", "x y"]
    refs = REFS + ["one two three four five six seven eight nine eleven", "x y"]
    lengths = [3, 7, 4, 12, 2]
    df = tm.bleu_by_length(hyps, refs, lengths, [1, 5, 9, 13])
    assert list(df.columns) == ["bucket", "lo", "hi", "n", "bleu"]
    assert df["bucket"].tolist() == ["1-4", "5-8", "9-12"]           # 13+ is empty: left out
    assert df["lo"].tolist() == [1, 5, 9] and df["hi"].tolist() == [4, 8, 12]
    assert df["n"].tolist() == [3, 1, 1] and df["n"].sum() == len(hyps)
    first = [0, 2, 4]
    expected = sacrebleu.corpus_bleu([hyps[i] for i in first], [[refs[i] for i in first]], lowercase=True).score
    assert df["bleu"].iloc[0] == pytest.approx(expected)
    assert df["bleu"].iloc[2] == pytest.approx(tm.bleu([hyps[3]], [refs[3]]).score)

    open_end = tm.bleu_by_length(hyps, refs, lengths, [1, 5])
    assert open_end["bucket"].tolist() == ["1-4", "5+"] and open_end["n"].tolist() == [3, 2]
    assert open_end["hi"].isna().tolist() == [False, True]
    with pytest.raises(ValueError, match="below the first edge 3"):
        tm.bleu_by_length(hyps, refs, lengths, [3, 5])
    with pytest.raises(ValueError, match="strictly increasing"):
        tm.bleu_by_length(hyps, refs, lengths, [1, 5, 5])
    with pytest.raises(ValueError, match="one length per sentence"):
        tm.bleu_by_length(hyps, refs, lengths[:2], [1])


# ---- alignment ----------------------------------------------------------------------------------------------------

def test_attention_alignment_takes_the_argmax_within_the_lengths():
    w = np.array([[0.1, 0.7, 0.2, 0.0],
                  [0.6, 0.1, 0.3, 0.0],
                  [0.1, 0.1, 0.1, 0.7],     # argmax on a padded source position: ignored with src_len=3
                  [0.3, 0.3, 0.4, 0.0]])    # a padded target row
    assert tm.attention_alignment(w, src_len=3, tgt_len=3) == {(1, 0), (0, 1), (0, 2)}
    assert tm.attention_alignment(w, src_len=4, tgt_len=4) == {(1, 0), (0, 1), (3, 2), (2, 3)}
    with pytest.raises(ValueError, match="src_len=5"):
        tm.attention_alignment(w, src_len=5, tgt_len=3)


def test_aer():
    gold = [{(0, 0), (1, 2), (2, 1)}, {(0, 1), (1, 0)}]
    assert tm.alignment_error_rate(gold, gold) == 0.0
    disjoint = [{(0, 1), (1, 1)}, {(0, 0)}]
    assert tm.alignment_error_rate(disjoint, gold) == 1.0
    # by hand: A∩S = {(0,0)} + {(1,0)} = 2 links, |A| = 2 + 2, |S| = 3 + 2 → 1 - 4/9
    predicted = [{(0, 0), (1, 1)}, {(1, 0), (1, 1)}]
    assert tm.alignment_error_rate(predicted, gold) == pytest.approx(5 / 9)
    with pytest.raises(ValueError, match="1 predicted alignments but 2 gold"):
        tm.alignment_error_rate(predicted[:1], gold)
    with pytest.raises(ValueError, match="undefined"):
        tm.alignment_error_rate([set()], [set()])


def test_shifted():
    a = {(0, 0), (2, 1), (1, 2)}
    assert tm.shifted(a, 1) == {(0, 1), (2, 2), (1, 3)}
    assert tm.shifted(a, -1) == {(2, 0), (1, 1)}              # (0, -1) falls off
    assert tm.shifted(tm.shifted(a, 1), -1) == a
    # attention that is one step late: shifting it back recovers the gold alignment exactly
    late = [tm.shifted(a, 1)]
    assert tm.alignment_error_rate(late, [a]) == 1.0
    assert tm.alignment_error_rate([tm.shifted(late[0], -1)], [a]) == 0.0


def test_attention_entropy():
    one_hot = np.eye(3)
    assert tm.attention_entropy(one_hot, np.ones(3, bool)) == pytest.approx(0.0)
    uniform = np.full((2, 4), 0.25)
    assert tm.attention_entropy(uniform, None) == pytest.approx(np.log(4))
    # padded source: renormalised over the real tokens; padded target rows left out
    w = np.array([[0.5, 0.3, 0.2], [0.45, 0.45, 0.1], [0.1, 0.1, 0.8]])
    src_mask, tgt_mask = np.array([1, 1, 0], bool), np.array([0, 1, 0], bool)
    assert tm.attention_entropy(w, src_mask, tgt_mask=tgt_mask) == pytest.approx(np.log(2))
    # a list of matrices of different shapes: the mean over all rows
    assert tm.attention_entropy([one_hot, uniform], None) == pytest.approx(2 * np.log(4) / 5)


# ---- coverage, over- and under-translation -------------------------------------------------------------------------

def test_coverage_counts():
    # target steps (rows) x source tokens (columns); totals per source token: 2.0, 0.0, 1.0
    repeats = np.array([[1.0, 0.0, 0.0],
                        [1.0, 0.0, 0.0],
                        [0.0, 0.0, 1.0]])
    # totals 1.0, 0.9 and a padded column
    good = np.array([[0.9, 0.1, 0.0],
                     [0.1, 0.8, 0.1]])
    counts = tm.coverage_counts([repeats, good], [np.ones(3, bool), np.array([1, 1, 0], bool)])
    assert counts == {"dropped": 1, "repeated": 1, "source_tokens": 5}
    assert tm.coverage_counts([good], None, low=0.95)["dropped"] == 2    # 0.9 and the 0.1 of the padded column
    padded = np.stack([repeats, np.vstack([good, np.zeros(3)])])         # (n, T, S) with a padded target row
    counts = tm.coverage_counts(padded, np.array([[1, 1, 1], [1, 1, 0]], bool),
                                tgt_mask=np.array([[1, 1, 1], [1, 1, 0]], bool))
    assert counts == {"dropped": 1, "repeated": 1, "source_tokens": 5}
    with pytest.raises(ValueError, match="1 rows for 2 attention matrices"):
        tm.coverage_counts([repeats, good], [np.ones(3, bool)])


def test_repeated_and_missing_words():
    assert tm.repeated_words(["the the cat cat"], ["the cat"]) == 2
    assert tm.repeated_words(["The cat, the cat!"], ["the cat sat on the mat"]) == 1   # "the" x2 is in the ref
    assert tm.repeated_words(["a cat"], ["the dog"]) == 0                              # wrong, but not repeated
    assert tm.repeated_words(["dog dog dog"], ["cat"]) == 2                            # beyond 1
    assert tm.missing_words(["the cat"], ["the black cat."]) == 1
    assert tm.missing_words(["the cat"], ["The cat sat on the mat"]) == 4              # sat, on, the, mat
    assert tm.missing_words(["the the cat cat"], ["the cat"]) == 0
    assert tm.repeated_words(["x x", "y"], ["x", "y y"]) == 1 and tm.missing_words(["x x", "y"], ["x", "y y"]) == 1
    assert tm.repeated_words([], []) == 0 == tm.missing_words([], [])


# ---- the synthetic language pair ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pairs():
    return synthetic.aligned_pair_task(500, seed=0)


def _diagonal(s: int, t: int) -> set[tuple[int, int]]:
    """The monotone alignment: target word j to source word round(j * S / T)."""
    return {(min(int((j + 0.5) * s / t), s - 1), j) for j in range(t)}


def test_every_target_word_is_aligned_to_one_source_word(pairs):
    lexicon = synthetic.aligned_pair_lexicon()
    assert len(pairs) == 500
    one_to_many = one_to_zero = 0
    for src, tgt, links in zip(pairs.source, pairs.target, pairs.alignments, strict=True):
        s, t = src.split(), tgt.split()
        assert 3 <= len(s) <= 12
        assert sorted(j for _, j in links) == list(range(len(t)))          # each target word exactly once
        assert all(0 <= i < len(s) for i, _ in links)
        assert len(links) == sum(len(lexicon[w]) for w in s) == len(t)
        for i, w in enumerate(s):
            aligned = sorted(j for k, j in links if k == i)
            assert [t[j] for j in aligned] == list(lexicon[w])            # the dictionary's words, in order
        one_to_many += any(len(lexicon[w]) == 2 for w in s)
        one_to_zero += any(len(lexicon[w]) == 0 for w in s)
    assert one_to_many > 50 and one_to_zero > 50                         # not a permutation


def test_the_target_reorders(pairs):
    lexicon = synthetic.aligned_pair_lexicon()
    verbs = set(synthetic._VERBS)
    adjectives, nouns = set(synthetic._ADJECTIVES), set(synthetic._NOUNS)
    swaps = 0
    for src, tgt, links in zip(pairs.source, pairs.target, pairs.alignments, strict=True):
        s, t = src.split(), tgt.split()
        (v,) = [i for i, w in enumerate(s) if w in verbs]
        verb_targets = sorted(j for i, j in links if i == v)
        assert verb_targets == list(range(len(t) - len(lexicon[s[v]]), len(t)))   # the verb ends the clause
        for i in range(len(s) - 1):
            if s[i] in adjectives and s[i + 1] in nouns:                # "black cat" -> cat' black'
                (adj_j,), (noun_j,) = [j for k, j in links if k == i], [j for k, j in links if k == i + 1]
                assert noun_j < adj_j
                swaps += 1
    assert swaps > 100


def test_aligned_pairs_are_deterministic_and_subset(pairs):
    again = synthetic.aligned_pair_task(500, seed=0)
    assert again.source == pairs.source and again.target == pairs.target and again.alignments == pairs.alignments
    other = synthetic.aligned_pair_task(500, seed=1)
    assert other.source != pairs.source
    part = pairs.subset(slice(10, 13))
    assert len(part) == 3 and part.source == pairs.source[10:13] and part.alignments == pairs.alignments[10:13]
    picked = pairs.subset(np.array([4, 0]))
    assert picked.target == [pairs.target[4], pairs.target[0]]
    short = synthetic.aligned_pair_task(50, seed=2, min_len=3, max_len=5)
    assert all(3 <= len(s.split()) <= 5 for s in short.source)
    with pytest.raises(ValueError, match="min_len"):
        synthetic.aligned_pair_task(5, min_len=2)


def test_monotone_alignment_is_far_from_gold(pairs):
    diagonal = [_diagonal(len(s.split()), len(t.split())) for s, t in zip(pairs.source, pairs.target, strict=True)]
    aer = tm.alignment_error_rate(diagonal, pairs.alignments)
    assert aer > 0.5, aer                                               # about 0.78: the task is not monotone
    assert tm.alignment_error_rate(pairs.alignments, pairs.alignments) == 0.0


def test_gold_attention_recovers_gold_alignment(pairs):
    """A one-hot attention matrix built from the gold links reads back as the gold alignment (AER 0)."""
    predicted = []
    for s, t, links in zip(pairs.source[:50], pairs.target[:50], pairs.alignments[:50], strict=True):
        w = np.zeros((len(t.split()) + 2, len(s.split()) + 3))       # padded both ways
        for i, j in links:
            w[j, i] = 1.0
        predicted.append(tm.attention_alignment(w, len(s.split()), len(t.split())))
    assert tm.alignment_error_rate(predicted, pairs.alignments[:50]) == 0.0
