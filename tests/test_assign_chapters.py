"""The instructor export on the real chapters: student copies hold no solution text and run up to the first
exercise."""

import json
import os
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
