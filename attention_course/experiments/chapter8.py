"""Chapter 8's experiment: the Transformer trained on Chapter 5's data and scored as Chapter 5 scores its models.

``SIZES`` holds the sizes of each run; the data, tokenizers, decoding and scoring are Chapter 5's
(``attention_course.experiments.chapter5``), so the two chapters' numbers are comparable. Importing this module
loads no framework: the functions take the framework's module (``ac.torch`` or ``ac.keras``) as an argument.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from .. import session
from ..text import PAD
from ..train import warmup_schedule
from . import chapter5

__all__ = ["SIZES", "MODELS", "build", "train", "head_to_head"]

#: Model and training sizes of each run; the data of each is Chapter 5's run of the same name.
SIZES: dict[str, dict[str, Any]] = {
    "quick": {"d_model": 64, "heads": 4, "layers": 2, "d_ff": 256, "dropout": 0.1, "epochs": 2, "warmup": 100,
              "lr_factor": 0.5, "label_smoothing": 0.1, "batch_size": 128},
    "full": {"d_model": 256, "heads": 8, "layers": 3, "d_ff": 1024, "dropout": 0.1, "epochs": 20, "warmup": 2000,
             "lr_factor": 1.0, "label_smoothing": 0.1, "batch_size": 128},
}


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
