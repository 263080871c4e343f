"""``make bench``: every chapter's timing cases, in each framework → ``attention_course/benchmarks/<machine>.json``.

    .venv/bin/python tools/bench.py                       # both frameworks, 15 interleaved runs per case
    .venv/bin/python tools/bench.py --frameworks pytorch --repeats 31

Cases (the chapters quote them through ``ac.bench.load(case)``):
  ch2-length   global, local-m and local-p attention (D = 8, d = 32, batch 1) against the sequence length
  ch2-window   local-p against the window half-width D at S = 2048, with global attention for reference
  ch4-concat   the concat and additive score layers (the same numbers) on a batch of 8 × 128 × 64
  ch4-scores   dot, general and additive ScoredAttention (batch 4) at d = u ∈ {16, 64} against the length
Each row: median and quartiles in milliseconds over ``repeats`` runs after two warm-up runs; the cases that are
compared take turns (ac.bench.time_interleaved). Timings are never asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LENGTHS = [128, 256, 512, 1024, 2048, 4096]
WINDOWS = [1, 2, 4, 8, 16, 32, 64]
SCORE_LENGTHS, SCORE_SIZES = [16, 64, 256], [16, 64]


def measure(cost, repeats: int) -> dict[str, list[dict]]:
    from attention_course import bench

    cases: dict[str, list[dict]] = {"ch2-length": [], "ch2-window": [], "ch4-concat": [], "ch4-scores": []}

    def record(case, runs, **fixed):
        samples = bench.time_interleaved({k: cost.forward(k, **a) for k, a in runs.items()}, repeats=repeats)
        for kind, s in samples.items():
            cases[case].append({"kind": kind, **fixed, **runs[kind], **bench.summarize(s)})

    for n in LENGTHS:
        record("ch2-length", {k: {"length": n, "window": 8, "dim": 32} for k in ("global", "local-m", "local-p")})
    for w in WINDOWS:
        record("ch2-window", {"local-p": {"length": 2048, "window": w, "dim": 32},
                              "global": {"length": 2048, "window": w, "dim": 32}})
    record("ch4-concat", {k: {"length": 128, "dim": 64, "batch": 8} for k in ("score-concat", "score-additive")})
    for d in SCORE_SIZES:
        for n in SCORE_LENGTHS:
            record("ch4-scores", {k: {"length": n, "dim": d, "batch": 4} for k in ("dot", "general", "additive")})
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frameworks", default="both", help="both, keras or pytorch")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out", type=Path, default=ROOT / "attention_course" / "benchmarks")
    args = parser.parse_args()

    import attention_course as ac
    from attention_course import bench

    session = ac.setup(seed=0, frameworks=args.frameworks)
    info, versions, gpu = bench.machine(), {}, None
    results: dict[str, list[dict]] = {}
    for fw in session.frameworks:
        if fw == "keras":
            import keras
            import tensorflow as tf

            versions.update(keras=keras.__version__, tensorflow=tf.__version__)
            cost = ac.keras.cost
        else:
            import torch

            versions["torch"] = torch.__version__
            info["torch_threads"] = torch.get_num_threads()
            gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
            cost = ac.torch.cost
        for case, rows in measure(cost, args.repeats).items():
            results.setdefault(case, []).extend({"framework": fw, **row} for row in rows)
            print(f"{fw} · {case}: {len(rows)} rows", flush=True)
    name = bench.machine_name(info, gpu)
    path = args.out / f"{name}.json"
    old = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    for case in results:   # a run of one framework keeps the other framework's rows
        kept = [r for r in old["cases"].get(case, []) if r["framework"] not in session.frameworks]
        results[case] = kept + results[case]
    data = {"name": name, "machine": {**info, "gpu": gpu}, "versions": versions, "repeats": args.repeats,
            "cases": results}
    args.out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
