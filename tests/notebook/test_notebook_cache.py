"""`make test` executes each notebook once: nbval runs it, tools/notebook_cache.py stores the executed copy where
the book build (execute_notebooks: cache) finds it. These tests run the plugin on small notebooks."""

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def _nbval(path: Path, cache_root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NOTEBOOK_CACHE_ROOT": str(cache_root)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tools.notebook_cache", "-p", "no:cacheprovider",
                           "--nbval-lax", "--nbval-current-env", "--rootdir", str(path.parent), str(path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _cached(path: Path, cache_root: Path):
    sys.path.insert(0, str(ROOT / "tools"))
    import notebook_cache
    from jupyter_cache import get_cache

    folders = list(cache_root.iterdir()) if cache_root.exists() else []
    for folder in folders:
        try:
            return get_cache(str(folder)).merge_match_into_notebook(nbformat.read(path, as_version=4))[1]
        except KeyError:
            continue
    assert notebook_cache.cache_key()  # the key is computable outside pytest too (the book build uses it)
    return None


def test_nbval_run_is_what_the_book_renders(tmp_path):
    path = _notebook(tmp_path / "small.ipynb",
                     "print('hello from nbval')",
                     "from IPython.display import HTML, display\ndisplay(HTML('<b>bold</b>'))\n41 + 1",
                     "import ipywidgets as w\nw.IntSlider(value=3)",
                     "from IPython.display import clear_output\nprint('gone')\nclear_output()\nprint('kept')")
    run = _nbval(path, tmp_path / "cache")
    assert run.returncode == 0, run.stdout + run.stderr
    nb = _cached(path, tmp_path / "cache")
    assert nb is not None, "the executed notebook is not in the book's cache"
    outputs = [cell.outputs for cell in nb.cells]
    assert outputs[0][0]["text"] == "hello from nbval\n"
    assert outputs[1][0]["data"]["text/html"] == "<b>bold</b>" and outputs[1][1]["data"]["text/plain"] == "42"
    assert [c.execution_count for c in nb.cells] == [1, 2, 3, 4]
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert any(s["model_name"] == "IntSliderModel" and s["state"]["value"] == 3 for s in state.values())
    assert [o.get("text") for o in outputs[3]] == ["kept\n"]          # clear_output is honoured


def test_a_failing_notebook_is_not_cached(tmp_path):
    path = _notebook(tmp_path / "broken.ipynb", "x = 1", "assert x == 2, 'a claim that fails'")
    run = _nbval(path, tmp_path / "cache")
    assert run.returncode != 0
    assert _cached(path, tmp_path / "cache") is None


def test_the_cache_folder_follows_the_settings(monkeypatch):
    sys.path.insert(0, str(ROOT / "tools"))
    import notebook_cache

    monkeypatch.setenv("COURSE_PROFILE", "quick")
    quick = notebook_cache.cache_key()
    monkeypatch.setenv("COURSE_PROFILE", "full")
    assert notebook_cache.cache_key() != quick
    monkeypatch.setenv("COURSE_PROFILE", "quick")
    monkeypatch.setenv("COURSE_DATA_DIR", "/elsewhere")                   # where the data lives does not matter
    assert notebook_cache.cache_key() == quick
