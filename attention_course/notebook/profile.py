"""The two run profiles of the course.

* ``quick``: CPU, minutes. Small data subsets, few epochs: what CI and Binder run.
* ``full``: GPU, reproduces the reference results of each chapter.

``COURSE_PROFILE=quick|full`` chooses; the default is ``quick`` everywhere, also on a GPU (Colab's "Run all" must
finish in minutes): the full profile is an explicit choice (``ac.setup(profile="full")`` or the variable). The
variable's old name, ``COURSE_SCALE``, still works and says that it is deprecated.
Notebooks ask ``ac.profile.pick(quick=..., full=...)`` for every size that depends on the profile.
"""

from __future__ import annotations

import os
import warnings
from typing import TypeVar

from attention_course.core.errors import ConfigError

PROFILES = ("quick", "full")
T = TypeVar("T")
_forced: str | None = None


def validate(name: str) -> str:
    """Return ``name`` normalised, or raise a :class:`ConfigError` that lists the profiles."""
    value = str(name).strip().lower()
    if value not in PROFILES:
        raise ConfigError(f"unknown profile {name!r}: COURSE_PROFILE must be one of {', '.join(PROFILES)}")
    return value


def current() -> str:
    """The active profile: the one set by :func:`use`, else ``COURSE_PROFILE``, else ``quick``."""
    if _forced is not None:
        return _forced
    env = os.environ.get("COURSE_PROFILE")
    if not env and os.environ.get("COURSE_SCALE"):
        warnings.warn("COURSE_SCALE is deprecated: set COURSE_PROFILE instead (same values, quick or full)",
                      FutureWarning, stacklevel=2)
        env = os.environ["COURSE_SCALE"]
    return validate(env) if env else "quick"


def use(name: str | None) -> str:
    """Force a profile for this session (``None`` goes back to the environment). Returns the active one."""
    global _forced
    _forced = None if name is None else validate(name)
    return current()


def pick(*, quick: T, full: T) -> T:
    """The value for the active profile, e.g. ``epochs = ac.profile.pick(quick=3, full=30)``."""
    return quick if current() == "quick" else full


def is_quick() -> bool:
    return current() == "quick"
