"""The command line shared by the chapter results tools (tools/full_run.py): model names that hold commas, the
framework a run enables, and the merging of results files written by runs in parallel."""

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from attention_course.ch05_neural_machine_translation import experiment as chapter5
from attention_course.ch06_image_captioning import experiment as chapter6
from attention_course.ch08_transformer import experiment as chapter8
from attention_course.core import checkpoint
from attention_course.notebook import frameworks
from tools import full_run

ROOT = Path(__file__).resolve().parents[2]

CAPTIONERS = list(chapter6.MODELS)


@pytest.mark.parametrize("spec, names", [
    ("soft, no gate", ["soft, no gate"]),
    ("soft", ["soft"]),
    ("soft,soft, no gate,hard", ["soft", "soft, no gate", "hard"]),
    ("soft, λ = 1,Show and Tell", ["soft, λ = 1", "Show and Tell"]),
    (",".join(CAPTIONERS), CAPTIONERS),
])
def test_model_names_may_hold_commas(spec, names):
    assert full_run.model_names(spec, CAPTIONERS) == names


def test_an_unknown_model_names_the_known_ones():
    with pytest.raises(SystemExit, match=r"unknown model 'sofft'.*Show and Tell; mean pooling"):
        full_run.model_names("sofft", CAPTIONERS)


def test_arguments_enable_only_the_chosen_framework(tmp_path):
    try:
        args = full_run.arguments("doc", chapter5.SIZES, list(chapter5.MODELS), tmp_path,
                                  ["--size", "full", "--seeds", "1,2", "--models", "Luong"])
        assert (args.size, args.seeds, args.models, args.out) == ("full", [1, 2], ["Luong"], tmp_path)
        assert frameworks.enabled() == ("pytorch",)           # a PyTorch run does not import TensorFlow
        full_run.arguments("doc", chapter5.SIZES, list(chapter5.MODELS), tmp_path, ["--framework", "keras"])
        assert frameworks.enabled() == ("keras",)
        with pytest.raises(SystemExit):
            full_run.arguments("doc", chapter5.SIZES, list(chapter5.MODELS), tmp_path, ["--seeds", "one"])
    finally:
        frameworks.use(None)


def _results(path, size, models):
    path.write_text(json.dumps({"command": f"run {' '.join(models)}", "size": size, "framework": "pytorch",
                                "runs": [{"model": m} for m in models]}))
    return path


@pytest.mark.parametrize("argv", [["--models", "Bahdanau,Luong"], ["--seeds", "0,1"], ["--framework", "keras"]])
def test_weights_are_saved_for_one_pytorch_model_only(tmp_path, argv):
    with pytest.raises(SystemExit):
        full_run.arguments("doc", chapter5.SIZES, list(chapter5.MODELS), tmp_path,
                           ["--models", "Bahdanau", "--weights", str(tmp_path / "w.npz"), *argv])
    frameworks.use(None)


def test_merge_keeps_every_run_and_command(tmp_path):
    a = _results(tmp_path / "a.json", "full", ["Bahdanau"])
    b = _results(tmp_path / "b.json", "full", ["Luong", "no attention"])
    out = tmp_path / "out" / "full-pytorch.json"
    assert full_run.main(["merge", str(out), str(a), str(b)]) == 0
    merged = json.loads(out.read_text())
    assert [r["model"] for r in merged["runs"]] == ["Bahdanau", "Luong", "no attention"]
    assert merged["command"] == "run Bahdanau ; run Luong no attention"
    c = _results(tmp_path / "c.json", "full", ["Luong"])
    c.write_text(json.dumps({**json.loads(c.read_text()), "command": "run Luong --out /tmp/runs/luong-s0 --seeds 1"}))
    assert full_run.merge([a, c])["command"] == "run Bahdanau ; run Luong --seeds 1"     # no machine's folder


def test_committed_results_name_no_machine_folder():
    for path in (ROOT / "book").glob("[0-9][0-9]-*/results/*.json"):
        command = str(json.loads(path.read_text()).get("command", ""))
        assert not re.search(r"/tmp/|/home/|/work/|/content/", command), (path.name, command)


def test_merge_keeps_the_sizes_of_every_experiment(tmp_path):
    a = _results(tmp_path / "a.json", "full", ["pointer"])
    b = _results(tmp_path / "b.json", "full", ["copy"])
    a.write_text(json.dumps({**json.loads(a.read_text()), "sizes": {"sorting": {"epochs": 10}}}))
    b.write_text(json.dumps({**json.loads(b.read_text()), "sizes": {"sorting": {"epochs": 3}, "copy": {"epochs": 8}}}))
    assert full_run.merge([a, b])["sizes"] == {"sorting": {"epochs": 10}, "copy": {"epochs": 8}}


def test_merge_refuses_files_of_another_size(tmp_path):
    a = _results(tmp_path / "a.json", "full", ["Bahdanau"])
    b = _results(tmp_path / "b.json", "cpu", ["Luong"])
    with pytest.raises(SystemExit, match="has size 'cpu'"):
        full_run.merge([a, b])


def test_the_machine_in_words_names_the_gpu(monkeypatch):
    from attention_course.core import machine

    monkeypatch.setattr(machine, "gpu_visible", lambda: True)
    monkeypatch.setattr(machine, "gpu_name", lambda: "NVIDIA H200")
    assert machine.in_words().endswith("cores, with a GPU (NVIDIA H200)")
    assert machine.describe(2)["gpu"] is True and machine.describe(2)["threads_used"] == 2
    monkeypatch.setattr(machine, "gpu_visible", lambda: False)
    assert machine.in_words().endswith("cores, no GPU")


def _run(model, seed, bleu):
    score = {"bleu": bleu, "chrf": 2 * bleu, "decode_seconds": 1.0}
    return {"model": model, "seed": seed, "parameters": 10, "train_seconds": 20.0, "epochs": 10,
            "beam1": {**score, "bleu": bleu - 1}, "beam5": score}


def test_head_to_head_gives_mean_and_spread_over_seeds():
    from attention_course.ch08_transformer import experiment as chapter8

    table = chapter8.head_to_head([_run("Bahdanau", 0, 30.0)],
                                  [_run("Transformer", s, b) for s, b in enumerate((34.0, 36.0, 35.0))])
    assert list(table.index) == ["Bahdanau", "Transformer"]
    assert table.loc["Transformer", "seeds"] == 3 and table.loc["Bahdanau", "seeds"] == 1
    assert table.loc["Transformer", "BLEU (beam 5)"] == pytest.approx(35.0)
    assert table.loc["Transformer", "BLEU (beam 5) sd"] == pytest.approx(1.0)
    assert table.loc["Transformer", "BLEU (greedy)"] == pytest.approx(34.0)
    assert table.loc["Transformer", "s / epoch"] == pytest.approx(2.0)
    assert table["BLEU (beam 5) sd"].isna()["Bahdanau"]                   # one seed: no spread


def test_chapter8_tool_sets_sizes_and_prints_the_committed_table(capsys):
    from tools import chapter8_full

    assert chapter8_full.overrides(["--size", "full", "--set", "dropout=0.3", "--set", "epochs=30"]) == (
        ["--size", "full"], {"dropout": 0.3, "epochs": 30})
    with pytest.raises(SystemExit, match="--set takes KEY=VALUE"):
        chapter8_full.overrides(["--set", "dropuot=0.3"])
    assert chapter8_full.main(["--size", "full", "--table"]) == 0
    out = capsys.readouterr().out
    for model in ("no attention", "Bahdanau", "Luong", "Transformer", "post-LN, no warm-up"):
        assert f"| {model} " in out, out
    with pytest.raises(SystemExit, match="no results file .*cpu-pytorch.json"):
        chapter8_full.table("cpu")
    assert set(chapter8.DATA) == set(chapter8.SIZES) and set(chapter8.DATA.values()) <= set(chapter5.SIZES)
    quick, deep = chapter8.SIZES["quick"], chapter8.SIZES["deep"]     # the stability experiment: only deeper
    assert {k for k in quick if deep[k] != quick[k]} == {"layers", "epochs"} and deep["layers"] > quick["layers"]


def test_chapter8_language_model_tool_trains_and_writes_its_results(tmp_path):
    from tools import chapter8_lm

    assert chapter8_lm.sizes_with("quick", ["epochs=2", "lr=1e-3"])["epochs"] == 2
    with pytest.raises(SystemExit, match="--set takes KEY=VALUE"):
        chapter8_lm.sizes_with("quick", ["epoch=2"])
    tiny = ["--size", "quick", "--set", "windows=64", "--set", "epochs=2", "--set", "context=16", "--set",
            "sample=5", "--set", "val_windows=8", "--out", str(tmp_path), "--checkpoints", str(tmp_path / "ckpt"),
            "--weights", str(tmp_path / "lm.npz")]
    (tmp_path / "lm.npz").write_text("someone's file")
    try:
        assert chapter8_lm.main(tiny) == 0
    finally:
        frameworks.use(None)
    result = json.loads((tmp_path / "lm-quick-pytorch.json").read_text())
    # the trained weights: float16, their sha256 in the results, an earlier file moved aside
    arrays, meta = checkpoint.load(tmp_path / "lm.npz")
    assert arrays and all(a.dtype == np.float16 for a in arrays.values())
    assert meta["val_loss"] == min(result["history"]["val_loss"]) and meta["sizes"] == result["sizes"]
    digest = hashlib.sha256((tmp_path / "lm.npz").read_bytes()).hexdigest()
    assert result["weights"] == {"file": "lm.npz", "bytes": (tmp_path / "lm.npz").stat().st_size, "sha256": digest}
    assert [f.read_text() for f in tmp_path.glob("lm.npz.replaced-*")] == ["someone's file"]
    assert result["sizes"]["windows"] == 64 and len(result["history"]["val_loss"]) == 2
    assert result["steps"] == [2, 4] and result["baselines"]["bigram"] < result["baselines"]["unigram"]
    assert set(result["samples"]) == {"0.0", "0.5", "1.0"}
    assert all(s.startswith("ROMEO:\n") and len(s) == len("ROMEO:\n") + 5 for s in result["samples"].values())
    assert (tmp_path / "ckpt" / "lm-quick-windows64-epochs2-context16-sample5-val_windows8-pytorch-seed0.ckpt").exists()


def test_results_are_written_and_the_training_clock_kept_beside_the_checkpoint(tmp_path):
    import time

    ckpt = tmp_path / "run.ckpt"
    full_run.seconds_so_far(ckpt, time.perf_counter())
    assert (tmp_path / "run.ckpt.seconds").exists()           # a resumed run adds its time to this one's
    full_run.write(tmp_path / "a" / "full-pytorch.json", {"runs": [{"model": "Transformer"}]})
    assert json.loads((tmp_path / "a" / "full-pytorch.json").read_text())["runs"][0]["model"] == "Transformer"


def test_chapter9_tool_pretrains_saves_finetunes_and_writes_its_results(tmp_path):
    from attention_course.ch09_bert import pretrained
    from tools import chapter9_pretrain

    tiny = ["--size", "quick", "--seeds", "1", "--set", "sequences=64", "--set", "epochs=1", "--set", "vocab=300",
            "--set", "d_model=16", "--set", "layers=1", "--set", "d_ff=32", "--out", str(tmp_path),
            "--checkpoints", str(tmp_path / "ckpt")]
    try:
        assert chapter9_pretrain.main(tiny) == 0
    finally:
        frameworks.use(None)
    result = json.loads((tmp_path / "pretraining-quick-pytorch.json").read_text())
    assert result["sizes"]["sequences"] == 64 and result["steps"] == [2] and len(result["history"]["val_loss"]) == 1
    assert [r["model"] for r in result["finetune"]] == ["small BERT, pretrained", "small BERT, from scratch"]
    assert {r["seed"] for r in result["chapter3"]["runs"]} == {0} and len(result["fill_in"]) == 4
    folder = tmp_path / "ckpt" / "small-bert-quick-sequences64-epochs1-vocab300-d_model16-layers1-d_ff32"
    model = pretrained.read_bert(folder)
    assert model.sizes["d_model"] == 16 and "cls.predictions.bias" in model.weights
    assert (folder / "tokenizer.json").exists()


def test_the_committed_chapter9_results_hold_what_the_chapter_reads():
    from pathlib import Path

    from attention_course.ch09_bert import experiment as chapter9

    result = json.loads((Path(__file__).parents[2] / "book/09-bert/results/pretraining-full-pytorch.json").read_text())
    table = chapter9.finetune_table(result["finetune"], result["chapter3"]["runs"])
    assert list(table.index) == ["small BERT, pretrained", "small BERT, from scratch", "Chapter 3: last state",
                                 "Chapter 3: attention"]
    assert (table["seeds"] == 5).all()
    assert min(result["history"]["val_loss"]) < result["unigram"]["loss"] and result["fill_in"]


def test_merge_names_every_machine_and_day(tmp_path):
    a, b = _results(tmp_path / "a.json", "cpu", ["Bahdanau"]), _results(tmp_path / "b.json", "cpu", ["Luong"])
    for path, hardware, date in ((a, "AMD EPYC, 2 cores", "2026-11-23"), (b, "Intel Xeon, 2 cores", "2026-11-24")):
        path.write_text(json.dumps({**json.loads(path.read_text()), "hardware": hardware, "date": date}))
    merged = full_run.merge([a, b])
    assert merged["hardware"] == "AMD EPYC, 2 cores ; Intel Xeon, 2 cores"
    assert merged["date"] == "2026-11-23 ; 2026-11-24"
    assert full_run.merge([a, a])["hardware"] == "AMD EPYC, 2 cores"           # one machine: said once


def test_chapter5_tables_give_mean_and_spread_over_seeds():
    def by_length(bleu):
        return [{"bucket": "1-3", "n": 5, "bleu": bleu}, {"bucket": "12+", "n": 2, "bleu": bleu / 2}]

    def run(model, seed, bleu):
        r = _run(model, seed, bleu)
        r["beam1"]["by_length"], r["beam5"]["by_length"] = by_length(bleu - 1), by_length(bleu)
        return r

    torch_runs = {"framework": "pytorch", "runs": [run("Bahdanau", 0, 20.0), run("Bahdanau", 1, 22.0),
                                                    run("no attention", 0, 10.0), run("no attention", 1, 10.0)]}
    keras_runs = {"framework": "keras", "runs": [run("no attention", 0, 11.0)]}
    table = chapter5.results_table(torch_runs, keras_runs)
    assert list(table.index) == [("keras", "no attention"), ("pytorch", "no attention"), ("pytorch", "Bahdanau")]
    row = table.loc[("pytorch", "Bahdanau")]
    assert row["seeds"] == 2 and row["BLEU beam 5"] == 21.0 and row["sd beam 5"] == pytest.approx(2 ** 0.5)
    assert row["BLEU greedy"] == 20.0 and row["chrF beam 5"] == 42.0 and row["s / epoch"] == 2.0
    assert np.isnan(table.loc[("keras", "no attention"), "sd beam 5"])           # one seed: no spread
    lengths = chapter5.length_table(torch_runs, keras_runs)
    bahdanau = lengths[(lengths.framework == "pytorch") & (lengths.model == "Bahdanau")].set_index("bucket")
    assert bahdanau.loc["1-3", "bleu"] == 20.0 and bahdanau.loc["12+", "bleu"] == 10.0   # greedy, mean of seeds
    assert list(bahdanau["lo"]) == [1, 12] and set(bahdanau["seeds"]) == {2}


def test_chapter6_seed_table_gives_mean_spread_and_the_lowest_seed():
    def run(model, seed, correct, bleu):
        return {"model": model, "seed": seed, "beam1": {"BLEU-4": bleu},
                "correctness": {"correctness": correct, "chance": 0.07, "n": 10}}

    torch_runs = {"framework": "pytorch", "runs": [run("soft", 0, 0.5, 40.0), run("soft", 1, 0.3, 44.0),
                                                    run("Show and Tell", 0, 0.0, 30.0)]}
    keras_runs = {"framework": "keras", "runs": [run("hard", 0, 0.1, 20.0)]}
    table = chapter6.seed_table(torch_runs, keras_runs)
    assert list(table.index) == [("keras", "hard"), ("pytorch", "Show and Tell"), ("pytorch", "soft")]
    soft = table.loc[("pytorch", "soft")]
    assert soft["seeds"] == 2 and soft["correctness"] == pytest.approx(0.4) and soft["lowest correctness"] == 0.3
    assert soft["sd correctness"] == pytest.approx(0.02 ** 0.5)              # the sample sd of 0.5 and 0.3
    assert soft["BLEU-4 greedy"] == 42.0 and soft["chance"] == pytest.approx(0.07)
    assert np.isnan(table.loc[("keras", "hard"), "sd BLEU-4"])                    # one seed: no spread
