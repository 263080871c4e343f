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
    return _write(Path(target), data, keep_old=True)


_OWN: set[Path] = set()    # the files this process has written with rewrite_file


def rewrite_file(target: str | os.PathLike, data: str | bytes) -> Path | None:
    """``write_file`` for a file that one run writes again and again (a results file after every model, a
    generated page): the first write in this process moves an earlier file aside, the later ones replace the file
    this process wrote itself. Returns the path of the file moved aside, if any."""
    target = Path(target).resolve()
    old = _write(target, data, keep_old=target not in _OWN)
    _OWN.add(target)
    return old


def _write(target: Path, data: str | bytes, keep_old: bool) -> Path | None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, part = tempfile.mkstemp(prefix=f"{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(part, 0o644)                                       # mkstemp makes it private; the file is not
        old = None
        if keep_old and (target.exists() or target.is_symlink()):
            old = aside_name(target)
            os.replace(target, old)
        os.replace(part, target)
    except BaseException:
        Path(part).unlink(missing_ok=True)
        raise
    return old
