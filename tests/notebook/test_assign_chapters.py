"""The instructor export on the real chapters: student copies hold no solution text and run up to the first
exercise."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attention_course.notebook import assign

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))


def solution_lines(nb_path):
    """The lines of the solutions that appear nowhere else in the chapter (a generic line such as `if hard:`
    may also belong to a layer the chapter shows)."""
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    lines, elsewhere = [], set()
    for cell in nb["cells"]:
        inside = False
        for line in "".join(cell["source"]).splitlines():
            if "### BEGIN SOLUTION" in line:
                inside = True
            elif "### END SOLUTION" in line:
                inside = False
            elif inside and line.strip() and not line.strip().startswith("#"):
                lines.append(line.strip())
            else:
                elsewhere.add(line.strip())
    return [line for line in lines if line not in elsewhere]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("assignments")
    assign.export("all", out, book_dir=ROOT / "book", repo_root=ROOT)
    return out


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_student_copy_holds_no_solution(exported, nb_path):
    student = exported / "student" / nb_path.parent.name / nb_path.name
    key = exported / "key" / nb_path.parent.name / nb_path.name
    text = student.read_text(encoding="utf-8")
    secret = solution_lines(nb_path)
    assert secret, "the chapter has solutions"
    for line in secret:
        assert line not in text, f"solution text leaked into the student copy: {line!r}"
    assert "SOLUTION" not in text and "NotImplementedError" in text
    key_text = key.read_text(encoding="utf-8")
    # the key is JSON as nbformat writes it: non-ASCII characters (β, ∘) as they are, not escaped
    assert all(json.dumps(line, ensure_ascii=False)[1:-1] in key_text for line in secret)


@pytest.mark.notebooks
@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_student_copy_runs_to_the_first_exercise(exported, nb_path, monkeypatch, tmp_path):
    # Up to its first exercise the student copy is the chapter itself, which nbval runs in full in both
    # frameworks: check that, then run the exercise (set-up cells, stub, check) in a fresh kernel. Running
    # the whole copy again would execute every chapter a second time in `make test`.
    import nbformat

    monkeypatch.setenv("COURSE_FRAMEWORKS", os.environ.get("COURSE_ASSIGN_FRAMEWORK", "keras"))
    monkeypatch.setenv("COURSE_PROFILE", "quick")
    student = nbformat.read(exported / "student" / nb_path.parent.name / nb_path.name, as_version=4)
    original = nbformat.read(nb_path, as_version=4)
    code = [i for i, c in enumerate(student.cells) if c.cell_type == "code"]
    first = next(i for i in code if assign.STUB in student.cells[i].source)
    assert [c.source for c in student.cells[:first]] == [c.source for c in original.cells[:first]]
    check = next(i for i in code if i > first)
    assert "ac.exercises." in student.cells[check].source
    exercise = nbformat.v4.new_notebook(cells=[student.cells[i] for i in (*code[:2], first, check)],
                                        metadata=student.metadata)
    nbformat.write(exercise, tmp_path / nb_path.name)
    assert assign.run_until_first_exercise(tmp_path / nb_path.name, timeout=600) == 2


def _toc_files(node):
    if isinstance(node, list):
        return [f for item in node for f in _toc_files(item)]
    if isinstance(node, dict):
        own = [node["file"]] if "file" in node else []
        return own + [f for value in node.values() for f in _toc_files(value)]
    return []


def test_edition_is_a_complete_book(tmp_path):
    import yaml

    first = NOTEBOOKS[0].parent.name
    assign.export([int(first[:2])], tmp_path, book_dir=ROOT / "book", repo_root=ROOT)
    edition = tmp_path / "edition"
    toc = yaml.safe_load((edition / "_toc.yml").read_text())
    files = [toc["root"], *_toc_files(toc.get("parts", toc.get("chapters", [])))]
    for f in files:
        assert list(edition.glob(f + ".*")), f"{f} is in the edition's toc but not in the edition"
    chapters = {f.split("/")[1] for f in files if f.startswith("book/") and f.split("/")[1][:2].isdigit()}
    assert chapters == {first}, "only the chosen chapter"
    assert "book/references" in files, "pages outside chapters (references) stay"
    config = yaml.safe_load((edition / "_config.yml").read_text())
    for name, folder in config["sphinx"].get("local_extensions", {}).items():
        assert (edition / folder / f"{name}.py").is_file(), f"local extension {name} missing"
    for bib in config.get("bibtex_bibfiles", []):
        assert (edition / bib).is_file()
    # the edition's own copy of the local extensions configures a book there (it once imported a tool that only
    # the repository has, and `jupyter-book build edition/` stopped at its first step)
    for name, folder in config["sphinx"].get("local_extensions", {}).items():
        code = (f"import sys, types; sys.path[:0] = [{str(edition / folder)!r}]; import {name}\n"
                "hooks = []\n"
                "app = types.SimpleNamespace(add_lexer=lambda *a: None,\n"
                "                            connect=lambda event, f, priority=500: hooks.append((event, f)))\n"
                f"{name}.setup(app)\n"
                "config = types.SimpleNamespace(nb_execution_cache_path='')\n"
                "for event, f in hooks:\n"
                "    if event == 'config-inited':\n"
                "        f(app, config)\n")
        done = subprocess.run([sys.executable, "-c", code], cwd=edition, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    intro = (edition / "book" / "intro.md").read_text()
    linked = set(re.findall(r"\{doc\}`[^`<]+<(\d+-[^/>]+)/", intro))
    assert linked == {first}, f"the edition's intro links only to its own chapters, not {linked - {first}}"


@pytest.mark.parametrize("where", [".", "book", NOTEBOOKS[0].parent.relative_to(ROOT).as_posix() + "/assignments"])
def test_export_refuses_the_repository_and_the_book(where):
    """``--out .`` would replace the README, ``--out`` in a chapter would copy the chapter into itself."""
    target = ROOT / where
    existed = target.exists()
    with pytest.raises(assign.AssignError, match="refusing to write the export"):
        assign.export([int(NOTEBOOKS[0].parent.name[:2])], target, book_dir=ROOT / "book", repo_root=ROOT,
                      force=True)
    assert target.exists() == existed


@pytest.mark.notebooks
def test_chapter_4_student_copy_reruns_earlier_cells_after_the_exercises(exported, tmp_path):
    """A learner defines the exercise stubs (or answers), then reruns cells from the chapter's first half: the
    NumPy scores must still be the chapter's, not the exercises' (which once reused their names)."""
    import nbformat
    from nbclient import NotebookClient

    path = exported / "student" / "04-score-functions" / "score-functions.ipynb"
    student = nbformat.read(path, as_version=4)
    code = [c for c in student.cells if c.cell_type == "code"]
    setup = code[:2]
    scores = next(c for c in code if "def general_score(Q, K, W)" in c.source)
    numpy_version = next(c for c in code if c.source.startswith("def numpy_version"))
    stubs = [c for c in code if assign.STUB in c.source]
    assert len(stubs) == 4
    rerun = nbformat.v4.new_code_cell(
        'got = numpy_version("additive", {"W": W_add, "U": U_add, "v": v_add})\n'
        'assert np.allclose(got, numpy_version("concat", {"W": np.concatenate([W_add, U_add]), "v": v_add}))\n'
        'assert np.allclose(numpy_version("general", {"W": W_gen}), Q @ W_gen @ K.T)')
    nb = nbformat.v4.new_notebook(cells=[*setup, scores, numpy_version, *stubs, rerun], metadata=student.metadata)
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()   # raises CellExecutionError if a stub had replaced a function the chapter uses
