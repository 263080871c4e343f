"""Tests for attention_course.notebook.assign: student copies, answer keys, editions, CLI, execution."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from attention_course.notebook import assign

SECRETS = ("SECRET_SOLUTION_TOKEN", "SECRET_MARKDOWN_TOKEN", "SECRET_DROPDOWN_TOKEN", "SECRET_WHOLE_CELL")
MARKERS = ("BEGIN SOLUTION", "END SOLUTION")


def make_notebook(tag: str) -> nbformat.NotebookNode:
    """A chapter notebook: setup (reads a file next to it), exercise, solution, check, dropdown."""
    setup = new_code_cell('import attention_course as ac\nDATA = open("data.txt").read().strip()\nDATA')
    setup.outputs = [new_output("execute_result", {"text/plain": "'hello'"}, execution_count=1)]
    setup.execution_count = 1
    dropdown = new_markdown_cell("```{dropdown} Solution\nSECRET_DROPDOWN_TOKEN\n```")
    dropdown.metadata["tags"] = ["solution"]
    whole = new_code_cell("SECRET_WHOLE_CELL = square(3)")
    whole.metadata["tags"] = ["solution", "pytorch"]
    return new_notebook(cells=[
        new_markdown_cell(f"# Chapter {tag}"),
        setup,
        new_markdown_cell("```{exercise}\nWrite `square`.\n```\n"
                          "<!-- BEGIN SOLUTION -->\nSECRET_MARKDOWN_TOKEN\n<!-- END SOLUTION -->\nAfter."),
        new_code_cell("def square(x):\n    ### BEGIN SOLUTION\n    SECRET_SOLUTION_TOKEN = 42\n"
                      "    return x * x\n    ### END SOLUTION\n\nprint('defined')"),
        new_code_cell("assert square(3) == 9"),
        dropdown,
        whole,
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fixture repository with two chapters, intro, references, _static and _config.yml."""
    root = tmp_path / "repo"
    for n, slug in ((1, "alpha"), (2, "beta")):
        folder = root / "book" / f"0{n}-{slug}"
        folder.mkdir(parents=True)
        nbformat.write(make_notebook(slug), folder / f"{slug}.ipynb")
        (folder / "data.txt").write_text("hello\n")
    (root / "book" / "intro.md").write_text("# Intro\n")
    (root / "book" / "references.bib").write_text("@book{x, title={X}}\n")
    (root / "book" / "_static").mkdir()
    (root / "book" / "_static" / "custom.css").write_text("body {}\n")
    (root / "_config.yml").write_text("title: Neural Attention\n")
    return root


def all_sources(folder: Path) -> str:
    return "\n".join(c.source for p in folder.rglob("*.ipynb") for c in nbformat.read(p, as_version=4).cells)


def test_strip_solutions_replaces_region_with_stub() -> None:
    nb = assign.strip_solutions(make_notebook("x"))
    code = nb.cells[3].source
    assert code == f"def square(x):\n    {assign.STUB}\n\nprint('defined')"
    text = "\n".join(c.source for c in nb.cells)
    assert not any(s in text for s in SECRETS + MARKERS)
    assert "After." in text and "Write `square`." in text
    assert all(c.get("outputs", []) == [] and c.get("execution_count") is None for c in nb.cells)
    assert nb.cells[-1].source == assign.STUB and nb.cells[-1].metadata["tags"] == ["solution", "pytorch"]
    assert len(nb.cells) == 6  # the markdown dropdown is gone


def test_answer_key_keeps_solutions_without_markers() -> None:
    original = make_notebook("x")
    nb = assign.answer_key(original)
    text = "\n".join(c.source for c in nb.cells)
    assert all(s in text for s in SECRETS) and not any(m in text for m in MARKERS)
    assert nb.cells[1].outputs == [] and nb.cells[1].execution_count is None
    assert original.cells[1].outputs  # input untouched


@pytest.mark.parametrize("source", [
    "### BEGIN SOLUTION\nx = 1",
    "x = 1\n### END SOLUTION",
    "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION",
])
def test_unbalanced_markers_raise(source: str) -> None:
    nb = new_notebook(cells=[new_markdown_cell("hi"), new_code_cell(source)])
    with pytest.raises(assign.AssignError, match=r"ch9\.ipynb, cell 1"):
        assign.strip_solutions(nb, name="ch9.ipynb")


def test_unbalanced_markdown_markers_raise() -> None:
    nb = new_notebook(cells=[new_markdown_cell("<!-- BEGIN SOLUTION -->\nsecret")])
    with pytest.raises(assign.AssignError, match="cell 0"):
        assign.answer_key(nb, name="n.ipynb")


def test_parse_chapters() -> None:
    assert assign.parse_chapters("1,3") == [1, 3]
    assert assign.parse_chapters("1-3") == [1, 2, 3]
    assert assign.parse_chapters(" 3, 1-2 ") == [1, 2, 3]
    assert assign.parse_chapters("all") == "all"
    with pytest.raises(assign.AssignError):
        assign.parse_chapters("one")


def test_export_writes_student_key_and_edition(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = assign.export([2], out, repo_root=repo)
    assert res["chapters"] == [2]
    student, key = out / "student" / "02-beta", out / "key" / "02-beta"
    assert (student / "beta.ipynb").is_file() and (student / "data.txt").is_file()
    assert not (out / "student" / "01-alpha").exists()
    text = all_sources(out / "student")
    assert not any(s in text for s in SECRETS + MARKERS)
    assert assign.STUB in text
    key_text = all_sources(key)
    assert all(s in key_text for s in SECRETS) and not any(m in key_text for m in MARKERS)

    edition = out / "edition"
    toc = yaml.safe_load((edition / "_toc.yml").read_text())
    assert toc == {"format": "jb-book", "root": "book/intro", "chapters": [{"file": "book/02-beta/beta"}]}
    for rel in ("_config.yml", "book/intro.md", "book/references.bib", "book/_static/custom.css",
                "book/02-beta/beta.ipynb"):
        assert (edition / rel).is_file(), rel
    assert not (edition / "book" / "01-alpha").exists()
    assert "SECRET_SOLUTION_TOKEN" in all_sources(edition)  # the edition is the full version
    assert "student/" in (out / "README.md").read_text()


def test_export_filters_existing_toc(repo: Path, tmp_path: Path) -> None:
    (repo / "_toc.yml").write_text(yaml.safe_dump({"format": "jb-book", "root": "book/intro", "chapters": [
        {"file": "book/01-alpha/alpha"}, {"file": "book/02-beta/beta", "sections": [{"file": "x"}]}]}))
    assign.export("all", tmp_path / "o1", repo_root=repo)
    assert len(yaml.safe_load((tmp_path / "o1" / "edition" / "_toc.yml").read_text())["chapters"]) == 2
    assign.export([1], tmp_path / "o2", repo_root=repo)
    toc = yaml.safe_load((tmp_path / "o2" / "edition" / "_toc.yml").read_text())
    assert toc["chapters"] == [{"file": "book/01-alpha/alpha"}]


def test_export_parts_toc_custom_root_and_unlisted_chapter(repo: Path, tmp_path: Path) -> None:
    (repo / "book" / "start.md").write_text("# Start\n")
    toc = {"format": "jb-book", "root": "book/start", "parts": [
        {"caption": "A", "chapters": [{"file": "book/01-alpha/alpha.ipynb"}]},
        {"caption": "B", "chapters": [{"file": "elsewhere"}]}]}  # 02-beta is not listed at all
    (repo / "_toc.yml").write_text(yaml.safe_dump(toc))
    assign.export("1-2", tmp_path / "out", repo_root=repo)
    edition = tmp_path / "out" / "edition"
    got = yaml.safe_load((edition / "_toc.yml").read_text())
    assert got["parts"] == [  # chosen chapters, plus the pages that belong to no chapter
        {"caption": "A", "chapters": [{"file": "book/01-alpha/alpha.ipynb"}, {"file": "book/02-beta/beta"}]},
        {"caption": "B", "chapters": [{"file": "elsewhere"}]}]
    assert (edition / "book" / "start.md").is_file()


def test_unknown_chapter_lists_available(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(assign.AssignError, match=r"unknown chapter\(s\) \[7\]; available: \[1, 2\]"):
        assign.export([1, 7], tmp_path / "out", repo_root=repo)


def test_cli(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "assignments"
    assert assign.main(["--chapters", "1,2", "--out", str(out), "--book", "book", "--root", str(repo)]) == 0
    printed = capsys.readouterr().out
    assert "chapters: 1, 2" in printed and "student/01-alpha/alpha.ipynb" in printed
    toc = yaml.safe_load((out / "edition" / "_toc.yml").read_text())
    assert [c["file"] for c in toc["chapters"]] == ["book/01-alpha/alpha", "book/02-beta/beta"]
    assert assign.main(["--chapters", "9", "--out", str(out), "--root", str(repo)]) == 2
    assert "available: [1, 2]" in capsys.readouterr().err


@pytest.mark.notebooks
def test_student_copy_runs_until_first_exercise(repo: Path, tmp_path: Path, capfd) -> None:
    assign.export([1], tmp_path / "out", repo_root=repo)
    # cwd must be the notebook's folder: the setup cell reads data.txt next to it.
    assert assign.run_until_first_exercise(tmp_path / "out" / "student" / "01-alpha" / "alpha.ipynb",
                                           timeout=60) == 3
    if os.name == "posix":     # Unix sockets (attention_course.notebook.kernels): no TCP warning from the kernel
        assert "without encryption" not in capfd.readouterr().err


@pytest.mark.notebooks
def test_full_notebook_and_top_level_stub(repo: Path, tmp_path: Path) -> None:
    """A full chapter notebook is stripped in memory; a top-level stub raises in its own cell;
    the kernel is this interpreter."""
    assert assign.run_until_first_exercise(repo / "book" / "01-alpha" / "alpha.ipynb", timeout=60) == 3
    nb = new_notebook(cells=[new_code_cell(f"import sys\nassert sys.executable == {sys.executable!r}"),
                             new_markdown_cell("### Exercise"),
                             new_code_cell("### BEGIN SOLUTION\ny = 2\n### END SOLUTION"),
                             new_code_cell("1 / 0")])
    nbformat.write(nb, tmp_path / "top.ipynb")
    assert assign.run_until_first_exercise(tmp_path / "top.ipynb", timeout=60) == 2


@pytest.mark.notebooks
def test_run_until_first_exercise_reports_failures(tmp_path: Path) -> None:
    from nbclient.exceptions import CellExecutionError

    bad = tmp_path / "bad.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("1 / 0"), new_code_cell(assign.STUB)]), bad)
    with pytest.raises(CellExecutionError, match="ZeroDivisionError"):
        assign.run_until_first_exercise(bad, timeout=60)
    swallowed = tmp_path / "swallowed.ipynb"
    stub = f"try:\n    {assign.STUB}\nexcept Exception:\n    pass"
    nbformat.write(new_notebook(cells=[new_code_cell(stub), new_code_cell("x = 1")]), swallowed)
    with pytest.raises(AssertionError, match="never raised"):
        assign.run_until_first_exercise(swallowed, timeout=60)


# ---- bad input: nothing lost, nothing half-written -----------------------------------------------------------

def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_parse_chapters_backwards_range() -> None:
    with pytest.raises(assign.AssignError, match="runs backwards; write '1-3'"):
        assign.parse_chapters("3-1")
    with pytest.raises(assign.AssignError, match="no chapters chosen"):
        assign.export([], "unused", repo_root=Path(__file__).resolve().parents[2])


def test_assign_error_is_a_course_error() -> None:
    from attention_course.core.errors import CourseError

    assert issubclass(assign.AssignError, CourseError) and issubclass(assign.AssignError, ValueError)


def test_marker_typo_leaves_the_previous_export_untouched(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assign.export([1, 2], out, repo_root=repo)
    before = snapshot(out)
    nb_path = repo / "book" / "02-beta" / "beta.ipynb"
    nb_path.write_text(nb_path.read_text().replace("### END SOLUTION", "### END SOLUTON"))
    with pytest.raises(assign.AssignError, match=r"beta\.ipynb, cell 3: BEGIN SOLUTION at line 2 has no END"):
        assign.export([1, 2], out, repo_root=repo, force=True)
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "repo"]  # no temporary folder left


def test_failure_while_writing_leaves_nothing(repo: Path, tmp_path: Path, monkeypatch) -> None:
    def disk_full(nb, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(assign.nbformat, "write", disk_full)
    with pytest.raises(OSError, match="No space"):
        assign.export([1], tmp_path / "out", repo_root=repo)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]


def test_non_empty_folder_needs_force_and_a_previous_export(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    with pytest.raises(assign.AssignError, match="already exists and is not empty.*--force"):
        assign.export([1], out, repo_root=repo)
    with pytest.raises(assign.AssignError, match="is not a previous export"):
        assign.export([1], out, repo_root=repo, force=True)
    assert snapshot(out) == {"notes.txt": b"my notes"}
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(assign.AssignError, match="is a file"):
        assign.export([1], tmp_path / "a-file", repo_root=repo, force=True)


def test_force_moves_a_previous_export_aside(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    empty = tmp_path / "empty"
    empty.mkdir()
    assign.export([1], empty, repo_root=repo)  # an existing empty folder is fine
    assign.export([1], out, repo_root=repo)
    assert (out / assign.MARKER).is_file()
    (out / "student" / "graded.ipynb").write_text("an instructor's graded notebook")
    (out / "notes.md").write_text("my notes")
    before = snapshot(out)
    res = assign.export([2], out, repo_root=repo, force=True)
    assert sorted(p.name for p in (out / "student").iterdir()) == ["02-beta"]
    assert res["readme"] == out / "README.md" and res["student"] == [out / "student" / "02-beta" / "beta.ipynb"]
    # nothing of the old export is lost: every byte is in the folder named in the result
    assert res["replaced"].parent == tmp_path and res["replaced"].name.startswith("out.replaced-")
    assert snapshot(res["replaced"]) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "out", res["replaced"].name, "repo"]


def test_force_refuses_a_folder_that_only_looks_like_an_export(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assign.export([1], out, repo_root=repo)
    (out / assign.MARKER).unlink()
    before = snapshot(out)
    with pytest.raises(assign.AssignError, match="not a previous export"):
        assign.export([2], out, repo_root=repo, force=True)
    assert snapshot(out) == before


@pytest.mark.parametrize("where", [".", "..", "book", "book/01-alpha", "book/01-alpha/assignments", "book/new"])
@pytest.mark.parametrize("force", [False, True])
def test_refuses_the_repository_and_the_book(repo: Path, where: str, force: bool) -> None:
    before = snapshot(repo)
    with pytest.raises(assign.AssignError, match="refusing to write the export"):
        assign.export([1], repo / where, repo_root=repo, force=force)
    assert snapshot(repo) == before
    assert not (repo / "book" / "new").exists()


def test_unreadable_notebook(repo: Path, tmp_path: Path) -> None:
    (repo / "book" / "01-alpha" / "alpha.ipynb").write_text("{ not json")
    with pytest.raises(assign.AssignError, match=r"alpha\.ipynb is not a readable notebook"):
        assign.export([1], tmp_path / "out", repo_root=repo)
    assert not (tmp_path / "out").exists()


def test_cli_repeated_export_with_force(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "assignments")
    assert assign.main(["--chapters", "1", "--out", out, "--root", str(repo)]) == 0
    assert assign.main(["--chapters", "1", "--out", out, "--root", str(repo)]) == 2
    assert "--force" in capsys.readouterr().err
    assert assign.main(["--chapters", "2", "--out", out, "--root", str(repo), "--force"]) == 0
    assert (tmp_path / "assignments" / "student" / "02-beta" / "beta.ipynb").is_file()
    assert assign.main(["--chapters", "1", "--out", str(repo), "--root", str(repo), "--force"]) == 2
    assert "repository root" in capsys.readouterr().err


def _one_cell(cell) -> nbformat.NotebookNode:
    return new_notebook(cells=[cell])


@pytest.mark.parametrize("begin, end", [
    ("### BEGIN SOLUTION", "### END SOLUTION"),
    ("### BEGIN  SOLUTION", "###   END SOLUTION"),
    ("# begin solution", "# end solution"),
    ("## Begin Solution ##", "## End Solution ##"),
    ("### BEGIN SOLUTION (part a)", "### END SOLUTION, part a"),
    ("#BEGIN SOLUTION", "#END SOLUTION"),
])
def test_every_spelling_of_a_code_marker_is_a_marker(begin: str, end: str) -> None:
    cell = new_code_cell(f"def f(x):\n    {begin}\n    SECRET = 1\n    return x\n    {end}\n")
    student = assign.strip_solutions(_one_cell(cell)).cells[0].source
    assert "SECRET" not in student and not re.search(r"(?i)(begin|end)\s*solution", student), student
    assert assign.STUB in student
    key = assign.answer_key(_one_cell(cell)).cells[0].source
    assert "SECRET" in key and "solution" not in key.lower()


@pytest.mark.parametrize("kind, begin, end", [
    ("markdown", "<!-- BEGIN SOLUTION -->", "<!-- END SOLUTION -->"),
    ("markdown", "<!-- begin  solution -->", "<!--end solution-->"),
    ("markdown", "### BEGIN SOLUTION", "### END SOLUTION"),
    ("raw", "<!-- BEGIN SOLUTION -->", "<!-- END SOLUTION -->"),
    ("raw", "### BEGIN SOLUTION", "### END SOLUTION"),
])
def test_markdown_and_raw_markers_in_any_spelling(kind: str, begin: str, end: str) -> None:
    make = new_markdown_cell if kind == "markdown" else nbformat.v4.new_raw_cell
    cell = make(f"Question.\n{begin}\nSECRET answer\n{end}\nAfter.")
    student = assign.strip_solutions(_one_cell(cell)).cells[0].source
    assert student == "Question.\nAfter.", student


@pytest.mark.parametrize("make, source", [
    (new_code_cell, "x = 1  # BEGIN SOLUTION\nSECRET = 2\n# END SOLUTION"),
    (new_code_cell, "print('END SOLUTION')"),
    (new_markdown_cell, "The answer <!-- BEGIN SOLUTION --> SECRET <!-- END SOLUTION -->"),
    (new_markdown_cell, "Some text BEGIN SOLUTION\nSECRET\nEND SOLUTION"),
])
def test_a_marker_that_is_not_a_line_of_its_own_is_refused_naming_cell_and_line(make, source: str) -> None:
    with pytest.raises(assign.AssignError, match=r"nb, cell 0, line 1: .*not a marker line"):
        assign.strip_solutions(_one_cell(make(source)), name="nb")


def test_a_marker_at_column_zero_inside_a_function_gives_valid_code() -> None:
    cell = new_code_cell("def f(x):\n### BEGIN SOLUTION\n    SECRET = 1\n    return x\n### END SOLUTION\n")
    student = assign.strip_solutions(_one_cell(cell)).cells[0].source
    compile(student, "student", "exec")
    assert f"    {assign.STUB}" in student and "SECRET" not in student


def test_a_student_cell_that_does_not_compile_is_refused() -> None:
    cell = new_code_cell("if True:\n    x = 1\n### BEGIN SOLUTION\n    y = 2\n  ### END SOLUTION\n  z = 3\n")
    with pytest.raises(assign.AssignError, match=r"nb, cell 0: the student copy .*not valid Python"):
        assign.strip_solutions(_one_cell(cell), name="nb")


def test_cell_magic_cells_are_checked_as_python() -> None:
    cell = new_code_cell("%%pytorch\ndef f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n")
    assert assign.STUB in assign.strip_solutions(_one_cell(cell)).cells[0].source


def test_an_attachment_only_the_solution_showed_is_dropped() -> None:
    cell = new_markdown_cell("Q ![a](attachment:q.png)\n<!-- BEGIN SOLUTION -->\n![s](attachment:answer.png)\n"
                             "<!-- END SOLUTION -->")
    cell.attachments = {"q.png": {"image/png": "AAAA"}, "answer.png": {"image/png": "BBBB"}}
    student = assign.strip_solutions(_one_cell(cell)).cells[0]
    assert set(student.attachments) == {"q.png"}
    assert set(assign.answer_key(_one_cell(cell)).cells[0].attachments) == {"q.png", "answer.png"}


def test_other_files_of_a_chapter_lose_their_solutions_in_the_student_copy(repo: Path, tmp_path: Path) -> None:
    folder = repo / "book" / "01-alpha"
    (folder / "helper.py").write_text("def g():\n    # BEGIN SOLUTION\n    return 'SECRET_PY'\n    # END SOLUTION\n")
    (folder / "notes.md").write_text("Read.\n<!-- BEGIN SOLUTION -->\nSECRET_MD\n<!-- END SOLUTION -->\n")
    res = assign.export([1], tmp_path / "out", repo_root=repo)
    student = tmp_path / "out" / "student" / "01-alpha"
    assert "SECRET_PY" not in (student / "helper.py").read_text()
    compile((student / "helper.py").read_text(), "helper.py", "exec")
    assert (student / "notes.md").read_text() == "Read.\n"
    assert "SECRET_MD" in (tmp_path / "out" / "key" / "01-alpha" / "notes.md").read_text()
    assert res["replaced"] is None


def test_another_file_naming_the_phrase_without_markers_is_refused(repo: Path, tmp_path: Path) -> None:
    (repo / "book" / "01-alpha" / "answers.txt").write_text("the answer: BEGIN SOLUTION 42")
    with pytest.raises(assign.AssignError, match=r"answers\.txt, line 1"):
        assign.export([1], tmp_path / "out", repo_root=repo)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["repo"]
