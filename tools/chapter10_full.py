r"""Chapter 10's trained comparison: the same small decoder-only Llama with multi-head, grouped-query and multi-query
attention (``chapter10.VARIANTS``), with latent attention (``chapter10.LATENT``), and with linear attention
(``chapter10.LINEAR``; ``chapter10.DECAYED`` with RetNet's decay), on Tiny Shakespeare's characters, same windows and
steps, per seed; writes
book/10-modern-attention/results/<size>-<framework>.json: each run's validation loss per epoch, its best, the
numbers its key-value cache keeps per token, parameters, training time and the hardware.
The experiment is ``attention_course.ch10_modern_attention.experiment`` (the notebook calls the same functions).

    COURSE_DATA_DIR=/path/to/data .venv/bin/python tools/chapter10_full.py --size full --seeds 0,1,2    # a GPU
    COURSE_DATA_DIR=/path/to/data .venv/bin/python tools/chapter10_full.py --size quick --seeds 0,1,2 \
        --framework keras                      # the chapter's own runs, three seeds: minutes on a CPU

The chapter reads the quick files for its three-seed table and checks that its own run of a seed equals the file's.

Runs share a GPU well: one process per variant and seed, each with its own ``--out``, then ``tools/full_run.py
merge``. Checkpoints go to build/chapter10/<size>-<framework>-<variant>-seed<seed>.ckpt after every epoch; an
interrupted run started again resumes from them.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attention_course.core.quiet import quiet_frameworks  # noqa: E402

quiet_frameworks()
from attention_course.ch05_neural_machine_translation.experiment import parameters  # noqa: E402
from attention_course.ch08_transformer import experiment as chapter8  # noqa: E402
from attention_course.ch10_modern_attention import experiment as chapter10  # noqa: E402
from attention_course.core import machine  # noqa: E402
from tools import full_run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    args = full_run.arguments(__doc__, chapter10.SIZES, list(chapter10.MODELS),
                              ROOT / "book/10-modern-attention/results", argv, parallel=True)

    import attention_course as ac

    fw = ac.torch if args.framework == "pytorch" else ac.keras
    sizes = chapter10.SIZES[args.size]
    chars = chapter8.characters(ac.data.load_tinyshakespeare())
    vocab = len(chars.vocabulary)
    results = {"command": "tools/chapter10_full.py " + " ".join(map(shlex.quote, argv or sys.argv[1:])),
               "size": args.size, "sizes": sizes, "framework": args.framework, "devices": args.devices,
               "hardware": machine.in_words(),
               "date": time.strftime("%Y-%m-%d"), "characters": {"vocabulary": vocab, "train": len(chars.train),
                                                                  "val": len(chars.val)}, "runs": []}
    out = args.out / f"{args.size}-{args.framework}.json"
    for seed in args.seeds:
        for variant in args.models:
            model = chapter10.build(fw, vocab, sizes, variant, seed=seed)
            ckpt = ROOT / "build/chapter10" / f"{args.size}-{args.framework}-{variant}-seed{seed}.ckpt"
            ckpt.parent.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            history = chapter10.train(fw, model, chars, sizes, seed=seed, checkpoint=ckpt, desc=variant)
            seconds = full_run.seconds_so_far(ckpt, start)
            run = {"model": variant, "seed": seed, "kv_heads": chapter10.kv_heads(variant, sizes["heads"]),
                   "cache_numbers_per_token": chapter10.cache_numbers(sizes, variant),
                   "parameters": parameters(model), "train_seconds": seconds, "best_epoch": history.best_epoch,
                   "best_val_loss": min(history.metrics["val_loss"]), "history": history.metrics}
            full_run.save_run_weights(args, model, results, run, val_loss=run["best_val_loss"])
            results["runs"].append(run)
            print(f"{variant} seed {seed}: validation loss {run['best_val_loss']:.3f}, "
                  f"{run['cache_numbers_per_token']} cached numbers per token, {seconds:.0f} s", flush=True)
            full_run.write(out, results)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
