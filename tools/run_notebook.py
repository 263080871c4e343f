"""Execute one chapter notebook the way a learner's kernel does, and report its time and peak memory.

    .venv/bin/python tools/run_notebook.py book/01-sequence-models/sequence-models.ipynb [--out executed.ipynb]
        [--memory-limit 1200]

Prints one JSON line: notebook, seconds, peak_rss_mb (the kernel's resident-set high-water mark), loaded (the
frameworks the kernel imported: a kernel told to run one should not hold the other), ok, and the first error (the
cell's failed assertion, if any). With ``--memory-limit MB`` the kernel runs inside a memory limit as in a
container (Binder's; ``tools/memory_limit.py``, Linux, as root) and the line adds ``container``: the limit, the
most the kernel held as the container counts it, how often it reached the limit, whether it was killed. Settings
come from the environment (COURSE_PROFILE, COURSE_FRAMEWORKS, COURSE_SEED, ...). ``run(..., record=expression)``
evaluates a Python expression in the kernel once the page has run and adds its value, as JSON, to the row (``value``;
``tools/seed_spread.py``). Used by `make robustness`, `make colab-check` and to measure the README's per-chapter
times and memory.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attention_course.notebook.kernels import kernel_config  # noqa: E402

PEAK = ("import resource, sys; print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss); "
        "print('LOADED', *[fw for fw, m in (('keras', 'tensorflow'), ('pytorch', 'torch')) if m in sys.modules])")


RECORD = "import json as _json; print('RECORD', _json.dumps({}, default=float))"


def run(path: Path, out: Path | None = None, timeout: int = 1800, memory_limit_mb: int | None = None,
        record: str | None = None) -> dict:
    if memory_limit_mb is not None:
        from tools.memory_limit import MemoryLimit

        with MemoryLimit(memory_limit_mb) as limit:
            result = _run(path, out, timeout, record, preexec_fn=limit.enter)
            return {**result, "container": limit.stats()}
    return _run(path, out, timeout, record)


def _run(path: Path, out: Path | None, timeout: int, record: str | None = None, **kernel_options) -> dict:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, DeadKernelError

    nb = nbformat.read(path, as_version=4)
    if record is not None:
        try:
            compile(record, "<record>", "eval")                       # before the page runs, not after it
        except SyntaxError as err:
            raise ValueError(f"record must be one Python expression, like 'nsp9.to_dict()'; got {record!r} "
                             f"({err.msg})") from None
        nb.cells.append(nbformat.v4.new_code_cell(RECORD.format(record)))
    nb.cells.append(nbformat.v4.new_code_cell(PEAK))
    start, error = time.perf_counter(), None
    with kernel_config() as config:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}}, config=config)
        try:
            client.execute(**kernel_options)
        except CellExecutionError as err:
            lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in str(err).splitlines() if line.strip()]
            error = next((line for line in reversed(lines) if "Error" in line), lines[-1] if lines else "error")[:400]
        except DeadKernelError:   # a crash in a library (a segmentation fault, an abort) or the memory limit
            error = f"the kernel died in code cell {client.code_cells_executed} (crashed, or killed for memory)"
    seconds = time.perf_counter() - start
    printed = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []) if o.get("name") == "stdout")
    found = re.search(r"PEAK_RSS_KB (\d+)", printed)
    peak = int(found.group(1)) / 1024 if found else None
    loaded = re.search(r"LOADED ?(.*)", printed)
    result = {"notebook": str(path), "seconds": round(seconds, 1), "peak_rss_mb": None if peak is None else round(peak),
              "loaded": loaded.group(1).split() if loaded else None, "ok": error is None, "error": error}
    if record is not None:
        printed = "".join(o.get("text", "") for o in nb.cells[-2].get("outputs", []) if o.get("name") == "stdout")
        found = re.search(r"^RECORD (.*)$", printed, re.MULTILINE)
        result["value"] = json.loads(found.group(1)) if found else None        # None: the page stopped before it
    if out is not None:
        del nb.cells[-1 if record is None else -2:]
        nbformat.write(nb, out)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--memory-limit", type=int, metavar="MB", help="run the kernel inside this memory limit")
    args = parser.parse_args()
    result = run(args.notebook, args.out, memory_limit_mb=args.memory_limit)
    print(json.dumps(result), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
