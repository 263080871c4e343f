"""Writing files without losing anyone's: what the course replaces is moved aside under a name that says so."""

from __future__ import annotations

import os
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
