"""Every writer of the package, run into a folder of someone else's files: every byte is still there afterwards
(in its place, or moved aside under a name that says so), and nothing half-written is left behind. The data cache,
``write_bert`` and the instructor's export have their own such tests (tests/data, tests/ch09, tests/notebook)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from attention_course.core.errors import CheckpointError
from attention_course.core.files import write_file


def someone_elses(folder: Path, *names: str) -> dict[Path, bytes]:
    """A folder holding files the package did not write: ``names`` plus notes and a script."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {folder / name: f"{name}: the user's own bytes\n".encode() for name in (*names, "notes.md", "train.py")}
    for path, body in files.items():
        path.write_bytes(body)
    return files


def assert_every_byte_kept(folder: Path, before: dict[Path, bytes]) -> None:
    """Each earlier file is in its place, or, if the writer replaced it, in one ``<name>.replaced-…`` beside it."""
    for path, body in before.items():
        if path.exists() and path.read_bytes() == body:
            continue
        aside = [p for p in folder.glob(path.name + ".replaced-*") if p.read_bytes() == body]
        assert len(aside) == 1, f"{path.name}: its bytes are gone"
    assert not list(folder.glob("*.part")), "a half-written file was left behind"


def test_write_file_moves_an_earlier_file_aside_and_keeps_everything_else(tmp_path):
    before = someone_elses(tmp_path, "results.json")
    old = write_file(tmp_path / "results.json", '{"new": 1}\n')
    assert old is not None and old.name.startswith("results.json.replaced-") and old.read_bytes() == before[
        tmp_path / "results.json"]
    assert (tmp_path / "results.json").read_text() == '{"new": 1}\n'
    assert write_file(tmp_path / "fresh.md", "# new\n") is None            # nothing there: nothing moved
    assert_every_byte_kept(tmp_path, before)


def test_an_interrupted_write_leaves_the_old_file_and_no_part(tmp_path, monkeypatch):
    before = someone_elses(tmp_path, "results.json")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_file(tmp_path / "results.json", "half")
    monkeypatch.undo()
    assert_every_byte_kept(tmp_path, before)
    assert (tmp_path / "results.json").read_bytes() == before[tmp_path / "results.json"]


def test_a_tokenizer_saved_over_a_users_file_moves_it_aside(tmp_path, capsys):
    from attention_course.ch05_neural_machine_translation.data import SubwordTokenizer

    before = someone_elses(tmp_path, "tokenizer.json")
    tok = SubwordTokenizer.train(["a small corpus of words", "words and more words"], 40)
    tok.save(tmp_path / "tokenizer.json")
    assert "moved it, untouched, to" in capsys.readouterr().out
    assert_every_byte_kept(tmp_path, before)
    assert SubwordTokenizer.load(tmp_path / "tokenizer.json").encode("words") == tok.encode("words")


def test_chapter_3_results_written_over_a_users_folder_keep_its_files(tmp_path, capsys):
    from attention_course.ch03_timestep_feature_attention.experiment import write_results

    before = someone_elses(tmp_path, "results.json", "results.md")
    write_results(tmp_path / "results.json", "{}\n")
    write_results(tmp_path / "results.md", "# results\n")
    assert capsys.readouterr().out.count("moved it, untouched") == 2
    assert_every_byte_kept(tmp_path, before)


def test_training_never_overwrites_a_file_that_is_not_its_checkpoint(fw, tmp_path):
    """fit(checkpoint=path) resumes from a course checkpoint there; any other file is refused, byte for byte kept."""
    before = someone_elses(tmp_path, "run.ckpt")
    x = np.random.default_rng(0).integers(1, 9, size=(8, 5))
    model = fw.Translator(10, 10, "bahdanau", embed=4, hidden=4)
    with pytest.raises(CheckpointError, match="run.ckpt"):
        fw.fit(model, (x, np.ones_like(x), x), x, epochs=1, batch_size=4, checkpoint=tmp_path / "run.ckpt")
    assert_every_byte_kept(tmp_path, before)


def test_a_run_rewrites_its_own_file_and_moves_an_earlier_one_aside_once(tmp_path):
    """``rewrite_file``, the writer of the results files, tables and pages the tools write again and again (after
    every model): the first write of a run moves an earlier file aside, the later ones replace the run's own."""
    from attention_course.core.files import rewrite_file

    before = someone_elses(tmp_path, "results.json")
    assert rewrite_file(tmp_path / "results.json", "first\n") is not None
    assert rewrite_file(tmp_path / "results.json", "second\n") is None, "the run's own file is simply replaced"
    assert (tmp_path / "results.json").read_text() == "second\n"
    assert len(list(tmp_path.glob("results.json.replaced-*"))) == 1
    assert_every_byte_kept(tmp_path, before)


def test_the_tools_results_writer_keeps_a_users_files(tmp_path):
    """The chapter tools' results files (``tools/full_run.py``): written over a folder of someone else's files,
    including a results.json of their own, every byte is still there."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tools import full_run

    before = someone_elses(tmp_path, "results.json")
    full_run.write(tmp_path / "results.json", {"runs": [1]})
    full_run.write(tmp_path / "results.json", {"runs": [1, 2]})
    assert (tmp_path / "results.json").read_text().count("\n") > 1
    assert_every_byte_kept(tmp_path, before)
