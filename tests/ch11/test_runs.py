"""Chapter 11's stored runs, as both of its pages read them (``runs``)."""

import pandas as pd
import pytest

from attention_course.ch11_more_attention import runs
from attention_course.core.errors import InputError

pytestmark = pytest.mark.chapter(11)


def results(sizes, *made):
    return {"sizes": {"spell": sizes}, "runs": [
        {"model": model, "seed": seed,
         "rows": [{"model": name, "seed": seed, "PER": per} for name, per in rows]} for model, seed, rows in made]}


QUICK = {"n_train": 4000}
PYTORCH = results(QUICK, ("spell", 0, [("soft attention", 0.20), ("monotonic attention", 0.30)]),
                  ("spell", 1, [("soft attention", 0.22), ("monotonic attention", 0.34)]), ("copy", 0, [("pg", 0.9)]))
KERAS = results({"n_train": 80_000}, ("spell", 0, [("soft attention", 0.25), ("monotonic attention", 0.31)]))


def test_rows_are_every_seed_of_the_models_asked_for():
    table = runs.rows(PYTORCH, "spell")
    assert list(table["PER"]) == [0.20, 0.30, 0.22, 0.34] and set(table["seed"]) == {0, 1}
    assert len(runs.rows(PYTORCH, "spell", "copy")) == 5


def test_seeded_names_each_row_s_framework():
    table = runs.seeded({"pytorch": PYTORCH, "keras": KERAS}, "spell")
    assert table.groupby("framework").size().to_dict() == {"keras": 2, "pytorch": 4}


def test_gaps_compare_a_run_with_the_stored_run_of_its_seed_and_sizes():
    run = pd.DataFrame({"model": ["soft attention", "monotonic attention"], "PER": [0.21, 0.26]})
    gaps = runs.gaps({"pytorch": PYTORCH, "keras": KERAS}, "spell", {"pytorch": run, "keras": run}, QUICK,
                          ["PER"], seed=0)
    assert gaps.keys() == {"pytorch"}                                   # Keras' committed runs are another size
    assert gaps["pytorch"] == pytest.approx(0.04)
    assert runs.gaps({"pytorch": PYTORCH}, "spell", {"pytorch": run}, QUICK, ["PER"], seed=7) == {}


def test_mean_and_spread_per_framework_and_model():
    table = runs.mean_and_spread(runs.seeded({"pytorch": PYTORCH}, "spell"), ["PER"])
    assert table.loc[("pytorch", "soft attention"), "PER"] == "0.210 ± 0.014"
    assert table.loc[("pytorch", "monotonic attention"), "PER"] == "0.320 ± 0.028"


def test_bad_results_say_what_they_hold():
    with pytest.raises(InputError, match=r"no runs of news.*\['copy', 'spell'\]"):
        runs.rows(PYTORCH, "news")
    with pytest.raises(InputError, match="a list of runs under 'runs'"):
        runs.rows({"rows": []}, "spell")
