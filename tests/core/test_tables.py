"""Printed tables show numbers as a person writes them (``attention_course.notebook.tables``)."""

import numpy as np
import pandas as pd
import pytest

from attention_course.notebook.tables import readable, readable_tables


@pytest.mark.parametrize(("value", "shown"), [
    (7436.0, "7,436"), (64.0, "64"), (0.0, "0"), (1011.9421, "1,012"), (0.375008, "0.375"), (28.345558, "28.35"),
    (3.576279e-07, "3.576e-07"), (0.000939, "0.000939"), (-2.5, "-2.5"), (float("nan"), "nan"),
    (np.float32(0.5), "0.5"),
])
def test_readable(value, shown):
    assert readable(value) == shown


def test_a_table_prints_no_raw_float():
    before = pd.get_option("display.float_format")
    try:
        readable_tables()
        html = pd.DataFrame({"support": [7436.0, 22445.0], "precision": [0.375008, 1.0],
                             "difference": [3.576279e-07, 5.960464e-08]})._repr_html_()
    finally:
        pd.set_option("display.float_format", before)
    for raw in ("7436.0", "0.375008", "3.576279e-07"):
        assert raw not in html
    for shown in ("7,436", "22,445", "0.375", "3.576e-07", "5.96e-08"):
        assert f">{shown}<" in html
