"""What a page's outputs depend on, so that an edit re-executes only the pages it can change.

The book's execution cache (``tools/notebook_cache.py``) keeps one executed copy of each notebook, matched on its
code cells (jupyter-cache ignores markdown: an edit to prose re-executes nothing). This module adds what the code
cells do not show: the files of the helper package and of the book that the page runs or reads. A cached copy
whose :func:`page_key` differs from the page's current one is stale and runs again.

A page depends on

* the package modules its code cells import, and theirs, transitively (read from the ``import`` statements, as
  the house test reads them). A chapter's folder counts as one unit: a module of ``ch05_…`` brings the whole
  folder, its data files included, since a chapter picks its own framework module by name
  (``backend.module(package)``). Other modules count one file each, so an edit to a core module re-executes the
  pages that import it, which is every page for the modules every chapter uses;
* for the façades, only what it uses: ``ac.viz.token_highlight`` brings Chapter 3's charts, not every chapter's;
  ``ac.torch.MultiHeadAttention`` brings Chapter 7's layers. A façade passed as a whole (``c5.train(ac.torch, …)``)
  brings the façade's chapters up to the page's own (a chapter's code uses nothing from a later chapter);
* its chapter's folder in the book (committed results, checkpoints, images), other notebooks excluded, and the
  committed timings of ``attention_course/benchmarks/`` when it uses ``ac.bench``.

    .venv/bin/python tools/page_inputs.py book/11-more-attention/more-attention.ipynb   # the files, one per line
"""

from __future__ import annotations

import ast
import hashlib
import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "attention_course"
# façades that re-export every chapter's names with ``from …chNN….torch import *``
STAR_FACADES = {f"{PACKAGE}.torch", f"{PACKAGE}.keras", f"{PACKAGE}.exercises"}
CHAPTER = re.compile(rf"{PACKAGE}\.(ch(\d\d)_\w+)")


def code_of(notebook: Path) -> list[ast.Module]:
    """The code cells of ``notebook``, parsed (magics and shell lines read as ``pass``)."""
    import json

    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    parsed = []
    for cell in cells:
        if cell.get("cell_type") == "code":
            lines = "".join(cell["source"]).splitlines()
            code = [line[: len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!"))
                    else line for line in lines]
            parsed.append(ast.parse("\n".join(code)))   # a cell that does not parse fails the notebook's own run
    return parsed


class Tree:
    """The package under ``root``: module names ↔ files, each module's imports, the façades' name maps."""

    def __init__(self, root: Path):
        self.root = root
        self.files = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
                      for p in sorted((root / PACKAGE).rglob("*.py"))}

    def unit(self, module: str) -> list[Path]:
        """The files that stand for ``module``: its chapter's folder (every file), or its own file."""
        chapter = CHAPTER.match(module)
        if chapter:
            folder = self.root / PACKAGE / chapter[1]
            return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        return [self.files[module]] if module in self.files else []

    def imports(self, module: str) -> tuple[str, ...]:
        """The package modules ``module``'s file imports, façades' chapter stars excluded."""
        path = self.files.get(module)
        if path is None:
            return ()
        found = []
        for name in _imports_of(module, path, _stamp(path)):
            if name.endswith("*"):                         # import_module(f"prefix{…}"): all under the prefix
                found += [m for m in self.files if m.startswith(name[:-1])]
            elif name in self.files:
                found.append(name)
        return tuple(found)

    def closure(self, modules: set[str]) -> set[str]:
        """``modules`` and everything they import, with the parent packages an import executes."""
        seen: set[str] = set()
        todo = [m for m in modules if m in self.files]
        while todo:
            module = todo.pop()
            if module in seen:
                continue
            seen.add(module)
            parts = module.split(".")
            parents = [".".join(parts[:i]) for i in range(1, len(parts))]
            chapter = CHAPTER.match(module)                # a chapter is one unit: all its modules
            siblings = [m for m in self.files if m.startswith(f"{PACKAGE}.{chapter[1]}")] if chapter else []
            todo += [m for m in (*parents, *siblings, *self.imports(module)) if m in self.files and m not in seen]
        return seen

    def star_names(self, facade: str) -> tuple[tuple[str, str], ...]:
        """(name, module) for every name a star façade re-exports, from each module's literal ``__all__``."""
        path = self.files.get(facade)
        if path is None:
            return ()
        pairs = []
        for node in _syntax(path, _stamp(path)).body:
            if isinstance(node, ast.ImportFrom) and node.module and any(a.name == "*" for a in node.names):
                pairs += [(name, node.module) for name in self.all_of(node.module)]
        return tuple(pairs)

    def all_of(self, module: str) -> list[str]:
        path = self.files.get(module)
        if path is None:
            return []
        for node in _syntax(path, _stamp(path)).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                try:
                    return [str(v) for v in ast.literal_eval(node.value)]
                except ValueError:
                    return []
        return []

    def star_modules(self, facade: str) -> list[str]:
        return sorted({m for _, m in self.star_names(facade)})


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


@cache
def _digest(path: Path, stamp: tuple[int, int]) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest()


@cache
def _syntax(path: Path, stamp: tuple[int, int]) -> ast.Module:
    """``path`` parsed, once per version of the file (``stamp``)."""
    return ast.parse(path.read_text(encoding="utf-8"))


@cache
def _imports_of(module: str, path: Path, stamp: tuple[int, int]) -> tuple[str, ...]:
    """What the file of ``module`` imports: module names, and ``prefix*`` for ``import_module(f"prefix{…}")``."""
    found: list[str] = []
    is_package = path.name == "__init__.py"
    for node in _walk(_syntax(path, stamp)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*parts, *([base] if base else [])])
            if module in STAR_FACADES and CHAPTER.match(base):
                continue                                   # resolved name by name (:meth:`Tree.star_names`)
            found += [base, *(f"{base}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and str(node.args[0].value).startswith(f"{PACKAGE}."):
            found.append(str(node.args[0].value))          # a module by name: ``framework.module("…ch06_…")``
        elif isinstance(node, ast.Call) and _called(node) in {"import_module", "importlib.import_module"}:
            arg = node.args[0] if node.args else None
            prefix = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else ""
            if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                prefix = str(arg.values[0].value) + "*"
            if prefix.startswith(f"{PACKAGE}."):
                found.append(prefix)
    return tuple(found)


def _walk(node: ast.AST):
    """``ast.walk``, without what only a type checker imports (``if TYPE_CHECKING:``)."""
    todo = [node]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            todo += node.orelse
            continue
        todo += ast.iter_child_nodes(node)


def _called(call: ast.Call) -> str:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return f"{f.value.id}.{f.attr}"
    return ""


def _lazy_maps() -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """``ac.<name>`` → module (the package's ``_LAZY``), and the lazy façades' name → module maps (``ac.viz``,
    ``ac.data``). Importing these is cheap: no deep-learning framework loads."""
    import attention_course
    import attention_course.data
    import attention_course.viz

    return dict(attention_course._LAZY), {f"{PACKAGE}.viz": dict(attention_course.viz._NAMES),
                                          f"{PACKAGE}.data": dict(attention_course.data._NAMES)}


def used_modules(cells: list[ast.Module], tree: Tree, chapter: int | None) -> set[str]:
    """The package modules a page's code uses: its imports, and the modules behind the façade names it reads."""
    lazy, facade_names = _lazy_maps()
    aliases: dict[str, str] = {}          # local name → module (``ac`` → attention_course, ``T`` → …torch)
    used: set[str] = {PACKAGE}
    chains: list[list[str]] = []          # every longest ``a.b.c`` read: ["a", "b", "c"]
    todo: list[ast.AST] = [node for cell in cells for node in cell.body]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Attribute | ast.Name):
            names = []
            while isinstance(node, ast.Attribute):
                names.append(node.attr)
                node = node.value
            if isinstance(node, ast.Name):
                chains.append([node.id, *reversed(names)])
                continue
            todo.append(node)                                   # ``f(x).y``: what is under the call
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == PACKAGE:
                    used.add(a.name)
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else PACKAGE
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == PACKAGE:
            for a in node.names:
                target = f"{node.module}.{a.name}"
                if target in tree.files:
                    used.add(target)
                    aliases[a.asname or a.name] = target
                else:
                    used |= _resolve(node.module or "", a.name, tree, lazy, facade_names)
        todo += ast.iter_child_nodes(node)
    for root, *names in chains:
        if root not in aliases:
            continue
        module = aliases[root]
        for name in names:
            step = _step(module, name, tree, lazy)
            if step is None:
                used |= _resolve(module, name, tree, lazy, facade_names)
                module = ""
                break
            module = step
        if module:
            used.add(module)
            if module in STAR_FACADES:                           # passed as a whole
                used |= {m for m in tree.star_modules(module)
                         if chapter is None or not CHAPTER.match(m) or int(CHAPTER.match(m)[2]) <= chapter}
    return used


def _step(module: str, name: str, tree: Tree, lazy: dict[str, str]) -> str | None:
    """The module ``module.name`` is, if it is one (``ac.torch`` → attention_course.torch)."""
    if module == PACKAGE and name in lazy:
        return lazy[name]
    if f"{module}.{name}" in tree.files:
        return f"{module}.{name}"
    return None


def _resolve(module: str, name: str, tree: Tree, lazy: dict[str, str], facade_names) -> set[str]:
    """The module that defines ``module.name`` when it is a function, class or constant."""
    if module in STAR_FACADES:
        found = {m for n, m in tree.star_names(module) if n == name}
        return found | {module}
    if module in facade_names and name in facade_names[module]:
        return {module, facade_names[module][name]}
    return {module} if module in tree.files else set()


def page_files(notebook: Path, root: Path | None = None) -> list[Path]:
    """Every file (other than the notebook itself) whose content can change ``notebook``'s outputs."""
    root = root or ROOT
    tree = Tree(root)
    match = re.match(r"(\d\d)-", notebook.parent.name)
    chapter = int(match[1]) if match else None
    modules = tree.closure(used_modules(code_of(notebook), tree, chapter))
    files = {f for m in modules for f in tree.unit(m)}
    if f"{PACKAGE}.bench" in modules:
        files |= set((root / PACKAGE / "benchmarks").glob("*.json"))
    if chapter is not None:                              # a chapter's folder in the book: what the page reads
        files |= {p for p in notebook.parent.rglob("*")
                  if p.is_file() and p.suffix != ".ipynb" and ".ipynb_checkpoints" not in p.parts}
    return sorted(files)


def page_key(notebook: Path, root: Path | None = None) -> str:
    """A short hash of the names and contents of :func:`page_files`."""
    root = root or ROOT
    digest = hashlib.sha256()
    for path in page_files(notebook, root):
        name = path.relative_to(root if path.is_relative_to(root) else notebook.parent).as_posix()
        digest.update(name.encode() + b"\0" + _digest(path, _stamp(path)) + b"\0")
    return digest.hexdigest()[:16]


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        for path in page_files(Path(arg).resolve()):
            print(path.relative_to(ROOT))
