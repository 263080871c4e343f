"""The layers a chapter introduces are code cells in it, and the package agrees with them.

A chapter lists what it introduces in its notebook metadata, ``course.introduces``. For each of those names and
each framework, the chapter has a ``%%keras`` / ``%%pytorch`` cell whose top-level ``class`` or ``def`` has the
same syntax tree as the definition in a chapter's ``attention_course/chNN_*/keras.py`` or ``torch.py`` (code and
docstrings must match; comments and line breaks may differ). The package is the source of truth: change the
package, then copy its definitions into the cells with ``--write``, which also rewrites the imports of a cell
that only imports and defines (what its definitions use from the package, less what the chapter showed before).

    python tools/layer_cells.py            # check every chapter; exit 1 and say what differs
    python tools/layer_cells.py --write    # replace the chapters' definitions by the package's
"""

from __future__ import annotations

import argparse
import ast
import builtins
import difflib
import json
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
FOLDERS = {"keras": "keras", "pytorch": "torch"}   # cell magic → module name in each chapter's folder
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def chapters() -> list[Path]:
    return sorted(BOOK.glob("[0-9][0-9]-*/*.ipynb"))


@cache
def package_definitions(framework: str) -> dict[str, tuple[Path, ast.AST, str]]:
    """Every top-level ``class``/``def`` of the framework's modules: name → (file, node, source text)."""
    found: dict[str, tuple[Path, ast.AST, str]] = {}
    for path in sorted((ROOT / "attention_course").glob(f"ch[0-9][0-9]_*/{FOLDERS[framework]}.py")):
        text = path.read_text()
        lines = text.splitlines(keepends=True)
        for node in ast.parse(text).body:
            if isinstance(node, DEFS):
                if node.name in found and not node.name.startswith("_"):
                    raise SystemExit(f"{node.name} is defined twice in the chapters' {FOLDERS[framework]}.py")
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found.setdefault(node.name, (path, node, "".join(lines[first - 1: node.end_lineno])))
    return found


def in_the_book(path: Path) -> bool:
    """Whether the chapter folder holding ``path`` (``attention_course/chNN_…/``) has its notebook in the book
    (``book/NN-…/``); a chapter being written has its package first."""
    number = path.parent.name[2:4]
    return any((ROOT / "book").glob(f"{number}-*/*.ipynb"))


def public_classes(framework: str) -> set[str]:
    """The classes a reader of the package would take for the course's layers and models, in the book's chapters
    (the Keras base classes of ``core/keras/base.py``, explicit masks and building on the first call, are plumbing
    no chapter teaches)."""
    return {name for name, (path, node, _) in package_definitions(framework).items()
            if isinstance(node, ast.ClassDef) and not name.startswith("_") and in_the_book(path)}


def _python(cell_source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(cell_source.split("\n", 1)[1])


def framework_cells(nb: dict) -> list[tuple[int, str, str]]:
    """(index, framework, source) of every ``%%keras`` / ``%%pytorch`` code cell."""
    cells = []
    for i, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"])
        magic = source.split("\n", 1)[0].strip()
        if cell["cell_type"] == "code" and magic in ("%%keras", "%%pytorch"):
            cells.append((i, magic[2:], source))
    return cells


def notebook_definitions(nb: dict) -> dict[tuple[str, str], tuple[int, ast.AST]]:
    """(framework, name) → (cell index, node) of every top-level ``class``/``def`` in a framework cell."""
    found = {}
    for i, framework, source in framework_cells(nb):
        for node in ast.parse(_python(source)).body:
            if isinstance(node, DEFS):
                found.setdefault((framework, node.name), (i, node))
    return found


def _dump(node: ast.AST) -> str:
    return ast.dump(node, include_attributes=False)


def problems(path: Path) -> list[str]:
    """What is wrong with one chapter: an introduced name not shown, or shown unlike the package."""
    nb = json.loads(path.read_text())
    introduces = nb["metadata"].get("course", {}).get("introduces", [])
    shown = notebook_definitions(nb)
    out = []
    for framework in FOLDERS:
        package = package_definitions(framework)
        for name in introduces:
            if name not in package:
                out.append(f"{path.name}: introduces {name}, which no chapter's {FOLDERS[framework]}.py defines")
            elif (framework, name) not in shown:
                out.append(f"{path.name}: {name} is not shown in a %%{framework} cell")
        for (fw, name), (index, node) in shown.items():
            if fw == framework and name in package and _dump(node) != _dump(package[name][1]):
                diff = difflib.unified_diff(ast.unparse(package[name][1]).splitlines(),
                                            ast.unparse(node).splitlines(), "package", f"cell {index}", lineterm="")
                out.append(f"{path.name}: cell {index} defines {name} ({framework}) unlike "
                           f"{package[name][0].relative_to(ROOT)}:\n" + "\n".join(diff))
    return out


def _bindings(path: Path, framework: str) -> dict[str, str]:
    """Module-level names of a package module → the absolute import line that binds them in a cell."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    lines: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                lines[(alias.asname or alias.name).split(".")[0]] = f"import {alias.name}" + (
                    f" as {alias.asname}" if alias.asname else "")
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            source = node.module
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level]
                source = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                lines[alias.asname or alias.name] = f"from {source} import {alias.name}" + (
                    f" as {alias.asname}" if alias.asname else "")
        else:
            targets = ([node.name] if isinstance(node, DEFS) else
                       [n.id for t in getattr(node, "targets", [getattr(node, "target", None)]) if t is not None
                        for n in ast.walk(t) if isinstance(n, ast.Name)])
            for name in targets:
                lines[name] = f"from {package} import {name}"
    return lines


def imports_for(framework: str, names: list[str], shown_before: set[str]) -> str:
    """The import lines a cell defining ``names`` needs: every module-level name of the package that the
    definitions use, except the ones the chapter has shown (defined) already in this framework."""
    package = package_definitions(framework)
    plain, grouped = set(), {}
    for name in names:
        path, node, _ = package[name]
        bindings = _bindings(path, framework)
        for used in sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}):
            if used in names or used in shown_before or used not in bindings or hasattr(builtins, used):
                continue
            line = bindings[used]
            if line.startswith("import "):
                plain.add(line)
            else:
                source, _, imported = line[len("from "):].partition(" import ")
                grouped.setdefault(source, set()).add(imported)
    froms = [f"from {source} import {', '.join(sorted(grouped[source], key=str.lower))}" for source in grouped]

    def order(line: str):  # as isort (ruff's default): `import x` lines first, then `from x import …`, by module
        return line.startswith("from"), line.split()[1]

    standard = sorted((line for line in plain | set(froms) if line.split()[1].split(".")[0] in sys.stdlib_module_names),
                      key=order)
    ours = sorted((line for line in froms if line.split()[1].startswith("attention_course")), key=order)
    third = sorted((plain | set(froms)) - set(standard) - set(ours), key=order)
    return "\n\n".join("\n".join(group) for group in (standard, third, ours) if group)


def write(path: Path) -> int:
    """Bring a chapter's cells in line with the package; returns how many cells changed.

    A cell that only imports and defines package names is rewritten whole: the imports its definitions need,
    then the package's definitions. In any other cell, each definition that differs is replaced in place."""
    nb = json.loads(path.read_text())
    changed = 0
    shown: dict[str, set[str]] = {framework: set() for framework in FOLDERS}
    for index, framework, source in framework_cells(nb):
        magic, body = source.split("\n", 1)
        if _python(source).strip() != body.strip():
            continue  # a cell with IPython syntax: leave it to a human
        package = package_definitions(framework)
        tree = ast.parse(body)
        defined = [n.name for n in tree.body if isinstance(n, DEFS) and n.name in package]
        if defined and all(isinstance(n, (ast.Import, ast.ImportFrom)) or (isinstance(n, DEFS) and n.name in package)
                           for n in tree.body):
            text = imports_for(framework, defined, shown[framework])
            text = (text + "\n\n\n" if text else "") + "\n\n".join(package[n][2].rstrip("\n") + "\n"
                                                                    for n in defined)
        else:
            lines = body.splitlines(keepends=True)
            for node in reversed(tree.body):
                if isinstance(node, DEFS) and node.name in package and _dump(node) != _dump(package[node.name][1]):
                    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    lines[first - 1: node.end_lineno] = [package[node.name][2]]
            text = "".join(lines)
        shown[framework].update(defined)
        text = magic + "\n" + text.rstrip("\n")
        if text != source.rstrip("\n"):
            nb["cells"][index]["source"] = text.splitlines(keepends=True)
            changed += 1
    if changed:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="copy the package's definitions into the cells")
    args = parser.parse_args(argv)
    if args.write:
        for path in chapters():
            n = write(path)
            if n:
                print(f"{path.relative_to(ROOT)}: {n} cell(s) rewritten")
    found = [p for path in chapters() for p in problems(path)]
    print("\n\n".join(found) if found else "every chapter shows what it introduces, as the package defines it")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
