"""Chapter 11's bad-input probes (``tools/probes/more_attention.py``; ``python tools/probe_inputs.py more_attention``
prints the table): each ends in the course's clear error or a right result, in both frameworks. Each was a finding
once: a NaN at a padded key reaching monotonic attention's context, the parallel form's alignment collapsing when
stopping probabilities saturate, a convolution reading the pads, NaN for a row with no visible key, a copy gate
mixing in rows that were not distributions, the frameworks reading a hole in a document differently."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.probe_inputs import GOOD, classify  # noqa: E402
from tools.probes import more_attention  # noqa: E402

pytestmark = pytest.mark.chapter(11)


@pytest.mark.parametrize("probe", more_attention.PROBES, ids=lambda p: f"{p.area}: {p.name}")
def test_every_probe_ends_in_a_clear_error_or_a_right_result(probe, fw):
    outcome, detail = classify(probe.run, fw)
    assert outcome in GOOD, f"{outcome}: {detail}"
