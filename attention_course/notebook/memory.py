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

Within a cell, glibc itself keeps memory: it serves a large block from a mapping of its own, but once such a block is
freed it raises that threshold to the block's size (up to 32 MB) and serves the next ones from its heap, where a freed
block below a live one stays resident. In a capped kernel that runs Keras, ``map_large_blocks`` fixes the threshold
at ``LARGE_BLOCK``, so that every block that large is handed back the moment it is freed (Chapter 10's page, Keras
on one core: a peak of 1,214 MB without it, 1,108 MB with it). In a kernel without such a cap (Colab, the book,
most laptops), ``reuse_freed_blocks_when_uncapped`` does the opposite, for speed: glibc keeps what a cell frees for the
cell's next blocks instead of handing it back and taking it again, page by page, at the next training step (Chapter
8's PyTorch training: 36 s instead of 42, and 0.2 s of the system's time instead of 5.5, at the same peak); the
trim after each cell still hands it all back.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["release_after_each_cell", "release", "memory_cap_mb", "map_large_blocks", "system_heap_when_capped",
           "reuse_freed_blocks", "reuse_freed_blocks_when_uncapped", "SMALL_MEMORY_MB", "LARGE_BLOCK", "KEPT_FREE"]

SMALL_MEMORY_MB = 4096           # a kernel capped at this or less keeps no pool of its own (Binder gives 2,048)
SYSTEM_HEAP = "TF_ONEDNN_USE_SYSTEM_ALLOCATOR"   # TensorFlow's variable, read when it starts
LARGE_BLOCK = 2 * 2**20          # bytes: in a capped kernel, each block this large has a mapping of its own
_M_MMAP_THRESHOLD = -3           # glibc's mallopt parameter for that threshold
_M_TRIM_THRESHOLD = -1           # … and for the free memory at the heap's top that free() leaves in place
HEAP_BLOCK = 32 * 2**20          # bytes: the largest block glibc serves from its heap (its own ceiling, 64-bit)
KEPT_FREE = 256 * 2**20          # bytes: in a kernel without a cap, the free memory the heap keeps within a cell
_UNLIMITED = 2**60               # cgroup v1 writes "no limit" as a number near 2**63

_hooked: set[int] = set()   # the shells already hooked (id)


def _glibc(name: str) -> Callable[..., int] | None:
    try:
        return getattr(ctypes.CDLL("libc.so.6"), name)
    except (OSError, AttributeError):   # not glibc (macOS, Windows, musl)
        return None


def _malloc_trim() -> Callable[[int], int] | None:
    return _glibc("malloc_trim")


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


def map_large_blocks(threshold: int = LARGE_BLOCK) -> bool:
    """From now on, have glibc's malloc serve every block of ``threshold`` bytes or more from a mapping of its own,
    handed back to the system when the block is freed (``mallopt(M_MMAP_THRESHOLD)``, which also stops glibc from
    raising the threshold); False where glibc's ``mallopt`` is missing or refuses the value."""
    mallopt = _glibc("mallopt")
    return mallopt is not None and mallopt(_M_MMAP_THRESHOLD, threshold) == 1


def system_heap_when_capped(cap_mb: int | None = None) -> bool:
    """Where the memory cap (``memory_cap_mb`` unless given) is ``SMALL_MEMORY_MB`` or less, keep what the frameworks
    free on the system's side: TensorFlow's oneDNN operations allocate from the system heap
    (``TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1``), so that the trim after each cell gives their freed memory back, and
    glibc maps large blocks on their own (``map_large_blocks``). True when the cap applies. Call before TensorFlow is
    imported: once it is, or where the user set the variable, the variable is left as it is."""
    cap_mb = memory_cap_mb() if cap_mb is None else cap_mb
    if cap_mb is None or cap_mb > SMALL_MEMORY_MB:
        return False
    if SYSTEM_HEAP not in os.environ and "tensorflow" not in sys.modules:
        os.environ[SYSTEM_HEAP] = "1"
    map_large_blocks()
    return True


def reuse_freed_blocks(largest: int = HEAP_BLOCK, kept: int = KEPT_FREE) -> bool:
    """From now on, have glibc's malloc serve every block under ``largest`` bytes from its heap, and keep up to
    ``kept`` bytes of free memory at the heap's top instead of handing it back when a block is freed
    (``mallopt(M_MMAP_THRESHOLD)`` and ``mallopt(M_TRIM_THRESHOLD)``, which also stop glibc from moving either
    threshold): a training step then reuses the pages the step before it freed. False where glibc's ``mallopt`` is
    missing or refuses a value."""
    mallopt = _glibc("mallopt")
    return mallopt is not None and mallopt(_M_MMAP_THRESHOLD, largest) == 1 and mallopt(_M_TRIM_THRESHOLD, kept) == 1


def reuse_freed_blocks_when_uncapped(cap_mb: int | None = None) -> bool:
    """Where the memory cap (``memory_cap_mb`` unless given) is above ``SMALL_MEMORY_MB`` or there is none,
    ``reuse_freed_blocks``; True when it did. A capped kernel keeps its memory small instead."""
    cap_mb = memory_cap_mb() if cap_mb is None else cap_mb
    if cap_mb is not None and cap_mb <= SMALL_MEMORY_MB:
        return False
    return reuse_freed_blocks()
