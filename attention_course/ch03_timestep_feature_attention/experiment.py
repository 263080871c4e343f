"""Chapter 3's experiment at full size: the models the chapter compares (``NER_MODELS``, ``SENTIMENT_MODELS``),
their training runs on the whole datasets, and the results table the book shows in every profile.

The taggers (the chapter's first page): the BiLSTM tagger on all 47,959 sentences of the GMB/Kaggle NER corpus
(80/20 split, padded to the longest sentence), baseline and attention variants; token-level reports (tags merged
by entity type, pads left out), entity-level reports (seqeval), the padding count, the attention over the talk's
first sentence.
The classifiers (its second page, 3.2): the sentiment classifier on Amazon + Yelp (2,000 sentences, 80/20 split,
padded to 32) over several seeds: last state, attention pooling with and without a mask, the attention GRU;
accuracy, attention mass on pads, attention on sentiment words.

``tools/chapter3_full.py`` is the command that runs it (``run``) and writes results.json and results.md; the
Chapter 3 notebooks train the same models on the quick profile. Importing this module loads no framework.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from attention_course import data as course_data
from attention_course.core import machine, metrics
from attention_course.core.backend import Backend, backend
from attention_course.core.files import write_file
from attention_course.core.text import pad_batch

__all__ = ["NER_MODELS", "SENTIMENT_MODELS", "SHOWCASES", "tagger_arguments", "token_gain", "run_ner",
           "train_sentiment", "run_sentiment", "markdown", "ner_markdown", "parse_models",
           "parse_ner_models", "run"]

SHOWCASES = (                                    # the talk's two example sentences start so (GMB spells "Espinoso")
    "Venezuela 's state-owned oil company says it is beginning to explore for oil in Cuban waters",
    "Among those freed earlier this week",
)

NER_MODELS: dict[str, dict[str, Any]] = {       # name → NERTagger keyword arguments ("max_len": the length T)
    "baseline": {},
    "feature · softmax": {"attention": "feature"},
    "feature · linear": {"attention": "feature", "activation": "linear"},
    "feature, one vector · softmax": {"attention": "feature_single"},
    "timestep · softmax": {"attention": "timestep"},
    "timestep · linear": {"attention": "timestep", "activation": "linear"},
    # the talk's model 1 block, as its code computes it: the embedding size is the sentence length (F = T); the
    # tagger puts it before the dropout, where the talk's code applies it after the embedding's dropout
    "talk's model 1 · softmax": {"attention": "repeat_vector", "embed": "max_len"},
    "talk's model 1 · linear": {"attention": "repeat_vector", "activation": "linear", "embed": "max_len"},
    # the talk's "after the recurrence": the feature-wise block on the BiLSTM's states
    "feature · softmax, after the BiLSTM": {"attention": "feature", "place": "after"},
}
SENTIMENT_MODELS = {                             # name → (pooling, use the mask)
    "last state": ("last", True),
    "attention": ("attention", True),
    "attention, no mask": ("attention", False),
    "attention GRU": ("attention_gru", True),
    "bag of words": ("bag_of_words", True),      # a BagOfWords model, not a SentimentClassifier
}


def tagger_arguments(name: str, max_len: int) -> dict[str, Any]:
    """The keyword arguments of ``NERTagger`` for the model called ``name`` in ``NER_MODELS``, at length
    ``max_len`` ("max_len" as a value stands for it: the talk's model 1 sizes its embedding so)."""
    kwargs = {k: max_len if v == "max_len" else v for k, v in NER_MODELS[name].items()}
    return {"max_len": max_len, **kwargs}


# ---- the taggers ---------------------------------------------------------------------------------------------

def token_gain(fw: Backend, model, x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """How much of each token's embedding (or, for a block after the recurrence, of its BiLSTM state) the attention
    lets through: ||a_t ∘ x_t|| / ||x_t||, (B, T)."""
    reweighted = fw.run(model.embed, x)
    if getattr(model, "place", "before") == "after":
        reweighted = fw.run(model.rnn, reweighted)
    return metrics.passed_fraction(reweighted, weights)


def run_ner(fw: Backend, data: dict, epochs: int, batch_size: int, lr: float, seed: int,
            models=tuple(NER_MODELS)) -> dict:
    sentences, tags, T = data["sentences"], data["tags"], data["max_len"]
    test_idx = data["split"]["test"]
    Xte, Yte = data["X_test"], data["Y_test"]
    real = Yte != 0
    true_flat = [tags[t] for t in Yte[real]]
    true_seqs = [sentences[i].tags for i in test_idx]
    n_o = sum(t == "O" for t in true_flat)
    lengths = real.sum(1)
    showcase = next(i for i, s in enumerate(sentences) if " ".join(s.words).startswith(SHOWCASES[0]))
    x_show = pad_batch([data["vocab"].encode(sentences[showcase].words)], max_len=T).ids
    out = {"padding": metrics.padding_inflation(lengths, n_o, T), "models": {},
           "showcase": {"index": int(showcase), "words": sentences[showcase].words,
                        "tags": sentences[showcase].tags,
                        "split": "test" if showcase in set(test_idx.tolist()) else "train"}}
    for name in models:
        kwargs = tagger_arguments(name, T)
        fw.seed(seed)
        model = fw.module(__package__).NERTagger(len(data["vocab"]), len(tags), **kwargs)
        start = time.perf_counter()
        history = fw.fit(model, (data["X_train"],), data["Y_train"], epochs=epochs, batch_size=batch_size,
                           lr=lr, ignore_index=0, seed=seed, desc=f"{fw.name} · {name}")
        seconds = time.perf_counter() - start
        logits = fw.predict(model, (Xte,))
        pred = logits[..., 1:].argmax(-1) + 1                       # never predict the pad tag
        pred_flat = [tags[t] for t in pred[real]]
        pred_seqs = [[tags[t] for t in pred[k, :n]] for k, n in enumerate(lengths)]
        tok = metrics.token_report(true_flat, pred_flat)
        ent = metrics.entity_report(true_seqs, pred_seqs)
        pads = out["padding"]["pads"]                              # the talk's way: pads count as O, predicted O
        padded = metrics.token_report(true_flat + ["O"] * pads, pred_flat + ["O"] * pads)
        entry = {"train_seconds": round(seconds, 1), "train_loss": history["loss"],
                 "train_accuracy": history["accuracy"],
                 "token_accuracy": float((pred[real] == Yte[real]).mean()),
                 "token_report": tok.round(4).to_dict(orient="index"),
                 "entity_report": ent.round(4).to_dict(orient="index"),
                 "padded_report": padded.loc[["O", "weighted avg"]].round(4).to_dict(orient="index")}
        if kwargs.get("attention"):
            _, w = fw.run(model, x_show, return_weights=True)
            n = len(sentences[showcase].words)
            entry["showcase_gain"] = token_gain(fw, model, x_show, w)[0, :n].round(5).tolist()
            if w.ndim == 2:
                entry["showcase_weights"] = w[0, :n].round(5).tolist()
                _, wt = fw.run(model, Xte[:2000], return_weights=True)
                entry["test_weight_on_pads"] = float(metrics.pad_mass(wt, real[:2000]).mean())
        out["models"][name] = entry
        print(f"{name}: {seconds:.0f} s, micro F1 token {tok.loc['entity micro avg', 'f1']:.3f} "
              f"entity {ent.loc['micro avg', 'f1']:.3f}", flush=True)
    return out


# ---- the classifiers ---------------------------------------------------------------------------------------------

def train_sentiment(fw: Backend, data: dict, pooling: str, use_mask: bool, *, epochs: int, batch_size: int,
                    lr: float, seed: int, desc: str, embed_init: float | None = None):
    """Train a ``SentimentClassifier`` on the training part of ``data`` (from ``prepare_sentiment``); returns the
    model, its training time in seconds and the validation inputs it takes."""
    tr, va = data["train"], data["val"]
    fw.seed(seed)
    if pooling == "bag_of_words":
        model = fw.module(__package__).BagOfWords(len(data["vocab"]))
    else:
        model = fw.module(__package__).SentimentClassifier(len(data["vocab"]), pooling=pooling,
                                                           embed_init=embed_init)
    inputs = (data["X"][tr], data["mask"][tr]) if use_mask else (data["X"][tr],)
    start = time.perf_counter()
    fw.fit(model, inputs, data["y"][tr], epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, desc=desc)
    seconds = time.perf_counter() - start
    return model, seconds, ((data["X"][va], data["mask"][va]) if use_mask else (data["X"][va],))


def run_sentiment(fw: Backend, seeds, epochs: int, batch_size: int, lr: float, models=tuple(SENTIMENT_MODELS),
                  embed_init: float | None = None) -> dict:
    runs, showcase = [], None
    for seed in seeds:
        data = course_data.prepare_sentiment(seed)
        va = data["val"]
        word_ids = [data["vocab"][w] for w in course_data.sentiment_words(data)]
        for name in models:
            pooling, use_mask = SENTIMENT_MODELS[name]
            model, seconds, args = train_sentiment(fw, data, pooling, use_mask, epochs=epochs, batch_size=batch_size,
                                                   lr=lr, seed=seed, desc=f"{fw.name} · {name} · seed {seed}",
                                                   embed_init=embed_init)
            row = {"seed": seed, "model": name, "train_seconds": round(seconds, 1)}
            logits, w = fw.run(model, *args, return_weights=True)
            row["val_accuracy"] = float((logits.argmax(-1) == data["y"][va]).mean())
            if w is not None:
                row["pad_mass"] = float(metrics.pad_mass(w, data["mask"][va]).mean())
                row["focus_ratio"] = metrics.focus_ratio(w, data["X"][va], data["mask"][va], word_ids)
                if name == "attention" and showcase is None:
                    showcase = [{"tokens": data["tokens"][i][-32:], "label": int(data["y"][i]),
                                 "weights": w[k, 32 - min(32, len(data["tokens"][i])):].round(4).tolist()}
                                for k, i in enumerate(va[:12])]
            runs.append(row)
            print(row, flush=True)
    return {"runs": runs, "showcase": showcase}


# ---- main ---------------------------------------------------------------------------------------------------

def markdown(res: dict) -> str:
    lines = [f"# Chapter 3 — {res['profile']}-profile results ({res['framework']}, {res['hardware']['cpu']}, "
             f"{res['hardware']['threads_used']} thread(s), GPU: {res['hardware']['gpu']})", "",
             f"Run {res['started']}, {res['minutes']:.0f} min in all. Command: `{res['command']}`", ""]
    if "ner" in res:                                             # absent when run with --skip-ner
        lines += ner_markdown(res)
    if res["config"].get("embed_init") is not None:
        x = res["config"]["embed_init"]
        lines += [f"Sentiment embeddings drawn from U(-{x}, {x}) instead of the framework's default.", ""]
    if "sentiment" not in res:                                   # absent when run with --skip-sentiment
        return "\n".join(lines) + "\n"
    lines += [f"## Sentiment ({res['config']['sentiment_epochs']} epochs, seeds {res['config']['seeds']})", "",
              "| model | val accuracy mean ± std | pad mass | focus ratio |", "|---|---|---|---|"]
    for name in SENTIMENT_MODELS:
        rows = [r for r in res["sentiment"]["runs"] if r["model"] == name]
        if not rows:                                             # not trained in this run (--models)
            continue
        acc = np.array([r["val_accuracy"] for r in rows])
        pm = [r["pad_mass"] for r in rows if "pad_mass" in r]
        fr = [r["focus_ratio"] for r in rows if "focus_ratio" in r]
        lines.append(f"| {name} | {acc.mean():.4f} ± {acc.std(ddof=1):.4f} | "
                     f"{f'{np.mean(pm):.4f}' if pm else '–'} | {f'{np.mean(fr):.2f}' if fr else '–'} |")
    return "\n".join(lines) + "\n"


def ner_markdown(res: dict) -> list[str]:
    a = res["ner"]
    lines = [f"## NER ({res['config']['ner_epochs']} epochs, batch {res['config']['ner_batch']}, "
             f"{a['padding']['sentences']} test sentences)", "",
             "| model | token F1 (entity types, micro) | entity micro F1 | entity macro F1 | train s |",
             "|---|---|---|---|---|"]
    for name, m in a["models"].items():
        lines.append(f"| {name} | {m['token_report']['entity micro avg']['f1']:.3f} | "
                     f"{m['entity_report']['micro avg']['f1']:.3f} | {m['entity_report']['macro avg']['f1']:.3f} | "
                     f"{m['train_seconds']:.0f} |")
    if "baseline" in a["models"]:                                # absent when run with --ner-models
        base = a["models"]["baseline"]["token_report"]
        lines += ["", "Baseline, token level by entity type (precision / recall / F1 / support):", "",
                  "| type | precision | recall | F1 | support |", "|---|---|---|---|---|"]
        for k in (*metrics.ENTITY_TYPES, "O", "weighted avg"):
            r = base[k]
            lines.append(f"| {k} | {r['precision']:.2f} | {r['recall']:.2f} | {r['f1']:.2f} | {r['support']} |")
    p = a["padding"]
    return lines + ["", f"Padding: {p['real_O']} real O tokens, {p['pads']} pads → {p['O_with_pads']} 'O' positions.",
                    ""]


def parse_ner_models(text: str) -> list[str]:
    """``"baseline,feature · softmax, after the BiLSTM"`` → ``["baseline", "feature · softmax, after the BiLSTM"]``:
    names are separated by a comma without a space, as in ``parse_models``."""
    models = re.split(r",(?! )", text)
    unknown = [m for m in models if m not in NER_MODELS]
    if unknown:
        raise ValueError(f"unknown NER models {unknown}; choose from {list(NER_MODELS)}")
    return models


def parse_models(text: str) -> list[str]:
    """``"last state,attention, no mask"`` → ``["last state", "attention, no mask"]``: names are separated by a
    comma without a space, since "attention, no mask" has a comma of its own."""
    models = re.split(r",(?! )", text)
    unknown = [m for m in models if m not in SENTIMENT_MODELS]
    if unknown:
        raise ValueError(f"unknown sentiment models {unknown}; choose from {list(SENTIMENT_MODELS)}")
    return models

def run(framework: str = "pytorch", *, threads: int = 1, ner_epochs: int = 5, sentiment_epochs: int = 15,
        seeds: int = 10, smoke: bool = False, skip_ner: bool = False, skip_sentiment: bool = False,
        models=tuple(SENTIMENT_MODELS), ner_models=tuple(NER_MODELS), embed_init: float | None = None,
        out_dir: Path, command: str) -> dict:
    """Train the chapter's models (``smoke``: a few hundred sentences, one epoch, two seeds) and write
    results.json and results.md into ``out_dir`` (partial.json after each part, in case the run is cut short).
    ``command``: how the run was started, recorded with the results. Returns the results."""
    os.environ.setdefault("COURSE_PROGRESS", "0")
    fw = backend(framework)
    fw.threads(threads)
    started, t0 = time.strftime("%Y-%m-%d %H:%M %Z"), time.perf_counter()
    config: dict[str, Any] = {"ner_epochs": 1 if smoke else ner_epochs, "ner_batch": 32, "ner_lr": 1e-3,
              "ner_max_len": 104, "ner_split_seed": 0, "ner_train_seed": 0,
              "sentiment_epochs": 1 if smoke else sentiment_epochs, "sentiment_batch": 32,
              "sentiment_lr": 1e-3, "sentiment_max_len": 32, "seeds": list(range(2 if smoke else seeds)),
              "sentiment_models": list(models), "embed_init": embed_init}
    if tuple(ner_models) != tuple(NER_MODELS):
        config["ner_models"] = list(ner_models)
    res: dict[str, Any] = {"framework": framework, "profile": "smoke" if smoke else "full", "config": config,
           "hardware": machine.describe(threads), "started": started, "command": command,
           "versions": {"numpy": np.__version__, **fw.version()}}
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = out_dir / "partial.json"                      # after each part, in case the run is cut short
    if not skip_sentiment:
        res["sentiment"] = run_sentiment(fw, config["seeds"], config["sentiment_epochs"],
                                         config["sentiment_batch"], config["sentiment_lr"], models, embed_init)
        write_results(partial, json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    if not skip_ner:
        ner = course_data.prepare_ner(config["ner_max_len"], n_train=400 if smoke else None,
                                      n_test=200 if smoke else None)
        res["ner"] = run_ner(fw, ner, config["ner_epochs"], config["ner_batch"], config["ner_lr"], seed=0,
                             models=ner_models)
    res["minutes"] = (time.perf_counter() - t0) / 60
    write_results(out_dir / "results.json", json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    write_results(out_dir / "results.md", markdown(res))
    partial.unlink(missing_ok=True)
    return res


def write_results(path: Path, text: str) -> None:
    """Write a results file whole (a temporary file renamed into place); an earlier one there is moved aside,
    ``<name>.replaced-<date>-<time>``, and the move is printed."""
    old = write_file(path, text)
    if old is not None:
        print(f"{path} already existed: moved it, untouched, to {old}")
