"""Files a learner owns or hands the course: checkpoints from elsewhere, a model written over their files."""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path

import numpy as np

from . import Probe


class _RunsCode:
    def __init__(self, proof: Path):
        self.proof = proof

    def __reduce__(self):
        return (os.system, (f"touch {self.proof}",))


def malicious_checkpoint(fw):
    """A crafted pickle as a training checkpoint: refused, and its code never runs."""
    with tempfile.TemporaryDirectory() as tmp:
        proof, ckpt = Path(tmp) / "code-ran", Path(tmp) / "ckpt"
        ckpt.write_bytes(pickle.dumps({"model": _RunsCode(proof)}))
        x = np.random.default_rng(0).integers(1, 9, size=(8, 5))
        model = fw.Translator(10, 10, "bahdanau", embed=4, hidden=4)
        try:
            fw.fit(model, (x, np.ones_like(x), x), x, epochs=1, batch_size=4, checkpoint=ckpt)
        finally:
            assert not proof.exists(), "loading the checkpoint ran the code inside it"


def _small_bert():
    import attention_course as ac

    model = ac.torch.Bert(vocab=30, d_model=8, heads=2, layers=1, d_ff=16, max_len=16)
    return ac.torch.export_bert(model)


def write_bert_over_files(fw):
    """``write_bert(folder)`` where the learner keeps notes and a script: both survive, moved aside together."""
    from attention_course.ch09_bert import pretrained

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        folder.mkdir()
        (folder / "notes.md").write_text("my notes")
        pretrained.write_bert(folder, _small_bert())
        aside = [p for p in Path(tmp).iterdir() if p.name.startswith("model.replaced-")]
        assert len(aside) == 1 and (aside[0] / "notes.md").read_text() == "my notes", "the learner's notes are lost"


def write_bert_into_the_current_folder(fw):
    """``write_bert('.')``: refused; the current folder keeps every file."""
    from attention_course.ch09_bert import pretrained

    with tempfile.TemporaryDirectory() as tmp:
        here = os.getcwd()
        (Path(tmp) / "train.py").write_text("print('mine')")
        os.chdir(tmp)
        try:
            pretrained.write_bert(".", _small_bert())
        finally:
            os.chdir(here)
            assert (Path(tmp) / "train.py").read_text() == "print('mine')", "the learner's script is lost"


PROBES = [
    Probe("files", "checkpoint that is a crafted pickle", malicious_checkpoint),
    Probe("files", "write_bert over a folder of the learner's files", write_bert_over_files, False),
    Probe("files", "write_bert('.')", write_bert_into_the_current_folder, False),
]
