"""tools/seed_spread.py: a page run with several seeds, one framework, its recorded numbers in a results file."""

import json

import nbformat
import pytest

from tools import seed_spread
from tools.run_notebook import run

PAGE = ("import os\n"
        "seed = int(os.environ['COURSE_SEED'])\n"
        "numbers = {'seed': seed, 'framework': os.environ['COURSE_FRAMEWORKS'], 'half': seed / 2}")


def _notebook(tmp_path, *sources):
    path = tmp_path / "page.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources]), path)
    return path


def test_every_run_is_a_row_with_its_seed_and_the_recorded_value(tmp_path):
    out = tmp_path / "seeds.json"
    status = seed_spread.main([str(_notebook(tmp_path, PAGE)), "--framework", "keras", "--seeds", "0,3",
                               "--repeats", "2", "--record", "numbers", "--out", str(out)])
    results = json.loads(out.read_text())
    assert status == 0 and results["framework"] == "keras" and results["profile"] == "quick"
    assert [(r["seed"], r["repeat"]) for r in results["runs"]] == [(0, 0), (0, 1), (3, 0), (3, 1)]
    assert [r["value"] for r in results["runs"]][1:3] == [{"seed": 0, "framework": "keras", "half": 0.0},
                                                         {"seed": 3, "framework": "keras", "half": 1.5}]
    assert "/tmp" not in results["command"] and "--record numbers" in results["command"]


def test_a_failed_claim_is_recorded_with_the_seed_and_the_status_says_so(tmp_path):
    out = tmp_path / "seeds.json"
    page = _notebook(tmp_path, PAGE, "assert seed != 1, 'not for seed 1'")
    status = seed_spread.main([str(page), "--framework", "pytorch", "--seeds", "0,1", "--record", "numbers",
                               "--out", str(out)])
    first, second = json.loads(out.read_text())["runs"]
    assert status == 1
    assert first["ok"] and first["value"]["seed"] == 0
    assert not second["ok"] and "not for seed 1" in second["error"] and second["value"] is None


def test_an_earlier_results_file_is_moved_aside_not_overwritten(tmp_path):
    out = tmp_path / "seeds.json"
    out.write_text("the earlier runs\n")
    seed_spread.main([str(_notebook(tmp_path, PAGE)), "--framework", "keras", "--seeds", "2", "--record", "seed",
                      "--out", str(out)])
    assert json.loads(out.read_text())["runs"][0]["value"] == 2
    assert [p.read_text() for p in tmp_path.glob("seeds.json.*")] == ["the earlier runs\n"]


@pytest.mark.parametrize("args, message", [
    (["--seeds", "0,one"], "--seeds must be whole numbers"),
    (["--repeats", "0"], "--repeats must be 1 or more"),
])
def test_bad_options_are_refused_by_name(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit):
        seed_spread.main([str(_notebook(tmp_path, PAGE)), "--framework", "keras", "--record", "seed",
                          "--out", str(tmp_path / "seeds.json"), *args])
    assert message in capsys.readouterr().err
    assert not (tmp_path / "seeds.json").exists()


def test_a_missing_notebook_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        seed_spread.main([str(tmp_path / "nowhere.ipynb"), "--framework", "keras", "--record", "x",
                          "--out", str(tmp_path / "seeds.json")])
    assert "no notebook at" in capsys.readouterr().err


def test_a_record_that_is_not_an_expression_is_refused_before_the_page_runs(tmp_path):
    page = _notebook(tmp_path, "open('ran', 'w').close()")
    with pytest.raises(ValueError, match="one Python expression"):
        run(page, record="x = 1")
    assert not (tmp_path / "ran").exists()


def test_a_page_that_stops_early_records_no_value(tmp_path):
    result = run(_notebook(tmp_path, "numbers = 1", "raise RuntimeError('stopped')"), record="numbers")
    assert not result["ok"] and result["value"] is None
