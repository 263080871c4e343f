"""Freed memory goes back to the system after each notebook cell (``attention_course.notebook.memory``)."""

import sys

import pytest

from attention_course.notebook import memory

glibc = pytest.mark.skipif(memory._malloc_trim() is None, reason="glibc's malloc_trim is not available here")


FREED = """
import gc, os
from attention_course.notebook import memory

def resident_mb():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

blocks = [bytearray(4000) for _ in range(50_000)]   # 200 MB in pieces small enough to stay in the heap
pin = bytearray(4000)                                # above them, so that free() alone cannot shrink the heap
del blocks
gc.collect()
held = resident_mb()
assert memory.release()
print(held - resident_mb())
"""


@glibc
def test_release_hands_freed_heap_pages_back():
    """In a fresh interpreter, as a kernel starts: in a long-lived test worker the 200 MB of blocks can fill holes
    that earlier tests left in the heap, and trimming then has less to give back."""
    import subprocess

    given_back = float(subprocess.run([sys.executable, "-c", FREED], capture_output=True, text=True,
                                      check=True).stdout)
    assert given_back > 100, f"malloc_trim gave back {given_back:.0f} MB of 200 MB freed, less than half"


class _Events:
    def __init__(self):
        self.hooks = []

    def register(self, event, hook):
        self.hooks.append((event, hook))


class _Shell:
    def __init__(self):
        self.events = _Events()


@glibc
def test_release_runs_after_each_cell_hooked_once_per_shell():
    shell = _Shell()
    assert memory.release_after_each_cell(shell) and memory.release_after_each_cell(shell)
    assert [event for event, _ in shell.events.hooks] == ["post_run_cell"]
    shell.events.hooks[0][1](None)                       # what IPython calls after a cell


def test_nothing_to_do_outside_ipython_or_without_glibc(monkeypatch):
    monkeypatch.setitem(sys.modules, "IPython", None)   # no IPython at all
    assert memory.release_after_each_cell() is False
    monkeypatch.setattr(memory, "_malloc_trim", lambda: None)
    assert memory.release() is False and memory.release_after_each_cell(_Shell()) is False
