"""Helper package for the Neural Attention course.

``import attention_course as ac`` is cheap: no deep-learning framework is imported here.
TensorFlow/Keras load only when ``ac.keras`` is used, PyTorch only when ``ac.torch`` is.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .book import glue
from .session import setup

__version__ = "0.1.0"
__all__ = ["setup", "glue", "__version__"]

_LAZY = {
    "scale", "frameworks", "data", "text", "train", "viz", "widgets", "metrics", "checks", "assign",
    "torch", "keras", "errors", "parity", "session", "decode", "translation_metrics", "results",
}

if TYPE_CHECKING:  # pragma: no cover
    from . import (  # noqa: F401
        assign,
        checks,
        data,
        errors,
        frameworks,
        keras,
        metrics,
        parity,
        results,
        scale,
        session,
        text,
        torch,
        train,
        viz,
        widgets,
    )


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'attention_course' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)
