"""The rules the browser tests apply to every built page catch a page built to break them, and pass a clean one."""

from __future__ import annotations

import pytest
from page_rules import (
    RULES,
    Visible,
    page_findings,
    precision,
    repeated_exercise_numbers,
    significant,
    tooltip_formats,
)

CLEAN = Visible(
    prose=["Scaling raises the weight of the right key to 0.081, about 1,700 times as much.",
           "Measured on a 2-core CPU over 5 seeds, in both frameworks; version 2.13.0 of PyTorch.",
           "Without the mask, a row of padding gives NaN: the softmax of −inf everywhere."],
    cells=["0.990", "19.9", "—", "12,000", "3"],
    outputs=["The layer's weights sum to 1 in every row."],
    code=["weights = torch.softmax(scores, dim=-1)  # (B, T_q, T_k)"],
    tooltips=[".3f", ".2%", "d", ".3~g"],
    headings=["7.1 Queries, keys and values", "Exercises", "Summary"],
    exercises=["Exercise 7.1 (Mask the future)", "Exercise 7.2 (Scale the scores)"],
)


def test_a_clean_page_passes_every_rule():
    assert page_findings(CLEAN) == {}


BROKEN = {
    "a number printed as a tuple": Visible(prose=["… raises it to 0.081, (1, 666) times as much"],
                                           cells=["(8, 257) MB"]),
    "NaN where a value does not exist": Visible(cells=["0.755", "NaN", "1"]),
    "a float with more than 4 significant digits": Visible(prose=["accuracy 0.989565217391 on the test set"]),
    "machine names, commands, paths or test talk": Visible(
        outputs=["AMD EPYC, 1 thread(s), GPU: False, 75 min"], prose=["NVIDIA driver 580.159.04",
                                                                      "`tools/chapter5_full.py --size cpu` made it",
                                                                      "the notebook asserts it", "run in CI"]),
    "a Python repr": Visible(outputs=["Name: largest difference of dQ, dK, dV, dtype: object"]),
    "exercises without an 'Exercises' heading": Visible(headings=["7.5 Positions"],
                                                        exercises=["Exercise 7.1 (Mask the future)"]),
}


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_catches_a_page_built_to_break_it(rule):
    found = page_findings(BROKEN[rule])
    assert list(found) == [rule], found


def test_bookkeeping_catches_every_kind_it_names():
    found = RULES["machine names, commands, paths or test talk"](BROKEN["machine names, commands, paths or test talk"])
    assert len(found) == 7, found            # EPYC, NVIDIA, the driver, tools/, --size, asserts, CI
    assert not RULES["machine names, commands, paths or test talk"](Visible(prose=["make the weights too flat"]))
    for word in ("make book", "make robustness", "tests/ch09/test_bert.py", "the committed results",
                 "In this run (keras)", "Intel(R) Xeon(R) Processor", "H200"):
        assert RULES["machine names, commands, paths or test talk"](Visible(prose=[word])), word


def test_reprs_of_dicts_arrays_and_objects_are_caught():
    rule = RULES["a Python repr"]
    for text in ("{'bleu': 19.9}", "array([0.1, 0.9])", "<keras.src.models.Model object at 0x7f3a2c>",
                 "tensor([1, 2])"):
        assert rule(Visible(cells=[text])), text


@pytest.mark.parametrize(("number", "digits"), [("0.000123", 3), ("12.345", 5), ("0.99", 2), ("1234.5", 5),
                                                ("0.0100", 3), ("100.0", 4)])
def test_significant_digits(number, digits):
    assert significant(*number.split(".")) == digits


def test_long_floats_spare_counts_ids_and_versions():
    rule = RULES["a float with more than 4 significant digits"]
    assert not rule(Visible(prose=["39838 pairs, seed 12345, PyTorch 2.13.0, arXiv 1409.0473"]))
    assert rule(Visible(prose=["a loss of 1.23456 nats"]))
    assert rule(Visible(cells=["1.788139e-07"]))


@pytest.mark.parametrize(("spec", "digits"), [(".3f", 3), (".2%", 2), ("d", 0), (",.0f", 0), (".3~g", 3),
                                              ("", -1), (".6f", 6), ("~s", 6)])
def test_the_digits_of_a_number_format(spec, digits):
    assert precision(spec) == digits


def test_a_tooltip_without_a_format_is_caught():
    rule = RULES["a float with more than 4 significant digits"]
    assert rule(Visible(tooltips=[""])) and rule(Visible(tooltips=[".6f"])) and not rule(Visible(tooltips=[".3f"]))


def test_tooltip_formats_are_read_from_a_spec_and_whole_numbers_need_none():
    spec = {"datasets": {"d1": [{"epoch": 1, "accuracy": 0.989565217391, "loss": 0.5, "seed": 0},
                                {"epoch": 2, "accuracy": 0.99, "loss": 0.25, "seed": 1}]},
            "layer": [{"mark": "line", "encoding": {"tooltip": [
                {"field": "epoch", "type": "quantitative"},
                {"field": "accuracy", "type": "quantitative"},
                {"field": "loss", "type": "quantitative", "format": ".3f"},
                {"field": "seed", "type": "nominal"}]}},
                      {"mark": "rule", "encoding": {"tooltip": {"field": "accuracy", "type": "quantitative",
                                                                "format": ".2f"}}}]}
    assert tooltip_formats(spec) == ["", ".3f", ".2f"]


def test_an_exercise_number_used_twice_in_the_book_is_caught():
    pages = {"03/a.html": Visible(exercises=["Exercise 3.1 (Mask)", "Exercise 3.2 (Pool)"]),
             "03/b.html": Visible(exercises=["Exercise 3.1 (Mask again)"]),
             "04/c.html": Visible(exercises=["Exercise 4.1 (Scale)"])}
    assert repeated_exercise_numbers(pages) == ["Exercise 3.1: 03/a.html, 03/b.html"]
    del pages["03/b.html"]
    assert repeated_exercise_numbers(pages) == []
