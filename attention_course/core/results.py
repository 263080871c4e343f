"""The book's committed results (what ``tools/chapter*_full.py`` and ``tools/chapter9_pretrain.py`` measured in the
full profile), wherever a notebook runs.

    full = ac.results.load("08-transformer/results/full-pytorch.json")

A notebook run from the book's folder, or with the package installed from a checkout of the repository, reads the
file there. On Colab only the notebook is opened and the package is installed from the repository without the book,
so the file is read from the repository online instead. Nothing is written to disk.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from attention_course.core.errors import (
    ResultsUnavailableError,
)

__all__ = ["URL", "ResultsUnavailableError", "load", "read", "local_copies"]

#: Where the book's files are online: the main branch of the course's repository, as raw files.
URL = "https://raw.githubusercontent.com/attention-course/attention-course/v0.2.0/book/"


def local_copies(path: str) -> list[Path]:
    """Where ``path`` (relative to the book's folder) may be on this machine, in the order they are tried: from the
    chapter's folder, where a notebook runs (``../<path>``), then in the checkout the package was installed from."""
    return [Path.cwd().parent / path, Path(__file__).resolve().parents[2] / "book" / path]


def load(path: str, *, online: bool = True, timeout: float = 30.0) -> dict:
    """The JSON results file at ``path`` in the book's folder (``"09-bert/results/pretraining-full-pytorch.json"``),
    read by :func:`read`."""
    return json.loads(read(path, online=online, timeout=timeout).decode("utf-8"))


def read(path: str, *, online: bool = True, timeout: float = 30.0) -> bytes:
    """The bytes of the file at ``path`` in the book's folder (a results file, a trained model's weights): the first
    of ``local_copies(path)`` that exists, else (``online``) the repository's copy at ``URL + path``.
    Raises ``ResultsUnavailableError`` naming every place it looked."""
    if Path(path).is_absolute() or ".." in Path(path).parts:
        raise ValueError(f"path is relative to the book's folder, like '08-transformer/results/full-pytorch.json'; "
                         f"got {path!r}")
    for copy in local_copies(path):
        if copy.is_file():
            return copy.read_bytes()
    looked = ", ".join(str(p) for p in local_copies(path))
    if not online:
        raise ResultsUnavailableError(f"{path}: not found here ({looked}), and online=False")
    try:
        with urllib.request.urlopen(URL + path, timeout=timeout) as response:
            return response.read()
    except (urllib.error.URLError, OSError) as err:
        raise ResultsUnavailableError(f"{path}: not found here ({looked}) nor online at {URL + path} ({err}); "
                                      "the book's page for the chapter shows these results") from err
