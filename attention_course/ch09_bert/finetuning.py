"""Chapter 9, fine-tuning on Chapter 3's sentiment sentences, pretrained and from scratch, and the table that compares
them with Chapter 3's models. Importing this module loads no framework."""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from attention_course import data as course_data
from attention_course.ch09_bert.heads import encode
from attention_course.ch09_bert.pretraining import FINETUNE, linear_schedule
from attention_course.notebook import session

__all__ = ["sentiment_pieces", "finetune", "finetune_table", "train_classifier"]


def sentiment_pieces(tokenizer, seed: int, max_len: int = FINETUNE["max_len"]) -> dict[str, np.ndarray]:
    """Chapter 3's sentiment data (Amazon and Yelp, the split of ``course_data.prepare_sentiment(seed)``), as word
    pieces of ``tokenizer``, [CLS] sentence [SEP], cut at ``max_len``: ids, mask (N, T), y (N,), train and val
    (index arrays), and vocab, the tokenizer's size."""
    import pandas as pd

    split = course_data.prepare_sentiment(seed)
    frame = pd.concat([course_data.load_sentiment(src) for src in ("amazon", "yelp")], ignore_index=True)
    encoded = encode(tokenizer, frame["sentence"].tolist(), max_len=max_len)
    return {"ids": encoded.ids, "mask": encoded.mask, "y": frame["label"].to_numpy(), "train": split["train"],
            "val": split["val"], "vocab": tokenizer.get_vocab_size()}


def finetune(fw: ModuleType, data: dict[str, np.ndarray], sizes: dict[str, Any], weights=None, *, seed: int = 0,
             settings: dict[str, Any] = FINETUNE, desc: str | None = None) -> dict[str, Any]:
    """Train a ``SentenceClassifier`` on the training sentences of ``data`` (``sentiment_pieces``): over the BERT
    of ``weights`` (``export_bert`` of a pretrained ``MaskedLM``), or, with ``weights=None``, over a fresh BERT of
    the same ``sizes`` (from scratch). Returns the model, its validation accuracy after the last epoch (Chapter
    3's protocol) and the training seconds."""
    tr, va = data["train"], data["val"]
    model, seconds = train_classifier(fw, (data["ids"][tr], data["mask"][tr]), data["y"][tr], sizes, weights,
                                      vocab=int(data["vocab"]), seed=seed, settings=settings, desc=desc)
    accuracy = fw.accuracy(model, (data["ids"][va], data["mask"][va]), data["y"][va])
    return {"model": model, "val_accuracy": float(accuracy), "train_seconds": seconds}


def train_classifier(fw: ModuleType, inputs: tuple, y: np.ndarray, sizes: dict[str, Any], weights=None, *,
                     vocab: int | None = None, classes: int = 2, seed: int = 0, settings: dict[str, Any] = FINETUNE,
                     desc: str | None = None):
    """A ``SentenceClassifier`` over the BERT of ``weights`` (None: a fresh one of ``sizes`` and ``vocab``) trained
    on ``inputs`` (ids, mask[, segments]) and labels ``y`` (0 … ``classes`` − 1) with Adam on ``linear_schedule``
    (``settings``: epochs, batch_size, lr and the warm-up's share of the steps). Returns the model and the training
    seconds."""
    session.seed_everything(seed)
    if weights is None:
        if vocab is None:
            raise ValueError("a classifier trained from scratch needs the vocabulary's size: pass vocab=")
        bert = fw.Bert(vocab, sizes["d_model"], sizes["heads"], sizes["layers"], sizes["d_ff"],
                       max_len=sizes["length"], dropout=sizes["dropout"])
    else:
        bert = fw.load_pretrained(weights, dropout=sizes["dropout"])
    model = fw.SentenceClassifier(bert, classes, dropout=sizes["dropout"])
    steps = settings["epochs"] * -(-len(y) // settings["batch_size"])
    schedule = linear_schedule(settings["lr"], max(1, round(settings["warmup"] * steps)), steps)
    start = time.perf_counter()
    fw.fit(model, inputs, y, epochs=settings["epochs"], batch_size=settings["batch_size"], lr=settings["lr"],
           seed=seed, schedule=schedule, desc=desc)
    return model, time.perf_counter() - start


def finetune_table(runs: list[dict], chapter3_runs: Sequence[dict] = ()):
    """The chapter's comparison from the results file: per model (the small BERT pretrained and from scratch,
    then Chapter 3's last-state LSTM and attention pooling of the same seeds), the mean and standard deviation of
    the validation accuracy over seeds, the number of seeds, and the parameters where known."""
    import pandas as pd

    rows = [{"model": r["model"], "seed": r["seed"], "accuracy": r["val_accuracy"],
             "parameters": r.get("parameters", np.nan)} for r in runs]
    rows += [{"model": f"Chapter 3: {r['model']}", "seed": r["seed"], "accuracy": r["val_accuracy"],
              "parameters": np.nan} for r in chapter3_runs if r["model"] in ("last state", "attention")]
    frame = pd.DataFrame(rows)
    grouped = frame.groupby("model", sort=False)
    table = pd.DataFrame({"accuracy": grouped["accuracy"].mean(), "sd": grouped["accuracy"].std(ddof=1),
                          "lowest": grouped["accuracy"].min(), "highest": grouped["accuracy"].max(),
                          "seeds": grouped["seed"].nunique(), "parameters": grouped["parameters"].first()})
    return table
