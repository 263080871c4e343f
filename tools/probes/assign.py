"""Bad input to the instructor export ``course-assign`` (:mod:`attention_course.notebook.assign`).

Every probe builds a small repository (two chapters, an intro, a README) in a temporary folder and checks, before
letting the course's error escape, that nothing was lost or half-written.
"""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path

from . import Probe

NOTEBOOK = """{"cells": [{"cell_type": "code", "execution_count": null, "id": "a1", "metadata": {}, "outputs": [],
  "source": ["def square(x):\\n", "    ### BEGIN SOLUTION\\n", "    return x * x\\n", "    ### END SOLUTION\\n"]}],
 "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"""


@contextmanager
def repo():
    """A temporary repository ``root`` with ``book/01-alpha`` and ``book/02-beta``; yields (root, tmp)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        for slug in ("01-alpha", "02-beta"):
            (root / "book" / slug).mkdir(parents=True)
            (root / "book" / slug / f"{slug[3:]}.ipynb").write_text(NOTEBOOK)
        (root / "book" / "intro.md").write_text("# Intro\n")
        (root / "README.md").write_text("# The course\n")
        yield root, Path(tmp)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def expect_unchanged(folder: Path, run, needle: str):
    """``run()`` must raise AssignError whose message holds ``needle``, and leave ``folder`` as it was."""
    from attention_course.notebook.assign import AssignError

    before = snapshot(folder)
    try:
        run()
    except AssignError as err:
        assert needle in str(err), str(err)
        assert snapshot(folder) == before, "the folder changed"
        assert not [p for p in folder.rglob(".*.tmp-*")], "a temporary export was left behind"
        raise
    raise AssertionError("no AssignError was raised")


def marker_typo(fw):
    """``### END SOLUTON``: the previous export stays as it was, nothing half-written."""
    from attention_course.notebook import assign

    with repo() as (root, tmp):
        assign.export("all", tmp / "out", repo_root=root)
        nb = root / "book" / "02-beta" / "beta.ipynb"
        nb.write_text(nb.read_text().replace("END SOLUTION", "END SOLUTON"))
        expect_unchanged(tmp, lambda: assign.export("all", tmp / "out", repo_root=root, force=True),
                         "has no END SOLUTION")


def out_is_repo_root(fw):
    """``--out .`` (the repository root) with --force: refused, the README stays."""
    from attention_course.notebook import assign

    with repo() as (root, tmp):
        expect_unchanged(tmp, lambda: assign.export([1], root, repo_root=root, force=True), "repository root")


def out_inside_chapter(fw):
    """``--out book/01-alpha/assignments``: refused (it used to copy the chapter into itself)."""
    from attention_course.notebook import assign

    with repo() as (root, tmp):
        out = root / "book" / "01-alpha" / "assignments"
        expect_unchanged(tmp, lambda: assign.export([1], out, repo_root=root, force=True), "inside the book")


def out_not_empty(fw):
    from attention_course.notebook import assign

    with repo() as (root, tmp):
        (tmp / "mine").mkdir()
        (tmp / "mine" / "notes.txt").write_text("keep me")
        expect_unchanged(tmp, lambda: assign.export([1], tmp / "mine", repo_root=root), "--force")


def force_on_a_foreign_folder(fw):
    from attention_course.notebook import assign

    with repo() as (root, tmp):
        (tmp / "mine").mkdir()
        (tmp / "mine" / "notes.txt").write_text("keep me")
        expect_unchanged(tmp, lambda: assign.export([1], tmp / "mine", repo_root=root, force=True),
                         "not a previous export")


def out_is_a_file(fw):
    from attention_course.notebook import assign

    with repo() as (root, tmp):
        (tmp / "file").write_text("x")
        expect_unchanged(tmp, lambda: assign.export([1], tmp / "file", repo_root=root, force=True), "is a file")


def unreadable_notebook(fw):
    from attention_course.notebook import assign

    with repo() as (root, tmp):
        (root / "book" / "01-alpha" / "alpha.ipynb").write_text("{ not json")
        expect_unchanged(tmp, lambda: assign.export([1], tmp / "out", repo_root=root), "not a readable notebook")


def backwards_range(fw):
    from attention_course.notebook import assign

    assign.parse_chapters("3-1")


def bad_chapter_spec(fw):
    from attention_course.notebook import assign

    assign.parse_chapters("one")


def no_chapters(fw):
    from attention_course.notebook import assign

    with repo() as (root, tmp):
        expect_unchanged(tmp, lambda: assign.export([], tmp / "out", repo_root=root), "no chapters chosen")


def unknown_chapter(fw):
    from attention_course.notebook import assign

    with repo() as (root, tmp):
        expect_unchanged(tmp, lambda: assign.export([7], tmp / "out", repo_root=root), "available: [1, 2]")


def cli_out_dot(fw):
    """``course-assign --out .`` from the repository: exit status 2 and a one-line error, README intact."""
    from attention_course.notebook import assign

    with repo() as (root, tmp):
        before = snapshot(tmp)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            status = assign.main(["--chapters", "1", "--out", str(root), "--root", str(root), "--force"])
        assert status == 2 and "repository root" in err.getvalue(), (status, err.getvalue())
        assert snapshot(tmp) == before


def repeated_export_with_force(fw):
    """``make assignment`` twice (with --force): the second run replaces the first export, which is moved aside
    with the instructor's own files in it, every byte."""
    from attention_course.notebook import assign

    with repo() as (root, tmp):
        assign.export([1], tmp / "out", repo_root=root)
        (tmp / "out" / "student" / "graded.ipynb").write_text("{}")
        before = snapshot(tmp / "out")
        res = assign.export([2], tmp / "out", repo_root=root, force=True)
        assert sorted(p.name for p in (tmp / "out" / "student").iterdir()) == ["02-beta"]
        assert snapshot(res["replaced"]) == before, "the previous export lost files"


def _student_source(source: str, cell_type: str = "code") -> str:
    import nbformat

    from attention_course.notebook import assign

    make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell,
            "raw": nbformat.v4.new_raw_cell}[cell_type]
    return assign.strip_solutions(nbformat.v4.new_notebook(cells=[make(source)]), name="nb").cells[0].source


def _no_leak(source: str, cell_type: str = "code"):
    def run(fw):
        student = _student_source(source, cell_type)
        assert "SECRET" not in student and not re.search(r"(?i)(begin|end)\s*solution", student), f"leaked: {student!r}"
        if cell_type == "code":
            compile(student, "student cell", "exec")
    return run


MARKER_SPELLINGS = [
    ("two spaces", "def f():\n    ### BEGIN  SOLUTION\n    SECRET = 1\n    ### END  SOLUTION\n", "code"),
    ("lower case", "def f():\n    # begin solution\n    SECRET = 1\n    # end solution\n", "code"),
    ("## ... ##", "def f():\n    ## BEGIN SOLUTION ##\n    SECRET = 1\n    ## END SOLUTION ##\n", "code"),
    ("trailing words", "def f():\n    ### BEGIN SOLUTION part a\n    SECRET = 1\n    ### END SOLUTION a\n", "code"),
    ("column 0 in a def", "def f():\n### BEGIN SOLUTION\n    SECRET = 1\n### END SOLUTION\n", "code"),
    ("markdown, lower case", "Q\n<!-- begin solution -->\nSECRET\n<!-- end solution -->\n", "markdown"),
    ("markdown, code-style", "Q\n### BEGIN SOLUTION\nSECRET\n### END SOLUTION\n", "markdown"),
    ("raw cell", "Q\n<!-- BEGIN SOLUTION -->\nSECRET\n<!-- END SOLUTION -->\n", "raw"),
    ("inline markdown (refused)", "Answer: <!-- BEGIN SOLUTION --> SECRET <!-- END SOLUTION -->", "markdown"),
    ("inline code (refused)", "x = 1  # BEGIN SOLUTION\nSECRET = 2\n# END SOLUTION\n", "code"),
]


PROBES = [
    Probe("assign", "END SOLUTION typo (previous export kept)", marker_typo, False),
    Probe("assign", "--out . (repository root), --force", out_is_repo_root, False),
    Probe("assign", "--out inside a chapter folder", out_inside_chapter, False),
    Probe("assign", "--out not empty, no --force", out_not_empty, False),
    Probe("assign", "--force on a folder that is no export", force_on_a_foreign_folder, False),
    Probe("assign", "--out is a file", out_is_a_file, False),
    Probe("assign", "notebook that is not JSON", unreadable_notebook, False),
    Probe("assign", "--chapters 3-1", backwards_range, False),
    Probe("assign", "--chapters one", bad_chapter_spec, False),
    Probe("assign", "no chapters", no_chapters, False),
    Probe("assign", "unknown chapter", unknown_chapter, False),
    Probe("assign", "CLI --out . exits 2", cli_out_dot, False),
    Probe("assign", "repeated export with --force", repeated_export_with_force, False),
    *[Probe("assign", f"solution marker: {what}", _no_leak(source, kind), False)
      for what, source, kind in MARKER_SPELLINGS],
]
