"""The package is a house by chapters: each floor imports only the floors below it.

    core/                       errors, arrays, text, decoding, validation, training loops, checkpoints, parity
    data/, viz/                 the data registry and loaders; the general charts (their __init__ are façades)
    notebook/                   the session, the profile, the cell magics, glue, widgets, the instructor export
    ch01_… … ch09_…             one folder per chapter; a chapter imports earlier chapters, never later ones
    torch/, keras/, exercises/, bench/, __init__.py   façades over every chapter (nothing below imports them)

The import statements are read from the source (every ``import``, also inside functions), so an import that a
function makes late cannot hide a step up the house.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "attention_course"
FACADES = {"torch", "keras", "exercises", "bench", "__init__"}
FLOORS = {"core": 0, "data": 1, "viz": 1, "notebook": 2}


def floor(module: str) -> tuple[float, str] | None:
    """(height, room) of a module of the package, None for another package's module."""
    parts = module.split(".")
    if parts[0] != "attention_course":
        return None
    room = parts[1] if len(parts) > 1 else "__init__"
    if room in FLOORS:
        return FLOORS[room], room
    chapter = re.fullmatch(r"ch(\d\d)_\w+", room)
    if chapter:
        return 10 + int(chapter[1]), room
    return float("inf"), room   # a façade: the top floor


def imports(path: Path) -> list[str]:
    """Every module an ``import`` statement of the file names (``from a import b`` names a and a.b)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return found


def modules() -> list[tuple[str, Path]]:
    return [(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts), p) for p in sorted(PACKAGE.rglob("*.py"))]


def test_every_chapter_has_its_folder_and_every_module_a_room():
    chapters = sorted(p.name for p in PACKAGE.glob("ch[0-9][0-9]_*"))
    book = sorted(p.name for p in (PACKAGE.parent / "book").glob("[0-9][0-9]-*"))
    numbers = [c[2:4] for c in chapters]
    # the book's chapters, each with its folder; a chapter being written may have its package before its notebook
    assert numbers[:len(book)] == [b[:2] for b in book], (chapters, book)
    assert numbers == [f"{n:02d}" for n in range(1, len(numbers) + 1)], chapters
    for chapter in chapters:
        assert {"torch.py", "keras.py"} <= {p.name for p in (PACKAGE / chapter).iterdir()}, chapter
    rooms = {p.relative_to(PACKAGE).parts[0] for p in PACKAGE.rglob("*.py")}
    assert rooms <= {*FLOORS, *chapters, *FACADES - {"__init__"}, "__init__.py"}, rooms


def test_no_floor_imports_a_floor_above_it_nor_a_later_chapter():
    steps_up = []
    for name, path in modules():
        here = floor(name)
        for target in imports(path):
            there = floor(target)
            if there is None or there[1] == here[1] or there[0] == float("inf") and target.count(".") == 0:
                continue
            if there[0] >= here[0] and here[0] != float("inf"):
                steps_up.append(f"{path.relative_to(PACKAGE.parent)} imports {target}")
    assert not steps_up, "\n".join(sorted(set(steps_up)))


def test_the_test_sees_a_step_up():
    """The walk above is not vacuous: an import of a later chapter from an earlier one is a step up."""
    assert floor("attention_course.ch07_self_attention.torch")[0] > floor("attention_course.ch01_sequence_models")[0]
    assert floor("attention_course.core.errors")[0] < floor("attention_course.data.registry")[0]
    assert floor("attention_course.torch")[0] > floor("attention_course.ch09_bert.torch")[0]
    tree = ast.parse("from attention_course.ch08_transformer.torch import KVCache")
    assert "attention_course.ch08_transformer.torch.KVCache" in [f"{n.module}.{a.name}" for n in tree.body
                                                                  for a in n.names]


@pytest.mark.parametrize("room", ["core", "data", "viz", "notebook"])
def test_the_lower_floors_load_no_framework(room):
    names = [name for name, _ in modules() if floor(name)[1] == room and ".torch" not in name
             and ".keras" not in name and not name.endswith("quiet")]
    code = ("import importlib, sys\n"
            f"for name in {names!r}: importlib.import_module(name)\n"
            "heavy = [m for m in ('torch', 'tensorflow', 'keras') if m in sys.modules]\n"
            "assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE.parent)


@pytest.mark.parametrize("framework", ["torch", "keras"])
def test_an_earlier_chapter_shows_no_later_chapters_feature(framework):
    """Chapter 1's encoder–decoder takes no Chapter 4 score, Chapter 7's multi-head attention no Chapter 8 cache:
    the later chapter extends the earlier class (``ScoredSeq2Seq``, ``CachedMultiHeadAttention``)."""
    import importlib
    import inspect

    def parameters(cls):
        return inspect.signature(getattr(cls, "forward" if framework == "torch" else "call")).parameters

    chapters = ("ch01_sequence_models", "ch04_score_functions", "ch07_self_attention", "ch08_transformer")
    ch01, ch04, ch07, ch08 = (importlib.import_module(f"attention_course.{c}.{framework}") for c in chapters)
    assert "score" not in inspect.signature(ch01.Seq2Seq.__init__).parameters
    assert issubclass(ch04.ScoredSeq2Seq, ch01.Seq2Seq)
    assert "score" in inspect.signature(ch04.ScoredSeq2Seq).parameters
    assert "cache" not in parameters(ch07.MultiHeadAttention) and not hasattr(ch07, "KVCache")
    assert issubclass(ch08.CachedMultiHeadAttention, ch07.MultiHeadAttention)
    assert "cache" in parameters(ch08.CachedMultiHeadAttention) and hasattr(ch08, "KVCache")


def test_no_import_cycle():
    """No module reaches itself through the import statements of the package (a late import inside a function
    counts as much as one at the top: it only hides the circle)."""
    names = {name for name, _ in modules()}

    def resolve(target: str) -> str | None:
        while target and target not in names and f"{target}.__init__" not in names:
            target = target.rpartition(".")[0]
        return None if not target else (target if target in names else f"{target}.__init__")

    graph = {name: {t for t in map(resolve, imports(path)) if t and t != name} for name, path in modules()}
    graph = {n.removesuffix(".__init__"): {t.removesuffix(".__init__") for t in ts} for n, ts in graph.items()}
    # a package's __init__ and its own modules are one room: importing a submodule runs the package first
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt.startswith(node + ".") or node.startswith(nxt + "."):
                continue
            if state.get(nxt) == 1:
                return path + [nxt]
            if nxt not in state and (found := visit(nxt, path + [nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start, [start])):
            pytest.fail("import cycle: " + " -> ".join(cycle))
