"""The machine a result was measured on, said once: its CPU, cores and GPU, found without importing a framework.

``describe`` is what the results files record, ``in_words`` what a table of results prints; ``gpu_visible`` and
``gpu_name`` are what the run profile and the bench ask.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import shutil
import subprocess
from pathlib import Path

__all__ = ["cpu_name", "gpu_visible", "gpu_name", "describe", "in_words"]


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def gpu_visible() -> bool:
    """True when an NVIDIA GPU is visible, checked without importing a framework."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi") is not None


def gpu_name() -> str | None:
    """The first visible NVIDIA GPU's name as ``nvidia-smi`` gives it ("NVIDIA H200"), or None: no GPU, or no
    ``nvidia-smi`` to ask. No framework is imported."""
    if not gpu_visible() or shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    names = [line.strip() for line in out.splitlines() if line.strip()]
    return names[0] if names else None


def describe(threads: int | None = None) -> dict[str, object]:
    """The hardware and software of this run: CPU, cores, the threads it used, whether a GPU is visible, Python,
    the system and the date."""
    return {"cpu": cpu_name(), "cores": os.cpu_count(), "threads_used": threads or os.cpu_count(),
            "gpu": gpu_visible(), "python": platform.python_version(), "machine": platform.machine(),
            "system": platform.platform(), "date": _dt.date.today().isoformat()}


def in_words() -> str:
    """The machine in words: CPU model and cores, and the GPU by name when one is visible."""
    start = f"{cpu_name()}, {os.cpu_count()} cores"
    if not gpu_visible():
        return f"{start}, no GPU"
    name = gpu_name()
    return f"{start}, with a GPU" + (f" ({name})" if name else "")
