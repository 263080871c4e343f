"""Chapters 7 and 8 under bad input: every probe of ``tools/probes/transformers.py`` ends in the course's clear
error or a correct result, in both frameworks (``python tools/probe_inputs.py transformers`` prints the table).
Each of these was a finding once: a NaN behind the mask spreading, causal_mask(T) read as a padding mask with a
batch of T, a cache fed another batch, dropout 1.5, causal_mask(0) and SinusoidalPositions(0) accepted."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.probe_inputs import GOOD, classify  # noqa: E402
from tools.probes import transformers  # noqa: E402

pytestmark = pytest.mark.chapter(7, 8)


@pytest.mark.parametrize("probe", transformers.PROBES, ids=lambda p: f"{p.area}: {p.name}")
def test_every_probe_ends_in_a_clear_error_or_a_right_result(probe, fw):
    outcome, detail = classify(probe.run, fw)
    assert outcome in GOOD, f"{outcome}: {detail}"
