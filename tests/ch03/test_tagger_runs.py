"""Chapter 3's committed tagger runs, as both pages read them: later runs join the first one's taggers only on the
same test split and epochs, and the summary is one row per tagger."""

import pytest

from attention_course.ch03_timestep_feature_attention import full_runs
from attention_course.core.errors import InputError

pytestmark = pytest.mark.chapter(3)

PADDING = {"sentences": 10, "positions": 300}


def _tagger(token_f1, entity_f1, seconds=60.0):
    return {"token_report": {"entity micro avg": {"f1": token_f1}},
            "entity_report": {"micro avg": {"f1": entity_f1}, "macro avg": {"f1": entity_f1 / 2}},
            "train_seconds": seconds}


def _results(models, padding=PADDING, epochs=5):
    return {"ner": {"padding": dict(padding), "models": models}, "config": {"ner_epochs": epochs}}


def test_a_later_run_adds_its_taggers_to_the_first_runs():
    first = _results({"baseline": _tagger(0.8, 0.78), "feature · softmax": _tagger(0.7, 0.66)})
    later = _results({"talk's model 1 · softmax": _tagger(0.79, 0.77)})
    models = full_runs.ner_models(first, later)
    assert list(models) == ["baseline", "feature · softmax", "talk's model 1 · softmax"]
    assert list(first["ner"]["models"]) == ["baseline", "feature · softmax"]          # the first run is unchanged


@pytest.mark.parametrize("change", [{"padding": {"sentences": 11, "positions": 300}}, {"epochs": 3}])
def test_a_later_run_on_another_split_or_epochs_is_refused(change):
    first = _results({"baseline": _tagger(0.8, 0.78)})
    with pytest.raises(InputError, match="share the test split and epochs"):
        full_runs.ner_models(first, _results({"timestep · linear": _tagger(0.8, 0.77)}, **change))


def test_results_without_taggers_are_named():
    with pytest.raises(InputError, match="no NER part"):
        full_runs.ner_models({"sentiment": {}})


def test_the_summary_has_one_row_per_tagger_with_its_scores():
    table = full_runs.ner_summary({"baseline": _tagger(0.8, 0.78, 120.0), "feature · linear": _tagger(0.79, 0.76)})
    assert list(table.index) == ["baseline", "feature · linear"]
    assert table.loc["baseline", "token F1 (entity types)"] == 0.8
    assert table.loc["baseline", "entity micro F1"] == 0.78 and table.loc["baseline", "entity macro F1"] == 0.39
    assert table.loc["baseline", "train min"] == 2.0
