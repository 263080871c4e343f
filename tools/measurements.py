"""The book's appendix "Results and measurements", written from the committed measurement files.

    .venv/bin/python tools/measurements.py           # write book/measurements.md
    .venv/bin/python tools/measurements.py --check   # exit 1 when book/measurements.md is not what they give

Sources: ``book/measurements.json`` (times and memory of the chapters, in both frameworks on two cores and in each
on one CPU, what the chapters say about time (``tools/chapter_times.py`` writes it into them), the test suite's
times, and the tables of the full-profile runs, each row naming its results file and the command that made it) and
``attention_course/benchmarks/*.json`` (what ``make bench`` measured, one file per machine).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "book" / "measurements.json"
PAGE = ROOT / "book" / "measurements.md"
BENCHMARKS = ROOT / "attention_course" / "benchmarks"

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


def _number(value) -> str:
    if isinstance(value, bool) or value is None:
        return "yes" if value is True else "no" if value is False else "–"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return str(value)


def _limited(row: dict) -> str:
    """The runs inside a container's memory limit, "1,200 MB: ran in 60 s, held at most 1,200 MB · …", or "–"."""
    runs = [row.get(f"{fw}_limit") for fw in ("pytorch", "keras")]
    if not all(runs):
        return "–"
    return f"{runs[0]['limit_mb']:,} MB: " + " · ".join(
        f"ran in {r['seconds']:,.0f} s, held at most {r['container_peak_mb']:,} MB" if r["ok"] else "killed"
        for r in runs)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows] + [""])


def _bench_section(path: Path) -> list[str]:
    run = json.loads(path.read_text(encoding="utf-8"))
    machine = run.get("machine", {})
    threads = machine.get("torch_threads", "?")
    where = (f"{machine.get('gpu')}" if machine.get("gpu") else
             f"{machine.get('cores', '?')}-core {machine.get('cpu', 'CPU')}, PyTorch on {threads} "
             + ("thread" if threads == 1 else "threads"))
    versions = ", ".join(f"{k} {v}" for k, v in sorted(run.get("versions", {}).items()))
    lines = [f"### {where}", "", f"Measured on {machine.get('date', 'an unrecorded date')} ({versions}); medians of "
             f"repeated runs (`repeats`: {run.get('repeats', '?')}).", ""]
    order = list(CASES)                                   # by chapter, then any case not named here, by name

    def rank(item):
        return (order.index(item[0]) if item[0] in order else len(order)), item[0]

    for case, rows in sorted(run.get("cases", {}).items(), key=rank):
        if not rows:
            continue
        when = run.get("measured", {}).get(case)
        lines += [f"**{CASES.get(case, case)}** (`{case}`" + (f", measured {when}" if when else "") + ")", ""]
        keys = [k for k in rows[0] if k not in ("q1_ms", "q3_ms", "runs")]
        lines += _table([k.replace("_", " ") for k in keys], [[_number(r.get(k)) for k in keys] for r in rows])
    return lines


def render() -> str:
    m = json.loads(SOURCE.read_text(encoding="utf-8"))
    lines = ["# Results and measurements", "",
             "What the course measured, so that you know what to expect before you run a chapter, and where each "
             "number comes from. Times are wall-clock times on one machine and vary from machine to machine; the "
             "chapters never assert them. This page is written from the course's committed measurement files by "
             "`tools/measurements.py`.", "",
             f"Unless a row says otherwise, the machine is {m['machine']}.", ""]
    q = m["quick_profile"]
    lines += ["## Running a chapter (quick profile)", "", q["what"], ""]
    lines += _table(["chapter", "time (s)", "peak memory (MB)", "how"],
                    [[r["chapter"], _number(r["time_s"]), _number(r["peak_mb"]), r["note"]] for r in q["rows"]])
    o = m["one_cpu"]
    lines += ["## One framework on one CPU (Binder)", "", o["what"], ""]
    lines += _table(["chapter", "PyTorch (s)", "PyTorch peak (MB)", "Keras (s)", "Keras peak (MB)",
                     "inside a memory limit (PyTorch · Keras)", "how"],
                    [[r["chapter"], _number(r["pytorch_s"]), _number(r["pytorch_peak_mb"]), _number(r["keras_s"]),
                      _number(r["keras_peak_mb"]), _limited(r), r["note"]] for r in o["rows"]])
    c = m["chapter_times"]
    lines += ["## The full profile and a free Colab GPU", "", c["what"], ""]
    lines += _table(["chapter", "full profile", "on a free Colab GPU (T4)"],
                    [[n, t["full"], t["t4"]] for n, t in c["chapters"].items()])
    t = m["test_suite"]
    lines += ["## The test suite", "", t["what"], ""]
    lines += _table(["run", "phases", "total"], [[r["run"], r["phases"], r["total"]] for r in t["rows"]])
    b = m["book_build"]
    lines += ["## The book build, notebook by notebook", "", b["what"], ""]
    lines += _table(["page", "time (s)", "how"], [[r["chapter"], _number(r["time_s"]), r["note"]] for r in b["rows"]])
    for key, title in (("full_profile", "Full-profile results (GPU)"), ("cpu_results", "Results at CPU sizes")):
        section = m[key]
        lines += [f"## {title}", "", section["what"], ""]
        header = ["chapter", "task", "result"] + (["training"] if key == "full_profile" else []) + ["made by"]
        lines += _table(header, [[r["chapter"], r["task"], r["result"]] + ([r["training"]] if "training" in r else [])
                                 + [f"`{r['command']}` → `{r['file']}`"] for r in section["rows"]])
    lines += ["## Timed comparisons (`make bench`)", "",
              "Each chapter's timed comparisons, the ones its prose quotes, from `attention_course/benchmarks/`.", ""]
    for path in sorted(BENCHMARKS.glob("*.json")):
        lines += _bench_section(path)
    c = m["colab"]
    lines += ["## Colab's versions", "", c["what"], ""]
    lines += _table(["check", "result"], [[r["check"], r["result"]] for r in c["rows"]])
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
