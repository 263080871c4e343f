"""Run every bad-input probe in ``tools/probes/`` against both frameworks and print one table.

    .venv/bin/python tools/probe_inputs.py            # all areas
    .venv/bin/python tools/probe_inputs.py masks data # only these modules of tools/probes/

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
    from attention_course.errors import CourseError

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


def main(argv: list[str] | None = None) -> int:
    import attention_course as ac
    from attention_course._quiet import quiet_frameworks

    quiet_frameworks()
    rows = []
    for module in modules(list(sys.argv[1:] if argv is None else argv)):
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
    print(f"{len(rows)} outcomes: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 0 if all(r[3] in GOOD for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
