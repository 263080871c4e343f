"""Data-parallel training (issue: full runs on several devices): two PyTorch processes started by ``torchrun``
(gloo, on this CPU) and Keras on two virtual CPU devices train as one device does on the whole mini-batch, through
``fit`` and through a results tool, and write their results, checkpoints and weights once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attention_course.core import parallel
from tools import full_run

ROOT = Path(__file__).resolve().parents[1].parent
FIT = Path(__file__).with_name("parallel_fit.py")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]


def _run(command):
    environment = {**os.environ, "COURSE_PROGRESS": "0", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _same_training(one, two, weights_to):
    a, b = (json.loads(Path(f"{p}.json").read_text()) for p in (one, two))
    assert a.keys() == b.keys() == {"loss", "accuracy", "val_loss"}
    for key in a:
        np.testing.assert_allclose(b[key], a[key], rtol=1e-5)
    wa, wb = np.load(f"{one}.npz"), np.load(f"{two}.npz")
    assert len(wa.files) == len(wb.files) > 5
    for k in wa.files:                              # Adam magnifies the sums' rounding a little over 12 steps
        np.testing.assert_allclose(wb[k], wa[k], atol=weights_to)
    assert Path(f"{two}.ckpt").exists()


@pytest.mark.parametrize("framework", ["pytorch", "keras"])
def test_two_devices_train_as_one(tmp_path, framework):
    one, two = tmp_path / "one", tmp_path / "two"
    _run([sys.executable, str(FIT), framework, str(one)])
    if framework == "pytorch":
        _run([*TORCHRUN, str(FIT), framework, str(two)])
    else:
        _run([sys.executable, str(FIT), framework, str(two), "2"])
    _same_training(one, two, weights_to=2e-3 if framework == "pytorch" else 1e-4)


@pytest.mark.parametrize("framework", ["pytorch", "keras"])
def test_a_results_tool_trains_on_two_devices_and_writes_once(tmp_path, framework):
    sizes = ["--size", "quick", "--set", "windows=250", "--set", "epochs=2", "--set", "sample=20",
             "--set", "val_windows=64", "--framework", framework]
    tool = str(ROOT / "tools/chapter8_lm.py")
    out = {}
    for n in (1, 2):
        folder = tmp_path / f"devices{n}"
        where = ["--out", str(folder), "--checkpoints", str(folder)]
        if n == 1:
            said = _run([sys.executable, tool, *sizes, *where])
        elif framework == "pytorch":
            said = _run([*TORCHRUN, tool, *sizes, *where])
        else:
            said = _run([sys.executable, tool, *sizes, *where, "--devices", "2"])
        assert said.count("wrote") == 1                          # one process reports
        assert sorted(p.suffix for p in folder.iterdir()) == [".ckpt", ".json", ".seconds"]
        out[n] = json.loads((folder / f"lm-quick-{framework}.json").read_text())
    assert (out[1]["devices"], out[2]["devices"]) == (1, 2)
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(out[2]["history"][key], out[1]["history"][key], rtol=1e-4)
    assert out[2]["history"]["val_loss"][-1] < out[2]["baselines"]["unigram"]    # it learned
    assert out[2]["samples"] == out[1]["samples"]


def test_devices_are_asked_for_in_each_framework_s_way(monkeypatch):
    with pytest.raises(SystemExit, match="torchrun --nproc_per_node"):
        full_run.start_devices("pytorch", 2)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    assert (parallel.processes(), parallel.rank(), parallel.is_main()) == (2, 1, False)
    with pytest.raises(SystemExit, match="trains on one device"):
        full_run.arguments("doc", {"quick": {}}, ["a"], Path("."), ["--size", "quick"])


def test_a_process_other_than_the_first_writes_no_results(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    full_run.write(tmp_path / "results.json", {"runs": []})
    assert not (tmp_path / "results.json").exists()
    monkeypatch.setenv("RANK", "0")
    full_run.write(tmp_path / "results.json", {"runs": []})
    assert json.loads((tmp_path / "results.json").read_text()) == {"runs": []}
