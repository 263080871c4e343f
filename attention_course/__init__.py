"""Helper package for the Neural Attention course.

``import attention_course as ac`` is cheap: no deep-learning framework is imported here. TensorFlow/Keras load only
when ``ac.keras`` is used, PyTorch only when ``ac.torch`` is.

The house, from the ground floor up (each floor imports only the floors below it):

* ``core/``: errors, arrays, text, decoding, validation, the training loops, checkpoints, parity, results.
* ``data/`` and ``viz/``: the data registry, download cache and loaders; the general charts.
* ``notebook/``: the notebook session (``ac.setup``), the run profile, the cell magics, glue, widgets, the
  instructor export.
* ``ch01_sequence_models/`` … ``ch09_bert/``: one folder per chapter of the book: its layers (``torch.py``,
  ``keras.py``), its experiment, data, metrics, charts and exercise checkers. A chapter imports earlier chapters,
  never later ones.
* ``torch``, ``keras``, ``exercises``, ``bench``: every chapter's layers, exercise checkers and timings in one
  place.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from attention_course.notebook.glue import glue
from attention_course.notebook.session import setup

__version__ = "0.2.0"
__all__ = ["setup", "glue", "__version__"]

# ``ac.<name>`` → the module it names, imported on first use
_LAZY = {
    **{name: f"{__name__}.{name}" for name in ("torch", "keras", "exercises", "data", "viz", "bench")},
    "checks": f"{__name__}.exercises",          # the exercise checkers' old name, kept for learners' code
    **{name: f"{__name__}.core.{name}" for name in ("errors", "metrics", "parity", "results", "text", "train",
                                                      "decode", "trained")},
    **{name: f"{__name__}.notebook.{name}" for name in ("assign", "frameworks", "profile", "session", "widgets")},
    "scale": f"{__name__}.notebook.profile",   # the profile's old name, kept for learners' code
    "translation_metrics": f"{__name__}.ch05_neural_machine_translation.metrics",
}

if TYPE_CHECKING:  # pragma: no cover
    from attention_course import bench, data, exercises, keras, torch, viz  # noqa: F401
    from attention_course.core import decode, errors, metrics, parity, results, text, train, trained  # noqa: F401
    from attention_course.notebook import assign, frameworks, profile, session, widgets  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name])
        globals()[name] = module
        return module
    raise AttributeError(f"module 'attention_course' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
