"""tools/run_notebook.py, behind `make robustness` and `make colab-check`: every outcome is one JSON-ready row."""

import os

import nbformat
import pytest

from tools import memory_limit
from tools.run_notebook import run


def _notebook(tmp_path, *sources):
    path = tmp_path / "nb.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources]), path)
    return path


def test_a_notebook_that_runs_reports_its_peak_memory(tmp_path, capfd):
    result = run(_notebook(tmp_path, "x = bytearray(50 * 2**20)"))
    assert result["ok"] and result["error"] is None
    assert result["peak_rss_mb"] > 50
    assert result["loaded"] == [], "no framework was imported"
    if os.name == "posix":     # Unix sockets (attention_course.notebook.kernels): no TCP warning from the kernel
        assert "without encryption" not in capfd.readouterr().err


def test_the_row_names_the_frameworks_the_kernel_imported(tmp_path):
    result = run(_notebook(tmp_path, "import torch"))
    assert result["ok"] and result["loaded"] == ["pytorch"]


def test_a_failed_assertion_is_reported_with_its_message(tmp_path):
    result = run(_notebook(tmp_path, "x = 1", "assert x == 2, 'the claim'"))
    assert not result["ok"] and "AssertionError" in result["error"] and "the claim" in result["error"]


def test_a_kernel_that_dies_is_a_failure_that_names_the_cell(tmp_path):
    # a library that crashes (TensorFlow 2.20 on Chapter 4 in make colab-check) ends the kernel like this
    result = run(_notebook(tmp_path, "x = 1", "import os; os.abort()", "x = 2"))
    assert not result["ok"] and result["error"].startswith("the kernel died in code cell 2")
    assert result["peak_rss_mb"] is None


needs_cgroups = pytest.mark.skipif(not memory_limit.available(), reason="no memory control group can be made here")


@needs_cgroups
def test_a_kernel_within_a_memory_limit_runs_and_reports_what_the_container_counted(tmp_path):
    result = run(_notebook(tmp_path, "x = bytearray(100 * 2**20)"), memory_limit_mb=400)
    assert result["ok"], result["error"]
    container = result["container"]
    assert container["limit_mb"] == 400 and container["oom_killed"] == 0
    assert 100 < container["peak_mb"] <= 400
    assert not any(p.name.startswith("course-notebook-") for p in memory_limit.parent().iterdir())   # removed


@needs_cgroups
def test_a_kernel_over_its_memory_limit_is_killed_and_the_row_says_so(tmp_path):
    result = run(_notebook(tmp_path, "x = 1", "x = bytearray(400 * 2**20)", "x = 2"), memory_limit_mb=200)
    assert not result["ok"] and result["error"].startswith("the kernel died in code cell 2")
    assert result["container"]["oom_killed"] >= 1 and result["container"]["peak_mb"] <= 200


def test_a_memory_limit_is_a_whole_number_of_megabytes():
    for bad in (0, 10, 1.5, "1200", True):
        with pytest.raises(ValueError, match="whole number of MB"):
            memory_limit.MemoryLimit(bad)
