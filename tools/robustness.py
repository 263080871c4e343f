"""``make robustness``: every chapter in the quick profile, both frameworks, with several seeds.

    .venv/bin/python tools/robustness.py                        # seeds 0-4, every chapter
    .venv/bin/python tools/robustness.py --seeds 1,2 --chapters 2,4

Each run executes a chapter top to bottom with ``COURSE_SEED=<seed>`` (every seed of the notebook derives
from it), so the claims it asserts are checked on other data, initialisations and samples. Prints one row per
run (time, peak memory, the first failed assertion) and a summary of every failure with its seed; writes the
table to ``_build/robustness.md``. Exit status 1 when any claim failed for any seed: then the claim is wrong
for the quick profile, and the claim or the experiment must change, not the seed. Not part of ``make test``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))


def main() -> int:
    from run_notebook import run

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--chapters", default="all", help="comma-separated chapter numbers, or all")
    args = parser.parse_args()
    notebooks = sorted((ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))
    if args.chapters != "all":
        wanted = {int(c) for c in args.chapters.split(",")}
        notebooks = [p for p in notebooks if int(p.parent.name[:2]) in wanted]
    os.environ.update(COURSE_PROFILE="quick", COURSE_FRAMEWORKS="both", COURSE_PROGRESS="0")
    offline = ROOT.parent / "shared" / "data"      # the offline copies beside the repository, as in the tests
    if "COURSE_DATA_DIR" not in os.environ and offline.is_dir():
        os.environ["COURSE_DATA_DIR"] = str(offline)
    rows = ["| chapter | seed | result | time (s) | peak memory (MB) | first failed claim |",
            "|---|---|---|---|---|---|"]
    failures = []
    for path in notebooks:
        page = path.parent.name if path.stem == path.parent.name[3:] else f"{path.parent.name}/{path.stem}"
        for seed in [int(s) for s in args.seeds.split(",")]:
            os.environ["COURSE_SEED"] = str(seed)
            result = run(path)
            verdict = "pass" if result["ok"] else "FAIL"
            rows.append(f"| {page} | {seed} | {verdict} | {result['seconds']:.0f} | "
                        f"{result['peak_rss_mb']} | {(result['error'] or '').replace('|', '/')} |")
            print(rows[-1], flush=True)
            if not result["ok"]:
                failures.append(f"{page}, seed {seed}: {result['error']}")
    table = "\n".join(rows)
    summary = "\n".join(failures) or "every claim held for every seed"
    out = ROOT / "_build" / "robustness.md"
    out.parent.mkdir(exist_ok=True)
    from attention_course.core.files import rewrite_file

    rewrite_file(out, f"{table}\n\n{summary}\n")                      # an earlier report is moved aside
    print(f"\n{table}\n\n{summary}\n(written to {out.relative_to(ROOT)})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
