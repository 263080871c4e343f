"""How the course talks to the kernels it starts (`make book`, `make robustness`, `make colab-check`, the
assignment checks): over Unix sockets rather than TCP on localhost.

Over TCP, ipykernel warns at every start that the traffic is not encrypted (one warning per notebook in `make book`); a
kernel reached through Unix sockets in a folder of its own carries none of that. The folder's path is absolute
(a kernel runs in its notebook's folder, not the caller's) and is removed with the kernel. Where there are no Unix
sockets (Windows), TCP as before.

    with kernel_config() as config:
        NotebookClient(nb, ..., config=config).execute()
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

UNIX_SOCKETS = os.name == "posix"


@contextmanager
def kernel_config() -> Iterator:
    """A traitlets ``Config`` for a ``NotebookClient``'s kernel manager, valid inside the ``with`` block."""
    from traitlets.config import Config

    if not UNIX_SOCKETS:
        yield Config()
        return
    with tempfile.TemporaryDirectory(prefix="course-kernel-") as folder:
        yield Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(folder, "kernel")}})
