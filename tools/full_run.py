r"""What the results tools of Chapters 5 and 6 share: their command line, the model names it picks, the one
framework it enables, and the merging of results files written by runs in separate processes.

Several runs can share one GPU: start one process per model, each with its own ``--out`` folder, then merge::

    tools/chapter5_full.py --size full --model Bahdanau --out build/runs/bahdanau &
    tools/chapter5_full.py --size full --model Luong --out build/runs/luong &
    wait
    python -m tools.full_run merge book/05-neural-machine-translation/results/full-pytorch.json \
        build/runs/*/full-pytorch.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from attention_course.core.parallel import is_main, processes  # which process this is (loads no framework)


def model_names(spec: str, known: list[str]) -> list[str]:
    """The model names in ``spec``, separated by commas, where a name may itself hold a comma
    ("soft, no gate"): at each point the longest run of comma-separated parts that is a known name wins."""
    parts, names, i = spec.split(","), [], 0
    while i < len(parts):
        for j in range(len(parts), i, -1):
            name = ",".join(parts[i:j]).strip()
            if name in known:
                names.append(name)
                i = j
                break
        else:
            raise SystemExit(f"unknown model {parts[i].strip()!r} in --models {spec!r}; the models are: "
                             + "; ".join(known))
    if not names:
        raise SystemExit(f"--models {spec!r} names no model; the models are: " + "; ".join(known))
    return names


def arguments(doc: str, sizes: dict[str, Any], models: list[str], out: Path,
              argv: list[str] | None = None, parallel: bool = False) -> argparse.Namespace:
    """Parse the tools' common options (``--size``, ``--framework``, ``--seeds``, ``--models``, ``--out``, and
    with ``parallel`` ``--devices``); ``args.models`` becomes a list of known names and ``args.seeds`` a list of
    ints. Only the chosen framework is enabled, so a PyTorch run needs no TensorFlow; with ``parallel`` it trains
    on the devices asked for (:func:`start_devices`)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(sizes), default="cpu")
    parser.add_argument("--framework", choices=("pytorch", "keras"), default="pytorch")
    parser.add_argument("--seeds", default="0", help="comma-separated training seeds")
    parser.add_argument("--models", default=",".join(models),
                        help="comma-separated model names (default: all): " + "; ".join(models))
    parser.add_argument("--out", type=Path, default=out, help="folder of <size>-<framework>.json")
    parser.add_argument("--weights", type=Path, help="save the trained model's weights (float16) to this file; "
                        "one model and one seed, PyTorch")
    if parallel:
        add_devices(parser)
    args = parser.parse_args(argv)
    args.models = model_names(args.models, models)
    try:
        args.seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds must be comma-separated integers, got {args.seeds!r}")
    if args.weights and (len(args.models) > 1 or len(args.seeds) > 1 or args.framework != "pytorch"):
        parser.error("--weights saves one trained PyTorch model (both frameworks load it, Keras through "
                     "core.parity.torch_to_keras): give one --models name, one --seeds value and --framework pytorch")
    from attention_course.notebook import frameworks

    frameworks.use(args.framework)
    if parallel:
        args.devices = start_devices(args.framework, args.devices)
    elif processes() > 1:
        raise SystemExit("this tool trains on one device; start it without torchrun")
    return args


def add_devices(parser: argparse.ArgumentParser) -> None:
    """The ``--devices`` option of the tools that train data-parallel."""
    parser.add_argument("--devices", type=int, help="Keras: train on this many devices at once (default: every GPU; "
                        "on a CPU, that many virtual devices). PyTorch: start one process per device with "
                        "torchrun --nproc_per_node N instead")


def start_devices(framework: str, devices: int | None) -> int:
    """Train data-parallel where asked: PyTorch in the processes ``torchrun`` started (only process 0 reports and
    writes: results, checkpoints and weights are written once), Keras on ``devices`` devices of this process
    (by default every GPU, or one CPU). Returns the number of devices that train together (the results record
    it)."""
    if framework == "pytorch":
        if devices is not None and devices > 1:
            raise SystemExit("--devices is for Keras; for PyTorch start one process per device: "
                             "torchrun --nproc_per_node N tools/...")
        from attention_course.core.torch import parallel as torch_parallel

        started = torch_parallel.start()
        if not is_main():                                  # the others train in silence
            os.environ["COURSE_PROGRESS"] = "0"
            sys.stdout = open(os.devnull, "w")  # (for the rest of the process)
        return started
    import tensorflow as tf

    from attention_course.core.keras import parallel as keras_parallel

    strategy = keras_parallel.replicas(devices)
    if strategy.num_replicas_in_sync > 1:
        tf.distribute.experimental_set_strategy(strategy)  # every model of the run is made and trained on them
    return strategy.num_replicas_in_sync


def sizes_with(table: dict[str, dict[str, Any]], size: str, settings: list[str]) -> dict[str, Any]:
    """``table[size]`` with each ``KEY=VALUE`` of ``settings`` put in (numbers, of the type already there; an
    integer where the size is None)."""
    sizes = dict(table[size])
    for item in settings:
        key, _, value = item.partition("=")
        if key not in sizes or not value:
            raise SystemExit(f"--set takes KEY=VALUE with KEY one of {', '.join(sizes)}; got {item!r}")
        sizes[key] = (int if sizes[key] is None else type(sizes[key]))(float(value))
    return sizes


def write(out: Path, results: dict[str, Any]) -> None:
    """Write a results file; the tools call it after every model, so an interrupted run keeps what it measured."""
    from attention_course.core.files import rewrite_file  # an earlier file is moved aside, never overwritten

    if not is_main():                                      # written once, by process 0
        return
    rewrite_file(out, json.dumps(results, indent=1, ensure_ascii=False) + "\n")


def save_weights(path: Path, model, meta: dict[str, Any]) -> dict[str, Any]:
    """Save a trained PyTorch model's weights as a course checkpoint (``core.checkpoint``: arrays and JSON, no
    pickle), floating-point arrays in float16, with ``meta`` (what made it: the command, sizes, seed, scores).
    An earlier file at ``path`` is moved aside, never overwritten. Returns what the results file records of it:
    its name, size and sha256."""
    import hashlib

    import numpy as np

    from attention_course.core import checkpoint
    from attention_course.core.files import aside_name

    if not is_main():                                      # written once, by process 0
        return {}
    arrays = {}
    for name, tensor in model.state_dict().items():
        array = tensor.detach().cpu().numpy()
        arrays[name] = array.astype(np.float16) if np.issubdtype(array.dtype, np.floating) else array
    path = Path(path)
    if path.exists():
        path.rename(aside_name(path))
    checkpoint.save(path, arrays, {"weights": "float16", **meta})
    data = path.read_bytes()
    return {"file": path.name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def save_run_weights(args, model, results: dict[str, Any], run: dict[str, Any], **scores: Any) -> None:
    """With ``--weights``, save ``run``'s trained model (:func:`save_weights`), the command, sizes and ``scores``
    inside the file, and record the file in ``run``."""
    if args.weights:
        run["weights"] = save_weights(args.weights, model, {
            "command": results["command"], "model": run["model"], "seed": run["seed"], "size": args.size,
            "sizes": results["sizes"], **scores})


def save_tokenizers(args, results: dict[str, Any], data) -> None:
    """With ``--weights``, save the run's source and target subword tokenizers beside the weights, in the folder
    ``<weights without .npz>/`` (``source-tokenizer.json``, ``target-tokenizer.json``; earlier files moved aside),
    and record their sha256 as the record's ``model_files``, so that a reader can use the trained translator
    without rebuilding its training data (``ac.trained.folder``)."""
    if not args.weights or not is_main():                  # written once, by process 0
        return
    import hashlib

    from attention_course.core.files import aside_name

    folder = Path(args.weights).with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, tokenizer in (("source-tokenizer.json", data.src_tok), ("target-tokenizer.json", data.tgt_tok)):
        path = folder / name
        if path.exists():
            path.rename(aside_name(path))
        tokenizer.save(path)
        files[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    results["model_files"] = files


def seconds_so_far(checkpoint: Path, started: float) -> float:
    """Training seconds since ``started`` (``time.perf_counter()``) plus those of earlier runs resumed from
    ``checkpoint``, kept beside it in ``<checkpoint>.seconds`` (updated here)."""
    import time

    from attention_course.core.files import rewrite_file

    clock = checkpoint.with_name(checkpoint.name + ".seconds")
    seconds = time.perf_counter() - started + (float(clock.read_text()) if clock.exists() else 0.0)
    if is_main():                                          # written once, by process 0
        rewrite_file(clock, f"{seconds}\n")
    return seconds


def merge(files: list[Path]) -> dict[str, Any]:
    """One results dict from several files of the same size and framework: the runs of all, in order, the
    commands that made them, without their ``--out`` folders (and their hardware and dates, " ; "-joined where they
    differ), and the sizes of every experiment any file names (the first file's where two name the same one).
    Files of another size or framework are refused."""
    if not files:
        raise SystemExit("merge: no results files given")
    parts = [json.loads(Path(f).read_text()) for f in files]
    first = parts[0]
    for f, part in zip(files, parts, strict=True):
        for key in ("size", "framework"):
            if part[key] != first[key]:
                raise SystemExit(f"merge: {f} has {key} {part[key]!r}, {files[0]} has {first[key]!r}")
    # where each part was written (--out) is the machine's own folder, not how to make the results again
    commands = (re.sub(r" --out \S+", "", p["command"]) for p in parts)
    merged = {**first, "command": " ; ".join(commands), "runs": []}
    if isinstance(first.get("sizes"), dict):              # a file made before an experiment was added lacks its sizes
        merged["sizes"] = dict(first["sizes"])
        for part in parts[1:]:
            for key, value in part.get("sizes", {}).items():
                merged["sizes"].setdefault(key, value)
    for key in ("hardware", "date"):                     # runs made on other machines or days say so
        values = list(dict.fromkeys(str(p[key]) for p in parts if key in p))
        if len(values) > 1:
            merged[key] = " ; ".join(values)
    for part in parts:
        merged["runs"] += part["runs"]
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Merge results files of the chapter tools run in parallel.")
    sub = parser.add_subparsers(dest="verb", required=True)
    m = sub.add_parser("merge", help="write OUT with the runs of every INPUT")
    m.add_argument("out", type=Path)
    m.add_argument("inputs", type=Path, nargs="+")
    args = parser.parse_args(argv)
    merged = merge(args.inputs)
    write(args.out, merged)
    print(f"wrote {args.out}: {len(merged['runs'])} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
