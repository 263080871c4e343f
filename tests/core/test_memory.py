"""Freed memory goes back to the system after each notebook cell (``attention_course.notebook.memory``)."""

import sys

import pytest

from attention_course.notebook import memory
from tools import memory_limit

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
    monkeypatch.setattr(memory, "_glibc", lambda name: None)
    assert memory.map_large_blocks() is False and memory.reuse_freed_blocks() is False


LARGE_BLOCK_PROBE = """
import ctypes, os

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
SIZE = 8 * 2**20

def resident_mb():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

libc.free(libc.malloc(SIZE))          # glibc raises its threshold to this size, unless it is fixed
block = libc.malloc(SIZE)
ctypes.memset(block, 1, SIZE)
pin = libc.malloc(64 * 2**10)         # above the block in the heap, so that free() cannot shrink the heap
ctypes.memset(pin, 1, 64 * 2**10)
held = resident_mb()
libc.free(block)
print(round(held - resident_mb()))    # MB given back
"""

LARGE_FREED = """
import sys
from attention_course.notebook import memory
if sys.argv[1] == "mapped":
    assert memory.map_large_blocks()
""" + LARGE_BLOCK_PROBE


@glibc
def test_a_large_block_goes_back_the_moment_it_is_freed():
    """In a fresh interpreter: by default glibc serves the second 8 MB block from its heap, where freeing it gives
    nothing back; with ``map_large_blocks`` the block has a mapping of its own and all 8 MB go back."""
    import subprocess

    given_back = {how: int(subprocess.run([sys.executable, "-c", LARGE_FREED, how], capture_output=True,
                                            text=True, check=True).stdout) for how in ("default", "mapped")}
    assert given_back["mapped"] >= 7 and given_back["default"] <= 1, given_back


TRAINING_STEPS = """
import resource, sys
import torch
from attention_course.notebook import memory

torch.set_num_threads(1)
if sys.argv[1] == "reuse":
    assert memory.reuse_freed_blocks()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 512))
optimiser = torch.optim.Adam(model.parameters())
x = torch.randn(1024, 512)

def step():
    loss = model(x).square().mean()
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()

step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)     # pages the system had to hand over
"""


@glibc
def test_training_steps_reuse_the_pages_the_step_before_freed():
    """In a fresh interpreter, 40 PyTorch training steps whose activations are 4-8 MB blocks: by default glibc hands
    freed blocks back and the next step takes its pages again, one fault each (150,000-220,000 measured); with
    ``reuse_freed_blocks`` the steps reuse them (under 10,000, the first step's)."""
    import subprocess

    faults = {how: int(subprocess.run([sys.executable, "-c", TRAINING_STEPS, how], capture_output=True, text=True,
                                      check=True).stdout) for how in ("default", "reuse")}
    assert faults["reuse"] * 4 < faults["default"], faults


def test_only_a_kernel_without_a_small_cap_reuses_freed_blocks(monkeypatch):
    asked = []
    monkeypatch.setattr(memory, "reuse_freed_blocks", lambda: asked.append(True) or True)
    assert memory.reuse_freed_blocks_when_uncapped(2048) is False and asked == []       # Binder: memory first
    assert memory.reuse_freed_blocks_when_uncapped(memory.SMALL_MEMORY_MB + 1) and asked == [True]
    monkeypatch.setattr(memory, "memory_cap_mb", lambda: None)
    assert memory.reuse_freed_blocks_when_uncapped() and asked == [True, True]          # no cap at all


def _groups(tmp_path, own: str, limits: dict[str, str]):
    """A fake /sys/fs/cgroup (``limits``: file path under it → content) and /proc/self/cgroup (``own``)."""
    root = tmp_path / "cgroup"
    root.mkdir(parents=True)
    for name, value in limits.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(value + "\n")
    (tmp_path / "own").write_text(own)
    return root, tmp_path / "own"


def test_the_cap_is_the_smallest_limit_of_the_group_and_its_parents(tmp_path):
    v2 = _groups(tmp_path / "v2", "0::/pod/kernel\n", {"memory.max": "max", "pod/memory.max": str(2048 * 2**20),
                                                        "pod/kernel/memory.max": "max"})
    assert memory.memory_cap_mb(*v2) == 2048
    v1 = _groups(tmp_path / "v1", "5:cpu:/\n4:memory:/job\n0::/\n",
                 {"memory/memory.limit_in_bytes": str(1200 * 2**20),
                  "memory/job/memory.limit_in_bytes": "9223372036854771712"})     # v1's "no limit"
    assert memory.memory_cap_mb(*v1) == 1200


def test_no_cap_where_there_is_no_limit_or_nothing_to_read(tmp_path):
    assert memory.memory_cap_mb(*_groups(tmp_path / "a", "not a group\n0::/\n", {"memory.max": "max"})) is None
    assert memory.memory_cap_mb(*_groups(tmp_path / "b", "0::/gone\n", {})) is None     # files not visible
    assert memory.memory_cap_mb(tmp_path, tmp_path / "missing") is None                  # not Linux


def test_a_capped_kernel_allocates_from_the_system_heap_and_a_free_one_keeps_the_pool(monkeypatch):
    mapped = []
    monkeypatch.setattr(memory, "map_large_blocks", lambda: mapped.append(True) or True)
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)      # as in a kernel before TensorFlow starts
    monkeypatch.setenv(memory.SYSTEM_HEAP, "")                         # so that the variable is restored after
    for cap, expected in ((2048, True), (memory.SMALL_MEMORY_MB, True), (8192, False), (None, False)):
        monkeypatch.delenv(memory.SYSTEM_HEAP, raising=False)
        mapped.clear()
        assert memory.system_heap_when_capped(cap) is expected, cap
        assert (memory.SYSTEM_HEAP in memory.os.environ) is expected and bool(mapped) is expected, cap
    monkeypatch.setenv(memory.SYSTEM_HEAP, "0")                        # the user's choice is kept
    assert memory.system_heap_when_capped(2048) and memory.os.environ[memory.SYSTEM_HEAP] == "0"


def test_once_tensorflow_started_the_variable_is_left_alone(monkeypatch):
    mapped = []
    monkeypatch.setattr(memory, "map_large_blocks", lambda: mapped.append(True) or True)
    monkeypatch.setenv(memory.SYSTEM_HEAP, "")
    monkeypatch.delenv(memory.SYSTEM_HEAP, raising=False)
    monkeypatch.setitem(sys.modules, "tensorflow", object())
    assert memory.system_heap_when_capped(2048) and memory.SYSTEM_HEAP not in memory.os.environ
    assert mapped == [True]                                            # large blocks are mapped all the same


def test_setup_keeps_the_system_heap_for_kernels_that_run_keras(monkeypatch):
    """A PyTorch-only kernel never asks for the capped settings (its pages peak under 1 GB, and mapping large blocks
    cost it time); a kernel that runs Keras does. Every kernel asks to reuse freed blocks, which only a kernel
    without a small cap does."""
    import attention_course as ac
    from attention_course.notebook import frameworks, profile, session

    asked, reused = [], []
    monkeypatch.setattr(session, "system_heap_when_capped", lambda: asked.append(True) or True)
    monkeypatch.setattr(session, "reuse_freed_blocks_when_uncapped", lambda: reused.append(True) or False)
    try:
        ac.setup(frameworks="pytorch", banner=False)
        assert asked == [] and reused == [True]
        ac.setup(frameworks="keras", banner=False)
        assert asked == [True] and reused == [True, True]
    finally:
        profile.use(None)
        frameworks.use(None)


needs_cgroups = pytest.mark.skipif(not memory_limit.available(), reason="no memory control group can be made here")

SETUP_KERAS = """
import os
import attention_course as ac
ac.setup(frameworks="keras", banner=False)
import tensorflow as tf
print(os.environ.get("TF_ONEDNN_USE_SYSTEM_ALLOCATOR"))
"""


@needs_cgroups
@glibc
def test_a_kernel_in_binders_memory_starts_tensorflow_on_the_system_heap_and_maps_large_blocks(tmp_path):
    """ac.setup in a kernel inside a 2,048 MB control group (as on Binder) sets TensorFlow's variable before
    TensorFlow starts, and a large block freed in a later cell goes back at once; the same kernel without the limit
    does neither (where this machine itself is not capped)."""
    import nbformat

    from tools.run_notebook import run

    path = tmp_path / "nb.ipynb"
    cells = [nbformat.v4.new_code_cell(code) for code in (SETUP_KERAS, LARGE_BLOCK_PROBE)]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    seen = {}
    for limit in (2048, None):
        out = tmp_path / f"out-{limit}.ipynb"
        result = run(path, out, memory_limit_mb=limit)
        assert result["ok"], result["error"]
        seen[limit] = tuple("".join(o["text"] for o in cell.outputs if o.get("name") == "stdout").strip()
                            for cell in nbformat.read(out, as_version=4).cells)
    here = memory.memory_cap_mb()
    capped_here = here is not None and here <= memory.SMALL_MEMORY_MB
    mapped = {limit: (variable, int(given_back) >= 7) for limit, (variable, given_back) in seen.items()}
    assert mapped[2048] == ("1", True), seen
    assert mapped[None] == (("1", True) if capped_here else ("None", False)), seen
