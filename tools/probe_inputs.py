"""Run every bad-input probe in ``tools/probes/`` against both frameworks and print one table.

    .venv/bin/python tools/probe_inputs.py            # all areas
    .venv/bin/python tools/probe_inputs.py masks data # only these modules of tools/probes/
    .venv/bin/python tools/probe_inputs.py --write    # all areas, and the table into tools/probes/outcomes.md
                                                      # (make probes; committed)

Outcomes: ``clear error`` (the course's own error, naming the argument), ``handled`` (a correct result),
``silently wrong`` (a probe's own check failed), ``unclear error`` (an exception from inside a framework),
``hang`` (no answer within the time limit). The exit status is 1 when any probe is neither clear nor handled.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("COURSE_PROGRESS", "0")
TIME_LIMIT = float(os.environ.get("PROBE_TIME_LIMIT", "60"))
GOOD = ("clear error", "handled")


def classify(run, fw) -> tuple[str, str]:
    """Run one probe in a thread with a time limit; return (outcome, detail)."""
    from attention_course.core.errors import CourseError

    result: dict = {}

    def target():
        try:
            run(fw)
            result["outcome"] = ("handled", "")
        except CourseError as err:
            result["outcome"] = ("clear error", f"{type(err).__name__}: {err}")
        except AssertionError as err:
            result["outcome"] = ("silently wrong", str(err))
        except BaseException as err:
            result["outcome"] = ("unclear error", f"{type(err).__module__}.{type(err).__name__}: {err}")

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(TIME_LIMIT)
    if thread.is_alive():
        return "hang", f"no answer within {TIME_LIMIT:.0f} s"
    return result["outcome"]


def modules(names: list[str]):
    folder = ROOT / "tools" / "probes"
    found = sorted(p.stem for p in folder.glob("[a-z]*.py"))
    for name in names or found:
        if name not in found:
            raise SystemExit(f"no probe module tools/probes/{name}.py; there are: {', '.join(found)}")
        yield importlib.import_module(f"tools.probes.{name}")


def coverage() -> tuple[list[str], list[str]]:
    """The public names of the chapters' layer modules (``__all__`` of ``attention_course/chNN_*/torch.py``, the
    same in ``keras.py``) that some probe names, and those that none does yet."""
    import ast
    import re

    text = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tools" / "probes").glob("*.py"))
    names: list[str] = []
    for path in sorted((ROOT / "attention_course").glob("ch[0-9][0-9]_*/torch.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
                names += [e.value for e in node.value.elts if isinstance(e, ast.Constant) and not e.value.isupper()]
    probed = [n for n in names if re.search(rf"\b{re.escape(n)}\b", text)]
    return probed, [n for n in names if n not in probed]


def main(argv: list[str] | None = None) -> int:
    import attention_course as ac
    from attention_course.core.quiet import quiet_frameworks

    quiet_frameworks()
    args = list(sys.argv[1:] if argv is None else argv)
    write = "--write" in args
    args = [a for a in args if a != "--write"]
    if write and args:
        raise SystemExit("--write records every area; run it without area names")
    rows = []
    for module in modules(args):
        for probe in module.PROBES:
            targets = [("keras", ac.keras), ("pytorch", ac.torch)] if probe.per_framework else [("-", None)]
            for fw_name, fw in targets:
                outcome, detail = classify(probe.run, fw)
                rows.append((probe.area, probe.name, fw_name, outcome, detail))
    width = max((len(r[1]) for r in rows), default=10)
    for area, name, fw_name, outcome, detail in rows:
        print(f"{area:10s} {name:{width}s} {fw_name:8s} {outcome:15s} {detail[:140]}")
    counts = {}
    for row in rows:
        counts[row[3]] = counts.get(row[3], 0) + 1
    summary = f"{len(rows)} outcomes: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    probed, unprobed = coverage()
    summary += (f". The chapters' public layers and functions named by a probe: {len(probed)} of "
                f"{len(probed) + len(unprobed)}" + (f" (none yet: {', '.join(unprobed)})" if unprobed else ""))
    print(summary)
    if write:
        _write_table(rows, summary)
    return 0 if all(r[3] in GOOD for r in rows) else 1


def _write_table(rows: list[tuple[str, str, str, str, str]], summary: str) -> None:
    """The outcomes as a Markdown table in tools/probes/outcomes.md, written beside it and moved into place."""
    import re
    import tempfile

    scratch = re.compile(re.escape(tempfile.gettempdir()) + r"/[\w.-]+")   # a probe's own temporary folder

    def cell(text: str) -> str:
        return scratch.sub("<tmp>", " ".join(text.split())).replace("|", "\\|")[:160]

    lines = ["# Bad-input probes: outcomes", "",
             "Written by `make probes` (`tools/probe_inputs.py --write`): every probe of `tools/probes/`, in both",
             "frameworks where it takes one. A good outcome is a clear error (the course's own, naming the problem)",
             "or a correct result (handled).", "", summary, "",
             "| area | probe | framework | outcome | detail |", "|---|---|---|---|---|"]
    lines += [f"| {a} | {cell(n)} | {f} | {o} | {cell(d)} |" for a, n, f, o, d in rows]
    from attention_course.core.files import rewrite_file

    target = ROOT / "tools" / "probes" / "outcomes.md"
    rewrite_file(target, "\n".join(lines) + "\n")                 # the earlier table is moved aside
    print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
