"""Give the memory that the frameworks freed back to the system after each notebook cell.

PyTorch and TensorFlow free their tensors with ``free()``, but glibc keeps freed pages in the process's heap for
later reuse, so a kernel that has trained a few models holds hundreds of MB that nothing uses (a Keras session in
Chapter 9: 1,263 MB resident, 880 MB after one ``malloc_trim(0)``). Binder gives a kernel 2 GB. Where glibc
provides ``malloc_trim`` (Linux: Binder, Colab, most laptops running Linux), ``release_after_each_cell`` calls it
after every cell; elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

__all__ = ["release_after_each_cell", "release"]

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
