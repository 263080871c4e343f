"""Chapter 3's full runs of the taggers (the reference results that come with the course, made by
``tools/chapter3_full.py``), as both of its pages read them: every tagger of one framework's runs, and one row of
scores per tagger."""

from __future__ import annotations

from attention_course.core.errors import InputError

__all__ = ["ner_models", "ner_summary"]


def ner_models(results: dict, *later: dict) -> dict:
    """The taggers of ``results``' NER part, with those of ``later`` runs added (the talk's model 1 and the block
    after the BiLSTM were run later, ``--ner-models``), which must share its test split and epochs."""
    if not isinstance(results, dict) or "models" not in results.get("ner", {}):
        raise InputError(f"these results hold no NER part with its models; keys: "
                         f"{sorted(results) if isinstance(results, dict) else type(results).__name__}")
    models = dict(results["ner"]["models"])
    for more in later:
        if more["ner"]["padding"] != results["ner"]["padding"] or \
                more["config"]["ner_epochs"] != results["config"]["ner_epochs"]:
            raise InputError(f"a later run must share the test split and epochs: padding {more['ner']['padding']} "
                             f"against {results['ner']['padding']}, epochs {more['config']['ner_epochs']} against "
                             f"{results['config']['ner_epochs']}")
        models.update(more["ner"]["models"])
    return models


def ner_summary(models: dict):
    """One row per tagger: token F1 of the entity types, entity-level micro and macro F1, training minutes."""
    import pandas as pd

    rows = [{"model": name, "token F1 (entity types)": m["token_report"]["entity micro avg"]["f1"],
             "entity micro F1": m["entity_report"]["micro avg"]["f1"],
             "entity macro F1": m["entity_report"]["macro avg"]["f1"], "train min": m["train_seconds"] / 60}
            for name, m in models.items()]
    return pd.DataFrame(rows).set_index("model")
