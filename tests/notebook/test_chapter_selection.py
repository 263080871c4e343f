"""`make test CHAPTERS=...` (``COURSE_TEST_CHAPTERS``): the shared tests always run, a chapter's tests only when the
chapter is chosen; a test belongs to a chapter by its folder (``tests/chNN/``), its ``chapter`` mark or the chapter
notebook it takes."""

from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import pytest_collection_modifyitems

ROOT = Path(__file__).resolve().parents[2]


class Item(SimpleNamespace):
    def iter_markers(self, name):
        return [m for m in self.marks if m.name == name]


def _items():
    notebook = ROOT / "book" / "03-timestep-feature-attention" / "timestep-feature-attention.ipynb"
    return [Item(name="shared", marks=[pytest.mark.slow.mark]),
            Item(name="transformer", marks=[pytest.mark.chapter(8, 9).mark]),
            Item(name="student copy of 3", marks=[], callspec=SimpleNamespace(params={"nb_path": notebook})),
            Item(name="keras", marks=[], callspec=SimpleNamespace(params={"fw": "keras"})),
            Item(name="in tests/ch06", marks=[], path=ROOT / "tests" / "ch06" / "test_captioning.py")]


def _kept(spec, monkeypatch):
    monkeypatch.setenv("COURSE_TEST_CHAPTERS", spec)
    items, left_out = _items(), []
    config = SimpleNamespace(hook=SimpleNamespace(pytest_deselected=lambda items: left_out.extend(items)))
    pytest_collection_modifyitems(config, items)
    assert len(items) + len(left_out) == 5
    return [i.name for i in items]


def test_every_test_runs_by_default(monkeypatch):
    assert _kept("all", monkeypatch) == ["shared", "transformer", "student copy of 3", "keras", "in tests/ch06"]


def test_a_subset_keeps_the_shared_tests_and_its_chapters(monkeypatch):
    assert _kept("1-4", monkeypatch) == ["shared", "student copy of 3", "keras"]
    assert _kept("9", monkeypatch) == ["shared", "transformer", "keras"]
    assert _kept("1,2", monkeypatch) == ["shared", "keras"]
    assert _kept("6", monkeypatch) == ["shared", "keras", "in tests/ch06"]
