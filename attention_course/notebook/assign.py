"""Student editions, answer keys and trimmed books from the course notebooks.

``strip_solutions`` turns a notebook into a student copy, ``answer_key`` into an instructor copy,
``export`` writes both for chosen chapters plus an *edition* (a Jupyter Book holding only those
chapters, full versions with solutions, for the instructor's own site), and
``run_until_first_exercise`` checks that a student copy runs up to its first exercise stub.

CLI: ``course-assign --chapters 1,3 --out assignments/ [--book book] [--root .] [--force]``.

The export never leaves a half-written folder and never overwrites what it did not write: every notebook is
transformed (markers checked) before anything is written, the export is written into a temporary folder next
to ``--out`` and moved into place at the end. An existing non-empty ``--out`` is refused unless ``--force`` is
given *and* it is a previous export (it holds the marker file ``.course-assign``), which is then moved aside
to ``<out>.replaced-<date>-<time>``, never deleted; the repository root (or a folder above it) and any folder
inside the book are refused whatever the flags.
"""

from __future__ import annotations

import argparse
import copy
import re
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
import yaml
from nbformat import NotebookNode

from attention_course.core.errors import (
    AssignError,
    )
from attention_course.core.files import replace_folder

STUB = 'raise NotImplementedError("Exercise: write your solution here")'
# A marker is a line of its own. Any spelling counts: case, spaces, leading '#'s, trailing words or '#'s
# (`### BEGIN SOLUTION`, `## begin  solution ##`, `# End Solution (part b)`), and in markdown and raw cells
# also an HTML comment (`<!-- BEGIN SOLUTION -->`). A line that names the phrase in any other way (inline,
# after code) is refused: it would otherwise be copied into the student's notebook with the answer around it.
_PHRASE = re.compile(r"\b(BEGIN|END)\s*SOLUTION\b", re.IGNORECASE)
_COMMENT = re.compile(r"^([ \t]*)#+[ \t]*(BEGIN|END)[ \t]*SOLUTION\b[^\n]*$", re.IGNORECASE)
_HTML = re.compile(r"^([ \t]*)<!--[ \t]*(BEGIN|END)[ \t]*SOLUTION\b.*-->[ \t]*$", re.IGNORECASE)
_FORMS = {"code": (_COMMENT,), "markdown": (_HTML, _COMMENT), "raw": (_HTML, _COMMENT)}
_ATTACHMENT = re.compile(r"attachment:([^)\s\"'>]+)")
_TEXT_FILES = {".py": "code", ".md": "markdown", ".txt": "raw", ".rst": "raw", ".yml": "raw", ".yaml": "raw",
               ".json": "raw", ".csv": "raw", ".tex": "raw", ".html": "raw"}
_CHAPTER_DIR = re.compile(r"^(\d+)-")
_SKIPPED = (".ipynb_checkpoints", "__pycache__", "_build", ".DS_Store")
_IGNORE = shutil.ignore_patterns(*_SKIPPED)
_IMAGES = {".png", ".svg", ".jpg", ".jpeg", ".gif", ".ico"}
MARKER = ".course-assign"  # written into every export: --force replaces only folders that hold it


def _marker(line: str, kind: str, where: str, n: int) -> tuple[str, str] | None:
    """``("BEGIN" | "END", indentation)`` for a marker line, None for a line without the phrase; a line that
    names the phrase but is not a marker line raises :class:`AssignError` naming the place and the line."""
    if not _PHRASE.search(line):
        return None
    for form in _FORMS[kind]:
        if m := form.match(line.rstrip("\r\n")):
            return m.group(2).upper(), m.group(1)
    shapes = "`### BEGIN SOLUTION`" if kind == "code" else "`<!-- BEGIN SOLUTION -->`"
    raise AssignError(f"{where}, line {n + 1}: {line.strip()!r} names a solution marker but is not a marker line; "
                      f"put the marker on a line of its own, e.g. {shapes}")


def _rewrite(source: str, kind: str, keep: bool, stub: bool, where: str) -> str:
    """Remove solution markers; drop the marked region unless ``keep``, stubbing it if ``stub``. The stub takes
    the indentation of the region's first line (a marker at column 0 inside a ``def`` still gives valid code)."""
    out: list[str] = []
    open_at: int | None = None
    pending: str | None = None          # a stub not yet written: the BEGIN marker's indentation
    for n, line in enumerate(source.splitlines(keepends=True)):
        found = _marker(line, kind, where, n)
        if found and found[0] == "BEGIN":
            if open_at is not None:
                raise AssignError(f"{where}: nested BEGIN SOLUTION at line {n + 1} (open at {open_at + 1})")
            open_at = n
            pending = found[1] if stub and not keep else None
        elif found:
            if open_at is None:
                raise AssignError(f"{where}: END SOLUTION at line {n + 1} without a BEGIN SOLUTION")
            if pending is not None:
                out.append(f"{pending}{STUB}\n")
            open_at = pending = None
        elif open_at is None or keep:
            out.append(line)
        elif pending is not None and line.strip():
            out.append(f"{line[:len(line) - len(line.lstrip())]}{STUB}\n")
            pending = None
    if open_at is not None:
        raise AssignError(f"{where}: BEGIN SOLUTION at line {open_at + 1} has no END SOLUTION")
    result = "".join(out)
    return result[:-1] if result.endswith("\n") and not source.endswith("\n") else result


def _python(source: str) -> str:
    """A code cell as the Python the kernel runs (IPython magics turned into calls); a cell magic's body is
    checked as Python too, since ``%%keras`` and ``%%pytorch`` cells hold the course's code."""
    from IPython.core.inputtransformer2 import TransformerManager

    if source.lstrip().startswith("%%"):
        source = source.lstrip().split("\n", 1)[1] if "\n" in source.lstrip() else ""
    return TransformerManager().transform_cell(source)


def _check_compiles(source: str, where: str) -> None:
    try:
        compile(_python(source), where, "exec")
    except SyntaxError as err:
        raise AssignError(f"{where}: the student copy of this cell is not valid Python after its solution was "
                          f"removed (line {err.lineno}: {err.msg}); check the indentation of its solution "
                          "markers") from None


def _transform(nb: NotebookNode, keep: bool, name: str) -> NotebookNode:
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    cells = []
    for i, cell in enumerate(nb.cells):
        where = f"{name}, cell {i}"
        tags = cell.metadata.get("tags", [])
        if not keep and "solution" in tags and cell.cell_type != "code":
            continue
        source = _rewrite(cell.source, cell.cell_type if cell.cell_type in _FORMS else "raw", keep,
                          cell.cell_type == "code", where)
        if cell.cell_type == "code":
            if not keep and "solution" in tags and source == cell.source:
                source = STUB  # a whole-cell solution without markers
            if not keep and source != cell.source:
                _check_compiles(source, where)
            cell.outputs, cell.execution_count = [], None
        if "attachments" in cell and source != cell.source:  # an image that only the solution showed goes too
            used = set(_ATTACHMENT.findall(source))
            cell.attachments = {k: v for k, v in cell.attachments.items() if k in used}
        cell.source = source
        cell.metadata.pop("execution", None)
        cells.append(cell)
    nb.cells = cells
    return nb


def strip_solutions(nb: NotebookNode, name: str = "<notebook>") -> NotebookNode:
    """Student copy: solution regions become ``STUB`` (same indentation), marked markdown and
    markdown cells tagged ``solution`` are dropped, a code cell tagged ``solution`` without markers
    becomes ``STUB``, outputs and execution counts are cleared. Tags are kept. ``name`` is used in
    errors (unbalanced markers raise :class:`AssignError` naming notebook and cell index)."""
    return _transform(nb, keep=False, name=name)


def answer_key(nb: NotebookNode, name: str = "<notebook>") -> NotebookNode:
    """Instructor copy: markers removed, solutions kept, outputs cleared."""
    return _transform(nb, keep=True, name=name)


def parse_chapters(spec: str | list[int]) -> list[int] | str:
    """``"1,3"`` -> ``[1, 3]``, ``"1-3,5"`` -> ``[1, 2, 3, 5]``, ``"all"`` -> ``"all"``."""
    if isinstance(spec, list):
        return sorted(set(spec))
    if spec.strip().lower() == "all":
        return "all"
    chosen: set[int] = set()
    for part in filter(None, (p.strip() for p in spec.split(","))):
        lo, _, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            raise AssignError(f"bad chapter spec {spec!r}; use e.g. '1,3', '1-3' or 'all'") from None
        if last < first:
            raise AssignError(f"chapter range {part!r} runs backwards; write '{last}-{first}'")
        chosen.update(range(first, last + 1))
    if not chosen:
        raise AssignError(f"empty chapter spec {spec!r}")
    return sorted(chosen)


def find_chapters(book_dir: str | Path) -> dict[int, Path]:
    """Chapter number -> folder, for every ``<NN>-<slug>`` folder of ``book_dir``."""
    found = {}
    for d in sorted(Path(book_dir).iterdir()) if Path(book_dir).is_dir() else []:
        if d.is_dir() and (m := _CHAPTER_DIR.match(d.name)):
            found[int(m.group(1))] = d
    return found


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.ipynb") if not {".ipynb_checkpoints", "_build"} & set(p.parts))


def _toc_files(node: object) -> set[str]:
    """Every ``file:`` entry of a toc (sub)tree, without ``.ipynb``/``.md`` suffix."""
    if isinstance(node, list):
        return set().union(*map(_toc_files, node))
    if not isinstance(node, dict):
        return set()
    own = {re.sub(r"\.(ipynb|md)$", "", str(node["file"]))} if "file" in node else set()
    return own.union(*map(_toc_files, node.values()))


def edition_toc(repo_root: Path, book_rel: str, folders: list[str]) -> dict:
    """The repo's ``_toc.yml`` (or a fresh one) restricted to the chosen chapter folders; chosen
    notebooks that the repo's toc does not mention are appended as chapters."""
    prefixes = tuple(f"{book_rel}/{f}/" for f in folders)
    src = repo_root / "_toc.yml"
    toc = (yaml.safe_load(src.read_text()) if src.is_file() else None) or {
        "format": "jb-book", "root": f"{book_rel}/intro", "chapters": []}
    chapter_file = re.compile(rf"^{re.escape(book_rel)}/\d+-")

    def keep(entries):  # chosen chapters, and pages that belong to no chapter (e.g. the references)
        files = [str(e.get("file", "")) for e in entries or []]
        return [e for e, f in zip(entries or [], files, strict=True)
                if f.startswith(prefixes) or not chapter_file.match(f)]

    if "parts" in toc:
        parts = [dict(p, chapters=keep(p.get("chapters"))) for p in toc["parts"]]
        toc["parts"] = [p for p in parts if p["chapters"]] or [{"chapters": []}]
        with_chapters = [p for p in toc["parts"]
                         if any(chapter_file.match(str(e.get("file", ""))) for e in p["chapters"])]
        chapters = (with_chapters or toc["parts"])[-1]["chapters"]
    else:
        chapters = toc["chapters"] = keep(toc.get("chapters"))
    listed = _toc_files(toc)
    for f in folders:
        for p in _notebooks(repo_root / book_rel / f):
            if (entry := p.relative_to(repo_root).with_suffix("").as_posix()) not in listed:
                chapters.append({"file": entry})
    return toc


_DOC_LINK = re.compile(r"\{doc\}`([^`<]+?)\s*<(\d+-[^/>]+)/[^>]*>`")


def unlink_missing_chapters(book: Path, kept: set[str]) -> None:
    """In the edition's top-level pages, ``{doc}`` links to chapters left out become plain text."""
    for page in book.glob("*.md"):
        text = page.read_text(encoding="utf-8")
        new = _DOC_LINK.sub(lambda m: m.group(0) if m.group(2) in kept else m.group(1), text)
        if new != text:
            page.write_text(new, encoding="utf-8")


def _is_export(folder: Path) -> bool:
    """True for a folder written by :func:`export`: it holds the marker file. A folder that merely looks like
    an export (a README starting "# Course assignments") is not one: it may hold an instructor's own files."""
    return (folder / MARKER).is_file()


def _check_out(out: Path, root: Path, book: Path, force: bool) -> None:
    """Refuse an output folder where the export would destroy or corrupt files (see the module docstring)."""
    if root.is_relative_to(out):
        raise AssignError(f"refusing to write the export into {out}: it is the repository root or contains it; "
                          "choose a new folder, e.g. --out assignments")
    if out.is_relative_to(book):
        raise AssignError(f"refusing to write the export into {out}: it lies inside the book {book} (the export "
                          "would copy the chapters into themselves); choose a folder outside it, e.g. --out "
                          "assignments")
    if out.exists() and not out.is_dir():
        raise AssignError(f"--out {out} is a file, not a folder; choose a folder")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise AssignError(f"--out {out} already exists and is not empty; choose a new folder, or pass --force "
                              "(force=True) to move a previous export aside and write a new one")
        if not _is_export(out):
            raise AssignError(f"--out {out} is not empty and is not a previous export (it has no {MARKER} file): "
                              "--force only replaces exports; move its files away or choose another folder")


def _transform_all(chosen: list[int], available: dict[int, Path]) -> dict[Path, tuple[NotebookNode, NotebookNode]]:
    """Every notebook of the chosen chapters -> (student copy, answer key), all checked before anything is
    written (a notebook that is not valid JSON or has unbalanced markers raises :class:`AssignError`)."""
    done = {}
    for c in chosen:
        for nb_path in _notebooks(available[c]):
            try:
                nb = nbformat.read(nb_path, as_version=4)
            except Exception as err:
                raise AssignError(f"{nb_path} is not a readable notebook ({type(err).__name__}: {err})") from err
            done[nb_path] = (strip_solutions(nb, name=str(nb_path)), answer_key(nb, name=str(nb_path)))
    return done


def export(chapters: list[int] | str, out_dir: str | Path, book_dir: str | Path = "book",
           repo_root: str | Path = ".", force: bool = False) -> dict:
    """Write ``student/``, ``key/`` and ``edition/`` (plus ``README.md``) under ``out_dir``.

    ``book_dir`` is relative to ``repo_root`` unless absolute. ``out_dir`` must not exist or be empty; with
    ``force=True`` it may also be a previous export, which is then moved aside, never deleted, to
    ``<out_dir>.replaced-<date>-<time>`` (returned as ``"replaced"``). It may not be the repository root,
    a folder above it, or a folder inside the book. Everything is checked first and written into a temporary
    folder, moved into place at the end: on any error nothing changes. Student and key folders also get the
    chapter's other files (images, small data) so that the notebooks run. The edition holds the *full*
    chapters (solutions included) for the instructor's own site. Returns the paths written:
    ``{"chapters", "student", "key", "edition", "readme", "replaced"}`` (``replaced``: where the previous export
    went, or None). The student copies of the chapter's other text files (a ``.md`` page, a helper ``.py``)
    lose their solution regions as the notebooks do.
    """
    root, out = Path(repo_root).resolve(), Path(out_dir).resolve()
    book = (root / book_dir).resolve()
    available = find_chapters(book)
    parsed = parse_chapters(chapters) if isinstance(chapters, str | list) else chapters
    chosen: list[int] = sorted(available) if isinstance(parsed, str) else list(parsed)   # str: "all"
    if not book.is_relative_to(root):
        raise AssignError(f"the book folder {book} must lie inside the repository root {root}")
    if not available:
        raise AssignError(f"no chapter folders (<NN>-<slug>) in {book}")
    if not chosen:
        raise AssignError(f"no chapters chosen; available: {sorted(available)}")
    if unknown := [c for c in chosen if c not in available]:
        raise AssignError(f"unknown chapter(s) {unknown}; available: {sorted(available)}")
    _check_out(out, root, book, force)
    notebooks = _transform_all(chosen, available)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    except OSError as err:
        raise AssignError(f"cannot create the export next to {out} ({type(err).__name__}: {err})") from err
    try:
        written = _write(tmp, chosen, available, notebooks, root, book)
        (tmp / MARKER).write_text("Written by course-assign: `course-assign --force` may replace this folder.\n")
        replaced = replace_folder(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for kind in ("student", "key"):
        written[kind] = [out / p.relative_to(tmp) for p in written[kind]]
    for kind in ("edition", "readme"):
        written[kind] = out / written[kind].relative_to(tmp)
    written["replaced"] = replaced
    return written


def _strip_files(dest: Path, folder: Path) -> None:
    """Solution regions out of the student copies of a chapter's other text files (markers as in notebooks);
    a file that names the phrase without proper markers is refused, never copied through."""
    for path in sorted(p for p in dest.rglob("*") if p.is_file()):
        kind = _TEXT_FILES.get(path.suffix.lower())
        if kind is None:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if not _PHRASE.search(text):
            continue
        where = str(folder / path.relative_to(dest))
        stripped = _rewrite(text, kind, keep=False, stub=kind == "code", where=where)
        if kind == "code":
            _check_compiles(stripped, where)
        path.write_text(stripped, encoding="utf-8")


def _write(out: Path, chosen: list[int], available: dict[int, Path],
           notebooks: dict[Path, tuple[NotebookNode, NotebookNode]], root: Path, book: Path) -> dict:
    """Write the export into the empty folder ``out``; return the paths written (see :func:`export`)."""
    written: dict = {"chapters": chosen, "student": [], "key": []}
    for c in chosen:
        folder = available[c]
        for index, kind in enumerate(("student", "key")):
            dest = out / kind / folder.name
            shutil.copytree(folder, dest, ignore=shutil.ignore_patterns("*.ipynb", *_SKIPPED))
            if kind == "student":
                _strip_files(dest, folder)
            for nb_path in _notebooks(folder):
                target = dest / nb_path.relative_to(folder)
                target.parent.mkdir(parents=True, exist_ok=True)
                nbformat.write(notebooks[nb_path][index], target)
                written[kind].append(target)
    edition = written["edition"] = out / "edition"
    book_rel = book.relative_to(root).as_posix()
    toc = edition_toc(root, book_rel, [available[c].name for c in chosen])
    (edition / book_rel).mkdir(parents=True)
    (edition / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    if (root / "_config.yml").is_file():
        shutil.copy2(root / "_config.yml", edition / "_config.yml")
    start = str(toc.get("root", f"{book_rel}/intro"))  # the landing page, normally book/intro.md
    for item in [*book.iterdir(), *root.glob(f"{start}.*")]:
        if item.name == "_static" and item.is_dir():
            shutil.copytree(item, edition / book_rel / "_static", ignore=_IGNORE)
        elif item.is_file() and (item.name == "references.bib" or item.suffix.lower() in _IMAGES
                                 or item.suffix == ".md" or item.with_suffix("") == root / start):
            shutil.copy2(item, edition / item.relative_to(root))
    for tool in ("sphinx_course.py",):  # the book's local Sphinx extension (see _config.yml)
        if (root / "tools" / tool).is_file():
            (edition / "tools").mkdir(exist_ok=True)
            shutil.copy2(root / "tools" / tool, edition / "tools" / tool)
    if not list(edition.glob(f"{start}.*")):
        (edition / f"{start}.md").write_text("# Neural Attention\n")
    for c in chosen:
        shutil.copytree(available[c], edition / book_rel / available[c].name, ignore=_IGNORE)
    unlink_missing_chapters(edition / book_rel, {available[c].name for c in chosen})
    readme = written["readme"] = out / "README.md"
    readme.write_text(
        f"# Course assignments: chapters {', '.join(map(str, chosen))}\n\n"
        f"- `student/`: notebooks to hand out; every solution is replaced by `{STUB}`; outputs cleared.\n"
        "- `key/`: the same notebooks with solutions kept (markers removed), outputs cleared.\n"
        "- `edition/`: a Jupyter Book with the introduction and only these chapters, in their full "
        "version (solutions included), for the instructor's own site: `jupyter-book build edition/`.\n"
    )
    return written


def _kernel_manager_class() -> type:
    """An AsyncKernelManager whose kernel is always ``sys.executable -m ipykernel_launcher``:
    a ``python3`` kernelspec found on JUPYTER_PATH or in the user's data dir may belong to another
    interpreter, so the spec is pinned to the running one (same packages as the caller)."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from traitlets import default

    class _Specs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
            return KernelSpec(argv=argv, display_name="Python 3", language="python", resource_dir="")

    class _Manager(AsyncKernelManager):
        @default("kernel_spec_manager")
        def _default_specs(self) -> KernelSpecManager:
            return _Specs(data_dir=self.data_dir)

    return _Manager


def run_until_first_exercise(nb_path: str | Path, timeout: int = 600) -> int:
    """Execute a notebook cell by cell (cwd = its folder) until its first exercise stub raises.

    The notebook is stripped in memory first, so a full chapter notebook works as well as a
    student copy. Returns the index of the first stub cell. That cell must raise
    ``NotImplementedError`` -- or, when the stub sits inside a ``def`` and so only raises when
    called, a later cell (the check cell) must. Any other failing cell raises ``nbclient``'s
    ``CellExecutionError``; no ``NotImplementedError`` at all raises ``AssertionError``.
    Returns -1 if the notebook has no stub (all cells then ran).
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    from attention_course.notebook.kernels import kernel_config

    nb_path = Path(nb_path).resolve()
    nb = strip_solutions(nbformat.read(nb_path, as_version=4), name=str(nb_path))
    stub_at: int | None = None
    with kernel_config() as config:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", config=config,
                                kernel_manager_class=_kernel_manager_class(),
                                resources={"metadata": {"path": str(nb_path.parent)}})
        with client.setup_kernel():
            for i, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                if stub_at is None and STUB in cell.source:
                    stub_at = i
                try:
                    client.execute_cell(cell, i)
                except CellExecutionError as err:
                    if stub_at is not None and err.ename == "NotImplementedError":
                        return stub_at
                    raise
    if stub_at is not None:
        raise AssertionError(f"{nb_path}: exercise stub in cell {stub_at} never raised NotImplementedError")
    return -1


def main(argv: list[str] | None = None) -> int:
    """CLI entry point (``course-assign``)."""
    p = argparse.ArgumentParser(prog="course-assign", description=__doc__.splitlines()[0])
    p.add_argument("--chapters", required=True, help="e.g. 1,3 or 1-3 or all")
    p.add_argument("--out", required=True, help="output folder, e.g. assignments/")
    p.add_argument("--book", default="book", help="book folder, relative to --root (default: book)")
    p.add_argument("--root", default=".", help="repository root with _config.yml/_toc.yml (default: .)")
    p.add_argument("--force", action="store_true", help="replace --out if it holds a previous export")
    args = p.parse_args(argv)
    try:
        res = export(parse_chapters(args.chapters), args.out, args.book, args.root, force=args.force)
    except AssignError as err:
        print(f"course-assign: error: {err}", file=sys.stderr)
        return 2
    print(f"chapters: {', '.join(map(str, res['chapters']))}")
    print("\n".join(f"wrote {p}" for p in [*res["student"], *res["key"], res["edition"], res["readme"]]))
    if res["replaced"]:
        print(f"the previous export was moved, untouched, to {res['replaced']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
