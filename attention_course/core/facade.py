"""Façades: a package that re-exports names from other modules, importing each module only when one of its
names is first used. ``attention_course.data`` and ``attention_course.viz`` re-export the chapters' loaders and
charts this way, so that a chapter can import the data and chart floors without importing every chapter."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``names`` maps each re-exported name to its module."""
    module = importlib.import_module(package)

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(names[name]), name)
        else:  # one of the package's own modules (``ac.data.synthetic``), or nothing
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(module)) | set(names))

    return __getattr__, __dir__
