"""The book's appendix "Results and measurements", written from the committed measurement files.

    .venv/bin/python tools/measurements.py           # write book/measurements.md
    .venv/bin/python tools/measurements.py --check   # exit 1 when book/measurements.md is not what they give

Sources: ``book/measurements.json`` and ``attention_course/benchmarks/*.json`` (what ``make bench`` measured, one
file per machine). The page is a reference: a table per topic, each under one line that says how it was measured
(the section's ``how``), and no history in the tables: a number a new measurement replaces goes to ``earlier``,
with what changed since, which the page shows folded at its end. ``tools/chapter_times.py`` reads the same file
(``quick_profile``, ``one_cpu``, ``chapter_times``), and ``tools/execute_book.py`` reads ``book_build``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "book" / "measurements.json"
PAGE = ROOT / "book" / "measurements.md"
BENCHMARKS = ROOT / "attention_course" / "benchmarks"
NONE = "—"                                               # a cell with nothing measured

#: make bench's case names, as a reader would say them
CASES = {
    "ch2-length": "Chapter 2: global against local attention as the source grows",
    "ch2-window": "Chapter 2: local attention as its window grows",
    "ch4-concat": "Chapter 4: the concat score, one pair per row",
    "ch4-scores": "Chapter 4: the score functions",
    "ch7-mha": "Chapter 7: multi-head attention, the course's against the framework's layer",
    "ch7-memory": "Chapter 7: peak memory of attention",
    "ch8-kvcache": "Chapter 8: decoding with and without the key–value cache",
    "ch10-flash": "Chapter 10: explicit attention, the fused kernel and the tiled FlashAttention loop",
    "ch10-memory": "Chapter 10: peak memory of explicit, fused and tiled attention",
    "ch10-decode": "Chapter 10: one decoding step after a context of each length, softmax attention over the cache "
                   "against linear attention's fixed-size state",
    "train-step": "Chapters 5, 6, 8 and 9: one training step of each chapter's model at its quick size",
}
#: make bench's column names, as a table header says them
BENCH_COLUMNS = {"median_ms": "median (ms)", "peak_mb": "peak (MB)", "tflops": "TFLOPS"}
PAGES = ["1", "2", "3", "3.2", "4", "5", "6", "7", "8", "9", "10", "11", "11.2"]


def _number(value) -> str:
    if isinstance(value, bool) or value is None:
        return "yes" if value is True else "no" if value is False else NONE
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return str(value) if str(value) else NONE


def _table(header: list[str], rows: list[list]) -> list[str]:
    cells = [[_number(cell).replace("|", "\\|") for cell in row] for row in rows]
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(row) + " |" for row in cells] + [""])


def _how(text: str) -> list[str]:
    return [f"**How it was measured.** {text}", ""]


def _section(title: str, how: str, header: list[str], rows: list[list], level: int = 3) -> list[str]:
    return ["#" * level + " " + title, "", *_how(how), *_table(header, rows)]


def _one_date(rows: list[dict]) -> str | None:
    """The date all rows share, or None: a shared date goes into the table's line, not into a column."""
    dates = {r.get("date") for r in rows}
    return dates.pop() if len(dates) == 1 else None


def _limit(run: dict | None) -> list[str]:
    """One framework's run inside a container's memory limit: its time and the most the container held."""
    if not run:
        return [NONE, NONE]
    return [_number(run["seconds"]) if run["ok"] else "killed", _number(run["container_peak_mb"])]


def _running(m: dict) -> list[str]:
    q, o, c = m["quick_profile"], m["one_cpu"], m["chapter_times"]
    lines = ["## Running a page", ""]
    lines += _section("Both frameworks on two cores", q["how"],
                      ["page", "time (s)", "peak memory (MB)", "runs"],
                      [[r["chapter"], r["time_s"], r["peak_mb"],
                        "; ".join(x for x in (r["runs"] + (f", {r['date']}" if r["date"] != NONE else ""),
                                              r.get("note")) if x)] for r in q["rows"]])
    date = _one_date(o["rows"])
    lines += _section("One framework on one CPU (Binder)", o["how"] + (f" Measured {date}." if date else ""),
                      ["page", "PyTorch (s)", "PyTorch peak (MB)", "Keras (s)", "Keras peak (MB)"]
                      + ([] if date else ["measured"]),
                      [[r["chapter"], r["pytorch_s"], r["pytorch_peak_mb"], r["keras_s"], r["keras_peak_mb"]]
                       + ([] if date else [r["date"]]) for r in o["rows"]])
    limits = {r[f"{fw}_limit"]["limit_mb"] for r in o["rows"] for fw in ("pytorch", "keras") if r.get(f"{fw}_limit")}
    if limits:
        mb = " or ".join(f"{x:,}" for x in sorted(limits))
        killed = any(not r[f"{fw}_limit"]["ok"] for r in o["rows"] for fw in ("pytorch", "keras")
                     if r.get(f"{fw}_limit"))
        ended = " A run the limit killed reads \"killed\"." if killed else " Every run ran to the end."
        lines += _section(f"Inside a {mb} MB memory limit", o["limit_how"] + ended,
                          ["page", "PyTorch (s)", "PyTorch, the container's most (MB)", "Keras (s)",
                           "Keras, the container's most (MB)"],
                          [[r["chapter"], *_limit(r.get("pytorch_limit")), *_limit(r.get("keras_limit"))]
                           for r in o["rows"]])
    a = o["allocator"]
    lines += ["### What the memory numbers count", ""] + [f"- {note}" for note in o["notes"]] + [""]
    lines += ["**Keras' memory settings.** " + a["how"], ""]
    lines += _table(["setting", "time (s)", "peak memory (MB)"], [[r["setting"], r["time"], r["peak"]]
                                                                 for r in a["rows"]])
    lines += _section("The full profile and a free Colab GPU", c["how"],
                      ["page", "reading (min)", "full profile (min)", "full profile", "on a free Colab GPU (T4)"],
                      [[n, t["reading_min"], t["full_min"], t["full"], t["t4"]] for n, t in c["chapters"].items()])
    return lines


def _results(m: dict) -> list[str]:
    lines = ["## Results", ""]
    for key, title in (("full_profile", "Full profile, on the GPU"), ("cpu_results", "Reduced sizes, on the CPU")):
        s = m[key]
        lines += _section(title, s["how"], ["page", "task", "result", "training"],
                          [[r["chapter"], r["task"], r["result"], r.get("training")] for r in s["rows"]])
        made: dict[tuple[str, str], list[str]] = {}               # one line per command, with the pages it made
        for r in s["rows"]:
            pages = made.setdefault((r["command"], r["file"]), [])
            if r["chapter"] not in pages:
                pages.append(r["chapter"])
        lines += ["**Made by** (each command writes its results file):", ""]
        lines += _table(["page", "command", "results file"],
                        [[", ".join(pages), f"`{command}`", ", ".join(f"`{f}`" for f in file.split(", "))]
                         for (command, file), pages in made.items()])
    return lines


def _where(machine: dict) -> str:
    if machine.get("gpu"):
        return str(machine["gpu"])
    cpu = re.sub(r"\s*\((?:R|TM)\)", "", str(machine.get("cpu", "CPU")))
    cpu = re.sub(r"\s+(?:Processor|CPU)$", "", cpu)
    threads = machine.get("torch_threads", "?")
    return f"{machine.get('cores', '?')}-core {cpu}, PyTorch on {threads} " + ("thread" if threads == 1 else "threads")


def _bench_section(path: Path) -> list[str]:
    run = json.loads(path.read_text(encoding="utf-8"))
    machine = run.get("machine", {})
    versions = ", ".join(f"{k} {v}" for k, v in sorted(run.get("versions", {}).items()))
    lines = [f"### {_where(machine)}", "",
             f"**How it was measured.** `make bench` with {versions or 'unrecorded versions'}, the median of "
             f"{run.get('repeats', '?')} runs per row; the file was last written on "
             f"{machine.get('date', 'an unrecorded date')}, and each case names the day it was measured.", ""]
    order = list(CASES)                                   # by chapter, then any case not named here, by name

    def rank(item):
        return (order.index(item[0]) if item[0] in order else len(order)), item[0]

    for case, rows in sorted(run.get("cases", {}).items(), key=rank):
        if not rows:
            continue
        when = run.get("measured", {}).get(case)
        keys = [k for k in rows[0] if k not in ("q1_ms", "q3_ms", "runs")]
        same = [k for k in keys if len(rows) > 1 and k not in ("framework", "kind", *BENCH_COLUMNS)
                and len({json.dumps(r.get(k)) for r in rows}) == 1]     # a setting every row shares: said once
        setting = "".join(f", {k.replace('_', ' ')} {_number(rows[0][k])}" for k in same)
        lines += [f"**{CASES.get(case, case)}** (`{case}`" + (f", measured {when}" if when else "") + setting + ")",
                  ""]
        keys = [k for k in keys if k not in same]
        lines += _table([BENCH_COLUMNS.get(k, k.replace("_", " ")) for k in keys],
                        [[r.get(k) for k in keys] for r in rows])
    return lines


def _when(row: dict) -> str:
    """A run's commit and date, "4c88756 2026-11-29" (a table wraps it between the two), or its date alone."""
    return " ".join(x for x in (row["commit"], row["date"]) if x != NONE) or NONE


def _label(build: dict) -> str:
    """A build's name in the table of its notebooks: its commit and date (three kernels: say so)."""
    return ("three kernels " if "BOOK_JOBS" in build["start"] else "") + _when(build)


def _described(name: str, start: str) -> str:
    """A run's first cell: its name, then what it started from."""
    return f"{name}: {start}"


def _with_npm(build: dict) -> str:
    """A build's environment time, with the npm assets' where they were timed apart: "22 (npm 7)"."""
    env, npm = build["environment"], build["npm"]
    if npm == NONE:
        return env
    npm = npm.split(",")[0]
    return f"npm {npm}" if env == NONE else f"{env} (npm {npm})"


def _notes(rows: list[dict], label) -> list[str]:
    """The rows' notes as a list under their table, each under its row's name, each once."""
    seen = []
    for r in rows:
        if r.get("note") and (label(r), r["note"]) not in seen:
            seen.append((label(r), r["note"]))
    return [f"- **{name}**: {note}." for name, note in seen] + ([""] if seen else [])


def _building(m: dict) -> list[str]:
    t, b, e = m["test_suite"], m["book_builds"], m["book_build"]
    lines = ["## Building and testing the book", ""]
    lines += _section("The test suite", t["how"],
                      ["run", "tests (+ browser)", "environment", "lint", "unit tests and notebooks", "book",
                       "browser tests", "total"],
                      [[_described(r["run"] + (f", {_when(r)}" if _when(r) != NONE else ""), r["start"]), r["tests"],
                        r["environment"], r["lint"], r["unit"], r["book"], r["browser"], r["total"]]
                       for r in t["rows"]])
    lines += _notes(t["rows"], lambda r: r["run"] + (f", {_when(r)}" if _when(r) != NONE else ""))
    lines += ["### Fresh builds of the book", "", *_how(b["how"])] + [f"- {note}" for note in b["notes"]] + [""]
    lines += _table(["build", "install", "notebooks", "kernel-seconds", "jupyter-book", "CPU", "total", "again"],
                    [[_described(_label(r), r["start"]), _with_npm(r), r["notebooks"], r["kernel_s"],
                      r["jupyter_book"], r["cpu"], r["total"], r["again"]] for r in b["rows"]])
    notes = _notes(b["rows"], _label)
    if notes:                                                  # each build's details, folded under the table
        lines += ["```{admonition} Notes on these builds", ":class: dropdown", "", *notes, "```", ""]
    timed = [r for r in b["rows"] if r.get("pages")]
    pages = PAGES + sorted({p for r in timed for p in r["pages"]} - set(PAGES), key=float)
    lines += _section("Each notebook in each build", "The notebooks' own times in the builds above, in seconds, "
                      "from each kernel's start to its last cell, as `tools/execute_book.py` prints them; a build's "
                      "times add up to its kernel-seconds.",
                      ["build", *pages], [[_label(r), *[r["pages"].get(p, NONE) for p in pages]] for r in timed])
    lines += _section("The notebooks' planned times", e["how"], ["page", "median (s)", "the three builds (s)"],
                      [[r["chapter"], r["time_s"], ", ".join(str(s) for s in r["builds_s"])] for r in e["rows"]])
    return lines


def render() -> str:
    m = json.loads(SOURCE.read_text(encoding="utf-8"))
    lines = ["# Results and measurements", "",
             "Every time, memory peak and result the course reports beyond a page's own run, with the machine, the "
             "command and the date that produced it. Times are wall-clock times and vary from machine to machine; "
             "no chapter depends on them. `tools/measurements.py` writes this page from `book/measurements.json` "
             "and `attention_course/benchmarks/`.", ""]
    mach = m["machines"]
    lines += ["## The machines", "", mach["how"], ""]
    lines += _table(["machine", "hardware", "used for"], [[r["name"], r["hardware"], r["used"]] for r in mach["rows"]])
    lines += _running(m)
    lines += _results(m)
    lines += ["## Timed comparisons", "", m["bench"]["how"], ""]
    for path in sorted(BENCHMARKS.glob("*.json")):
        lines += _bench_section(path)
    lines += _building(m)
    c = m["colab"]
    lines += _section("Colab's versions", c["how"], ["measured", "code", "runs", "passed", "peaks (MB)", "note"],
                      [[r["date"], r["code"], r["runs"], r["passed"], r["peaks"], r["note"]] for r in c["rows"]],
                      level=2)
    e = m["earlier"]
    lines += ["## Earlier measurements", "", "````{admonition} " + e["how"].rstrip("."), ":class: dropdown", ""]
    lines += _table(["measurement", "measured", "then", "changed since"],
                    [[r["what"], r["measured"], r["then"], r["since"]] for r in e["rows"]])
    lines += ["````", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    page = render()
    if "--check" in args:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != page:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run .venv/bin/python tools/measurements.py")
            return 1
        return 0
    from attention_course.core.files import rewrite_file

    rewrite_file(PAGE, page)                                           # the earlier page is moved aside
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
