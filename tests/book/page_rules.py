"""What a learner must never read on a built page (``../PAGES.md`` of the course's design): the rules the browser
tests apply to every page's visible text, in both tabs.

Each rule takes what the browser read from one page — a :class:`Visible` — and returns the offending snippets.
The rules are plain functions over text so that a test can show each one catching a page built to break it
(``tests/book/test_page_rules.py``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Visible:
    """The text of one page as a reader sees it in one tab: ``prose`` (paragraphs, list items, headings, captions,
    table cells of the page's own tables), ``cells`` (the cells of the tables a code cell printed), ``outputs`` (the
    other printed outputs), ``code`` (the code cells shown), ``tooltips`` (the number formats of the charts'
    tooltips, as Vega-Lite ``format`` strings, "" where a number has none), ``headings`` and ``exercises``
    (the exercises' titles, "Exercise 3.1 …")."""

    prose: list[str] = field(default_factory=list)
    cells: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)
    tooltips: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    exercises: list[str] = field(default_factory=list)


def _around(text: str, match: re.Match, width: int = 40) -> str:
    return text[max(0, match.start() - width):match.end() + width].strip()


TUPLE = re.compile(r"\(\s*-?\d[\d.,]*\s*,\s*-?\d[\d.]*\s*\)\s*(?:times|×|MB|GB|kB|KB|bytes|s\b|ms\b|seconds|"
                   r"minutes|%|nats|bits|BLEU|points)")


def tuple_numbers(page: Visible) -> list[str]:
    """A number printed as a Python tuple, "(1, 666) times", "(8, 257) MB": a glue format that went wrong."""
    return [_around(t, m) for t in page.prose + page.cells for m in TUPLE.finditer(t)]


NAN = re.compile(r"(?<![\w.])(?:NaN|nan|<NA>|NaT)(?![\w.])")


def nan_cells(page: Visible) -> list[str]:
    """``NaN`` (or ``<NA>``, ``NaT``, a cell of ``None``) in a table: a value that does not exist reads "—", with a
    note. The prose may name NaN: it is what some of the chapters teach to avoid."""
    return [_around(t, m) for t in page.cells for m in NAN.finditer(t)] + [t for t in page.cells
                                                                             if t.strip() == "None"]


DECIMAL = re.compile(r"(?<![\w.])(?<!arXiv )(?<!arXiv:)-?(\d+)\.(\d+)(?:e[-+]?\d+)?(?![\w.])")


def significant(integer: str, fraction: str) -> int:
    """The significant digits of a decimal written ``integer.fraction``: 0.000123 has 3, 12.345 has 5."""
    return len((integer + fraction).lstrip("0")) if int(integer) else len(fraction.lstrip("0"))


def long_floats(page: Visible) -> list[str]:
    """A float with more than 4 significant digits in the prose, a table or a tooltip ("accuracy 0.989565217391").
    Counts and ids are integers, and are exempt; so are version numbers (they have two dots) and arXiv ids."""
    found = [_around(t, m) for t in page.prose + page.cells for m in DECIMAL.finditer(t)
             if significant(m.group(1), m.group(2)) > 4]
    return found + [f"a tooltip's number format {f!r}" for f in page.tooltips if not 0 <= precision(f) <= 4]


def precision(spec: str) -> int:
    """The digits a d3 number format (Vega-Lite's ``format``) prints: its precision (decimals for ``f`` and ``%``,
    significant digits for ``g``, ``r``, ``s``, ``e``), 0 for ``d``; -1 for no format (every digit of the float)."""
    m = re.fullmatch(r"[^\d.]*?,?(?:\.(\d+))?~?([%fgdrse])?", spec)
    if not spec or m is None:
        return -1
    return 0 if m.group(2) == "d" else int(m.group(1) or 6)


BOOKKEEPING = re.compile(
    r"\b(?:EPYC|Xeon|Ryzen|Core\(TM\)|H100|H200|A100|V100|T4\b|RTX ?\d+|NVIDIA|GeForce|Tesla)\b"
    r"|\bdriver (?:version )?\d+(?:\.\d+)+"
    r"|(?<![\w.])tools/|(?<![\w.])tests/|--size\b"
    r"|\bmake (?:book|test|lint|lab|env|assignment|vendor|system|clean|bench|robustness|probes|colab-check)\b"
    r"|\bassert(?:s|ed|ion)?\b|\bCI\b|(?i:\bcommitted\b|\bin this run\b|\bthis page.s build\b|\bnbval\b)")


def bookkeeping(page: Visible) -> list[str]:
    """Machine names and versions, commands, paths and test talk, in what the page shows (prose, printed outputs
    and the code cells a reader sees)."""
    return [_around(t, m) for t in page.prose + page.cells + page.outputs + page.code
            for m in BOOKKEEPING.finditer(t)]


REPR = re.compile(r"Name: [^\n]*dtype:|\bdtype: (?:object|float64|int64)\b|\{'[^']*': |\barray\(|"
                  r"<[\w.]+ object at 0x[0-9a-f]+>|\btensor\(\[")


def python_reprs(page: Visible) -> list[str]:
    """A pandas Series, a dict, an array or an object printed as Python shows it, where a reader wants a table or a
    sentence."""
    return [_around(t, m) for t in page.prose + page.cells + page.outputs for m in REPR.finditer(t)]


def exercises_heading(page: Visible) -> list[str]:
    """A page with exercises has an "Exercises" heading (they do not sit under another section)."""
    if page.exercises and not any(re.fullmatch(r"\s*(?:\d+(?:\.\d+)*\s*)?Exercises\s*#?\s*", h)
                                  for h in page.headings):
        return [f"{len(page.exercises)} exercises and no 'Exercises' heading"]
    return []


EXERCISE_NUMBER = re.compile(r"Exercise\s+(\d+(?:\.\d+)*)")


def repeated_exercise_numbers(pages: dict[str, Visible]) -> list[str]:
    """An exercise number used twice in the book (pages 3 and 3.2 both numbering theirs 3.1, …)."""
    where = Counter()
    seen: dict[str, list[str]] = {}
    for url, page in pages.items():
        for title in page.exercises:
            m = EXERCISE_NUMBER.search(title)
            if m:
                where[m.group(1)] += 1
                seen.setdefault(m.group(1), []).append(url)
    return [f"Exercise {n}: {', '.join(seen[n])}" for n, count in where.items() if count > 1]


RULES = {
    "a number printed as a tuple": tuple_numbers,
    "NaN where a value does not exist": nan_cells,
    "a float with more than 4 significant digits": long_floats,
    "machine names, commands, paths or test talk": bookkeeping,
    "a Python repr": python_reprs,
    "exercises without an 'Exercises' heading": exercises_heading,
}


def page_findings(page: Visible) -> dict[str, list[str]]:
    """Every rule's findings on one page; an empty dict when the page is clean."""
    return {name: found for name, rule in RULES.items() if (found := rule(page))}


def tooltip_formats(spec: dict) -> list[str]:
    """The number formats of a Vega-Lite spec's quantitative tooltips over fields that hold fractions ("" for a
    field shown without a format, which prints every digit); a field of whole numbers needs none."""
    values: dict[str, list] = {}
    for rows in (spec.get("datasets") or {}).values():
        for row in rows if isinstance(rows, list) else []:
            for key, value in (row.items() if isinstance(row, dict) else ()):
                values.setdefault(key, []).append(value)

    def fractional(name) -> bool:
        found = values.get(name)
        return found is None or any(isinstance(v, float) and not float(v).is_integer() for v in found)

    formats: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            encoding = node.get("encoding")
            tips = encoding.get("tooltip") if isinstance(encoding, dict) else None
            for tip in tips if isinstance(tips, list) else [tips] if isinstance(tips, dict) else []:
                if isinstance(tip, dict) and tip.get("type") == "quantitative" and fractional(tip.get("field")):
                    formats.append(tip.get("format", ""))
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(spec)
    return formats
