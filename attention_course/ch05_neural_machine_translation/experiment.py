"""Chapter 5's experiment: the translators it compares, their data, their training and their evaluation.

The notebook (quick profile) and ``tools/chapter5_full.py`` (the results table) both call these functions, so the
book and the command measure the same thing. ``SIZES`` holds the sizes of each run. Importing this module loads
no framework: the functions take the framework's module (``ac.torch`` or ``ac.keras``) as an argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from attention_course.ch05_neural_machine_translation import metrics as tm
from attention_course.ch05_neural_machine_translation.data import (
    ParallelArrays,
    SubwordTokenizer,
    encode_pairs,
    translation_pairs,
)
from attention_course.core import decode
from attention_course.core.backend import backend
from attention_course.core.text import BOS, EOS, PAD, Vocab
from attention_course.data import synthetic
from attention_course.data.synthetic import AlignedPairs
from attention_course.notebook import session

__all__ = ["SIZES", "MODELS", "LENGTH_EDGES", "Corpus", "corpus", "build", "train", "translate", "evaluate",
           "parameters", "coverage_report", "AlignmentTask", "alignment_task", "alignment_report",
           "reversed_arrays", "remedy_report",
           "results_table", "length_table"]

#: Sizes of each run: data, vocabularies, model, training.
SIZES: dict[str, dict[str, Any]] = {
    "quick": {"dataset": "spa-eng", "max_words": 12, "n_train": 12_000, "n_val": 300, "n_test": 600,
              "vocab": 1000, "max_src": 20, "max_tgt": 22, "embed": 32, "hidden": 64, "epochs": 2,
              "batch_size": 128, "lr": 5e-3},
    "cpu": {"dataset": "spa-eng", "max_words": 14, "n_train": 40_000, "n_val": 1000, "n_test": 2000,
            "vocab": 2000, "max_src": 24, "max_tgt": 26, "embed": 64, "hidden": 128, "epochs": 6,
            "batch_size": 128, "lr": 3e-3},
    "full": {"dataset": "multi30k", "max_words": None, "n_train": None, "n_val": None, "n_test": None,
             "vocab": 8000, "max_src": 48, "max_tgt": 48, "embed": 256, "hidden": 512, "epochs": 15,
             "batch_size": 128, "lr": 1e-3},
}
#: The three translators of the chapter: name → ``Translator(attention=...)``.
MODELS = {"no attention": "none", "Bahdanau": "bahdanau", "Luong": "luong"}
#: First source length (words) of each bucket of the BLEU-against-length table.
LENGTH_EDGES = (1, 4, 6, 8, 10, 12)


@dataclass
class Corpus:
    """A language pair ready to train on: text pairs, subword tokenizers, padded id arrays."""

    name: str
    train_pairs: list[tuple[str, str]]
    val_pairs: list[tuple[str, str]]
    test_pairs: list[tuple[str, str]]
    src_tok: SubwordTokenizer
    tgt_tok: SubwordTokenizer
    train: ParallelArrays
    val: ParallelArrays
    test: ParallelArrays

    @property
    def test_lengths(self) -> np.ndarray:
        """Source length in words of each test pair."""
        return np.array([len(src.split()) for src, _ in self.test_pairs])


def corpus(sizes: dict[str, Any], seed: int = 0) -> Corpus:
    """The data of a run: pairs split by ``translation_pairs``, tokenizers trained on the training split only
    (cached), pairs too long for ``max_src``/``max_tgt`` subwords left out."""
    data = translation_pairs(sizes["dataset"], max_words=sizes["max_words"], n_train=sizes["n_train"],
                             n_val=sizes["n_val"], n_test=sizes["n_test"], seed=seed)
    src_tok = SubwordTokenizer.cached(f"{data.name}-{data.src_lang}", [s for s, _ in data.train], sizes["vocab"])
    tgt_tok = SubwordTokenizer.cached(f"{data.name}-{data.tgt_lang}", [t for _, t in data.train], sizes["vocab"])
    splits = {}
    for split in ("train", "val", "test"):
        pairs = getattr(data, split)
        arrays, kept = encode_pairs(pairs, src_tok, tgt_tok, max_src=sizes["max_src"], max_tgt=sizes["max_tgt"])
        splits[split] = ([pairs[i] for i in kept], arrays)
    return Corpus(data.name, splits["train"][0], splits["val"][0], splits["test"][0], src_tok, tgt_tok,
                  splits["train"][1], splits["val"][1], splits["test"][1])


def build(fw: ModuleType, data: Corpus, attention: str, sizes: dict[str, Any], seed: int = 0):
    """A ``Translator`` of framework ``fw`` (``ac.torch`` or ``ac.keras``) for ``data``, seeded."""
    session.seed_everything(seed)
    return fw.Translator(len(data.src_tok), len(data.tgt_tok), attention, embed=sizes["embed"],
                         hidden=sizes["hidden"])


def train(fw: ModuleType, model, data: Corpus, sizes: dict[str, Any], *, seed: int = 0, checkpoint=None,
          desc: str | None = None):
    """Teacher forcing on the training split (pads left out of the loss, gradients clipped at norm 1), the
    weights of the best validation epoch kept. Returns the history."""
    return fw.fit(model, (data.train.src, data.train.src_mask, data.train.tgt_in), data.train.tgt_out,
                  epochs=sizes["epochs"], batch_size=sizes["batch_size"], lr=sizes["lr"], ignore_index=PAD,
                  seed=seed, clip_norm=1.0, checkpoint=checkpoint, desc=desc,
                  validation=((data.val.src, data.val.src_mask, data.val.tgt_in), data.val.tgt_out))


def translate(model, data: Corpus, arrays: ParallelArrays | None = None, *, beam: int = 1, alpha: float = 0.0,
              beta: float = 0.0, batch_size: int = 250) -> tuple[list[str], decode.Decoded]:
    """Detokenised translations of ``arrays`` (the test split by default) by greedy (``beam=1``) or beam search,
    and what the search returned (tokens, scores, attention), batch after batch."""
    arrays = data.test if arrays is None else arrays
    max_len = arrays.tgt_out.shape[1]
    parts = []
    for i in range(0, len(arrays.src), batch_size):
        src, mask = arrays.src[i:i + batch_size], arrays.src_mask[i:i + batch_size]
        parts.append(decode.greedy_search(model, src, mask, max_len=max_len) if beam == 1 else
                     decode.beam_search(model, src, mask, beam=beam, max_len=max_len, alpha=alpha, beta=beta))
    tokens = [t for p in parts for t in p.tokens]
    attention = None if parts[0].attention is None else [a for p in parts for a in (p.attention or [])]
    found = decode.Decoded(tokens, np.concatenate([p.scores for p in parts]),
                           np.concatenate([p.log_probs for p in parts]), attention)
    return [data.tgt_tok.decode(t) for t in tokens], found


def evaluate(hypotheses: list[str], data: Corpus) -> dict[str, Any]:
    """sacreBLEU's BLEU and chrF on the test split, and BLEU in each source-length bucket (``LENGTH_EDGES``)."""
    refs = [t for _, t in data.test_pairs]
    bleu, chrf = tm.bleu(hypotheses, refs), tm.chrf(hypotheses, refs)
    by_length = tm.bleu_by_length(hypotheses, refs, data.test_lengths.tolist(), LENGTH_EDGES)
    return {"bleu": bleu.score, "chrf": chrf.score, "bleu_signature": bleu.signature,
            "chrf_signature": chrf.signature,
            "by_length": [{"bucket": r.bucket, "n": int(r.n), "bleu": float(r.bleu)} for r in by_length.itertuples()]}


def parameters(model) -> int:
    """How many numbers a model of either framework learns (its trainable weights; Keras' non-trainable ones, such
    as a loss's running mean, are not counted in either framework)."""
    return backend(model).parameters(model)


def coverage_report(hypotheses: list[str], found: decode.Decoded, data: Corpus, long_from: int = 10) -> dict:
    """Over- and under-translation on the test sentences of at least ``long_from`` source words: source pieces
    whose total attention is below 0.5 ("dropped") or above 1.5 ("repeated") (Tu et al. 2016), words of the
    output repeated beyond the reference, reference words missing from the output, and BLEU on those sentences."""
    long = [i for i, n in enumerate(data.test_lengths) if n >= long_from]
    refs = [data.test_pairs[i][1] for i in long]
    hyps = [hypotheses[i] for i in long]
    weights = [] if found.attention is None else [
        found.attention[i][:, :int(data.test.src_mask[i].sum())] for i in long]
    counts = tm.coverage_counts(weights) if weights else {"dropped": 0, "repeated": 0, "source_tokens": 0}
    return {"sentences": len(long), **counts, "repeated_words": tm.repeated_words(hyps, refs),
            "missing_words": tm.missing_words(hyps, refs), "bleu": tm.bleu(hyps, refs).score}


@dataclass
class AlignmentTask:
    """The synthetic language pair with gold word alignments, as word ids (no subwords: one token per word)."""

    train: ParallelArrays
    test: ParallelArrays
    test_pairs: AlignedPairs
    src_vocab: Vocab
    tgt_vocab: Vocab


def alignment_task(n_train: int, n_test: int, seed: int = 0) -> AlignmentTask:
    """``synthetic.aligned_pair_task`` split into training and test pairs, encoded word by word."""
    pairs = synthetic.aligned_pair_task(n_train + n_test, seed=seed)
    src_vocab = Vocab.build(s.split() for s in pairs.source)
    tgt_vocab = Vocab.build(t.split() for t in pairs.target)
    max_src = max(len(s.split()) for s in pairs.source) + 1
    max_tgt = max(len(t.split()) for t in pairs.target) + 1

    def encode(index) -> ParallelArrays:
        part = pairs.subset(index)
        n = len(part)
        src, tgt_in, tgt_out = (np.zeros((n, m), np.int64) for m in (max_src, max_tgt, max_tgt))
        for k, (s, t) in enumerate(zip(part.source, part.target, strict=True)):
            x, y = src_vocab.encode(s.split(), add_eos=True), tgt_vocab.encode(t.split())
            src[k, :len(x)], tgt_in[k, :len(y) + 1], tgt_out[k, :len(y) + 1] = x, [BOS, *y], [*y, EOS]
        return ParallelArrays(src, src > PAD, tgt_in, tgt_out, (src > PAD).sum(1))

    train_index, test_index = np.arange(n_train), np.arange(n_train, n_train + n_test)
    return AlignmentTask(encode(train_index), encode(test_index), pairs.subset(test_index), src_vocab, tgt_vocab)


def alignment_report(weights: np.ndarray, task: AlignmentTask) -> dict[str, float]:
    """How well teacher-forced attention weights (n, T, S) of the test pairs match the gold alignments: the
    alignment error rate of the argmax alignment, the same shifted one output step either way, the diagonal
    baseline, and the mean entropy of the weights (nats)."""
    predicted, rows, diagonal = [], [], []
    for k, (s, t) in enumerate(zip(task.test_pairs.source, task.test_pairs.target, strict=True)):
        n_src, n_tgt = len(s.split()), len(t.split())
        predicted.append(tm.attention_alignment(weights[k], n_src, n_tgt))
        rows.append(weights[k][:n_tgt, :n_src])
        diagonal.append({(min(int((j + 0.5) * n_src / n_tgt), n_src - 1), j) for j in range(n_tgt)})
    gold = task.test_pairs.alignments
    return {"AER": tm.alignment_error_rate(predicted, gold),
            "AER, one step earlier": tm.alignment_error_rate([tm.shifted(p, -1) for p in predicted], gold),
            "AER, one step later": tm.alignment_error_rate([tm.shifted(p, 1) for p in predicted], gold),
            "AER of the diagonal": tm.alignment_error_rate(diagonal, gold),
            "entropy": tm.attention_entropy(rows)}


def results_table(*results: dict[str, Any]):
    """The results files of ``tools/chapter5_full.py`` (one per framework) as one table: for each framework and
    model, the number of seeds, the mean and standard deviation over seeds of test BLEU (greedy and beam 5), the mean
    chrF (beam 5), the parameters and the mean training seconds per epoch."""
    import pandas as pd

    rows = [{"framework": f["framework"], "model": r["model"], "seed": r["seed"], "greedy": r["beam1"]["bleu"],
             "beam": r["beam5"]["bleu"], "chrf": r["beam5"]["chrf"], "parameters": r["parameters"],
             "epoch_s": r["train_seconds"] / r["epochs"]} for f in results for r in f["runs"]]
    runs = pd.DataFrame(rows)
    order = {name: k for k, name in enumerate(MODELS)}
    table = runs.groupby(["framework", "model"]).agg(
        **{"seeds": ("seed", "count"), "BLEU greedy": ("greedy", "mean"), "sd greedy": ("greedy", "std"),
           "BLEU beam 5": ("beam", "mean"), "sd beam 5": ("beam", "std"), "chrF beam 5": ("chrf", "mean"),
           "parameters": ("parameters", "first"), "s / epoch": ("epoch_s", "mean")})
    return table.sort_index(key=lambda idx: idx.map(order) if idx.name == "model" else idx)


def length_table(*results: dict[str, Any], beam: int = 1):
    """Greedy (``beam=1``) or beam-5 test BLEU in each source-length bucket, mean over seeds: one row per
    framework, model and bucket, with ``lo`` the bucket's first length and ``seeds`` the runs averaged."""
    import pandas as pd

    rows = [{"framework": f["framework"], "model": r["model"], "bucket": b["bucket"], "bleu": b["bleu"], "n": b["n"]}
            for f in results for r in f["runs"] for b in r[f"beam{beam}"]["by_length"]]
    table = (pd.DataFrame(rows).groupby(["framework", "model", "bucket"], sort=False)
             .agg(bleu=("bleu", "mean"), n=("n", "first"), seeds=("bleu", "count")).reset_index())
    return table.assign(lo=table.bucket.str.extract(r"^(\d+)")[0].astype(int))


def reversed_arrays(arrays: ParallelArrays) -> ParallelArrays:
    """The same pairs the other way round (Y→X), position for position: the new source is the old target with its
    end token (``tgt_out``), the new output is the old source with its end token (``src``), and the new decoder
    input is a begin token and the old source's words. The Y→X attention (n, S, T) then lines up with the X→Y
    attention (n, T, S) transposed, which ``agreement`` multiplies."""
    src = arrays.tgt_out.copy()
    tgt_out = arrays.src.copy()
    shifted = np.concatenate([np.full((len(src), 1), BOS, tgt_out.dtype), tgt_out[:, :-1]], axis=1)
    tgt_in = np.where(shifted == EOS, PAD, shifted)
    return ParallelArrays(src, src > PAD, tgt_in, tgt_out, (src > PAD).sum(1))


def remedy_report(model, weights: np.ndarray, task: AlignmentTask) -> dict[str, float]:
    """A translator of the synthetic pair scored two ways: greedy BLEU (sacreBLEU) on the test pairs, and
    ``alignment_report`` of its teacher-forced attention ``weights`` (n, T, S)."""
    found = decode.greedy_search(model, task.test.src, task.test.src_mask, max_len=task.test.tgt_out.shape[1])
    hyps = [" ".join(task.tgt_vocab.decode(tokens)) for tokens in found.tokens]
    return {"BLEU": tm.bleu(hyps, task.test_pairs.target).score, **alignment_report(weights, task)}
