"""``ac.results.load``: the book's committed results beside the notebook, in the checkout, or online (Colab)."""

from __future__ import annotations

import io
import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from attention_course.core import results

ROOT = Path(__file__).resolve().parents[2]
LOADED = re.compile(r"ac\.results\.load\(\s*\"([^\"]+)\"")


def _offline(monkeypatch):
    def refuse(*args, **kwargs):
        raise urllib.error.URLError("no network in this test")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def _notebook_paths() -> list[str]:
    found = []
    for nb in sorted((ROOT / "book").glob("[0-9][0-9]-*/*.ipynb")):
        text = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text(encoding="utf-8"))["cells"])
        found += LOADED.findall(text)
    return found


def test_every_results_file_a_notebook_loads_is_in_the_book(monkeypatch):
    paths = _notebook_paths()
    assert len(paths) >= 6, paths                      # Chapters 5, 6, 8 and 9 name theirs (3 builds the names)
    _offline(monkeypatch)
    for path in paths:
        assert (ROOT / "book" / path).is_file(), path
        monkeypatch.chdir(ROOT / "book" / path.split("/")[0])        # where the notebook runs
        assert isinstance(results.load(path), dict)


def test_outside_the_book_the_checkout_is_read(tmp_path, monkeypatch):
    _offline(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert results.load("09-bert/results/pretraining-full-pytorch.json")["parameters"] > 0


def test_without_a_local_copy_the_repository_is_read_online(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(results, "local_copies", lambda path: [tmp_path / "nowhere" / path])
    asked = []

    def answer(url, timeout):
        asked.append(url)
        return io.BytesIO(b'{"bleu": 35.7}')

    monkeypatch.setattr(urllib.request, "urlopen", answer)
    assert results.load("08-transformer/results/full-pytorch.json") == {"bleu": 35.7}
    assert asked == [results.URL + "08-transformer/results/full-pytorch.json"]
    assert not list(tmp_path.rglob("*"))                                          # nothing written


def test_a_file_found_nowhere_names_every_place_it_looked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(results, "local_copies", lambda path: [tmp_path / "nowhere" / path])
    _offline(monkeypatch)
    with pytest.raises(results.ResultsUnavailableError, match=r"x/results/y\.json: not found here \(.*nowhere.*\) "
                       r"nor online at https://raw\.githubusercontent\.com/.*/x/results/y\.json \(.*no network"):
        results.load("x/results/y.json")
    with pytest.raises(results.ResultsUnavailableError, match="online=False"):
        results.load("x/results/y.json", online=False)
    with pytest.raises(ValueError, match="relative to the book's folder"):
        results.load("../secrets.json")
