"""The book's trained models: the float16 weights a chapter's results tool saved (``--weights``), committed beside
the chapter as ``<chapter>/checkpoints/<name>.npz`` with the record of the run that made them, ``<name>.json`` (the
command, the sizes, the hardware, the scores and the weights' sha256).

    record, arrays = ac.trained.load("05-neural-machine-translation/checkpoints/bahdanau-cpu")
    model = ac.torch.load_trained(build, arrays)                 # build(ac.torch): a model of the recorded sizes
    model = ac.keras.load_trained(build, arrays, example_inputs)  # Keras: through a PyTorch twin

Like the results (``core.results``), they are read from the book's folder where a notebook runs or from the checkout
the package came from, else from the repository online; the weights' sha256 is checked against the record.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

import numpy as np

from attention_course.core import checkpoint, results
from attention_course.core.errors import CheckpointError, InputError, ResultsUnavailableError

__all__ = ["load", "folder", "into_torch"]


def _record_weights(record: dict, name: str) -> dict:
    """The ``{"file", "bytes", "sha256"}`` entry of a record: at its top level (one model) or in its one run."""
    found = [record["weights"]] if "weights" in record else [r["weights"] for r in record.get("runs", [])
                                                              if "weights" in r]
    if len(found) != 1:
        raise ResultsUnavailableError(f"{name}.json records {len(found)} weights files; a trained model's record "
                                      "names exactly one (the results tools' --weights)")
    return found[0]


def load(name: str, *, timeout: float = 60.0) -> tuple[dict, dict[str, np.ndarray]]:
    """``(record, arrays)`` of the trained model ``name`` (``"<chapter>/checkpoints/<model>"``, relative to the
    book's folder): the JSON record of the run that made it and its weights as float32 arrays, by parameter name.
    Raises ``ResultsUnavailableError`` when either file is nowhere to be found, ``CheckpointError`` when the
    weights are not the recorded ones (another sha256) or not a course checkpoint."""
    record = results.load(name + ".json", timeout=timeout)
    expected = _record_weights(record, name)
    folder = name.rsplit("/", 1)[0]
    path = f"{folder}/{expected['file']}"
    data = results.read(path, timeout=timeout)
    _check(path, data, expected["sha256"], name)
    with tempfile.TemporaryDirectory() as tmp:             # np.load reads a file; it goes with the folder
        (Path(tmp) / "weights.npz").write_bytes(data)
        arrays, _ = checkpoint.load(Path(tmp) / "weights.npz")
    return record, {k: v.astype(np.float32) if np.issubdtype(v.dtype, np.floating) else v
                    for k, v in arrays.items()}


def folder(name: str, *, timeout: float = 60.0) -> Path:
    """The folder of a trained model saved as several files (``"09-bert/checkpoints/small-bert-full"``: a BERT's
    ``config.json``, ``model.safetensors`` and ``tokenizer.json``), each checked against the sha256 that its record
    ``<name>.json`` lists under ``model_files``: the book's own folder where there is one, else a new temporary
    folder holding the files read from the repository online. Raises ``CheckpointError`` naming a file that is
    not the recorded one."""
    record = results.load(name + ".json", timeout=timeout)
    files = record.get("model_files")
    if not files:
        raise ResultsUnavailableError(f"{name}.json lists no model_files: it is not the record of a saved model")
    local = [copy for copy in results.local_copies(name) if all((copy / f).is_file() for f in files)]
    if local:
        for file, expected in files.items():
            _check(f"{name}/{file}", (local[0] / file).read_bytes(), expected, name)
        return local[0]
    target = Path(tempfile.mkdtemp(prefix=name.rsplit("/", 1)[-1] + "-"))
    try:                                                   # all the files or none: no half a model left behind
        for file, expected in files.items():
            data = results.read(f"{name}/{file}", timeout=timeout)
            _check(f"{name}/{file}", data, expected, name)
            (target / file).write_bytes(data)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return target


def _check(path: str, data: bytes, expected: str, record: str) -> None:
    """A file read for a trained model is the one its record describes (the same sha256)."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise CheckpointError(f"{path} has sha256 {digest}, its record {record}.json says {expected}: the file is "
                              "not the one the record describes")


def into_torch(model, arrays: dict[str, np.ndarray]):
    """Put ``arrays`` (parameter name → array, as ``load`` returns them) into the PyTorch ``model``, every one of
    its parameters and buffers, and switch it to evaluation mode; returns the model. A missing, extra or
    differently shaped array raises ``InputError`` naming it (the model was built with other sizes)."""
    import torch

    state = model.state_dict()
    missing, extra = sorted(set(state) - set(arrays)), sorted(set(arrays) - set(state))
    wrong = [f"{k}: model {tuple(state[k].shape)}, weights {arrays[k].shape}" for k in state
             if k in arrays and tuple(state[k].shape) != arrays[k].shape]
    if missing or extra or wrong:
        raise InputError(f"the weights do not fit this {type(model).__name__}: missing {missing[:5]}, "
                         f"extra {extra[:5]}, other shapes {wrong[:5]}; build it with the sizes in the record")
    model.load_state_dict({k: torch.as_tensor(arrays[k], dtype=state[k].dtype) for k in state})
    return model.eval()

