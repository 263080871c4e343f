"""TensorFlow and Triton in one process: where Triton is installed, PyTorch loads it at an optimiser's first step,
and Triton's LLVM loaded after TensorFlow's aborts the process. ``quiet_frameworks`` (which the notebooks, the tests
and the tools call before TensorFlow) loads Triton first."""

import importlib.util
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                reason="Triton is not installed (the `kernels` extra; `make test` installs it)")

BOTH = "import tensorflow, torch; torch.optim.Adam(torch.nn.Linear(2, 2).parameters()); print('both')"


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_after_quiet_frameworks_tensorflow_and_triton_share_a_process():
    done = _run("from attention_course.core.quiet import quiet_frameworks; quiet_frameworks(); " + BOTH)
    assert done.returncode == 0 and done.stdout.strip() == "both", done.stderr[-2000:]


def test_without_it_the_process_aborts():
    """The failure the order prevents (if a later TensorFlow or Triton stops aborting, this test says so)."""
    done = _run(BOTH)
    assert done.returncode != 0 and "LLVM ERROR" in done.stderr, (done.returncode, done.stderr[-2000:])
