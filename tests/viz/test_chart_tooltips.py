"""The general charts' tooltips show numbers as a reader wants them: a fraction with three significant digits, a
count as it is (``attention_course.viz.charts.tooltips``)."""

from __future__ import annotations

import pandas as pd

import attention_course as ac


def _tips(spec) -> dict[str, str | None]:
    found = {}
    for tip in spec["encoding"]["tooltip"]:
        found[tip["field"]] = tip.get("format")
    return found


def test_line_chart_tooltips_round_fractions_and_leave_counts_and_names_alone():
    data = pd.DataFrame({"epoch": [1, 2, 3], "accuracy": [0.989565217391, 0.5, 1.0], "model": ["a", "b", "c"],
                         "steps": [1200.5, 3000.0, 10.0], "loss": [2.0, 1.0, 0.0]})
    spec = ac.viz.lines(data, x="epoch", y="accuracy", color="model", title="t").to_dict()
    assert _tips(spec) == {"epoch": None, "accuracy": ".3~g", "model": None, "steps": ",.0f", "loss": None}


def test_tooltips_of_chosen_columns_keep_their_order():
    data = pd.DataFrame({"name": ["x"], "share": [0.123456], "n": [3]})
    tips = ac.viz.tooltips(data, ["n", "share"])
    assert tips[0] == "n" and tips[1].to_dict() == {"field": "share", "type": "quantitative", "format": ".3~g"}
