"""Execute the book's notebooks in parallel before ``jupyter-book build`` renders them.

``jupyter-book build`` (``execute_notebooks: cache``) runs each notebook it does not find in the execution cache,
one after another, and a kernel uses about one core. This step runs those notebooks first, several at a time (one
kernel per core, ``BOOK_JOBS`` to choose, in an order planned on each notebook's time in a measured fresh build,
``book_build`` in ``book/measurements.json``, so that the kernels run out of work together), and stores each
executed copy in the same cache (``tools/notebook_cache.py``), so the build only renders. A notebook already there
(run by ``make test``'s nbval, or by an earlier build, with the same settings and the same files its page
reads, ``tools/page_inputs.py``) is not run again.
A notebook that fails is left out of the cache: the build then runs it itself and reports its error as usual.

    .venv/bin/python tools/execute_book.py [BOOK_SOURCE]      # the Makefile's book target runs this first
"""

from __future__ import annotations

import heapq
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from itertools import permutations
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attention_course.notebook.kernels import kernel_config  # noqa: E402
from tools.notebook_cache import cache_dir, current, store  # noqa: E402

TIMEOUT = 900   # seconds per cell, as _config.yml's execute.timeout
TAIL = 7        # the last notebooks, ordered by trying every order (5,040 of them)


def notebooks(source: Path) -> list[Path]:
    """The notebooks of the table of contents under ``source`` (its ``_toc.yml``), in reading order."""
    import yaml

    toc = yaml.safe_load((source / "_toc.yml").read_text(encoding="utf-8"))
    files: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                files.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    found = [source / f"{f}.ipynb" for f in files]
    return [p.resolve() for p in found if p.is_file()]


def stale(paths: list[Path]) -> list[Path]:
    """The notebooks the execution cache has no run of, for their current code and page key."""
    import nbformat
    from jupyter_cache import get_cache

    folder = cache_dir()
    if not folder.exists():
        return list(paths)
    cache = get_cache(str(folder))
    return [path for path in paths if not current(cache, nbformat.read(path, as_version=4), path)]


def execute(path: Path) -> tuple[Path, float, str]:
    """Run one notebook in its own folder; store it in the cache when every cell ran. → (path, seconds, error)."""
    import nbformat
    from nbclient import NotebookClient

    start = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    kernelspec = dict(nb.metadata.get("kernelspec", {}))   # the cache keys a notebook on its source's
    with kernel_config() as config:
        try:
            NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3", record_timing=False,  # timings: another key
                           resources={"metadata": {"path": str(path.parent)}}, config=config).execute()
        except Exception as err:   # the build runs it again and shows the error in its own report
            return path, time.perf_counter() - start, f"{type(err).__name__}: {str(err)[-300:]}"
    seconds = time.perf_counter() - start
    nb.metadata["kernelspec"] = kernelspec                  # nbclient writes the running kernel's there
    store(nb, path, seconds)
    return path, seconds, ""


def measured_seconds(path: Path) -> float | None:
    """The seconds a notebook took in the measured fresh book build (``book_build`` in ``book/measurements.json``),
    or None for a page without a row."""
    import json

    import nbformat

    from tools.chapter_times import SOURCE, page_key, row_page

    course = nbformat.read(path, as_version=4).metadata.get("course")
    if not course:
        return None
    rows = json.loads(SOURCE.read_text(encoding="utf-8"))["book_build"]["rows"]
    return {row_page(row): row["time_s"] for row in rows}.get(page_key({"metadata": {"course": course}}))


def finish(seconds: list[float], workers: int) -> float:
    """When ``workers`` kernels end notebooks of these times, each taking the next one as soon as it is free."""
    free = [0.0] * workers
    for s in seconds:
        heapq.heapreplace(free, free[0] + s)
    return max(free)


def planned(paths: list[Path], workers: int) -> list[Path]:
    """The order in which the kernels take the notebooks. Those without a measured time (a new page) come first,
    since nothing says they are short; then the longest first, so that no long notebook starts while the other
    kernels run out of work; and the last ``TAIL`` in whichever order ``finish`` says ends soonest, so that the
    last kernels stop close together. Ties keep reading order."""
    seconds = {path: measured_seconds(path) for path in paths}
    unknown = [p for p in paths if seconds[p] is None]
    known = sorted((p for p in paths if seconds[p] is not None), key=lambda p: seconds[p], reverse=True)
    head, tail = known[:-TAIL], known[-TAIL:]
    times = [seconds[p] for p in head]
    best = min(permutations(tail), key=lambda order: finish(times + [seconds[p] for p in order], workers))
    return unknown + head + list(best)                 # min keeps the first of equal orders: longest first


def jobs(count: int) -> int:
    """Kernels at a time: ``BOOK_JOBS``, else one per core, never more than the notebooks to run."""
    wanted = int(os.environ.get("BOOK_JOBS", "0")) or (os.cpu_count() or 1)
    return max(1, min(wanted, count))


def main(argv: list[str]) -> int:
    source = Path(argv[0] if argv else ".").resolve()
    todo = stale(notebooks(source))
    if not todo:
        print("execute_book: every notebook is in the execution cache")
        return 0
    n = jobs(len(todo))
    todo = planned(todo, n)
    print(f"execute_book: {len(todo)} notebook(s) to run, {n} at a time")
    with ProcessPoolExecutor(max_workers=n) as pool:
        for future in as_completed([pool.submit(execute, p) for p in todo]):
            path, seconds, error = future.result()
            name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            print(f"  {name}: {seconds:.0f} s" + (f" · failed ({error}); the build will run it" if error else ""))
    return 0   # a failed notebook is the build's to report (it runs it again, with -W)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
