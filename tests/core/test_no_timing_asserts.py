"""No notebook and no test asserts on a wall-clock time: timings are shown, and compared in `make bench`.

The scan follows each assert back through the assignments of its notebook (or test file) to what the
asserted values were computed from; it fails when that includes a clock (``time.perf_counter``, ``time.time``,
``timeit``, ``ac.bench.time_interleaved``…) or a timing field (``"milliseconds"``, ``"seconds"``, ``median_ms``…).
An assert whose line ends with the comment ``# not timed`` is skipped (a chart test fed made-up timings, say).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))
TESTS = sorted((ROOT / "tests").rglob("test_*.py"))
CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "process_time", "timeit", "time_interleaved",
          "median_times", "time_attention"}
FIELDS = {"milliseconds", "seconds", "ms", "median_ms", "q1_ms", "q3_ms", "ms per step", "training time (s)"}


def _code(source: str) -> str:
    # IPython magics and shell lines are not Python: blank them (a %%keras cell body is plain Python)
    lines = source.splitlines()
    return "\n".join(line[: len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!")) else line
                     for line in lines)


def _sources(tree: ast.AST) -> set[str]:
    """Names, attributes, called clocks and string constants an expression (or statement) uses."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
    return found


def _is_clock(name: str) -> bool:
    return name in CLOCKS or name in FIELDS


def _walk_scope(node: ast.AST):
    """The nodes of one scope: like ast.walk, but without entering nested functions and classes."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        child = todo.pop()
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(child))


def _assignments(scope: ast.AST, table: dict[str, set[str]], loops: bool = True) -> None:
    """Record, for every name assigned in this scope, what its values were computed from. ``loops=False``
    leaves out loop and comprehension variables (short names reused everywhere, e.g. ``a`` or ``s``)."""
    for node in _walk_scope(scope):
        if not loops and isinstance(node, (ast.For, ast.comprehension)):
            continue
        targets, value = [], None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.For, ast.comprehension)):
            targets, value = [node.target], node.iter
        for target in targets:
            for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                table.setdefault(name, set()).update(_sources(value))


def _tainted(names: set[str], table: dict[str, set[str]], seen: set[str]) -> bool:
    for name in names - seen:
        seen.add(name)
        if _is_clock(name) or _tainted(table.get(name, set()), table, seen):
            return True
    return False


def timing_asserts(sources: list[str]) -> list[str]:
    """The asserts (as source text) of these code blocks (one notebook's cells, or one file) whose values
    come from a clock. Module-level names are shared by all blocks, except loop variables, which stay in their
    block; a function's own names stay in it."""
    trees = [ast.parse(_code(s)) for s in sources]
    shared: dict[str, set[str]] = {}
    for tree in trees:
        _assignments(tree, shared, loops=False)
    bad = []

    def check(scope, table, source):
        for node in _walk_scope(scope):
            if isinstance(node, ast.Assert) and _tainted(_sources(node.test), table, set()) \
                    and "# not timed" not in source.splitlines()[node.lineno - 1]:
                bad.append(ast.get_source_segment(source, node) or ast.dump(node))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                local = {k: set(v) for k, v in table.items()}
                for arg in (a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)):
                    local[arg] = set()                      # a parameter is not the outer name
                _assignments(node, local)
                check(node, local, source)
            elif isinstance(node, ast.ClassDef):
                check(node, table, source)

    for source, tree in zip(sources, trees, strict=True):
        block = {k: set(v) for k, v in shared.items()}
        _assignments(tree, block)
        check(tree, block, _code(source))
    return bad


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_no_notebook_asserts_a_time(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert timing_asserts(["".join(c["source"]) for c in cells if c["cell_type"] == "code"]) == []


@pytest.mark.parametrize("path", TESTS, ids=lambda p: p.name)
def test_no_test_asserts_a_time(path):
    assert timing_asserts([path.read_text(encoding="utf-8")]) == []


def test_the_scan_finds_timing_asserts():
    # the shapes of the asserts that once made `make book` fail on a busy machine
    assert timing_asserts(["start = time.perf_counter()\nrun()\nelapsed = time.perf_counter() - start\n"
                           "assert elapsed < 1"])
    assert timing_asserts(['t = df.set_index("attention")["milliseconds"]',
                           'assert t["local-p"] < t["global"] / 2'])
    assert timing_asserts(["t = median_times(runs)", 'cost["keras"] = t["a"] / t["b"]',
                           "assert min(cost.values()) > 1"])
    assert timing_asserts(["%%keras\nslow = fw.time_attention('global', 8192)\nassert slow > 0"])
    # counts and accuracies are fine
    assert not timing_asserts(['e = df.set_index("attention")["elements"]', 'assert e["local"] < e["global"]'])
    assert not timing_asserts(["acc = model.evaluate(x)\nassert acc > 0.9"])
