"""Install packages into the course's virtual environment with uv, or with pip where uv cannot be had or fails.

uv (https://docs.astral.sh/uv/, ``uv pip install``) takes the same arguments as ``pip install`` and downloads and
unpacks in parallel: on a fresh machine it installs ``requirements.txt`` several times quicker than pip, most of
``make env``. It reads none of pip's configuration, so the indexes, wheel folders and constraint files that pip is
configured with (``pip config list``, which includes the ``PIP_*`` variables) are passed on, with pip's way of
choosing among indexes: both then pick the same files (a local CPU build of torch, say). Like pip, and unlike uv's
default, it compiles the installed modules to bytecode (``--compile-bytecode``): where ``PYTHONDONTWRITEBYTECODE``
is set (many containers and CI machines) nothing else ever writes it, and every kernel would compile the modules of
TensorFlow, PyTorch and the other libraries again as it imports them. Standard library only: it runs before anything
is installed.

    python tools/install_requirements.py .venv/bin -r requirements.txt     # the Makefile's env target
    python tools/install_requirements.py .venv/bin --no-deps -e .
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PASSED_ON = {"find-links": "--find-links", "constraint": "--constraint",   # pip's setting → uv's option
             "index-url": "--index-url", "extra-index-url": "--extra-index-url"}


def pip_settings(python: Path) -> list[str]:
    """uv's options for the indexes, find-links and constraints in pip's configuration (its files and ``PIP_*``
    variables), and pip's choice among indexes: the best version wherever it is (uv's default is the first index's)."""
    listed = subprocess.run([str(python), "-m", "pip", "config", "list"], capture_output=True, text=True)
    if listed.returncode:
        return []
    options: list[str] = []
    for line in listed.stdout.splitlines():   # global.find-links='/opt/wheels'  or  :env:.constraint='a.txt b.txt'
        key, _, value = line.partition("=")
        option = PASSED_ON.get(key.rpartition(".")[2])
        if option:
            try:
                items = ast.literal_eval(value).split()           # pip prints each value as a Python string
            except (ValueError, SyntaxError):
                continue
            for item in items:
                if item not in options:
                    options += [option, item]
    return options + ["--index-strategy", "unsafe-best-match"] if options else options


def install(bin_dir: Path, args: list[str]) -> int:
    """``pip install args`` into the environment of ``bin_dir``, through uv when it installs and succeeds."""
    python = bin_dir / "python"
    uv = bin_dir / "uv"
    if not uv.exists():
        subprocess.run([str(python), "-m", "pip", "install", "-q", "uv"])
    if uv.exists():
        done = subprocess.run([str(uv), "pip", "install", "-q", "--compile-bytecode", "--python", str(python),
                               *pip_settings(python), *args])
        if done.returncode == 0:
            return 0
        print("install_requirements: uv could not install them; trying pip", file=sys.stderr)
    return subprocess.run([str(python), "-m", "pip", "install", "-q", *args]).returncode


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python tools/install_requirements.py BIN_DIR PIP_INSTALL_ARGUMENTS…")
    sys.exit(install(Path(sys.argv[1]), sys.argv[2:]))
