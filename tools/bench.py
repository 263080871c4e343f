"""``make bench``: every chapter's timing cases, in each framework → ``attention_course/benchmarks/<machine>.json``.

    .venv/bin/python tools/bench.py                       # both frameworks, 15 interleaved runs per case
    .venv/bin/python tools/bench.py --frameworks pytorch --repeats 31
    .venv/bin/python tools/bench.py --cases ch7                 # only Chapter 7's cases; the others are kept
    .venv/bin/python tools/bench.py --cases ch7-memory          # only Chapter 7's peak memory

Cases (the chapters quote them through ``ac.bench.load(case)``):
  ch2-length   global, local-m and local-p attention (D = 8, d = 32, batch 1) against the sequence length
  ch2-window   local-p against the window half-width D at S = 2048, with global attention for reference
  ch4-concat   the concat and additive score layers (the same numbers) on a batch of 8 × 128 × 64
  ch4-scores   dot, general and additive ScoredAttention (batch 4) at d = u ∈ {16, 64} against the length
  ch7-mha      multi-head attention at batch 8 × 8 heads × d_head 64 against the length T, forward and forward +
               backward: the explicit softmax, the fused kernel, the course's MultiHeadAttention (weights not
               requested) and the framework's own layer (Keras up to T = 2048: its explicit path is slow there)
               and each row's TFLOP/s (``ac.bench.attention_flops`` / median); on a GPU the machine's entry adds
               the TFLOP/s of an 8192³ float32 matrix product, the reference to read them against
  ch8-kvcache  greedy decoding of 8 sentences by a small random Transformer with its key–value cache and recomputing
               the prefix at every step, against the number of steps
  ch7-memory   the peak extra memory of one forward pass of each of those, each in a fresh process: resident
               memory on a CPU, the GPU memory PyTorch allocates on a GPU
  ch10-flash   one head-batch of 8 heads × d_head 64 (batch 1) against the length T, forward: the explicit softmax,
               the fused kernel and the course's tiled flash_attention (blocks of 128 keys)
  ch10-memory  the peak extra memory of one forward pass of each of those, each in a fresh process, as ch7-memory
  ch10-decode  one decoding step (batch 1, 8 heads × d_head 64) after a context of each length: softmax attention
               over the key–value cache against linear attention's fixed-size state
  train-step   one training step (forward, backward, Adam) of Chapters 5, 6, 8 and 9's models at their quick sizes,
               through each chapter's own training code (``ac.bench.training_pass``)
Each row: median and quartiles in milliseconds over ``repeats`` runs after two warm-up runs; the cases that are
compared take turns (ac.bench.time_interleaved). Timings are never asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LENGTHS = [128, 256, 512, 1024, 2048, 4096]
WINDOWS = [1, 2, 4, 8, 16, 32, 64]
SCORE_LENGTHS, SCORE_SIZES = [16, 64, 256], [16, 64]
MHA_LENGTHS = {"pytorch": [128, 256, 512, 1024, 2048, 4096], "keras": [128, 256, 512, 1024, 2048]}
CACHE_STEPS = [8, 16, 32, 64, 128]
FLASH_LENGTHS = [512, 1024, 2048, 4096]
DECODE_LENGTHS = [256, 1024, 4096, 16384, 65536]
CASES = ("ch2", "ch4", "ch7", "ch8", "ch10", "train")   # and "ch7-memory", "ch10-decode": one case alone


def peak_mb(framework: str, kind: str, length: int, batch: int = 8) -> float:
    """The peak resident memory one forward pass of ``kind`` adds, in MB, measured in a fresh process (the
    high-water mark of a process only grows, so each case needs its own)."""
    out = subprocess.run([sys.executable, __file__, "--peak", framework, kind, str(length), str(batch)], check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def _peak_child(framework: str, kind: str, length: int, batch: int) -> None:
    """Build the case, note the resident memory, run one forward pass, print the peak extra MB."""
    import attention_course as ac
    from attention_course.notebook import frameworks, session

    frameworks.use(framework)
    session.seed_everything(0)
    if framework == "pytorch" and ac.torch.device().type == "cpu":
        session.cpu_threads()                                   # as ac.setup does
    elif framework == "keras" and ac.keras.device() == "/CPU:0":
        session.tensorflow_threads()                            # likewise
    cost = ac.bench.torch_cost if framework == "pytorch" else ac.bench.keras_cost
    run = cost.attention_pass(kind, 16, batch=batch)                  # load the kernels at a tiny size first
    run()
    run = cost.attention_pass(kind, length, batch=batch)
    if framework == "pytorch" and ac.torch.device().type == "cuda":
        import torch

        torch.cuda.reset_peak_memory_stats()
        allocated = torch.cuda.memory_allocated()
        run()
        print(max(torch.cuda.max_memory_allocated() - allocated, 0) / 2**20)
        return
    resident = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    run()
    print(max(_high_water() - resident, 0) / 2**20)


def _high_water() -> int:
    """This process's peak resident memory in bytes: VmHWM, which starts afresh at exec. (getrusage's ru_maxrss
    does not: a child started by a large parent reports the parent's peak.)"""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024                      # kB
    raise RuntimeError("no VmHWM in /proc/self/status: the peak memory needs Linux")


def measure(cost, repeats: int, chapters=CASES, framework: str = "pytorch") -> dict[str, list[dict]]:
    from attention_course import bench

    cases: dict[str, list[dict]] = {}

    def record(case, runs, make=cost.forward, repeats=repeats, warmup=2, flops=None, **fixed):
        samples = bench.time_interleaved({k: make(k, **a) for k, a in runs.items()}, repeats=repeats, warmup=warmup)
        for kind, s in samples.items():
            row = {"kind": kind, **fixed, **runs[kind], **bench.summarize(s)}
            if flops:
                row["tflops"] = flops(kind, **runs[kind]) / (row["median_ms"] / 1e3) / 1e12
            cases.setdefault(case, []).append(row)

    if "ch7-memory" in chapters and "ch7" not in chapters:
        for n in MHA_LENGTHS[framework]:
            for kind in cost.MHA_KINDS:
                cases.setdefault("ch7-memory", []).append(
                    {"kind": kind, "length": n, "peak_mb": peak_mb(framework, kind, n)})
    if "ch7" in chapters:
        for n in MHA_LENGTHS[framework]:
            for backward in (False, True):
                record("ch7-mha", {k: {"length": n, "backward": backward} for k in cost.MHA_KINDS},
                       make=cost.attention_pass, repeats=min(repeats, 5), warmup=1, flops=bench.attention_flops,
                       passes="forward and backward" if backward else "forward")
                print(f"  ch7-mha T={n} backward={backward}", flush=True)
            for kind in cost.MHA_KINDS:
                cases.setdefault("ch7-memory", []).append(
                    {"kind": kind, "length": n, "peak_mb": peak_mb(framework, kind, n)})
    if "ch8" in chapters:
        fw = import_module(f"attention_course.{'torch' if framework == 'pytorch' else 'keras'}")
        for n in CACHE_STEPS:
            record("ch8-kvcache", {k: {"steps": n} for k in ("cache", "recompute")},
                   make=lambda kind, steps: bench.decoding_pass(fw, kind, steps), repeats=min(repeats, 7))
    if "train" in chapters:
        fw = import_module(f"attention_course.{'torch' if framework == 'pytorch' else 'keras'}")
        record("train-step", {k: {} for k in bench.TRAINED}, make=lambda kind: bench.training_pass(fw, kind),
               repeats=min(repeats, 9))
    if "ch10" in chapters or "ch10-decode" in chapters:
        for n in DECODE_LENGTHS:
            record("ch10-decode", {k: {"length": n} for k in cost.DECODE_KINDS}, make=cost.decode_step)
    if "ch10" in chapters:
        for n in FLASH_LENGTHS:
            record("ch10-flash", {k: {"length": n, "batch": 1} for k in cost.FLASH_KINDS}, make=cost.attention_pass,
                   repeats=min(repeats, 5), warmup=1, passes="forward",
                   flops=lambda kind, length, batch: bench.attention_flops(kind, length, batch=batch))
            for kind in cost.FLASH_KINDS:
                cases.setdefault("ch10-memory", []).append(
                    {"kind": kind, "length": n, "batch": 1, "peak_mb": peak_mb(framework, kind, n, batch=1)})
            print(f"  ch10-flash T={n}", flush=True)
    if "ch2" in chapters:
        for n in LENGTHS:
            record("ch2-length", {k: {"length": n, "window": 8, "dim": 32} for k in ("global", "local-m", "local-p")})
        for w in WINDOWS:
            record("ch2-window", {"local-p": {"length": 2048, "window": w, "dim": 32},
                                  "global": {"length": 2048, "window": w, "dim": 32}})
    if "ch4" in chapters:
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
    parser.add_argument("--cases", default=",".join(CASES),
                        help="chapters whose cases to run: ch2, ch4, ch7, ch8, ch10, train; or one case: "
                             "ch7-memory, ch10-decode")
    parser.add_argument("--peak", nargs=4, metavar=("FRAMEWORK", "KIND", "LENGTH", "BATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peak:
        _peak_child(args.peak[0], args.peak[1], int(args.peak[2]), int(args.peak[3]))
        return 0
    chapters = [c.strip() for c in args.cases.split(",")]
    if set(chapters) - {*CASES, "ch7-memory", "ch10-decode"}:
        parser.error(f"--cases takes {', '.join(CASES)}, ch7-memory or ch10-decode; got {args.cases!r}")

    import attention_course as ac
    from attention_course import bench
    from attention_course.core.quiet import quiet_frameworks
    from attention_course.notebook import frameworks, session

    quiet_frameworks()                                   # no ac.setup: a benchmark needs no charts or magics
    chosen = frameworks.use(args.frameworks)
    session.seed_everything(0)
    info, versions, gpu = bench.machine(), {}, None
    results: dict[str, list[dict]] = {}
    for fw in chosen:
        if fw == "keras":
            import keras
            import tensorflow as tf

            versions.update(keras=keras.__version__, tensorflow=tf.__version__)
            if not tf.config.list_physical_devices("GPU"):
                info["tensorflow_threads"] = session.tensorflow_threads()   # as ac.setup does
            cost = ac.bench.keras_cost
        else:
            import torch

            versions["torch"] = torch.__version__
            if not torch.cuda.is_available():
                session.cpu_threads()                           # as ac.setup does: what the chapters run with
            info["torch_threads"] = torch.get_num_threads()
            gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
            cost = ac.bench.torch_cost
            if gpu and "ch7" in chapters:
                info["matmul_tflops_float32"] = cost.matmul_tflops()
        for case, rows in measure(cost, args.repeats, chapters, fw).items():
            results.setdefault(case, []).extend({"framework": fw, **row} for row in rows)
            print(f"{fw} · {case}: {len(rows)} rows", flush=True)
    name = bench.machine_name(info, gpu)
    path = args.out / f"{name}.json"
    old = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    for case in results:   # a run of one framework keeps the other framework's rows
        kept = [r for r in old["cases"].get(case, []) if r["framework"] not in chosen]
        results[case] = kept + results[case]
    measured = {case: old.get("machine", {}).get("date") for case in old["cases"]}
    measured.update(old.get("measured", {}))
    measured.update({case: info["date"] for case in results})           # the cases measured by this run
    for case, rows in old["cases"].items():   # a run of some chapters keeps the other chapters' cases
        results.setdefault(case, rows)
    versions = {**old.get("versions", {}), **versions}
    data = {"name": name, "machine": {**info, "gpu": gpu}, "versions": versions, "repeats": args.repeats,
            "measured": measured, "cases": results}
    args.out.mkdir(parents=True, exist_ok=True)
    from attention_course.core.files import rewrite_file

    rewrite_file(path, json.dumps(data, indent=1) + "\n")          # the earlier file is moved aside
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
