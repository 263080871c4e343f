"""The book's trained models (core.trained): every committed checkpoint is the file its record describes, loads as
float32 arrays; a file that is not the recorded one, or a model of other sizes, is refused with a clear error."""

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from attention_course.core import results, trained
from attention_course.core.errors import CheckpointError, InputError

BOOK = Path(__file__).resolve().parents[2] / "book"
RECORDS = sorted(p for p in BOOK.glob("*/checkpoints/*.json") if p.with_suffix(".npz").exists())


def test_every_chapter_that_trains_a_sequence_model_commits_one():
    chapters = {p.parts[-3][:2] for p in RECORDS}
    assert {"05", "06", "08"} <= chapters, RECORDS
    assert (BOOK / "09-bert/checkpoints/small-bert-full/model.safetensors").is_file()


@pytest.mark.parametrize("record", RECORDS, ids=lambda p: f"{p.parts[-3][:2]}/{p.stem}")
def test_each_checkpoint_is_the_recorded_file_in_float16(record):
    name = str(record.relative_to(BOOK).with_suffix(""))
    meta, arrays = trained.load(name)
    entry = meta.get("weights") or next(r["weights"] for r in meta["runs"] if "weights" in r)
    data = record.with_suffix(".npz").read_bytes()
    assert entry == {"file": record.with_suffix(".npz").name, "bytes": len(data),
                     "sha256": hashlib.sha256(data).hexdigest()}
    assert arrays and all(a.dtype == np.float32 for a in arrays.values() if np.issubdtype(a.dtype, np.floating))
    with np.load(record.with_suffix(".npz")) as raw:              # stored in float16: a few MB
        assert all(raw[k].dtype == np.float16 for k in arrays if np.issubdtype(arrays[k].dtype, np.floating))
    assert len(data) < 10 * 2**20 and "/tmp" not in record.read_text() and "/work" not in record.read_text()


def book_copy(tmp_path, monkeypatch, name="05-neural-machine-translation/checkpoints/bahdanau-cpu"):
    """The record and weights of ``name`` in a book folder of their own, the only place looked in."""
    for suffix in (".json", ".npz"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(BOOK / (name + suffix), tmp_path / (name + suffix))
    monkeypatch.setattr(results, "local_copies", lambda path: [tmp_path / path])
    monkeypatch.setattr(results, "URL", "http://127.0.0.1:9/")              # nothing answers there
    return tmp_path / name


def test_weights_that_are_not_the_recorded_ones_are_refused(tmp_path, monkeypatch):
    path = book_copy(tmp_path, monkeypatch)
    data = bytearray(path.with_suffix(".npz").read_bytes())
    data[-100] ^= 1
    path.with_suffix(".npz").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"bahdanau-cpu.npz has sha256 .* its record .* says"):
        trained.load("05-neural-machine-translation/checkpoints/bahdanau-cpu")


def test_missing_weights_name_where_they_were_looked_for(tmp_path, monkeypatch):
    path = book_copy(tmp_path, monkeypatch)
    path.with_suffix(".npz").unlink()
    with pytest.raises(results.ResultsUnavailableError, match=r"bahdanau-cpu.npz: not found here .* nor online"):
        trained.load("05-neural-machine-translation/checkpoints/bahdanau-cpu", timeout=2)


def test_a_record_without_one_weights_file_is_refused(tmp_path, monkeypatch):
    path = book_copy(tmp_path, monkeypatch)
    record = json.loads(path.with_suffix(".json").read_text())
    record["runs"].append(dict(record["runs"][0]))
    path.with_suffix(".json").write_text(json.dumps(record))
    with pytest.raises(results.ResultsUnavailableError, match="records 2 weights files"):
        trained.load("05-neural-machine-translation/checkpoints/bahdanau-cpu")


def test_weights_into_a_model_of_other_sizes_name_what_does_not_fit():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4))
    arrays = {"0.weight": np.zeros((4, 3), np.float32), "0.bias": np.zeros(4, np.float32)}
    assert trained.into_torch(model, arrays) is model and not model.training
    with pytest.raises(InputError, match=r"0.weight: model \(4, 3\), weights \(5, 3\)"):
        trained.into_torch(model, {**arrays, "0.weight": np.zeros((5, 3), np.float32)})
    with pytest.raises(InputError, match=r"missing \['0.bias'\], extra \['1.bias'\]"):
        trained.into_torch(model, {"0.weight": arrays["0.weight"], "1.bias": arrays["0.bias"]})


def bert_copy(tmp_path, monkeypatch):
    name = "09-bert/checkpoints/small-bert-full"
    shutil.copytree(BOOK / name, tmp_path / name)
    shutil.copy(BOOK / (name + ".json"), tmp_path / (name + ".json"))
    monkeypatch.setattr(results, "local_copies", lambda path: [tmp_path / path])
    monkeypatch.setattr(results, "URL", "http://127.0.0.1:9/")
    return name, tmp_path / name


def test_a_saved_folder_is_found_and_checked(tmp_path, monkeypatch):
    name, path = bert_copy(tmp_path, monkeypatch)
    assert trained.folder(name) == path
    with (path / "tokenizer.json").open("a") as f:
        f.write(" ")
    with pytest.raises(CheckpointError, match=r"small-bert-full/tokenizer.json has sha256 .* its record"):
        trained.folder(name)


def test_a_folder_missing_a_file_is_looked_for_online_and_named(tmp_path, monkeypatch):
    name, path = bert_copy(tmp_path, monkeypatch)
    (path / "model.safetensors").unlink()
    monkeypatch.setattr(trained.tempfile, "tempdir", str(tmp_path / "temporary"))
    (tmp_path / "temporary").mkdir()
    with pytest.raises(results.ResultsUnavailableError, match=r"small-bert-full/model.safetensors: not found here"):
        trained.folder(name, timeout=2)
    assert not list((tmp_path / "temporary").iterdir())          # no half a model left in a temporary folder
