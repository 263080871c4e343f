r"""Chapter 6's results table: train the chapter's captioners (Show and Tell, mean pooling, soft attention with and
without the gate and with the doubly stochastic penalty, hard attention) on the digit scenes and write
book/06-image-captioning/results/<size>-<framework>.json: BLEU-1…4 (sacreBLEU; greedy and beam 3), the share of
exact captions, attention correctness against chance, parameters, training time and the hardware, per seed.
The experiment is ``attention_course.ch06_image_captioning.experiment`` (the notebook calls the same functions).

    .venv/bin/python tools/chapter6_full.py --size cpu --seeds 0,1,2     # 8,000 scenes, on a CPU
    .venv/bin/python tools/chapter6_full.py --size full --seeds 0,1,2    # 30,000 scenes, larger models, a GPU
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attention_course.core.quiet import quiet_frameworks  # noqa: E402

quiet_frameworks()
from attention_course.ch06_image_captioning import experiment as chapter6  # noqa: E402
from attention_course.core import machine  # noqa: E402
from tools import full_run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    scenes = {k: v for k, v in chapter6.SIZES.items() if k != "flickr8k"}    # the digit scenes' sizes only
    args = full_run.arguments(__doc__, scenes, list(chapter6.MODELS), ROOT / "book/06-image-captioning/results", argv)

    import attention_course as ac

    fw = ac.torch if args.framework == "pytorch" else ac.keras
    sizes = chapter6.SIZES[args.size]
    results = {"command": "tools/chapter6_full.py " + " ".join(map(shlex.quote, argv or sys.argv[1:])),
               "size": args.size, "sizes": sizes, "framework": args.framework, "hardware": machine.in_words(),
               "date": time.strftime("%Y-%m-%d"), "runs": []}
    out = args.out / f"{args.size}-{args.framework}.json"
    for seed in args.seeds:
        data = chapter6.corpus(sizes, seed=seed)
        for name in args.models:
            spec = chapter6.MODELS[name]
            model = chapter6.build(fw, data, sizes, seed=seed, **spec)
            start = time.perf_counter()
            history = chapter6.train(fw, model, data, sizes, seed=seed, desc=name, **spec)
            seconds = time.perf_counter() - start
            run = {"model": name, "seed": seed, **spec, "parameters": chapter6.parameters(model),
                   "train_seconds": seconds, "history": history.metrics}
            for beam in (1, 3):
                captions, _ = chapter6.caption(model, data, beam=beam)
                exact = float(np.mean([c in refs for c, refs in zip(captions, data.test.references, strict=True)]))
                run[f"beam{beam}"] = {**chapter6.bleu_scores(captions, data.test), "exact": exact,
                                      "examples": captions[:5]}
            found = chapter6.correctness(chapter6.teacher_forced_attention(fw, model, data), data.test)
            run["correctness"] = {k: found[k] for k in ("correctness", "chance", "n")}
            if args.weights:                          # the words of its ids, to caption other scenes
                results["vocabulary"] = data.vocab.tokens
            full_run.save_run_weights(args, model, results, run, bleu4={b: run[f"beam{b}"]["BLEU-4"] for b in (1, 3)})
            results["runs"].append(run)
            print(f"{name} seed {seed}: BLEU-4 {run['beam1']['BLEU-4']:.1f} (greedy), {run['beam3']['BLEU-4']:.1f} "
                  f"(beam 3), correctness {found['correctness']:.3f} (chance {found['chance']:.3f}), "
                  f"{seconds:.0f} s", flush=True)
            full_run.write(out, results)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
