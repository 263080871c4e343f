r"""Chapter 5's results table: train the chapter's three translators (no attention, Bahdanau, Luong) and write
book/05-neural-machine-translation/results/<size>-<framework>.json: sacreBLEU's BLEU and chrF on the test split
(greedy and beam 5), BLEU in each source-length bucket, over- and under-translation on long sentences with and
without GNMT's coverage penalty, parameters, training time per epoch and the hardware.
The experiment is ``attention_course.ch05_neural_machine_translation.experiment`` (the notebook calls the same
functions).

    COURSE_DATA_DIR=/path/to/data .venv/bin/python tools/chapter5_full.py --size cpu    # spa-eng, reduced, on a CPU
    COURSE_DATA_DIR=/path/to/data .venv/bin/python tools/chapter5_full.py --size full   # Multi30k de→en, a GPU

Checkpoints go to build/chapter5/<size>-<framework>-<model>-seed<seed>.ckpt after every epoch; an interrupted
run started again resumes from them (delete them to start over). ``--weights FILE`` (one model, one seed) saves the
trained model in float16, the file a chapter loads to show a trained translator::

    tools/chapter5_full.py --size cpu --models Bahdanau --weights bahdanau-cpu.npz
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
from attention_course.ch05_neural_machine_translation import experiment as chapter5  # noqa: E402
from attention_course.core import machine  # noqa: E402
from tools import full_run  # noqa: E402

COVERAGE_BETAS = (0.0, 0.2, 0.5, 1.0)


def main(argv: list[str] | None = None) -> int:
    args = full_run.arguments(__doc__, chapter5.SIZES, list(chapter5.MODELS),
                              ROOT / "book/05-neural-machine-translation/results", argv, parallel=True)

    import attention_course as ac

    fw = ac.torch if args.framework == "pytorch" else ac.keras
    sizes = chapter5.SIZES[args.size]
    data = chapter5.corpus(sizes)
    results = {"command": "tools/chapter5_full.py " + " ".join(map(shlex.quote, argv or sys.argv[1:])),
               "size": args.size, "sizes": sizes, "framework": args.framework, "devices": args.devices,
               "hardware": machine.in_words(),
               "date": time.strftime("%Y-%m-%d"), "pairs": {"train": data.train.n, "val": data.val.n,
                                                             "test": data.test.n}, "runs": []}
    out = args.out / f"{args.size}-{args.framework}.json"
    for seed in args.seeds:
        for name in args.models:
            model = chapter5.build(fw, data, chapter5.MODELS[name], sizes, seed=seed)
            ckpt = ROOT / "build/chapter5" / f"{args.size}-{args.framework}-{chapter5.MODELS[name]}-seed{seed}.ckpt"
            start = time.perf_counter()
            history = chapter5.train(fw, model, data, sizes, seed=seed, checkpoint=ckpt, desc=name)
            seconds = full_run.seconds_so_far(ckpt, start)                # summed over resumed runs
            run = {"model": name, "seed": seed, "parameters": chapter5.parameters(model),
                   "train_seconds": seconds, "epochs": len(history), "best_epoch": history.best_epoch,
                   "history": history.metrics}
            for beam in (1, 5):
                start = time.perf_counter()
                hyps, _ = chapter5.translate(model, data, beam=beam, alpha=0.6 if beam > 1 else 0.0)
                run[f"beam{beam}"] = {**chapter5.evaluate(hyps, data), "decode_seconds": time.perf_counter() - start,
                                      "examples": hyps[:5]}
            if chapter5.MODELS[name] != "none":                 # GNMT's coverage penalty against over/under-translation
                run["coverage"] = []
                for beta in COVERAGE_BETAS:
                    hyps, found = chapter5.translate(model, data, beam=5, alpha=0.6, beta=beta)
                    run["coverage"].append({"beta": beta, **chapter5.coverage_report(hyps, found, data)})
            full_run.save_run_weights(args, model, results, run, bleu={b: run[f"beam{b}"]["bleu"] for b in (1, 5)})
            results["runs"].append(run)
            print(f"{name} seed {seed}: BLEU {run['beam1']['bleu']:.1f} (greedy), {run['beam5']['bleu']:.1f} "
                  f"(beam 5), {seconds:.0f} s", flush=True)
            full_run.write(out, results)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
