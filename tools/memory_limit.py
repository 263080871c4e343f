"""A memory limit like a container's (Binder's), for one notebook kernel: a Linux control group of its own.

    with MemoryLimit(1200) as limit:      # MB; needs permission to create a control group (root, cgroup v1 or v2)
        start the kernel with preexec_fn=limit.enter
        ...
        limit.stats()                     # the group's peak, how often it reached the limit, whether it was killed

What a container counts is not the kernel's resident set: the pages of the libraries it maps (TensorFlow's alone are
about 500 MB) are page cache, which the system drops under the limit and reads again when needed, while the memory the
kernel allocates must fit. So a kernel whose resident peak is above the limit can run to the end inside it. The page
cache is emptied first where the system allows (``cold``), so that the libraries' pages are read, and counted,
inside the group as in a fresh container. The group is removed on leaving, whatever happened.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
MB = 2**20


def _version() -> int | None:
    if (ROOT / "cgroup.controllers").exists() and "memory" in (ROOT / "cgroup.controllers").read_text().split():
        return 2
    if (ROOT / "memory" / "memory.limit_in_bytes").exists():
        return 1
    return None


def parent() -> Path:
    """Where the groups are made: the memory hierarchy's root."""
    return ROOT if _version() == 2 else ROOT / "memory"


def available() -> bool:
    """True when this process may create a memory control group here."""
    return _version() is not None and os.access(parent(), os.W_OK)


class MemoryLimit:
    """A memory control group limited to ``mb`` megabytes (2**20 bytes); ``enter`` moves the calling process in."""

    def __init__(self, mb: int):
        if isinstance(mb, bool) or not isinstance(mb, int) or mb < 64:
            raise ValueError(f"a memory limit is a whole number of MB, at least 64; got {mb!r}")
        if not available():
            raise PermissionError(f"cannot create a memory control group under {ROOT} (Linux, cgroup v1 or v2, "
                                  "and permission to write there, as root, are needed)")
        self.mb, self.version = mb, _version()
        self.path = parent() / f"course-notebook-{os.getpid()}"
        self.cold = False

    def __enter__(self) -> MemoryLimit:
        self.path.mkdir()
        try:
            limit = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
            (self.path / limit).write_text(str(self.mb * MB))
            self.cold = _drop_page_cache()
        except BaseException:
            self.path.rmdir()
            raise
        return self

    def enter(self) -> None:
        """Move the calling process into the group (a child's ``preexec_fn``: its memory from then on counts)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def stats(self) -> dict:
        """peak_mb: the most the group held; limit_reached: how often it reached the limit and had memory reclaimed
        (or, with cgroup v1, failed to charge a page); oom_killed: processes killed for memory."""
        if self.version == 2:
            events = dict(line.split() for line in (self.path / "memory.events").read_text().splitlines())
            peak_file = self.path / "memory.peak"         # Linux 5.19 and later
            peak = int(peak_file.read_text()) if peak_file.exists() else None
            reached, killed = int(events.get("max", 0)), int(events.get("oom_kill", 0))
        else:
            peak = int((self.path / "memory.max_usage_in_bytes").read_text())
            reached = int((self.path / "memory.failcnt").read_text())
            control = dict(line.split() for line in (self.path / "memory.oom_control").read_text().splitlines())
            killed = int(control.get("oom_kill", 0))
        return {"limit_mb": self.mb, "peak_mb": None if peak is None else round(peak / MB), "limit_reached": reached,
                "oom_killed": killed, "cold": self.cold}

    def __exit__(self, *exc) -> None:
        for pid in (self.path / "cgroup.procs").read_text().split():    # a process still inside: back to the parent
            (self.path.parent / "cgroup.procs").write_text(pid)
        self.path.rmdir()                                                 # its page cache goes to the parent


def _drop_page_cache() -> bool:
    """Empty the system's clean page cache, where allowed: the group then counts the libraries it reads."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("1")
    except OSError:
        return False
    return True
