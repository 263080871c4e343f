"""The instructor export on the real chapters: student copies hold no solution text and run up to the first
exercise."""

import json
import os
import re
from pathlib import Path

import pytest

from attention_course import assign

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))


def solution_lines(nb_path):
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    lines = []
    for cell in nb["cells"]:
        inside = False
        for line in "".join(cell["source"]).splitlines():
            if "### BEGIN SOLUTION" in line:
                inside = True
            elif "### END SOLUTION" in line:
                inside = False
            elif inside and line.strip() and not line.strip().startswith("#"):
                lines.append(line.strip())
    return lines


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
    assert all(json.dumps(line)[1:-1] in key_text for line in secret)


@pytest.mark.notebooks
@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_student_copy_runs_to_the_first_exercise(exported, nb_path, monkeypatch):
    # one framework is enough to show the copy runs; the full notebook runs in both under nbval
    monkeypatch.setenv("COURSE_FRAMEWORKS", os.environ.get("COURSE_ASSIGN_FRAMEWORK", "keras"))
    monkeypatch.setenv("COURSE_SCALE", "quick")
    student = exported / "student" / nb_path.parent.name / nb_path.name
    first_stub = assign.run_until_first_exercise(student, timeout=600)
    assert first_stub > 0


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
    intro = (edition / "book" / "intro.md").read_text()
    linked = set(re.findall(r"\{doc\}`[^`<]+<(\d+-[^/>]+)/", intro))
    assert linked == {first}, f"the edition's intro links only to its own chapters, not {linked - {first}}"
