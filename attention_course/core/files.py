"""Writing files without losing anyone's: what the course replaces is moved aside under a name that says so."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path


def aside_name(path: Path) -> Path:
    """A free sibling name for a replaced ``path``: ``<name>.replaced-<date>-<time>[-n]``."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate, n = path.with_name(f"{path.name}.replaced-{stamp}"), 1
    while candidate.exists():
        candidate, n = path.with_name(f"{path.name}.replaced-{stamp}-{n}"), n + 1
    return candidate


def replace_folder(new: Path, target: Path) -> Path | None:
    """Rename the finished folder ``new`` to ``target``. An empty ``target`` is removed first; a non-empty one
    is never deleted: it is renamed to ``<target>.replaced-<date>-<time>``, whose path is returned (None when
    nothing was there). If the last rename fails, the old folder is put back."""
    if target.is_dir() and not any(target.iterdir()):
        target.rmdir()
    if not target.exists():
        os.replace(new, target)
        return None
    old = aside_name(target)
    os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        os.replace(old, target)
        raise
    return old


def write_file(target: str | os.PathLike, data: str | bytes) -> Path | None:
    """Write ``data`` (text as UTF-8) to ``target`` through a temporary sibling renamed into place, so that an
    interrupted write leaves nothing half-written. A file already at ``target`` is never overwritten: it is moved
    aside to ``<name>.replaced-<date>-<time>``, whose path is returned (None when nothing was there)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, part = tempfile.mkstemp(prefix=f"{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(part, 0o644)                                       # mkstemp makes it private; the file is not
        old = None
        if target.exists() or target.is_symlink():
            old = aside_name(target)
            os.replace(target, old)
        os.replace(part, target)
    except BaseException:
        Path(part).unlink(missing_ok=True)
        raise
    return old
