"""A book of some of the chapters, rendered from the notebooks that `make test CHAPTERS=...` has just run.

    .venv/bin/python tools/subset_book.py 1,3      # writes _build/subset/, prints the chapters' folders

`make test CHAPTERS=1,3` is the quicker check while writing a chapter: nbval runs only those chapters' notebooks
(and every unit test), the book holds the introduction, those chapters and the references, and the browser test
reads that book. `_build/subset/` holds the configuration, that table of contents and the introduction with the
other chapters as plain text (as in an instructor's edition, `course-assign`), and links, not copies, to the
chapter folders, the static files and `tools/`. Through the link to `tools/` the book build finds the execution
cache that nbval filled (`tools/notebook_cache.py`, each page keyed on the files it reads), so no notebook runs twice.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import yaml

from attention_course.notebook import assign

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
OUT = ROOT / "_build" / "subset"


def write(spec: str, out: Path = OUT) -> list[Path]:
    """Write the book of the chapters in ``spec`` ("1,3", "2-4") into ``out``; return their folders."""
    available = assign.find_chapters(BOOK)
    chosen = assign.parse_chapters(spec)
    chosen = sorted(available) if chosen == "all" else chosen
    if missing := [c for c in chosen if c not in available]:
        raise assign.AssignError(f"no chapter {', '.join(map(str, missing))}: the book has {sorted(available)}")
    folders = [available[c] for c in chosen]
    if out.exists():
        shutil.rmtree(out)                      # removes the links, never what they point to
    (out / "book").mkdir(parents=True)
    shutil.copy2(ROOT / "_config.yml", out / "_config.yml")
    toc = assign.edition_toc(ROOT, "book", [f.name for f in folders])
    (out / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    (out / "tools").symlink_to(ROOT / "tools", target_is_directory=True)
    for item in BOOK.iterdir():
        if item.is_file():
            shutil.copy2(item, out / "book" / item.name)   # intro, references: small, and the intro changes
        elif item in folders or item.name == "_static":
            (out / "book" / item.name).symlink_to(item, target_is_directory=True)
    assign.unlink_missing_chapters(out / "book", {f.name for f in folders})
    return folders


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapters", help="'1,3', '2-4' or 'all'")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    try:
        folders = write(args.chapters, args.out)
    except assign.AssignError as err:
        print(f"subset_book: {err}", file=sys.stderr)
        return 2
    print(" ".join(f.relative_to(ROOT).as_posix() for f in folders))
    return 0


if __name__ == "__main__":
    sys.exit(main())
