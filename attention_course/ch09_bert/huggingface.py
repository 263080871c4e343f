"""Chapter 9's check against Hugging Face: the ``transformers`` library's ``BertModel`` (PyTorch) on the same files and
tokens as the course's ``Bert``, run in a Python process of its own. A process cannot give back the memory of the
libraries it has imported: in the notebook's kernel, PyTorch and ``transformers`` would hold about a quarter of a
gigabyte for the rest of the chapter, next to TensorFlow in a Keras kernel. Importing this module loads no
framework.

    python -m attention_course.ch09_bert.huggingface FOLDER INPUTS.npz OUTPUTS.npz     # what ``outputs`` runs
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attention_course.core.errors import ModelUnavailableError, ShapeError

__all__ = ["ReferenceOutputs", "missing", "outputs"]

LIBRARIES = ("torch", "transformers")


@dataclass
class ReferenceOutputs:
    """What ``BertModel`` returns with ``output_hidden_states`` and ``output_attentions``, as NumPy arrays."""

    hidden_states: list[np.ndarray]      # the embeddings' output, then each layer's: (B, T, d) each
    attentions: list[np.ndarray]         # each layer's attention weights: (B, h, T, T) each


def missing() -> str | None:
    """The libraries the reference needs that are not installed (``"transformers"``, ``"torch and transformers"``),
    or None when both are; nothing is imported."""
    absent = [name for name in LIBRARIES if importlib.util.find_spec(name) is None]
    return " and ".join(absent) or None


def outputs(folder: str | os.PathLike, ids, mask, timeout: float = 600) -> ReferenceOutputs:
    """``transformers``' ``BertModel`` read from ``folder`` (with its plain "eager" attention, which returns the
    weights) on ``ids`` and ``mask`` (B, T; True or 1 at real tokens), in a child process: every hidden state and
    every layer's attention weights. The inputs and outputs pass through a temporary folder, removed afterwards."""
    ids, mask = np.asarray(ids), np.asarray(mask)
    if ids.ndim != 2 or mask.shape != ids.shape:
        raise ShapeError(f"ids and mask must both be (B, T); got ids {ids.shape} and mask {mask.shape}")
    absent = missing()
    if absent:
        raise ModelUnavailableError(f"the reference BERT needs {absent}, which this Python does not have "
                                    "(pip install torch transformers)")
    package = str(Path(__file__).resolve().parents[2])        # the child imports this module from where we did
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package, os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory(prefix="reference-bert-") as scratch:
        given, got = Path(scratch) / "inputs.npz", Path(scratch) / "outputs.npz"
        np.savez(given, ids=ids.astype(np.int64), mask=mask.astype(np.int64))
        run = subprocess.run([sys.executable, "-m", __name__, str(folder), str(given), str(got)],
                             capture_output=True, text=True, timeout=timeout, env=env)
        if run.returncode != 0:
            lines = [line for line in run.stderr.splitlines() if line.strip()]
            raise ModelUnavailableError(f"transformers' BertModel could not run on {folder} (exit status "
                                        f"{run.returncode}): {lines[-1] if lines else 'no message'}")
        with np.load(got) as saved:
            return ReferenceOutputs(list(saved["hidden_states"]), list(saved["attentions"]))


def main(argv: list[str]) -> int:
    """The child: read the model and the inputs, write the outputs (stacked: (layers + 1, B, T, d) and
    (layers, B, h, T, T))."""
    folder, given, got = argv
    import torch
    from transformers import BertModel
    from transformers.utils import logging

    torch.set_num_threads(1)                     # a few sentences: one thread, as the course's own PyTorch kernel
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    model = BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    with np.load(given) as inputs:
        ids, mask = torch.as_tensor(inputs["ids"]), torch.as_tensor(inputs["mask"])
    with torch.no_grad():
        out = model(ids, attention_mask=mask, output_hidden_states=True, output_attentions=True)
    np.savez(got, hidden_states=torch.stack(out.hidden_states).numpy(), attentions=torch.stack(out.attentions).numpy())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
