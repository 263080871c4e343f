"""tools/run_notebook.py, behind `make robustness` and `make colab-check`: every outcome is one JSON-ready row."""

import nbformat

from tools.run_notebook import run


def _notebook(tmp_path, *sources):
    path = tmp_path / "nb.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources]), path)
    return path


def test_a_notebook_that_runs_reports_its_peak_memory(tmp_path):
    result = run(_notebook(tmp_path, "x = bytearray(50 * 2**20)"))
    assert result["ok"] and result["error"] is None
    assert result["peak_rss_mb"] > 50


def test_a_failed_assertion_is_reported_with_its_message(tmp_path):
    result = run(_notebook(tmp_path, "x = 1", "assert x == 2, 'the claim'"))
    assert not result["ok"] and "AssertionError" in result["error"] and "the claim" in result["error"]


def test_a_kernel_that_dies_is_a_failure_that_names_the_cell(tmp_path):
    # a library that crashes (TensorFlow 2.20 on Chapter 4 in make colab-check) ends the kernel like this
    result = run(_notebook(tmp_path, "x = 1", "import os; os.abort()", "x = 2"))
    assert not result["ok"] and result["error"].startswith("the kernel died in code cell 2")
    assert result["peak_rss_mb"] is None
