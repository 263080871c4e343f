"""Chapter 3.2: the sentiment article's configuration, run as the article ran it and one choice at a time.

The article reports 77 % validation accuracy for the LSTM's last state and 81.25 % with attention pooling, each
from one run. Its code differs from the chapter's in choices that have nothing to do with attention: it pads
*after* the words (so the last state is read after the pads), its Keras ``Tokenizer`` drops punctuation, it
trains 10 epochs with batches of 100, and ``validation_split=0.2`` validates on the last 400 sentences in the
order it gives them (if it merged the files Amazon first, as it lists them, all 400 are from Yelp: an inference,
the article does not say); and its attention has no mask, so it may attend to the pads. ``CONFIGS`` starts from
the article's choices and switches one at a time to the chapter's; ``run`` trains the last-state and the attention
model for each, over several seeds, in one framework.
Two of the article's choices are not reproduced here: the L2 penalty of 1e-3 on the embedding and the attention
bias of shape (T, 1), one per position.

``tools/chapter3_article.py`` runs it and writes ``book/03-timestep-feature-attention/results/article.json``,
which the chapter shows. Importing this module loads no framework.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attention_course import data as course_data
from attention_course.ch03_timestep_feature_attention.experiment import SENTIMENT_MODELS, train_sentiment
from attention_course.core.backend import Backend

__all__ = ["ARTICLE", "CONFIGS", "MODELS", "run", "summary"]

ARTICLE: dict[str, Any] = {"padding": "post", "tokenizer": "keras", "split": "last", "mask": False,
                           "batch_size": 100, "epochs": 10}
COURSE: dict[str, Any] = {"padding": "pre", "tokenizer": "course", "split": "random", "mask": True,
                          "batch_size": 32, "epochs": 15}
CONFIGS: dict[str, dict[str, Any]] = {          # name → the data and training choices
    "article": ARTICLE,
    "article, padded on the left": {**ARTICLE, "padding": "pre"},
    "article, with punctuation": {**ARTICLE, "tokenizer": "course"},
    "article, random split": {**ARTICLE, "split": "random"},
    "article, pads masked": {**ARTICLE, "mask": True},
    "article, batch 32 × 15 epochs": {**ARTICLE, "batch_size": 32, "epochs": 15},
    "course": COURSE,
}
MODELS = ("last state", "attention")
LR = 1e-3                                        # Adam's default, the article's and the chapter's full profile


def run(fw: Backend, seeds, configs=tuple(CONFIGS), models=MODELS) -> list[dict]:
    """Train ``models`` under each of ``configs`` for every seed; one row per run with the validation accuracy."""
    rows = []
    for name in configs:
        config = CONFIGS[name]
        for seed in seeds:
            data = course_data.prepare_sentiment(seed, padding=config["padding"], tokenizer=config["tokenizer"],
                                                 split=config["split"])
            for model_name in models:
                pooling, _ = SENTIMENT_MODELS[model_name]
                use_mask = config["mask"] and pooling != "last"          # the last state ignores a mask
                model, seconds, args = train_sentiment(
                    fw, data, pooling, use_mask, epochs=config["epochs"], batch_size=config["batch_size"], lr=LR,
                    seed=seed, desc=f"{fw.name} · {name} · {model_name} · seed {seed}")
                logits = fw.run(model, *args)
                row = {"config": name, "model": model_name, "seed": seed, "framework": fw.name,
                       "val_accuracy": float((np.asarray(logits).argmax(-1) == data["y"][data["val"]]).mean()),
                       "train_seconds": round(seconds, 1)}
                rows.append(row)
                print(row, flush=True)
    return rows


def summary(rows: list[dict]):
    """Mean, standard deviation and number of seeds of the validation accuracy per configuration and model, in
    the order of ``CONFIGS`` (a pandas DataFrame)."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    table = frame.groupby(["config", "model"])["val_accuracy"].agg(["mean", "std", "count"]).unstack("model")
    return table.reindex([c for c in CONFIGS if c in table.index])
