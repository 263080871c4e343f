"""Chapter 11's stored runs, as both of its pages read them: the rows of a results file written by
``tools/chapter11_full.py`` (``{"runs": [{"model", "seed", "seconds", "rows": [...]}, ...]}``), the same quick
experiment over several seeds in each framework, and their mean ± spread."""

from __future__ import annotations

from attention_course.core.errors import InputError

__all__ = ["rows", "seeded", "gaps", "mean_and_spread"]


def rows(results: dict, *models: str):
    """The rows of ``results``' runs of ``models``, every seed, as a DataFrame."""
    import pandas as pd

    if not isinstance(results, dict) or not isinstance(results.get("runs"), list):
        raise InputError(f"a results file holds a list of runs under 'runs'; got {type(results).__name__} with keys "
                         f"{sorted(results) if isinstance(results, dict) else None}")
    found = [row for run in results["runs"] if run["model"] in models for row in run["rows"]]
    if not found:
        raise InputError(f"no runs of {', '.join(models)} in these results: they hold "
                         f"{sorted({run['model'] for run in results['runs']})}")
    return pd.DataFrame(found)


def seeded(by_framework: dict[str, dict], experiment: str):
    """The rows of every run of ``experiment`` in each framework's results (framework → results), with a
    ``framework`` column."""
    import pandas as pd

    return pd.concat([rows(results, experiment).assign(framework=fw) for fw, results in by_framework.items()],
                     ignore_index=True)


def gaps(by_framework: dict[str, dict], experiment: str, runs: dict, sizes: dict, columns: list[str],
         seed: int) -> dict[str, float]:
    """Framework → the largest difference in ``columns`` between this session's run (``runs[framework]``, a table
    with a ``model`` column) and the stored run of the same seed, for the frameworks whose stored runs used
    ``sizes`` and hold that seed (the others have nothing to compare)."""
    out = {}
    for fw, table in runs.items():
        results = by_framework[fw]
        if results["sizes"][experiment] != sizes:
            continue
        stored = rows(results, experiment).query("seed == @seed").set_index("model")[columns]
        if len(stored):
            out[fw] = float((table.set_index("model")[columns] - stored).abs().max().max())
    return out


def mean_and_spread(table, columns: list[str]):
    """Each column's mean ± standard deviation over the seeds, per framework and model (BLEU to one decimal, the
    others to three)."""
    import pandas as pd

    stats = table.groupby(["framework", "model"])[columns].agg(["mean", "std"])
    return pd.DataFrame({c: [f"{m:.1f} ± {s:.1f}" if c == "BLEU" else f"{m:.3f} ± {s:.3f}"
                             for m, s in zip(stats[c]["mean"], stats[c]["std"], strict=True)] for c in columns},
                        index=stats.index)
