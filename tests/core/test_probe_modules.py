"""The bad-input probes of ``tools/probes/`` that run fast enough for every test run: each ends in the course's
clear error or a correct result, in both frameworks (``python tools/probe_inputs.py <module>`` prints the table).
Each was a finding once: a NaN behind the mask spreading through multi-head attention, causal_mask(T) read as a
padding mask with a batch of T, a cache fed another batch, dropout 1.5, sizes of 0, gates above 1, [CLS] weights
that were no distribution, a classifier built on a masked LM, the bare score base class, a NaN in a
padded value reaching FlashAttention's output."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.probe_inputs import GOOD, classify  # noqa: E402
from tools.probes import bert, modern, recurrent, transformers  # noqa: E402

CASES = [pytest.param(probe, id=f"{module.__name__.rsplit('.', 1)[1]} · {probe.area}: {probe.name}",
                      marks=pytest.mark.chapter(*chapters))
         for module, chapters in ((recurrent, (3, 4)), (transformers, (7, 8)), (bert, (9,)), (modern, (10,)))
         for probe in module.PROBES]


@pytest.mark.parametrize("probe", CASES)
def test_every_probe_ends_in_a_clear_error_or_a_right_result(probe, fw):
    outcome, detail = classify(probe.run, fw)
    assert outcome in GOOD, f"{outcome}: {detail}"
