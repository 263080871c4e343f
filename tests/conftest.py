"""Shared test set-up: quiet frameworks, point the data registry at the offline copies when present."""

import os
from pathlib import Path

import pytest

from attention_course._quiet import quiet_frameworks

ROOT = Path(__file__).resolve().parents[1]
quiet_frameworks()
os.environ.setdefault("COURSE_PROGRESS", "0")
_offline = ROOT.parent / "shared" / "data"
if "COURSE_DATA_DIR" not in os.environ and _offline.is_dir():
    os.environ["COURSE_DATA_DIR"] = str(_offline)


@pytest.fixture(params=["keras", "pytorch"], scope="module")
def fw(request):
    """The framework module under test: ``ac.keras`` or ``ac.torch``."""
    import attention_course as ac

    return ac.keras if request.param == "keras" else ac.torch


def to_numpy(x):
    import numpy as np

    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def as_input(fw_module, x):
    """A NumPy array as an input of the framework under test."""
    if fw_module.__name__.endswith(".torch"):
        import torch

        return torch.as_tensor(x)
    return x

try:  # the same choice as ac.setup(): one CPU thread for the small models of the tests
    import torch

    torch.set_num_threads(int(os.environ.get("COURSE_TORCH_THREADS", "1")))
except ImportError:  # pragma: no cover
    pass
