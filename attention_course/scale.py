"""The two run profiles of the course.

* ``quick``: CPU, minutes. Small data subsets, few epochs: what CI and Binder run.
* ``full``: GPU, reproduces the reference results of each chapter.

``COURSE_SCALE=quick|full`` chooses; the default is ``quick`` everywhere, also on a GPU (Colab's "Run all" must
finish in minutes): the full profile is an explicit choice (``ac.setup(scale="full")`` or the variable).
Notebooks ask ``ac.scale.pick(quick=..., full=...)`` for every size that depends on the profile.
"""

from __future__ import annotations

import os
import shutil
from typing import TypeVar

from .errors import ConfigError

PROFILES = ("quick", "full")
T = TypeVar("T")
_forced: str | None = None


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
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    names = [line.strip() for line in out.splitlines() if line.strip()]
    return names[0] if names else None


def validate(name: str) -> str:
    """Return ``name`` normalised, or raise a :class:`ConfigError` that lists the profiles."""
    value = str(name).strip().lower()
    if value not in PROFILES:
        raise ConfigError(f"unknown profile {name!r}: COURSE_SCALE must be one of {', '.join(PROFILES)}")
    return value


def current() -> str:
    """The active profile: the one set by :func:`use`, else ``COURSE_SCALE``, else ``quick``."""
    if _forced is not None:
        return _forced
    env = os.environ.get("COURSE_SCALE")
    if env:
        return validate(env)
    return "quick"


def use(name: str | None) -> str:
    """Force a profile for this session (``None`` goes back to the environment). Returns the active one."""
    global _forced
    _forced = None if name is None else validate(name)
    return current()


def pick(*, quick: T, full: T) -> T:
    """The value for the active profile, e.g. ``epochs = ac.scale.pick(quick=3, full=30)``."""
    return quick if current() == "quick" else full


def is_quick() -> bool:
    return current() == "quick"
