"""tools/subset_book.py: the book of `make test CHAPTERS=...`."""

import importlib.util
from pathlib import Path

import pytest
import yaml

from attention_course.notebook.assign import AssignError
from tools import subset_book
from tools.notebook_cache import cache_dir

ROOT = Path(__file__).resolve().parents[2]


def test_the_subset_book_holds_the_chosen_chapters_as_links(tmp_path):
    out = tmp_path / "subset"
    folders = subset_book.write("1,3", out)
    assert [f.name[:2] for f in folders] == ["01", "03"]
    toc = yaml.safe_load((out / "_toc.yml").read_text())
    files = [e["file"] for part in toc["parts"] for e in part["chapters"]]
    assert toc["root"] == "book/intro"
    assert files == [f"book/{f.name}/{next(f.glob('*.ipynb')).stem}" for f in folders] + ["book/measurements",
                                                                                          "book/references"]
    for f in folders:                                       # links, so nbval's executed copies are the ones built
        assert (out / "book" / f.name).is_symlink() and (out / "book" / f.name).resolve() == f
    assert not (out / "book" / "02-soft-hard-attention").exists()
    intro = (out / "book" / "intro.md").read_text()
    assert "<01-sequence-models/" in intro and "<02-soft-hard-attention/" not in intro   # the others as plain text
    assert "Soft and hard attention" in intro
    assert (ROOT / "book" / "intro.md").read_text().count("{doc}") > intro.count("{doc}")   # the original is kept


def test_the_subset_book_renders_from_the_cache_nbval_fills(tmp_path):
    out = tmp_path / "subset"
    subset_book.write("2", out)
    spec = importlib.util.spec_from_file_location("linked_cache", out / "tools" / "notebook_cache.py")
    linked = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(linked)
    assert linked.cache_dir() == cache_dir()


def test_a_chapter_the_book_does_not_have_is_refused(tmp_path):
    with pytest.raises(AssignError, match="no chapter 42"):
        subset_book.write("1,42", tmp_path / "subset")
    assert not (tmp_path / "subset").exists()
