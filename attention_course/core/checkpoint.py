"""Training checkpoints that hold numbers only: arrays in a NumPy ``.npz`` file, the rest as JSON inside it.

Reading one never unpickles anything (``np.load(..., allow_pickle=False)``), so a checkpoint from someone else,
or one found in a shared cache folder, cannot run code on the reader's machine. Both frameworks' ``fit`` write
and read this format; a file in the format they used before (a pickle, or ``torch.save``'s archive) is refused
with a message that says what to do with it.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from attention_course.core.errors import CheckpointError

_META = "__course_checkpoint__"
FORMAT = 1


def save(path: str | os.PathLike, arrays: dict[str, np.ndarray], meta: dict) -> Path:
    """Write ``arrays`` (name → array of numbers) and ``meta`` (JSON-able) to ``path``, atomically: the file
    is written beside its place and renamed into it, so an interrupted save never leaves half a checkpoint."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if _META in arrays:
        raise CheckpointError(f"an array may not be named {_META!r}: the checkpoint keeps its metadata there")
    text = json.dumps({"format": FORMAT, **meta}).encode("utf-8")
    fd, part = tempfile.mkstemp(prefix=path.name + ".", suffix=".part", dir=path.parent)
    try:
        payload: dict[str, Any] = {k: np.asarray(v) for k, v in arrays.items()}
        payload[_META] = np.frombuffer(text, dtype=np.uint8)
        with os.fdopen(fd, "wb") as f:
            np.savez(f, allow_pickle=False, **payload)
        os.replace(part, path)
    finally:
        Path(part).unlink(missing_ok=True)
    return path


def load(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
    """``(arrays, meta)`` from a checkpoint written by :func:`save`. Anything else, a pickle included, raises
    :class:`~attention_course.core.errors.CheckpointError` naming the file; nothing in the file is executed."""
    path = Path(path)
    if not zipfile.is_zipfile(path):
        raise CheckpointError(
            f"{path} is not a course checkpoint (arrays and JSON in a .npz file). If it is a checkpoint from an "
            "earlier version of the course, it is a pickle, and reading a pickle can run any code it holds, so "
            "the course no longer reads it: delete it (training then starts again from the first epoch) or move it "
            "away.")
    try:
        with np.load(path, allow_pickle=False) as saved:
            if _META not in saved.files:
                raise CheckpointError(
                    f"{path} is a zip archive but not a course checkpoint (it has no {_META!r} entry; a file "
                    "written by torch.save, for example, is refused because loading it unpickles): delete it or "
                    "move it away, and training starts again")
            meta = json.loads(saved[_META].tobytes().decode("utf-8"))
            arrays = {k: saved[k] for k in saved.files if k != _META}
    except CheckpointError:
        raise
    except (ValueError, OSError, zipfile.BadZipFile, json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{path} is not a readable course checkpoint ({type(err).__name__}: {err}); "
                              "delete it or move it away, and training starts again") from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{path} has checkpoint format {meta.get('format')!r}; this version reads {FORMAT}")
    return arrays, meta


def prefixed(arrays: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """The arrays whose names start with ``prefix + '.'``, with the prefix removed."""
    n = len(prefix) + 1
    return {k[n:]: v for k, v in arrays.items() if k.startswith(prefix + ".")}


def numbered(arrays: dict[str, np.ndarray], prefix: str) -> list[np.ndarray]:
    """The arrays ``prefix.0``, ``prefix.1``, … as a list, in order (a Keras model's ``get_weights()``)."""
    found = prefixed(arrays, prefix)
    return [found[str(i)] for i in range(len(found))]
