"""``tools/chapter10_gpu.py``, the chapter's GPU table, run on the CPU at tiny sizes: its explicit row is the explicit
algorithm, which forms the T × T weights (Chapter 7's attention asked for them), so its memory grows with T² and
the tiled loop's with T. Counted in bytes of the tensors alive at once, never in seconds. (The row once called
Chapter 7's attention without asking for the weights, which hands over to the fused kernel: its memory was the
output's, nine times below the tiled loop's, against the chapter's argument.)"""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools import chapter10_gpu  # noqa: E402

pytestmark = pytest.mark.chapter(10)
B, H, D, BLOCK = 1, 2, 8, 8
LENGTHS = (64, 128, 256)


def test_the_explicit_row_forms_the_t_by_t_weights(tmp_path):
    out = tmp_path / "flash-cpu.json"
    assert chapter10_gpu.main(["--device", "cpu", "--lengths", ",".join(map(str, LENGTHS)), "--batch", str(B),
                               "--heads", str(H), "--dim", str(D), "--block", str(BLOCK), "--repeats", "1",
                               "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["device"] == "cpu" and results["shape"] == {"batch": B, "heads": H, "dim": D}
    peak = {(row["kernel"], row["T"], row["causal"]): row["peak_mb"] * 2**20 for row in results["rows"]
            if "peak_mb" in row}
    explicit, tiled = chapter10_gpu.EXPLICIT, chapter10_gpu.tiled_name(BLOCK)
    for causal in (False, True):
        for t in LENGTHS:
            weights = B * H * t * t * 4                                     # one float32 T × T matrix
            assert peak[explicit, t, causal] >= weights, (t, causal, peak)  # the weights are formed
        for short, long in zip(LENGTHS, LENGTHS[1:], strict=False):     # doubling T: the weights × 4
            assert 3.5 < peak[explicit, long, causal] / peak[explicit, short, causal] <= 4.5, peak
        assert peak[tiled, LENGTHS[-1], causal] < peak[explicit, LENGTHS[-1], causal] / 3, peak
    longest = B * H * LENGTHS[-1] ** 2 * 4
    assert peak[tiled, LENGTHS[-1], False] < longest / 4, peak              # a block of scores at a time,
    for short, long in zip(LENGTHS, LENGTHS[1:], strict=False):         # so doubling T doubles it (the causal
        assert 1.5 < peak[tiled, long, False] / peak[tiled, short, False] < 2.5, peak   # pass adds a bool T × T)
