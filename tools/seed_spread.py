"""A page's numbers over several seeds, one framework per kernel, as a committed results file.

    .venv/bin/python tools/seed_spread.py book/09-bert/bert.ipynb --framework keras --seeds 0,1,2,3,4 \\
        --repeats 2 --record 'nsp9.to_dict("index")' --out book/09-bert/results/nsp-seeds-keras.json

Each run executes the page top to bottom in the quick profile, as `make robustness` does, but with one framework
(``COURSE_FRAMEWORKS``) and ``COURSE_SEED=<seed>``, then evaluates ``--record`` in its kernel. ``--repeats N`` runs
every seed N times: Keras on a CPU is not bit-reproducible, and the repeats show by how much a seed's numbers move.
The file holds every run (seed, repeat, whether the page's checks held and the first that failed, the recorded
value), the command, the machine and the date; a page quotes the spread from it, so its prose says what committed
runs measured. An earlier file at ``--out`` is moved aside, not overwritten. Exit status 1 when a run failed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import sys
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def spread(path: Path, framework: str, seeds: list[int], repeats: int, record: str,
           environment: dict[str, str] | None = None) -> list[dict]:
    """One row per run of ``path``: framework, seed, repeat, ok, error and the value of ``record``; the kernel
    gets ``environment`` beside the run's settings."""
    from tools.run_notebook import run

    rows = []
    for seed in seeds:
        for repeat in range(repeats):
            settings = {**(environment or {}), "COURSE_PROFILE": "quick", "COURSE_FRAMEWORKS": framework,
                        "COURSE_SEED": str(seed), "COURSE_PROGRESS": "0"}
            with mock.patch.dict(os.environ, settings):                  # the kernel's, not this process's
                result = run(path, record=record)
            rows.append({"framework": framework, "seed": seed, "repeat": repeat, "ok": result["ok"],
                         "error": result["error"], "value": result.get("value")})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def _shown(path: Path) -> str:
    """``path`` as the command in a committed file names it: from the repository's root, never a machine's folder."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--framework", choices=("pytorch", "keras"), required=True)
    parser.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated seeds")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each seed")
    parser.add_argument("--record", required=True, help="a Python expression the page defines, saved as JSON")
    parser.add_argument("--out", type=Path, required=True, help="the results file to write")
    args = parser.parse_args(argv)
    if not args.notebook.is_file():
        parser.error(f"no notebook at {args.notebook}")
    if args.repeats < 1:
        parser.error(f"--repeats must be 1 or more; got {args.repeats}")
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds must be whole numbers separated by commas, like 0,1,2; got {args.seeds!r}")
    offline = {name: ROOT.parent / "shared" / folder for name, folder in
               (("COURSE_DATA_DIR", "data"), ("COURSE_MODEL_DIR", "models"))}   # the copies beside it, as in the tests
    offline = {name: str(folder) for name, folder in offline.items() if name not in os.environ and folder.is_dir()}
    from attention_course.core import machine
    from attention_course.core.files import rewrite_file

    rows = spread(args.notebook, args.framework, seeds, args.repeats, args.record, offline)
    page = _shown(args.notebook)
    command = ["tools/seed_spread.py", page, "--framework", args.framework, "--seeds", args.seeds,
               "--repeats", str(args.repeats), "--record", args.record, "--out", _shown(args.out)]
    results = {"command": shlex.join(command), "page": page, "profile": "quick", "framework": args.framework,
               "record": args.record, "hardware": machine.in_words(), "date": datetime.date.today().isoformat(),
               "runs": rows}
    rewrite_file(args.out, json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    failed = [r for r in rows if not r["ok"]]
    for r in failed:
        print(f"seed {r['seed']}, run {r['repeat'] + 1}: {r['error']}", file=sys.stderr)
    print(f"{len(rows) - len(failed)} of {len(rows)} runs passed; written to {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
