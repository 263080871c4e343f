"""Bad-input probes of the course's public API, kept apart from the tests so that they can be run again.

Each module in this folder defines ``PROBES``, a list of :class:`Probe`. A probe calls the public API with one
bad input and either lets the course's error escape (a *clear error*), or returns normally after checking the
result itself (*handled*; a wrong result raises ``AssertionError``: *silently wrong*). Anything else is a
finding: an *unclear error* from inside a framework, a *hang*, or a *crash*.

Run them all with ``python tools/probe_inputs.py`` (see that file).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Probe:
    """One bad input. ``run(fw)`` gets ``ac.keras`` or ``ac.torch`` when ``per_framework`` (else ``None``)."""

    area: str
    name: str
    run: Callable[[Any], object]
    per_framework: bool = True


def to_input(fw, array):
    """A NumPy array as the framework's own tensor (float32 unless integer)."""
    import numpy as np

    from attention_course.core.backend import backend

    array = np.asarray(array)
    if fw is None or not backend(fw).is_torch:
        return array
    import torch

    return torch.as_tensor(array)


def to_numpy(x):
    import numpy as np

    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)
