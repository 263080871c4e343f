"""Give the memory that the frameworks freed back to the system after each notebook cell.

PyTorch and TensorFlow free their tensors with ``free()``, but glibc keeps freed pages in the process's heap for
later reuse, so a kernel that has trained a few models holds hundreds of MB that nothing uses (a Keras session in
Chapter 9: 1,263 MB resident, 880 MB after one ``malloc_trim(0)``). Binder gives a kernel 2 GB. Where glibc
provides ``malloc_trim`` (Linux: Binder, Colab, most laptops running Linux), ``release_after_each_cell`` calls it
after every cell; elsewhere it does nothing.

TensorFlow's oneDNN operations (its CPU kernels for matrix products and convolutions) allocate from a pool of their
own that never shrinks and that ``malloc_trim`` cannot reach, so a Keras kernel that trains a few models holds tens
of MB it no longer uses (Chapter 8's page, Keras on one core: a peak of 1,202 MB with the pool, 1,157 MB without).
Where the kernel's memory is capped at ``SMALL_MEMORY_MB`` or less (Binder: 2 GB), ``system_heap_when_capped`` has
those operations allocate from the system heap instead, which the trim after each cell empties; elsewhere they keep
their pool, which trains faster.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["release_after_each_cell", "release", "memory_cap_mb", "system_heap_when_capped", "SMALL_MEMORY_MB"]

SMALL_MEMORY_MB = 4096           # a kernel capped at this or less keeps no pool of its own (Binder gives 2,048)
SYSTEM_HEAP = "TF_ONEDNN_USE_SYSTEM_ALLOCATOR"   # TensorFlow's variable, read when it starts
_UNLIMITED = 2**60               # cgroup v1 writes "no limit" as a number near 2**63

_hooked: set[int] = set()   # the shells already hooked (id)


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):   # not glibc (macOS, Windows, musl)
        return None


def release() -> bool:
    """Hand the heap's free pages back to the system now; False where glibc's ``malloc_trim`` is missing."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def release_after_each_cell(shell=None) -> bool:
    """Call ``release`` after every cell of the running IPython (once per shell); False outside IPython or where
    there is nothing to call."""
    if _malloc_trim() is None:
        return False
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover
            return False
        shell = get_ipython()
    if shell is None:
        return False
    if id(shell) not in _hooked:
        shell.events.register("post_run_cell", lambda result: release())
        _hooked.add(id(shell))
    return True


def memory_cap_mb(cgroups: Path = Path("/sys/fs/cgroup"), own: Path = Path("/proc/self/cgroup")) -> int | None:
    """The memory limit (MB, 2**20 bytes) of this process's control group or any group above it, as a container
    sets one (cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``); None where there is none or it cannot be
    read (not Linux, no control groups)."""
    try:
        lines = own.read_text().splitlines()
    except OSError:
        return None
    caps = []
    for line in lines:
        fields = line.split(":", 2)                                   # hierarchy id : controllers : path
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if controllers == "":                                         # v2: one hierarchy
            base, name = cgroups, "memory.max"
        elif "memory" in controllers.split(","):                      # v1: the memory controller's hierarchy
            base, name = cgroups / "memory", "memory.limit_in_bytes"
        else:
            continue
        group = base / path.strip("/")
        while True:                                                   # the group, then each parent up to the root
            try:
                value = (group / name).read_text().strip()
            except OSError:                                           # not visible from inside this container
                value = "max"
            if value.isdigit() and int(value) < _UNLIMITED:
                caps.append(int(value))
            if group == base or base not in group.parents:
                break
            group = group.parent
    return min(caps) // 2**20 if caps else None


def system_heap_when_capped(cap_mb: int | None = None) -> bool:
    """Where the memory cap (``memory_cap_mb`` unless given) is ``SMALL_MEMORY_MB`` or less, have TensorFlow's
    oneDNN operations allocate from the system heap (``TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1``), so that the trim after
    each cell gives their freed memory back. Call before TensorFlow is imported; True when the variable is set to 1
    for this process. A value the user set is kept, and once TensorFlow is imported nothing changes."""
    if SYSTEM_HEAP in os.environ or "tensorflow" in sys.modules:
        return os.environ.get(SYSTEM_HEAP) == "1"
    cap_mb = memory_cap_mb() if cap_mb is None else cap_mb
    if cap_mb is None or cap_mb > SMALL_MEMORY_MB:
        return False
    os.environ[SYSTEM_HEAP] = "1"
    return True
