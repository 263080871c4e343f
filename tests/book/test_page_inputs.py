"""Which pages an edit re-executes (tools/page_inputs.py, tools/notebook_cache.py): on a copy of the tree, an edit to
one chapter's package code changes that chapter's page keys only, an edit to a core module every page imports
changes them all, an edit to prose changes none (nor the code hash the execution cache matches on); and through the
cache itself, a stored run whose page key no longer matches is dropped and run again."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
from tools import execute_book, notebook_cache, page_inputs  # noqa: E402

CH11 = {"11-more-attention/more-attention.ipynb", "11-more-attention/where-to-look.ipynb"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """The package and the book, copied (what the page keys read)."""
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(ROOT / "attention_course", root / "attention_course",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "book", root / "book", ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints"))
    return root


def pages(root: Path) -> dict[str, Path]:
    return {p.relative_to(root / "book").as_posix(): p for p in sorted((root / "book").glob("[0-9][0-9]-*/*.ipynb"))}


def keys(root: Path) -> dict[str, str]:
    return {name: page_inputs.page_key(path, root) for name, path in pages(root).items()}


def rerun_after(root: Path, path: Path, edit) -> set[str]:
    """The pages whose key an edit of ``path`` changes (the file is restored afterwards)."""
    before, text = keys(root), path.read_text(encoding="utf-8")
    try:
        path.write_text(edit(text), encoding="utf-8")
        after = keys(root)
    finally:
        path.write_text(text, encoding="utf-8")
    return {name for name in before if before[name] != after[name]}


def test_an_edit_to_one_chapters_package_reruns_that_chapters_pages_only(tree):
    assert len(pages(tree)) == 13
    edited = tree / "attention_course" / "ch11_more_attention" / "torch.py"
    assert rerun_after(tree, edited, lambda s: s + "\n# a comment\n") == CH11
    # a committed result of Chapter 5 is read by Chapter 5's page only
    result = next((tree / "book" / "05-neural-machine-translation" / "results").glob("*.json"))
    assert rerun_after(tree, result, lambda s: s.replace("{", "{ ", 1)) == {
        "05-neural-machine-translation/neural-machine-translation.ipynb"}


def test_an_edit_to_a_core_module_reruns_every_page(tree):
    edited = tree / "attention_course" / "core" / "errors.py"
    assert rerun_after(tree, edited, lambda s: s + "\n# a comment\n") == set(pages(tree))


def test_an_edit_to_a_chapters_module_reruns_the_later_chapters_that_import_it(tree):
    edited = tree / "attention_course" / "ch07_self_attention" / "torch.py"
    rerun = rerun_after(tree, edited, lambda s: s + "\n# a comment\n")
    assert {"07-self-attention/self-attention.ipynb", "08-transformer/transformer.ipynb",
            "10-modern-attention/modern-attention.ipynb"} <= rerun
    assert not any(name.startswith(("01-", "02-", "03-", "04-", "05-", "06-")) for name in rerun), rerun


def test_an_edit_to_prose_reruns_nothing(tree):
    from jupyter_cache import get_cache

    path = pages(tree)["07-self-attention/self-attention.ipynb"]
    nb = json.loads(path.read_text(encoding="utf-8"))
    cache = get_cache(str(tree / "cache"))
    _, code_hash = cache.create_hashed_notebook(_node(nb))
    markdown = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")

    def reworded(text: str) -> str:
        changed = json.loads(text)
        next(c for c in changed["cells"] if c["cell_type"] == "markdown")["source"] = ["A new sentence.\n"]
        assert changed != nb
        _, rehashed = cache.create_hashed_notebook(_node(changed))
        assert rehashed == code_hash, "the execution cache matches on code cells only"
        return json.dumps(changed)

    assert markdown and code
    assert rerun_after(tree, path, reworded) == set()

    def recoded(text: str) -> str:
        changed = json.loads(text)
        next(c for c in changed["cells"] if c["cell_type"] == "code")["source"].append("\nx = 1")
        _, rehashed = cache.create_hashed_notebook(_node(changed))
        assert rehashed != code_hash, "an edit to code is a new notebook for the cache"
        return json.dumps(changed)

    rerun_after(tree, path, recoded)


def _node(nb: dict):
    import nbformat

    return nbformat.from_dict(nb)


def test_a_stored_run_with_an_old_page_key_is_dropped_and_run_again(tree, tmp_path, monkeypatch):
    import nbformat

    monkeypatch.setattr(notebook_cache, "CACHE_ROOT", tmp_path / "cache")
    monkeypatch.setattr(page_inputs, "ROOT", tree)
    path = pages(tree)["11-more-attention/where-to-look.ipynb"]
    other = pages(tree)["01-sequence-models/sequence-models.ipynb"]
    for p in (path, other):                                   # as nbval or an earlier build left them
        notebook_cache.store(nbformat.read(p, as_version=4), p, 1.0)
    assert execute_book.stale([path, other]) == []
    edited = tree / "attention_course" / "ch11_more_attention" / "keras.py"
    text = edited.read_text(encoding="utf-8")
    try:
        edited.write_text(text + "\n# a comment\n", encoding="utf-8")
        assert execute_book.stale([path, other]) == [path]
        from jupyter_cache import get_cache

        cache = get_cache(str(notebook_cache.cache_dir()))
        assert len(cache.list_cache_records()) == 1, "the stale run is removed: the book cannot render it"
    finally:
        edited.write_text(text, encoding="utf-8")


def test_the_command_lists_a_pages_files():
    files = [p.relative_to(ROOT).as_posix() for p in page_inputs.page_files(
        ROOT / "book" / "01-sequence-models" / "sequence-models.ipynb")]
    assert "attention_course/ch01_sequence_models/torch.py" in files
    assert not any("/ch02_" in f or "/ch11_" in f for f in files), files
