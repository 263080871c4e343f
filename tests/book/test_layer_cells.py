"""Every layer a chapter introduces is a code cell in it, in both frameworks, and agrees with the package."""

from __future__ import annotations

import json
import shutil

import pytest

from tools import layer_cells

CHAPTERS = layer_cells.chapters()


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.parent.name for p in CHAPTERS])
def test_chapter_shows_its_layers_as_the_package_defines_them(path):
    assert layer_cells.problems(path) == []


def test_every_layer_of_the_package_is_introduced_by_one_chapter():
    introduced: dict[str, str] = {}
    for path in CHAPTERS:
        for name in json.loads(path.read_text())["metadata"]["course"].get("introduces", []):
            assert name not in introduced, f"{name} is introduced by {introduced[name]} and {path.name}"
            introduced[name] = path.name
    for framework in layer_cells.FOLDERS:
        missing = layer_cells.public_classes(framework) - set(introduced)
        assert not missing, f"classes of the {framework} package that no chapter shows: {sorted(missing)}"


def test_no_chapter_prints_package_source():
    for path in CHAPTERS:
        assert "getsource" not in path.read_text(), f"{path.name} prints source instead of showing a code cell"


def test_a_drifted_cell_is_found_and_rewritten(tmp_path):
    copy = tmp_path / "chapter.ipynb"
    shutil.copy(layer_cells.BOOK / "01-sequence-models" / "sequence-models.ipynb", copy)
    nb = json.loads(copy.read_text())
    index, framework, source = next((i, fw, s) for i, fw, s in layer_cells.framework_cells(nb)
                                    if "class DotProductAttention" in s and fw == "pytorch")
    edited = source.replace("weights = masked_softmax(scores, mask)", "weights = masked_softmax(scores * 2, mask)")
    assert edited != source
    nb["cells"][index]["source"] = edited
    copy.write_text(json.dumps(nb))
    found = layer_cells.problems(copy)
    assert len(found) == 1 and "DotProductAttention (pytorch)" in found[0] and "scores * 2" in found[0]
    assert layer_cells.write(copy) == 1 and layer_cells.problems(copy) == []
    restored = json.loads(copy.read_text())["cells"][index]["source"]
    assert "".join(restored) == source


def test_a_missing_layer_is_named(tmp_path):
    copy = tmp_path / "chapter.ipynb"
    shutil.copy(layer_cells.BOOK / "04-score-functions" / "score-functions.ipynb", copy)
    nb = json.loads(copy.read_text())
    nb["cells"] = [c for c in nb["cells"] if "class ScoredAttention" not in "".join(c["source"])]
    copy.write_text(json.dumps(nb))
    found = layer_cells.problems(copy)
    assert sorted(found) == sorted(f"chapter.ipynb: {name} is not shown in a %%{fw} cell"
                                   for fw in ("keras", "pytorch") for name in ("ScoredAttention", "make_score"))


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.parent.name for p in CHAPTERS])
def test_exercises_do_not_redefine_what_the_chapter_uses(path):
    import ast

    from attention_course.notebook.frameworks import python_source

    nb = json.loads(path.read_text())
    shared_defs: dict[str, int] = {}
    solutions: dict[str, int] = {}
    for i, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or source.startswith("%%"):
            continue  # a framework cell's definitions are its framework's own
        target = solutions if "solution" in cell["metadata"].get("tags", []) else shared_defs
        for node in ast.parse(python_source(source)).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                target.setdefault(node.name, i)
    clashes = {name: (shared_defs[name], i) for name, i in solutions.items() if name in shared_defs}
    assert not clashes, f"exercise solutions redefine the chapter's functions (cells): {clashes}"
