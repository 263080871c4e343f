"""Every time the book tells a reader, written from one committed file, ``book/measurements.json``.

    .venv/bin/python tools/chapter_times.py           # rewrite the places below from it
    .venv/bin/python tools/chapter_times.py --check   # exit 1 when one of them says something else

From its ``quick_profile`` rows (both frameworks on the 2-core CPU), ``one_cpu`` rows (one framework on one CPU,
Binder's share) and ``chapter_times`` (reading time, the full profile and a free Colab T4, each saying whether it
was measured or estimated), it writes: the "**Time**" paragraph of each chapter's "Chapter at a glance" box, the
chapter's notebook metadata (``course.time``), the introduction's table and the README's. A chapter's ``full_page``
and ``t4_page``, where it has them, are what its page says instead of ``full`` and ``t4``: the same times without
the machine's name or the command (the measurements appendix keeps those).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "book" / "measurements.json"
INTRO = ROOT / "book" / "intro.md"
README = ROOT / "README.md"
FRAMEWORK_NAMES = {"pytorch": "PyTorch", "keras": "Keras"}
TIME_PARAGRAPH = re.compile(r"\*\*Time\*\* .*?(?=\n\n|\n```)", re.DOTALL)


def _minutes(seconds: float) -> int:
    return max(1, int(seconds / 60 + 0.5))             # half a minute rounds up, as a reader would


def row_page(row: dict) -> str:
    """A measurement row's page, as ``page_key`` names it."""
    return row["chapter"].split(" ")[0].rstrip(".")      # "3. Timestep vs …" → "3", "11.2 Where to look" → "11.2"


def page_key(notebook: dict) -> str:
    """A notebook's page: its chapter's number, with ``.2`` for the chapter's second page (``course.part``)."""
    course = notebook["metadata"]["course"]
    return f"{course['chapter']}.{course['part']}" if course.get("part", 1) != 1 else str(course["chapter"])


def chapter_times() -> dict[str, dict]:
    """Page ("3", "11.2") → reading_min, quick_min (per framework, 2-core CPU), binder_min and binder_peak_mb
    (PyTorch and Keras, one CPU), full_min, full and t4 (sentences)."""
    m = json.loads(SOURCE.read_text(encoding="utf-8"))
    quick = {row_page(r): r for r in m["quick_profile"]["rows"]}
    one_cpu = {row_page(r): r for r in m["one_cpu"]["rows"]}
    times = {}
    for n, text in m["chapter_times"]["chapters"].items():
        if n not in quick or n not in one_cpu:
            raise ValueError(f"{SOURCE.name}: page {n} has no quick_profile or one_cpu row")
        times[n] = {**text, "quick_min": _minutes(quick[n]["time_s"] / 2),
                    "binder_min": {fw: _minutes(one_cpu[n][f"{fw}_s"]) for fw in ("pytorch", "keras")},
                    "binder_peak_mb": {fw: one_cpu[n][f"{fw}_peak_mb"] for fw in ("pytorch", "keras")},
                    "binder_limit": {fw: one_cpu[n].get(f"{fw}_limit") for fw in ("pytorch", "keras")}}
    return times


def _within(limits: dict) -> str:
    """What the runs inside a container's memory limit showed, as the end of a sentence ("" when not run)."""
    if not all(limits.values()):
        return ""
    mb = {r["limit_mb"] for r in limits.values()}
    if len(mb) != 1:
        raise ValueError(f"{SOURCE.name}: one page's frameworks ran inside different memory limits: {limits}")
    failed = [FRAMEWORK_NAMES[fw] for fw, r in limits.items() if not r["ok"]]
    verdict = "each runs to the end" if not failed else f"{' and '.join(failed)} does not run to the end"
    return f", and {verdict} within a {mb.pop():,} MB memory limit"


def paragraph(t: dict) -> str:
    b, p = t["binder_min"], t["binder_peak_mb"]
    return (f"**Time** reading {t['reading_min']} min · quick profile, per framework: about {t['quick_min']} min on "
            f"a 2-core CPU; on Binder's one CPU {b['pytorch']} min with PyTorch and {b['keras']} min with Keras, "
            f"peaking at {p['pytorch']:,} and {p['keras']:,} MB{_within(t['binder_limit'])} (measured) · full "
            f"profile: {t.get('full_page', t['full'])} · on a free Colab GPU: {t.get('t4_page', t['t4'])}. "
            f"The measurements appendix has every number.")


def _notebook_texts(times: dict[str, dict]) -> dict[Path, str]:
    out = {}
    for path in sorted(ROOT.glob("book/[0-9][0-9]-*/*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        n = page_key(nb)
        if n not in times:
            raise ValueError(f"{SOURCE.name}: no chapter_times entry for page {n} ({path.relative_to(ROOT)})")
        t = times[n]
        box = next((c for c in nb["cells"] if c["cell_type"] == "markdown" and "**Time** " in "".join(c["source"])),
                   None)
        if box is None:
            raise ValueError(f"{path.relative_to(ROOT)}: no '**Time**' paragraph in its chapter box")
        text = _wrap(paragraph(t))
        source = TIME_PARAGRAPH.sub(lambda _, text=text: text, "".join(box["source"]), count=1)
        box["source"] = source.splitlines(keepends=True) if isinstance(box["source"], list) else source
        nb["metadata"]["course"]["time"] = {"binder_min_pytorch": t["binder_min"]["pytorch"],
                                            "full_min_per_framework": t["full_min"],
                                            "quick_min_per_framework": t["quick_min"],
                                            "reading_min": t["reading_min"]}
        out[path] = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    return out


def _wrap(text: str, width: int = 116) -> str:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join(lines + [line])


def _table_texts(times: dict[str, dict]) -> dict[Path, str]:
    out = {}
    for path, pattern, cell in (
            (INTRO, r"^(\| (\d+(?:\.\d+)?) \| \{doc\}.*\| )[^|]*( \|)$",
             lambda t: f"{t['reading_min']} min · {t['quick_min']} min · {t['binder_min']['pytorch']} min · "
                       f"{t['full_min']} min"),
            (README, r"^(\| (\d+(?:\.\d+)?) \| [^{].*\| )[^|]*( \|)$",
             lambda t: f"{t['reading_min']} min · {t['quick_min']} min · {t['binder_min']['pytorch']} min")):
        text = path.read_text(encoding="utf-8")
        out[path] = re.sub(pattern, lambda m, cell=cell: m.group(1) + cell(times[m.group(2)]) + m.group(3), text,
                           flags=re.M)
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    times = chapter_times()
    texts = {**_notebook_texts(times), **_table_texts(times)}
    stale = [p for p, text in texts.items() if p.read_text(encoding="utf-8") != text]
    if "--check" in args:
        for p in stale:
            print(f"{p.relative_to(ROOT)} does not say what {SOURCE.relative_to(ROOT)} says: run "
                  f".venv/bin/python tools/chapter_times.py")
        return 1 if stale else 0
    for p in stale:
        partial = p.with_name(p.name + ".partial")                     # never a half-written notebook
        partial.write_text(texts[p], encoding="utf-8")
        partial.replace(p)
        print(f"wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
