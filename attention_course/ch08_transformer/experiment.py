"""Chapter 8's experiment: the Transformer trained on Chapter 5's data and scored as Chapter 5 scores its models.

``SIZES`` holds the sizes of each run; the data, tokenizers, decoding and scoring are Chapter 5's
(``attention_course.ch05_neural_machine_translation.experiment``), so the two chapters' numbers are comparable.
Importing this module loads no framework: the functions take the framework's module (``ac.torch`` or ``ac.keras``)
as an argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from attention_course.ch05_neural_machine_translation import experiment as chapter5
from attention_course.core.text import PAD
from attention_course.core.train import warmup_schedule
from attention_course.notebook import session

__all__ = ["SIZES", "DATA", "MODELS", "LM_SIZES", "Characters", "characters", "windows", "ngram_loss", "train_lm",
           "build", "train", "test_corpus", "head_to_head"]

#: Model and training sizes of each run; the data of each is Chapter 5's run of the same name.
SIZES: dict[str, dict[str, Any]] = {
    "quick": {"d_model": 64, "heads": 4, "layers": 2, "d_ff": 256, "dropout": 0.1, "epochs": 2, "warmup": 100,
              "lr_factor": 0.5, "label_smoothing": 0.1, "batch_size": 128},
    "full": {"d_model": 256, "heads": 8, "layers": 3, "d_ff": 1024, "dropout": 0.1, "epochs": 20, "warmup": 2000,
             "lr_factor": 1.0, "label_smoothing": 0.1, "batch_size": 128},
}
#: The stability experiment (``tools/chapter8_full.py --size deep``): the quick model three times as deep and
#: trained one epoch longer, on the quick data. Post-LN trains without the warm-up at three layers (the full
#: profile), not at six.
SIZES["deep"] = {**SIZES["quick"], "layers": 6, "epochs": 3}

#: The size of Chapter 5's data (``chapter5.SIZES``) that each size trains on.
DATA: dict[str, str] = {"quick": "quick", "deep": "quick", "full": "full"}


#: The variants the results tool trains: name → (norm_first, warm-up). "Transformer" is the paper's: post-LN with
#: the warm-up; the others are the stability experiment's.
MODELS: dict[str, tuple[bool, bool]] = {"Transformer": (False, True), "pre-LN": (True, True),
                                        "post-LN, no warm-up": (False, False), "pre-LN, no warm-up": (True, False)}


def build(fw: ModuleType, data: chapter5.Corpus, sizes: dict[str, Any], *, norm_first: bool = False,
          seed: int = 0):
    """The package's ``Transformer`` of framework ``fw`` (``ac.torch`` or ``ac.keras``) for ``data``, seeded."""
    session.seed_everything(seed)
    return fw.Transformer(len(data.src_tok), len(data.tgt_tok), d_model=sizes["d_model"], heads=sizes["heads"],
                          layers=sizes["layers"], d_ff=sizes["d_ff"], dropout=sizes["dropout"], norm_first=norm_first)


def train(fw: ModuleType, model, data: chapter5.Corpus, sizes: dict[str, Any], *, seed: int = 0,
          warmup: bool = True, checkpoint=None, desc: str | None = None):
    """Teacher forcing with label smoothing, Adam on the warm-up schedule (or the schedule's peak rate throughout
    when ``warmup`` is False), gradients clipped at norm 1, the weights of the best validation epoch kept;
    ``checkpoint`` (a file) saves every epoch and resumes from it."""
    schedule = warmup_schedule(sizes["d_model"], sizes["warmup"], sizes["lr_factor"])
    peak = schedule(sizes["warmup"])
    return fw.fit(model, (data.train.src, data.train.src_mask, data.train.tgt_in), data.train.tgt_out,
                  epochs=sizes["epochs"], batch_size=sizes["batch_size"], lr=peak, ignore_index=PAD, seed=seed,
                  clip_norm=1.0, label_smoothing=sizes["label_smoothing"], schedule=schedule if warmup else None,
                  checkpoint=checkpoint, desc=desc,
                  validation=((data.val.src, data.val.src_mask, data.val.tgt_in), data.val.tgt_out))


def test_corpus(name: str, src_tok, tgt_tok, sizes: dict[str, Any]) -> chapter5.Corpus:
    """The test split of the translation dataset ``name`` encoded with a trained model's tokenizers, as a
    ``Corpus`` whose training and validation splits are empty: what translating with a trained model needs,
    without building (or holding) its training data."""
    from attention_course.ch05_neural_machine_translation.data import encode_pairs, translation_pairs

    pairs = translation_pairs(name, n_train=0, n_val=0, n_test=sizes["n_test"]).test
    encode = lambda split: encode_pairs(split, src_tok, tgt_tok, max_src=sizes["max_src"], max_tgt=sizes["max_tgt"])
    (empty, _), (test, kept) = encode([]), encode(pairs)
    return chapter5.Corpus(name, [], [], [pairs[i] for i in kept], src_tok, tgt_tok, empty, empty, test)


def head_to_head(rnn_runs: list[dict], transformer_runs: list[dict]):
    """The chapter's table from the results files' runs (Chapter 5's translators and this chapter's models, same
    size and data): per model, the mean and standard deviation over seeds of BLEU and chrF (greedy and beam 5),
    the parameters, training seconds per epoch and test-set decoding seconds (beam 5), and the number of seeds."""
    import pandas as pd

    rows = [{"model": r["model"], "seed": r["seed"], "parameters": r["parameters"],
             "s / epoch": r["train_seconds"] / r["epochs"], "BLEU (greedy)": r["beam1"]["bleu"],
             "BLEU (beam 5)": r["beam5"]["bleu"], "chrF (beam 5)": r["beam5"]["chrf"],
             "decoding s (beam 5)": r["beam5"]["decode_seconds"]} for r in [*rnn_runs, *transformer_runs]]
    runs = pd.DataFrame(rows)
    order = list(dict.fromkeys(runs["model"]))
    scores = ["BLEU (greedy)", "BLEU (beam 5)", "chrF (beam 5)"]
    grouped = runs.groupby("model", sort=False)
    table = grouped[["parameters", "s / epoch", "decoding s (beam 5)", *scores]].mean()
    for column in scores:
        table[column + " sd"] = grouped[column].std(ddof=1)        # NaN with one seed
    table["seeds"] = grouped["seed"].nunique()
    table["parameters"] = table["parameters"].astype(int)
    return table.loc[order, ["seeds", *[c for s in scores for c in (s, s + " sd")], "parameters", "s / epoch",
                             "decoding s (beam 5)"]]


#: The decoder-only character model on Tiny Shakespeare: model sizes, the number of training windows of
#: ``context`` characters (reshuffled each epoch), the epochs, the fixed validation windows, and the characters
#: the chapter samples. The full size is that of nanoGPT's Shakespeare model (6 layers, 6 heads, d = 384); "cpu"
#: is a reduced run for a machine without a GPU (``tools/chapter8_lm.py --size cpu``, a quarter of an hour on 2 cores).
LM_SIZES: dict[str, dict[str, Any]] = {
    "quick": {"d_model": 64, "heads": 4, "layers": 2, "d_ff": 256, "dropout": 0.0, "context": 64,
              "windows": 2048, "epochs": 4, "val_windows": 256, "batch_size": 32, "lr": 3e-3, "sample": 100},
    "cpu": {"d_model": 128, "heads": 4, "layers": 4, "d_ff": 512, "dropout": 0.1, "context": 128,
            "windows": 4000, "epochs": 3, "val_windows": 500, "batch_size": 32, "lr": 1e-3, "sample": 300},
    "full": {"d_model": 384, "heads": 6, "layers": 6, "d_ff": 1536, "dropout": 0.2, "context": 256,
             "windows": 32_000, "epochs": 10, "val_windows": 2000, "batch_size": 64, "lr": 6e-4, "sample": 500},
}


VAL_SEED = 8   # the validation windows: the same for every run, so that runs compare


@dataclass
class Characters:
    """A text as character ids: the vocabulary (its distinct characters, sorted) and the first 90 % (train) and
    the last 10 % (validation) of the text."""

    vocabulary: str
    train: np.ndarray                  # (N_train,) int ids
    val: np.ndarray                    # (N_val,)

    def encode(self, text: str) -> np.ndarray:
        index = {c: i for i, c in enumerate(self.vocabulary)}
        unknown = sorted(set(text) - set(index))
        if unknown:
            raise ValueError(f"characters not in the vocabulary: {unknown!r}")
        return np.array([index[c] for c in text], dtype=np.int64)

    def decode(self, ids) -> str:
        return "".join(self.vocabulary[int(i)] for i in np.asarray(ids).ravel())


def characters(text: str, val_share: float = 0.1) -> Characters:
    """Split ``text`` into train and validation by position (the end is held out) and encode it by character."""
    vocabulary = "".join(sorted(set(text)))
    ids = Characters(vocabulary, np.zeros(0, np.int64), np.zeros(0, np.int64)).encode(text)
    cut = int(len(ids) * (1 - val_share))
    return Characters(vocabulary, ids[:cut], ids[cut:])


def windows(ids: np.ndarray, context: int, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``count`` windows of ``context`` characters at random places of ``ids``: inputs x (count, context) and the
    targets y (count, context), x shifted left by one (y[:, t] is the character after x[:, t])."""
    if len(ids) <= context:
        raise ValueError(f"a text of {len(ids)} characters has no window of context + 1 = {context + 1}")
    starts = np.random.default_rng(seed).integers(0, len(ids) - context, size=count)
    span = starts[:, None] + np.arange(context + 1)                       # (count, context + 1)
    return ids[span[:, :-1]], ids[span[:, 1:]]


def ngram_loss(train: np.ndarray, val: np.ndarray, vocab: int, order: int) -> float:
    """The validation cross-entropy (nats per character) of a unigram (``order=1``) or bigram (``order=2``) model
    counted on ``train`` with add-one smoothing: the baselines a character model must beat."""
    if order == 1:
        counts = np.bincount(train, minlength=vocab) + 1.0
        return float(-np.log(counts[val] / counts.sum()).mean())
    if order != 2:
        raise ValueError(f"order must be 1 or 2; got {order!r}")
    counts = np.ones((vocab, vocab))
    np.add.at(counts, (train[:-1], train[1:]), 1)
    p = counts / counts.sum(1, keepdims=True)
    return float(-np.log(p[val[:-1], val[1:]]).mean())


def train_lm(fw: ModuleType, model, data: Characters, sizes: dict[str, Any], *, seed: int = 0, checkpoint=None,
             desc: str | None = None):
    """Next-character prediction with Adam at ``sizes["lr"]``, gradients clipped at norm 1, on ``windows`` random
    training windows (drawn with ``seed``, reshuffled each epoch); the loss on the same validation windows (whatever
    the seed) is logged after each epoch, and the weights of the best epoch are kept."""
    x, y = windows(data.train, sizes["context"], sizes["windows"], seed=seed)
    val_x, val_y = windows(data.val, sizes["context"], sizes["val_windows"], seed=VAL_SEED)
    return fw.fit(model, (x,), y, epochs=sizes["epochs"], batch_size=sizes["batch_size"], lr=sizes["lr"], seed=seed,
                  clip_norm=1.0, checkpoint=checkpoint, desc=desc, validation=((val_x,), val_y))
