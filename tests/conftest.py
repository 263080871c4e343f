"""Shared test set-up: quiet frameworks, point the data registry at the offline copies when present, and, for
`make test CHAPTERS=...` (``COURSE_TEST_CHAPTERS``), leave out the tests of the other chapters."""

import os
import re
from pathlib import Path

import pytest

from attention_course.core.backend import (
    backend,
    to_numpy,  # noqa: F401  (the tests import it from here)
)
from attention_course.core.quiet import quiet_frameworks

ROOT = Path(__file__).resolve().parents[1]
quiet_frameworks()
os.environ.setdefault("COURSE_PROGRESS", "0")
_offline = ROOT.parent / "shared" / "data"
if "COURSE_DATA_DIR" not in os.environ and _offline.is_dir():
    os.environ["COURSE_DATA_DIR"] = str(_offline)
if "COURSE_MODEL_DIR" not in os.environ and (ROOT.parent / "shared" / "models").is_dir():
    os.environ["COURSE_MODEL_DIR"] = str(ROOT.parent / "shared" / "models")


@pytest.fixture(params=["keras", "pytorch"], scope="module")
def fw(request):
    """The framework module under test: ``ac.keras`` or ``ac.torch``."""
    import attention_course as ac

    return ac.keras if request.param == "keras" else ac.torch


def as_input(fw_module, x):
    """A NumPy array as an input of the framework under test."""
    return backend(fw_module).as_input(x)

try:  # the same choice as ac.setup(): one CPU thread for the small models of the tests
    import torch

    torch.set_num_threads(int(os.environ.get("COURSE_TORCH_THREADS", "1")))
except ImportError:  # pragma: no cover
    pass
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")   # and one for TensorFlow (read when it first runs)


def _chapters_of(item) -> set[int]:
    """The chapters a test belongs to: that of its folder (``tests/chNN/``), those of its ``chapter`` marks, and
    that of a chapter notebook it is parametrized with (``book/NN-…/…``). Empty for a test of the shared package."""
    found = {n for mark in item.iter_markers("chapter") for n in mark.args}
    folder = Path(str(getattr(item, "path", ""))).parent.name
    if m := re.fullmatch(r"ch(\d\d)", folder):
        found.add(int(m.group(1)))
    for value in getattr(getattr(item, "callspec", None), "params", {}).values():
        if isinstance(value, Path) and (m := re.search(r"book/(\d\d)-[^/]+/", value.as_posix())):
            found.add(int(m.group(1)))
    return found


def pytest_collection_modifyitems(config, items):
    spec = os.environ.get("COURSE_TEST_CHAPTERS", "all")
    if spec.strip().lower() == "all":
        return
    from attention_course.notebook.assign import parse_chapters

    chosen = set(parse_chapters(spec))
    keep, other = [], []
    for item in items:
        chapters = _chapters_of(item)
        (other if chapters and not chapters & chosen else keep).append(item)
    if other:
        config.hook.pytest_deselected(items=other)
        items[:] = keep


def cost_of(fw_module):
    """The framework's cost module of ``make bench`` (``ac.bench.torch_cost`` or ``ac.bench.keras_cost``)."""
    import attention_course as ac

    return ac.bench.torch_cost if backend(fw_module).is_torch else ac.bench.keras_cost


@pytest.fixture(scope="session")
def stories():
    """llama2.c's pretrained stories260K and its tokenizer (Chapter 10), or the test is skipped when the file is
    neither beside the repository (COURSE_MODEL_DIR) nor reachable online."""
    from attention_course.ch10_modern_attention.llama2c import open_stories260k
    from attention_course.core.errors import CourseError

    try:
        return open_stories260k()
    except CourseError as err:
        pytest.skip(f"stories260K is not available: {err}")
