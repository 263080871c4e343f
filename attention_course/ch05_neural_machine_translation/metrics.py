"""Evaluating translation (Chapter 5): corpus BLEU and chrF through sacreBLEU, BLEU by source length, attention
as word alignment (AER), attention blur and coverage, over- and under-translation counts.

Scores come from sacreBLEU (Post, "A Call for Clarity in Reporting BLEU Scores", 2018), never from a
hand-written BLEU, and carry its signature so that a reported number says how it was computed. Alignments are
sets of ``(i, j)`` pairs: source word ``i`` is aligned to target word ``j`` (both 0-based).
"""

from __future__ import annotations

import numbers
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from attention_course.core.errors import InputError, ShapeError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "Score",
    "alignment_error_rate",
    "attention_alignment",
    "attention_entropy",
    "bleu",
    "bleu_by_length",
    "chrf",
    "coverage_counts",
    "missing_words",
    "repeated_words",
    "shifted",
]

Alignment = set[tuple[int, int]]


# ---- corpus scores (sacreBLEU) ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Score:
    """A corpus score and the sacreBLEU signature that says how it was computed.

    ``str(score)`` reads ``BLEU 23.4 (nrefs:1|case:lc|eff:no|tok:13a|smooth:exp|version:2.6.0)``.
    """

    score: float
    signature: str
    metric: str = "BLEU"

    def __str__(self) -> str:
        return f"{self.metric} {self.score:.1f} ({self.signature})"

    def __float__(self) -> float:
        return float(self.score)


def _pairs(hypotheses: Sequence[str], references: Sequence[str], empty_ok: bool = False
           ) -> tuple[list[str], list[str]]:
    """The two lists of sentences, checked: as many hypotheses as references, all strings, at least one
    unless ``empty_ok``."""
    for name, sents in (("hypotheses", hypotheses), ("references", references)):
        if isinstance(sents, str):
            raise InputError(f"{name} must be a list of sentences, one per pair; got one string {sents!r:.40}")
    hyps, refs = list(hypotheses), list(references)
    if len(hyps) != len(refs):
        raise InputError(f"{len(hyps)} hypotheses but {len(refs)} references: need one reference per hypothesis")
    if not hyps and not empty_ok:
        raise InputError("no sentences to score: hypotheses and references are empty")
    for name, sents in (("hypotheses", hyps), ("references", refs)):
        bad = [k for k, s in enumerate(sents) if not isinstance(s, str)]
        if bad:
            raise InputError(f"{name} must be detokenised strings (' '.join(tokens)); item {bad[0]} is "
                             f"{type(sents[bad[0]]).__name__}")
    return hyps, refs


def bleu(hypotheses: Sequence[str], references: Sequence[str], *, lowercase: bool = True) -> Score:
    """Corpus BLEU (Papineni et al., "BLEU: a Method for Automatic Evaluation of Machine Translation", 2002)
    of detokenised sentences, one reference each, computed by sacreBLEU (its 13a tokenizer)."""
    from sacrebleu.metrics import BLEU

    hyps, refs = _pairs(hypotheses, references)
    metric = BLEU(lowercase=lowercase)
    result = metric.corpus_score(hyps, [refs])
    return Score(float(result.score), str(metric.get_signature()), result.name)


def chrf(hypotheses: Sequence[str], references: Sequence[str], *, lowercase: bool = True) -> Score:
    """Corpus chrF (Popović, "chrF: character n-gram F-score for automatic MT evaluation", 2015) of
    detokenised sentences, one reference each, computed by sacreBLEU."""
    from sacrebleu.metrics import CHRF

    hyps, refs = _pairs(hypotheses, references)
    metric = CHRF(lowercase=lowercase)
    result = metric.corpus_score(hyps, [refs])
    return Score(float(result.score), str(metric.get_signature()), result.name)


def bleu_by_length(hypotheses: Sequence[str], references: Sequence[str], source_lengths: Sequence[int],
                   edges: Sequence[int], *, lowercase: bool = True) -> pd.DataFrame:
    """Corpus BLEU of the sentences in each source-length bucket (the curve of Bahdanau et al. 2015, Fig. 2).

    ``edges`` are the increasing first lengths of the buckets: ``[1, 5, 9]`` gives ``1-4``, ``5-8``, ``9+``.
    Returns a DataFrame with columns bucket, lo, hi (inclusive; missing for the last, open bucket), n (sentences)
    and bleu; empty buckets are left out.
    """
    import pandas as pd

    hyps, refs = _pairs(hypotheses, references)
    lengths = np.asarray(source_lengths)
    if lengths.shape != (len(hyps),):
        raise InputError(f"source_lengths has shape {lengths.shape}, expected ({len(hyps)},): one length per "
                         f"sentence")
    edges = list(edges)
    if any(isinstance(e, bool) or not isinstance(e, numbers.Integral) for e in edges):
        raise InputError(f"edges must be whole numbers (the first source length of each bucket); got {edges}")
    edges = [int(e) for e in edges]
    if not edges or any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise InputError(f"edges must be a non-empty, strictly increasing list of lengths; got {edges}")
    if lengths.min() < edges[0]:
        raise InputError(f"a source length of {int(lengths.min())} is below the first edge {edges[0]}: "
                         f"start the edges at or below the shortest sentence")
    rows = []
    for k, lo in enumerate(edges):
        hi = edges[k + 1] - 1 if k + 1 < len(edges) else None
        inside = (lengths >= lo) & (lengths <= hi) if hi is not None else lengths >= lo
        idx = np.flatnonzero(inside)
        if not len(idx):
            continue
        score = bleu([hyps[i] for i in idx], [refs[i] for i in idx], lowercase=lowercase).score
        label = f"{lo}-{hi}" if hi is not None else f"{lo}+"
        rows.append({"bucket": label, "lo": lo, "hi": hi, "n": len(idx), "bleu": score})
    df = pd.DataFrame(rows, columns=["bucket", "lo", "hi", "n", "bleu"])
    return df.astype({"lo": "int64", "hi": "Int64", "n": "int64", "bleu": "float64"})


# ---- attention as alignment ----------------------------------------------------------------------------------

def attention_alignment(weights: Any, src_len: int, tgt_len: int) -> Alignment:
    """Read a hard alignment off one attention matrix: ``weights`` (T, S), row j the attention of target step
    j over the source; each target position j < ``tgt_len`` is aligned to its argmax source position
    i < ``src_len``. Returns the set of ``(i, j)`` pairs."""
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2:
        raise ShapeError(f"weights must be one (T, S) attention matrix; got shape {w.shape}")
    for name, n in (("src_len", src_len), ("tgt_len", tgt_len)):
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise InputError(f"{name} must be a whole number (a count of words); got {n!r}")
    if not 1 <= src_len <= w.shape[1] or not 0 <= tgt_len <= w.shape[0]:
        raise InputError(f"need 1 <= src_len <= S and 0 <= tgt_len <= T for weights of shape {w.shape}; got "
                         f"src_len={src_len}, tgt_len={tgt_len}")
    best = w[:tgt_len, :src_len].argmax(axis=1)
    return {(int(i), j) for j, i in enumerate(best)}


def alignment_error_rate(predicted: Sequence[Alignment], gold: Sequence[Alignment]) -> float:
    """Alignment error rate with sure links only (Och & Ney, "A Systematic Comparison of Various Statistical
    Alignment Models", 2003): 1 - 2|A∩S| / (|A| + |S|), the counts summed over the corpus. 0 is a perfect
    alignment, 1 one that shares no link with the gold."""
    predicted, gold = _alignments("predicted", predicted), _alignments("gold", gold)
    if len(predicted) != len(gold):
        raise InputError(f"{len(predicted)} predicted alignments but {len(gold)} gold ones: need one per sentence")
    hit = size = 0
    for a, s in zip(predicted, gold, strict=True):
        hit += len(a & s)
        size += len(a) + len(s)
    if size == 0:
        raise InputError("no alignment links at all (predicted and gold are all empty): the AER is undefined")
    return 1.0 - 2.0 * hit / size


def _link(link) -> bool:
    """An alignment link: a pair (i, j) of whole numbers."""
    return (isinstance(link, (tuple, list, np.ndarray)) and len(link) == 2
            and all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in link))


def _alignments(name: str, alignments) -> list[Alignment]:
    """A list of alignments, one per sentence, each a collection of (i, j) links, as sets. A bare set of links
    (one sentence's alignment, not a list of them) is refused: iterating over it would read each link as an
    alignment."""
    if isinstance(alignments, (set, frozenset)) or isinstance(alignments, str):
        raise InputError(f"{name} must be a list of alignments, one per sentence (each a set of (i, j) links); got "
                         f"a {type(alignments).__name__}: wrap one sentence's alignment in a list")
    out = []
    for k, a in enumerate(alignments):
        if isinstance(a, str) or not isinstance(a, Iterable):
            raise InputError(f"{name}[{k}] must be a set of (i, j) links; got {type(a).__name__} {a!r:.40}")
        links = list(a)
        bad = next((x for x in links if not _link(x)), None)
        if bad is not None:
            raise InputError(f"{name}[{k}] must be a set of (i, j) links (source word i, target word j, whole "
                             f"numbers); it holds {bad!r:.40}")
        out.append({(int(i), int(j)) for i, j in links})
    return out


def shifted(alignment: Iterable[tuple[int, int]], by: int) -> Alignment:
    """The alignment with every target index moved by ``by``: (i, j) -> (i, j + by); links that would fall
    before position 0 are dropped. Tests the off-by-one reading of attention (Koehn & Knowles, "Six Challenges
    for Neural Machine Translation", 2017): does step j attend to the source of target word j - 1?"""
    if isinstance(by, bool) or not isinstance(by, numbers.Integral):
        raise InputError(f"by must be a whole number of target positions; got {by!r}")
    return {(int(i), int(j) + by) for i, j in alignment if int(j) + by >= 0}


def _matrices(weights: Any, src_mask: Any, tgt_mask: Any) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(T, S) weights, (S,) source mask and (T,) target mask of each sentence, from one matrix, a (n, T, S)
    array or a list of matrices; masks None mean every position is real."""
    if isinstance(weights, np.ndarray) or not isinstance(weights, (list, tuple)):
        arr = np.asarray(weights, dtype=float)
        if arr.ndim == 2:
            arr = arr[None]
            src_mask = None if src_mask is None else [src_mask]
            tgt_mask = None if tgt_mask is None else [tgt_mask]
        if arr.ndim != 3:
            raise ShapeError(f"weights must be a (T, S) matrix, a (n, T, S) array or a list of (T_i, S_i) "
                             f"matrices; got shape {arr.shape}")
        mats = list(arr)
    else:
        mats = [np.asarray(w, dtype=float) for w in weights]
    out = []
    for name, masks in (("src_mask", src_mask), ("tgt_mask", tgt_mask)):
        if masks is not None and len(masks) != len(mats):
            raise InputError(f"{name} has {len(masks)} rows for {len(mats)} attention matrices")
    for k, w in enumerate(mats):
        if w.ndim != 2:
            raise ShapeError(f"attention matrix {k} must be (T, S); got shape {w.shape}")
        sm = np.ones(w.shape[1], bool) if src_mask is None else np.asarray(src_mask[k], dtype=bool)
        tm = np.ones(w.shape[0], bool) if tgt_mask is None else np.asarray(tgt_mask[k], dtype=bool)
        if sm.shape != (w.shape[1],) or tm.shape != (w.shape[0],):
            raise ShapeError(f"attention matrix {k} has shape {w.shape} (T, S) but its source mask is {sm.shape} "
                             f"and its target mask {tm.shape}")
        if not np.isfinite(w[tm][:, sm]).all():
            raise InputError(f"attention matrix {k} holds NaN or inf on real positions: attention weights are "
                             f"probabilities (the model that gave them has diverged?)")
        out.append((w, sm, tm))
    return out


def attention_entropy(weights: Any, src_mask: Any = None, *, tgt_mask: Any = None) -> float:
    """Mean entropy (nats) of the attention rows over the real source tokens: 0 for a one-hot row, log S for a
    uniform one (a measure of blur). ``weights`` (T, S), (n, T, S) or a list of (T_i, S_i) matrices;
    ``src_mask`` (S,) / (n, S) True on real source tokens (None: all); ``tgt_mask`` likewise selects the rows."""
    total, rows = 0.0, 0
    for w, sm, tm in _matrices(weights, src_mask, tgt_mask):
        p = w[tm][:, sm]
        p = p / np.maximum(p.sum(axis=1, keepdims=True), 1e-12)
        total += float(-(p * np.log(np.where(p > 0, p, 1.0))).sum())
        rows += len(p)
    if rows == 0:
        raise InputError("no attention rows to measure: every target position is masked out")
    return total / rows


def coverage_counts(weights: Any, src_mask: Any = None, low: float = 0.5, high: float = 1.5, *,
                    tgt_mask: Any = None) -> dict[str, int]:
    """Coverage of the source (Tu et al., "Modeling Coverage for Neural Machine Translation", 2016): the total
    attention each real source token i receives, sum over target steps j of alpha_ij, should be about 1.

    ``weights``, ``src_mask`` and ``tgt_mask`` as in :func:`attention_entropy`. Returns the corpus counts
    ``dropped`` (total < ``low``: under-translated), ``repeated`` (total > ``high``: over-translated) and
    ``source_tokens``.
    """
    if not low < high:
        raise InputError(f"need low < high; got low={low}, high={high}")
    dropped = repeated = tokens = 0
    for w, sm, tm in _matrices(weights, src_mask, tgt_mask):
        received = w[tm][:, sm].sum(axis=0)
        dropped += int((received < low).sum())
        repeated += int((received > high).sum())
        tokens += int(sm.sum())
    return {"dropped": dropped, "repeated": repeated, "source_tokens": tokens}


# ---- over- and under-translation in the output -----------------------------------------------------------------

_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")


def _words(text: str) -> Counter[str]:
    """Word counts of ``text``: lowercased, split on whitespace, punctuation stripped from each word's ends."""
    words = (_EDGE_PUNCT.sub("", w) for w in text.lower().split())
    return Counter(w for w in words if w)


def repeated_words(hypotheses: Sequence[str], references: Sequence[str]) -> int:
    """Over-translation seen in the output: word occurrences of each hypothesis beyond both the word's count in
    its reference and 1, summed over the corpus (``"the the cat cat"`` against ``"the cat"``: 2)."""
    hyps, refs = _pairs(hypotheses, references, empty_ok=True)
    total = 0
    for h, r in zip(hyps, refs, strict=True):
        hc, rc = _words(h), _words(r)
        total += sum(max(0, n - max(rc[w], 1)) for w, n in hc.items())
    return total


def missing_words(hypotheses: Sequence[str], references: Sequence[str]) -> int:
    """Under-translation: reference word occurrences that the hypothesis lacks (clipped counts, max(0,
    ref count - hyp count) per word), summed over the corpus (``"the cat"`` against ``"the black cat"``: 1)."""
    hyps, refs = _pairs(hypotheses, references, empty_ok=True)
    total = 0
    for h, r in zip(hyps, refs, strict=True):
        hc, rc = _words(h), _words(r)
        total += sum(max(0, n - hc[w]) for w, n in rc.items())
    return total
