"""Training checkpoints hold numbers only: loading one never runs code it carries; a loss over nothing is an error."""
import os
import pickle

import numpy as np
import pytest

import attention_course as ac
from attention_course.core import checkpoint
from attention_course.core.errors import CheckpointError, CourseError


class _RunsCode:
    """What a crafted pickle does: unpickling calls os.system (here: writes a file to prove it ran)."""

    def __init__(self, proof):
        self.proof = proof

    def __reduce__(self):
        return (os.system, (f"touch {self.proof}",))


def test_a_checkpoint_round_trips_arrays_and_json(tmp_path):
    arrays = {"model.0": np.arange(6, dtype=np.float32).reshape(2, 3), "optimizer.0.step": np.array(3.0)}
    checkpoint.save(tmp_path / "ckpt", arrays, {"epoch": 2, "history": {"loss": [1.5, 0.5]}})
    got, meta = checkpoint.load(tmp_path / "ckpt")
    assert meta["epoch"] == 2 and meta["history"] == {"loss": [1.5, 0.5]}
    np.testing.assert_array_equal(got["model.0"], arrays["model.0"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]      # nothing half-written left beside it


@pytest.mark.parametrize("fw", ["torch", "keras"])
def test_fit_refuses_a_malicious_pickle_checkpoint_without_running_it(fw, tmp_path):
    proof = tmp_path / "code-ran"
    ckpt = tmp_path / "ckpt"
    ckpt.write_bytes(pickle.dumps({"model": _RunsCode(proof)}))
    module = getattr(ac, fw)
    x = np.random.default_rng(0).integers(1, 9, size=(8, 5))
    model = module.Translator(10, 10, "bahdanau", embed=4, hidden=4)
    with pytest.raises(CheckpointError, match=r"ckpt is not a course checkpoint.*pickle.*delete it") as info:
        module.fit(model, (x, np.ones_like(x), x), x, epochs=1, batch_size=4, checkpoint=ckpt)
    assert isinstance(info.value, CourseError)
    assert not proof.exists(), "loading the checkpoint ran the code inside it"
    assert ckpt.read_bytes() == pickle.dumps({"model": _RunsCode(proof)})   # the file is left as it was


def test_a_torch_save_archive_is_refused_too(tmp_path):
    import torch

    proof = tmp_path / "code-ran"
    torch.save({"model": _RunsCode(proof)}, tmp_path / "ckpt")
    with pytest.raises(CheckpointError, match="not a course checkpoint.*torch.save"):
        checkpoint.load(tmp_path / "ckpt")
    assert not proof.exists()


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 truncated", b"\x00" * 64])
def test_a_damaged_checkpoint_is_a_clear_error(tmp_path, content):
    (tmp_path / "ckpt").write_bytes(content)
    with pytest.raises(CheckpointError, match="ckpt"):
        checkpoint.load(tmp_path / "ckpt")


@pytest.mark.parametrize("fw", ["torch", "keras"])
def test_the_loss_of_no_targets_is_an_error_not_zero(fw):
    module = getattr(ac, fw)
    x = np.random.default_rng(0).integers(1, 9, size=(4, 5))
    model = module.Translator(10, 10, "bahdanau", embed=4, hidden=4)
    with pytest.raises(ac.errors.InputError, match="mean loss of no targets.*ignored id 0"):
        module.evaluate_loss(model, (x, np.ones_like(x), x), np.zeros_like(x), ignore_index=0)
    assert np.isfinite(module.evaluate_loss(model, (x, np.ones_like(x), x), x, ignore_index=0))
