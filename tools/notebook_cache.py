"""One execution of each notebook per ``make test``, shared by nbval and the book.

nbval executes every chapter notebook cell by cell (the course's promise that each one runs). This pytest
plugin listens to what the kernel sends back for each cell, rebuilds the executed notebook from those messages
with the same code Jupyter uses (``nbclient``: streams, displays, ``clear_output``, widget state), and, when
every cell of a notebook passed, stores it in the book's execution cache (``jupyter-cache``). The book is
built with ``execute_notebooks: cache``: ``jupyter-book build`` finds each notebook there and renders those
outputs instead of running it a second time. A notebook that nbval did not run, or whose source changed, is
simply executed by the book build, as before.

The cache folder depends on the settings that change a notebook's outputs without changing its code: the
profile and the other ``COURSE_*`` settings, so a full-profile build never picks up a quick run's outputs. Inside
it each executed copy is stored with its page's key (``tools/page_inputs.py``: the package modules the page
imports, its chapter's committed files), and :func:`current` treats a copy whose key differs as missing: an edit
to one chapter's package code re-executes that chapter's pages (and those of the later chapters that import it),
an edit to prose none. ``tools/sphinx_course.py`` points the book at the same folder through :func:`cache_dir`.

Used as ``python -m pytest -p tools.notebook_cache ... book`` (see the Makefile's ``test`` target).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path

import pytest

if __package__:                     # imported as tools.notebook_cache (pytest -p, tools/execute_book.py)
    from tools.page_inputs import page_key
else:                               # imported from its folder (the book's extension, tools/sphinx_course.py)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from page_inputs import page_key

ROOT = Path(__file__).resolve().parents[1]
CACHE_ROOT = Path(os.environ.get("NOTEBOOK_CACHE_ROOT", ROOT / "_build" / ".jupyter_cache"))
# where the (checksummed) data and models live does not change the outputs, nor which tests `make test CHAPTERS=`
# selects, nor where the browser test finds the built book
_NOT_SETTINGS = {"COURSE_DATA_DIR", "COURSE_MODEL_DIR", "COURSE_TEST_CHAPTERS", "COURSE_BOOK_HTML"}


def settings() -> dict[str, str]:
    """The ``COURSE_*`` settings a notebook run depends on, with the course's defaults filled in."""
    found = {k: v for k, v in os.environ.items() if k.startswith("COURSE_") and k not in _NOT_SETTINGS}
    found.setdefault("COURSE_PROFILE", "quick")
    from attention_course.notebook.frameworks import DEFAULT

    found.setdefault("COURSE_FRAMEWORKS", DEFAULT)          # what a kernel runs when nothing says (the Makefile: both)
    found.setdefault("COURSE_PROGRESS", "1")
    return found


def cache_key() -> str:
    """A short hash of :func:`settings`."""
    return hashlib.sha256(json.dumps(settings(), sort_keys=True).encode()).hexdigest()[:16]


def cache_dir() -> Path:
    """The execution cache of the book for the current settings."""
    return CACHE_ROOT / cache_key()


def current(cache, nb, path: Path) -> bool:
    """Whether ``cache`` holds a run of notebook ``nb`` (read from ``path``) for its current code and page key; a
    run for an older key is removed, so that the book build cannot render it either."""
    try:
        record = cache.match_cache_notebook(nb)
    except KeyError:
        return False
    if (record.data or {}).get("page_key") == page_key(path.resolve()):
        return True
    cache.remove_cache(record.pk)
    return False


def store(nb, path: Path, seconds: float) -> Path:
    """Put the executed notebook ``nb`` (read from ``path``) into the book's execution cache."""
    import fcntl

    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "writer.lock", "w") as lock:   # pytest -n 2: one writer at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        cache = get_cache(str(folder))
        data = {"execution_seconds": seconds, "page_key": page_key(path.resolve())}
        cache.cache_notebook_bundle(CacheBundleIn(nb, str(path), data=data),
                                    check_validity=False, overwrite=True)
    return folder


# --- the pytest plugin --------------------------------------------------------------------------------------


class _Recorder:
    """Rebuilds one notebook's outputs from the kernel messages of the cells nbval runs."""

    def __init__(self, nb):
        from nbclient import NotebookClient

        self.nb = nb
        self.client = NotebookClient(nb, record_timing=False)   # used only for its message handling
        self.cell = None
        self.msg_id = None
        self.failed = False
        self.start = time.perf_counter()

    def begin(self, cell) -> None:
        self.cell, self.msg_id = cell, None
        cell.outputs, cell.execution_count = [], None
        self.client.clear_before_next_output = False        # what nbclient's execute_cell resets per cell

    def feed(self, msg: dict) -> None:
        from nbclient.exceptions import CellExecutionComplete

        if self.cell is None or self.msg_id is None or msg.get("parent_header", {}).get("msg_id") != self.msg_id:
            return
        try:
            self.client.process_message(msg, self.cell, self.nb.cells.index(self.cell))
        except CellExecutionComplete:
            pass

    def executed_notebook(self):
        self.client.set_widgets_metadata()
        count = 0
        for cell in self.nb.cells:      # nbval runs cells without history: number them as Jupyter would
            if cell.cell_type == "code":
                count += 1
                cell.execution_count = count
                for output in cell.outputs:
                    if output.output_type == "execute_result":
                        output.execution_count = count
        self.nb.metadata["language_info"] = {
            "name": "python", "version": platform.python_version(), "pygments_lexer": "ipython3",
            "codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
            "mimetype": "text/x-python", "nbconvert_exporter": "python",
        }
        return self.nb


def _patch_nbval() -> None:
    from nbval import kernel, plugin

    if getattr(plugin.IPyNbFile, "_course_patched", False):
        return
    execute, get_message = kernel.RunningKernel.execute_cell_input, plugin.IPyNbFile.get_kernel_message

    def execute_cell_input(self, cell_input, allow_stdin=None):
        msg_id = execute(self, cell_input, allow_stdin=allow_stdin)
        recorder = getattr(self, "course_recorder", None)
        if recorder is not None:
            recorder.msg_id = msg_id
        return msg_id

    def get_kernel_message(self, timeout=None, stream="iopub"):
        msg = get_message(self, timeout=timeout, stream=stream)
        recorder = getattr(self, "course_recorder", None)
        if recorder is not None and stream == "iopub":
            recorder.feed(msg)
        return msg

    kernel.RunningKernel.execute_cell_input = execute_cell_input
    plugin.IPyNbFile.get_kernel_message = get_kernel_message
    plugin.IPyNbFile._course_patched = True


def _is_notebook_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell" and hasattr(item, "cell")


def pytest_configure(config) -> None:
    _patch_nbval()


@pytest.hookimpl(trylast=True)   # after nbval's notebook set-up has started the kernel
def pytest_runtest_setup(item) -> None:
    if not _is_notebook_cell(item):
        return
    notebook = item.parent
    if getattr(notebook, "course_recorder", None) is None:
        notebook.course_recorder = _Recorder(notebook.nb)
    notebook.kernel.course_recorder = notebook.course_recorder
    notebook.course_recorder.begin(item.cell)


def pytest_runtest_logreport(report) -> None:
    if report.failed and report.when == "call" and report.nodeid in _CELLS:
        _CELLS[report.nodeid].failed = True


_CELLS: dict = {}   # node id → recorder, to mark a notebook failed from its cells' reports


def pytest_runtest_call(item) -> None:
    if _is_notebook_cell(item):
        _CELLS[item.nodeid] = item.parent.course_recorder


def pytest_runtest_teardown(item, nextitem) -> None:
    if not _is_notebook_cell(item) or (nextitem is not None and nextitem.parent is item.parent):
        return
    recorder = getattr(item.parent, "course_recorder", None)
    item.parent.course_recorder = None
    if recorder is None or recorder.failed:
        return
    path = Path(str(item.parent.fspath))
    folder = store(recorder.executed_notebook(), path, time.perf_counter() - recorder.start)
    sys.stderr.write(f"\n[notebook cache] {path} → {folder}\n")
