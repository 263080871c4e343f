"""tools/chapter11_full.py trains and scores the chapter's experiments at a size and writes one results file with
every run's table rows and the sizes it ran at (tiny sizes here)."""

import json

import pytest

from attention_course.ch11_more_attention import experiment as c11
from attention_course.notebook import frameworks

pytestmark = pytest.mark.chapter(11)


def test_the_tool_writes_each_runs_rows(tmp_path, monkeypatch):
    from tools import chapter11_full

    monkeypatch.setitem(c11.SIZES, "quick", {**c11.SIZES["quick"], "n_train": 300, "n_test": 20, "epochs": 1,
                                             "test_lengths": (5, 12), "hidden": 8})
    monkeypatch.setitem(c11.MARKER_SIZES, "quick", {**c11.MARKER_SIZES["quick"], "n_train": 200, "n_test": 50,
                                                    "epochs": 1, "dim": 8})
    monkeypatch.setitem(c11.MULTI_SIZES, "quick", {**c11.MULTI_SIZES["quick"], "n_train": 100, "n_test": 10,
                                                   "epochs": 1, "hidden": 4, "embed": 4})
    monkeypatch.setitem(c11.COPY_SIZES, "quick", {**c11.COPY_SIZES["quick"], "n_train": 100, "n_test": 10,
                                                  "epochs": 1, "hidden": 4, "embed": 4})
    monkeypatch.setitem(c11.SPELL_SIZES, "quick", {**c11.SPELL_SIZES["quick"], "n_train": 100, "n_test": 10,
                                                   "epochs": 1, "hidden": 4, "embed": 4})
    ran = ("pointer", "fixed", "marker", "multi", "copy", "spell")                  # all but BBC News, for speed
    try:
        assert chapter11_full.main(["--size", "quick", "--models", ",".join(ran), "--seeds", "0,1",
                                    "--out", str(tmp_path)]) == 0
    finally:
        frameworks.use(None)
    results = json.loads((tmp_path / "quick-pytorch.json").read_text())
    assert results["sizes"]["sorting"]["n_train"] == 300 and results["framework"] == "pytorch"
    runs = results["runs"]
    assert [(r["model"], r["seed"]) for r in runs] == [(m, s) for s in (0, 1) for m in ran]
    sorting = [row for r in runs if r["model"] == "pointer" for row in r["rows"]]
    assert [(row["length"], row["seed"]) for row in sorting] == [(5, 0), (12, 0), (5, 1), (12, 1)]
    assert all(0 <= row["steps right"] <= 1 for row in sorting)
    marker = [row for r in runs if r["model"] == "marker" for row in r["rows"]]
    assert [row["width"] for row in marker] == [1, 3, 1, 3]
    multi = [row["model"] for r in runs if r["model"] == "multi" for row in r["rows"]]
    assert multi == list(c11.MULTI_MODELS) * 2
    copying = [row["model"] for r in runs if r["model"] == "copy" for row in r["rows"]]
    assert copying == list(c11.COPY_MODELS) * 2
    spelling = [row["model"] for r in runs if r["model"] == "spell" for row in r["rows"]]
    assert spelling == [f"{kind} attention" for kind in c11.SPELL_MODELS] * 2
