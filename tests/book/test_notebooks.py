"""Every chapter notebook follows the course's conventions (cheap static checks; nbval executes them)."""

import ast
import json
import re
from pathlib import Path

import pytest

from tools import chapter_times

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))
PINNED = re.compile(r"\b(torch|tensorflow|numpy|keras)\s*(==|>=|<=|~=|<|>)")


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell):
    return "".join(cell["source"])


def tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def test_there_are_chapters():
    assert NOTEBOOKS, "no chapter notebooks found under book/NN-*/"


@pytest.fixture(params=NOTEBOOKS, ids=lambda p: p.parent.name)
def nb(request):
    return load(request.param)


def test_outputs_are_stripped(nb):
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert not cell["outputs"] and cell["execution_count"] is None, source(cell)[:60]


def test_opening_and_colab_metadata(nb):
    opening = source(nb["cells"][0])
    assert opening.startswith("# "), "the first cell is the chapter title"
    for needle in ("You will be able to", "Prerequisites", "Time", "quick profile", "full profile", "Frameworks"):
        assert needle in opening, f"the chapter opening lacks {needle!r}"
    assert nb["metadata"].get("accelerator") == "GPU", "Colab GPU metadata"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


def test_first_code_cell_installs_only_on_colab(nb):
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    src = source(first)
    assert '"google.colab" in sys.modules' in src and "pip install" in src
    assert not PINNED.search(src), "never pin torch, TensorFlow, Keras or NumPy on Colab"
    second = source([c for c in nb["cells"] if c["cell_type"] == "code"][1])
    assert "ac.setup(seed=0, profile=PROFILE, frameworks=FRAMEWORKS)" in second
    assert "PROFILE = None" in second and "GPU" in second, "the set-up cell offers the full profile and its GPU time"
    assert "SEED = session.seed" in second, "the notebook's seeds come from the session (COURSE_SEED)"


def test_framework_cells_come_in_twins(nb):
    cells = nb["cells"]
    for cell in cells:
        t = tags(cell) & {"keras", "pytorch"}
        if not t or "remove-cell" in tags(cell):        # a removed cell shows no tab; it needs no twin
            if not t:
                assert not source(cell).startswith(("%%keras", "%%pytorch")), "a framework cell must be tagged"
            continue
        (fw,) = t
        assert re.match(rf"%%{fw}( needs \w+)?\n", source(cell)), f"a cell tagged {fw} starts with %%{fw}"
        other = "pytorch" if fw == "keras" else "keras"
        shown = [c for c in cells if "remove-cell" not in tags(c)]     # the page's cells: a removed one is not there
        k = shown.index(cell)
        neighbours = [shown[j] for j in (k - 1, k + 1) if 0 <= j < len(shown)]
        assert any(other in tags(n) for n in neighbours), f"the {fw} cell {source(cell)[:50]!r} has no twin"


def bookkeeping(node) -> bool:
    """A statement the reader need not see: an assertion, ``ac.glue(…)``, a NumPy check, or a loop or branch of nothing
    else."""
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):       # ac.glue(…), np.testing.assert_…(…)
        name = getattr(node.value.func, "attr", getattr(node.value.func, "id", ""))
        return name == "glue" or name.startswith("assert_")
    if isinstance(node, ast.For | ast.If | ast.With):
        body = [*node.body, *getattr(node, "orelse", [])]
        return bool(body) and all(bookkeeping(n) for n in body)
    return False


def test_glue_and_claim_checks_run_where_the_reader_does_not_see_them(nb):
    """A shown (or collapsed) code cell holds the idea; the assertions that keep the prose true and the values glued
    into it sit in ``remove-cell`` cells of their own. Solutions and their checks are exercises, not bookkeeping."""
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or tags(cell) & {"remove-cell", "solution"}:
            continue
        body = re.sub(r"^%%[^\n]*\n", "", source(cell))
        body = re.sub(r"^(\s*)[!%].*$", r"\1pass", body, flags=re.M)      # IPython's shell and magic lines
        shown = [ast.get_source_segment(body, n) for n in ast.parse(body).body if bookkeeping(n)]
        assert not shown, f"the cell {source(cell)[:60]!r} shows {shown[0][:80]!r}: move it to a remove-cell cell"


FRAMEWORK_MODULES = {"torch", "tensorflow", "keras"}
GUARDS = (ast.If, ast.IfExp, ast.FunctionDef, ast.Lambda)


def optional(node) -> bool:
    """``try: … except ImportError:``: a cell that takes a library only where it is there (Chapter 9 compares its
    BERT with the reference implementation, which is PyTorch's, in either framework)."""
    return isinstance(node, ast.Try) and any(
        isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError") for h in node.handlers)


def framework_uses(tree: ast.AST):
    """Each place that imports a framework (``ac.keras``, ``ac.torch``, ``import torch``, …) that no branch, function,
    lambda or ``try``-for-a-missing-library guards, as (line, text)."""
    def visit(node, guarded):
        if not guarded:
            if isinstance(node, ast.Attribute) and node.attr in ("keras", "torch") and \
                    isinstance(node.value, ast.Name) and node.value.id == "ac":
                yield node.lineno, f"ac.{node.attr}"
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                if name.split(".")[0] in FRAMEWORK_MODULES:
                    yield node.lineno, f"import {name}"
        for child in ast.iter_child_nodes(node):
            yield from visit(child, guarded or isinstance(node, GUARDS) or optional(node))

    yield from visit(tree, False)


def test_a_one_framework_kernel_imports_only_its_framework(nb):
    """A live kernel runs one framework (about 250 MB for PyTorch, 800 MB for TensorFlow): outside a framework's own
    cells, a cell reaches ``ac.keras``, ``ac.torch`` or a framework's import only under a branch on the frameworks
    that run (``ac.keras if fw == "keras" else ac.torch``), inside a function called for one of them, or as a library
    the cell can do without."""
    for cell in nb["cells"]:
        text = source(cell)
        if cell["cell_type"] != "code" or text.startswith(("%%keras", "%%pytorch")):
            continue
        body = re.sub(r"^%%[^\n]*\n", "", text)
        body = re.sub(r"^(\s*)[!%].*$", r"\1pass", body, flags=re.M)      # IPython's shell and magic lines
        found = list(framework_uses(ast.parse(body)))
        assert not found, f"the cell {text[:60]!r} imports a framework that may not run: {found}"


def test_the_framework_scan_finds_what_it_should():
    unguarded = 'modules = {"keras": ac.keras, "pytorch": ac.torch}\nimport torch\nn = count(build(ac.torch))'
    assert [what for _, what in framework_uses(ast.parse(unguarded))] == ["ac.keras", "ac.torch", "import torch",
                                                                           "ac.torch"]
    guarded = ('modules = {fw: ac.keras if fw == "keras" else ac.torch for fw in frameworks}\n'
               'if "pytorch" in frameworks:\n    import torch\nbuild = lambda: ac.torch.Model()\n'
               'try:\n    import torch\nexcept ImportError:\n    pass')
    assert list(framework_uses(ast.parse(guarded))) == []


def test_charts_follow_the_readers_framework(nb):
    """A chart or table drawn outside a Keras / PyTorch pair shows every framework or one that both agree on: it does
    not pick the first framework's results (``fw0``) unless its cell says they are the same in every framework."""
    for cell in nb["cells"]:
        text = source(cell)
        if cell["cell_type"] != "code" or tags(cell) & {"keras", "pytorch", "remove-cell"}:
            continue
        if re.search(r"ac\.viz\.|alt\.Chart|display\(", text) and re.search(r"\bfw0\b|frameworks\[0\]", text):
            assert "the same in every framework" in text, f"the chart of {text[:60]!r} shows one framework's results"


def test_no_collapsed_code_interrupts_the_text(nb):
    """A code cell is shown, or removed from the page (``remove-input`` keeps its chart or table, ``remove-cell``
    drops it): a "Show code cell source" bar between paragraphs is for solutions only."""
    for cell in nb["cells"]:
        if {"hide-input", "hide-cell"} & tags(cell):
            assert "solution" in tags(cell), f"the cell {source(cell)[:60]!r} is collapsed: show it or remove it"


def test_exercises_have_hidden_solutions_and_checks(nb):
    cells = nb["cells"]
    exercises = [i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and "{exercise}" in source(c)]
    assert len(exercises) >= 2, "at least two exercises"
    solutions = [i for i, c in enumerate(cells) if "### BEGIN SOLUTION" in source(c)]
    assert len(solutions) >= 2
    for i in solutions:
        assert "### END SOLUTION" in source(cells[i])
        assert {"solution", "hide-input"} <= tags(cells[i]), "solution cells are tagged 'solution' and hidden"
        assert "ac.exercises." in source(cells[i + 1]), "a check cell follows each solution"


def test_citations_exist(nb):
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    keys = set(re.findall(r"@\w+\{([^,]+),", bib))
    for cell in nb["cells"]:
        for group in re.findall(r"\{cite[:a-z]*\}`([^`]+)`", source(cell)):
            for key in group.split(","):
                assert key.strip() in keys, f"{key} is not in references.bib"


def test_toc_lists_every_chapter():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    for path in NOTEBOOKS:
        assert str(path.relative_to(ROOT).with_suffix("")) in toc


def test_repository_address_lives_in_one_place(tmp_path, monkeypatch):
    # every Colab link, install cell and raw address agrees with _config.yml's repository.url
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import repository

    assert repository.disagreements() == []
    # and the check does notice a notebook that points elsewhere
    nb = tmp_path / "book" / "01-x" / "x.ipynb"
    nb.parent.mkdir(parents=True)
    nb.write_text(json.dumps({"cells": [{"source": ['!pip install "x @ git+https://github.com/someone/else"']}]}),
                  encoding="utf-8")
    module = tmp_path / "results.py"                                     # and a package module that does too
    module.write_text('URL = "https://raw.githubusercontent.com/someone/else/dev/book/"\n', encoding="utf-8")
    monkeypatch.setattr(repository, "NOTEBOOKS", [nb])
    monkeypatch.setattr(repository, "MODULES", [module])
    monkeypatch.setattr(repository, "ROOT", tmp_path)
    monkeypatch.setattr(repository, "configured", lambda: {"repo": "attention-course/attention-course",
                                                           "release": "v9.9.9"})
    wrong = repository.disagreements()
    assert len(wrong) == 2 and "results.py: https://raw.githubusercontent.com/someone/else/dev/" in wrong[1]
    assert repository.rewrite() == 2 and repository.disagreements() == []        # the cell and the module
    assert "attention-course/attention-course/v9.9.9/book/" in module.read_text(encoding="utf-8")
    assert "git+https://github.com/attention-course/attention-course@v9.9.9" in nb.read_text(encoding="utf-8")


def test_colab_installs_the_release_the_notebook_belongs_to():
    """The install cell pins the package's own release (v<__version__>), never a branch's head; the Colab link and
    the raw addresses name the same release."""
    import attention_course

    release = f"v{attention_course.__version__}"
    for path in NOTEBOOKS:
        text = path.read_text(encoding="utf-8")
        installs = re.findall(r"pip install[^\n]*git\+https://github\.com/[\w.-]+/[\w.-]+(@[\w.-]+)?", text)
        assert installs and set(installs) == {"@" + release}, (path.name, installs)
        assert re.findall(r"colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/([\w.-]+)/", text) == [release]


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_each_exercise_says_if_it_is_checked_and_how_long_it_takes(nb):
    cells = json.loads(nb.read_text())["cells"]
    for i, cell in enumerate(cells):
        text = "".join(cell["source"])
        for label, body in re.findall(r"\{exercise\}[^\n]*\n:label: (\S+)\n\n([^\n]*)", text):
            after = cells[i + 1] if i + 1 < len(cells) else {"cell_type": "", "metadata": {}}
            checked = after["cell_type"] == "code" and "solution" in after["metadata"].get("tags", [])
            expected = r"\*Checked automatically · about \d+ min\*" if checked else \
                r"\*Open-ended, no automatic check · about \d+ min[^*]*\*"
            assert re.fullmatch(expected, body), f"{label}: {body!r}"
        if "solution" in cell["metadata"].get("tags", []) and cell["cell_type"] == "code":
            assert cell["metadata"].get("mystnb", {}).get("code_prompt_show") == "Show solution", i


def test_every_open_ended_exercise_has_a_discussion(nb):
    """An exercise without a checker is followed by a discussion: a folded ``{solution}`` in a markdown cell tagged
    ``solution`` (the student export leaves it out)."""
    cells = nb["cells"]
    for i, cell in enumerate(cells):
        for label in re.findall(r"\{exercise\}[^\n]*\n:label: (\S+)\n\n\*Open-ended", "".join(cell["source"])):
            after = cells[i + 1] if i + 1 < len(cells) else {"cell_type": "", "metadata": {}, "source": ""}
            text = "".join(after["source"])
            assert after["cell_type"] == "markdown" and f"{{solution}} {label}\n" in text, f"{label} has no discussion"
            assert ":class: dropdown" in text and "solution" in after["metadata"].get("tags", []), label


def test_intro_times_are_the_chapters_own():
    rows = dict(re.findall(r"^\| (\d+(?:\.\d+)?) \| \{doc\}.*\| (\d+ min · \d+ min · \d+ min · \d+ min) \|$",
                           (ROOT / "book" / "intro.md").read_text(), re.M))
    assert len(rows) == len(NOTEBOOKS)
    for nb in NOTEBOOKS:
        course = json.loads(nb.read_text())["metadata"]["course"]
        t = course["time"]
        expected = (f"{t['reading_min']} min · {t['quick_min_per_framework']} min · {t['binder_min_pytorch']} min · "
                    f"{t['full_min_per_framework']} min")
        assert rows[chapter_times.page_key(json.loads(nb.read_text()))] == expected, nb.name
        prose = " ".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"])
        box = re.search(r"\*\*Time\*\* reading (\d+) min · quick profile, per framework: about (\d+) min on a 2-core "
                        r"CPU; on Binder's one CPU (\d+) min with PyTorch", " ".join(prose.split()))
        assert box and box.groups() == (str(t["reading_min"]), str(t["quick_min_per_framework"]),
                                        str(t["binder_min_pytorch"])), nb.name


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_cells_have_unique_ids(nb):
    ids = [cell.get("id") for cell in json.loads(nb.read_text())["cells"]]
    assert None not in ids and len(set(ids)) == len(ids)
