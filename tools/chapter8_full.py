r"""Chapter 8's results: train the Transformer (and the stability experiment's variants) and write
book/08-transformer/results/<size>-<framework>.json: sacreBLEU's BLEU and chrF on the test split (greedy and beam 5),
BLEU in each source-length bucket, parameters, training time per epoch, decoding time, the validation history and
the hardware. The data, tokenizers, decoding and scoring are Chapter 5's, so ``--table`` can put both chapters'
committed results of one size in one table.

    COURSE_DATA_DIR=/path/to/data .venv/bin/python tools/chapter8_full.py --size full --seeds 0,1,2   # a GPU
    .venv/bin/python tools/chapter8_full.py --size full --table     # the head-to-head table from the results
    ... --size full --set dropout=0.3 --out build/runs/dropout      # one size changed for this run (recorded)
    ... --size deep --framework keras --seeds 0,1,2,3,4 --models "Transformer,post-LN, no warm-up,pre-LN, no warm-up"
                                        # the stability experiment: six layers on the quick data (CPU, 35-45 min)

Checkpoints go to build/chapter8/<size>-<framework>-<model>-seed<seed>.ckpt after every epoch; an interrupted run
started again resumes from them (delete them to start over).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attention_course.core.quiet import quiet_frameworks  # noqa: E402

quiet_frameworks()
from attention_course.ch05_neural_machine_translation import experiment as chapter5  # noqa: E402
from attention_course.ch08_transformer import experiment as chapter8  # noqa: E402
from attention_course.core import machine  # noqa: E402
from tools import full_run  # noqa: E402

RESULTS = ROOT / "book/08-transformer/results"


def table(size: str, framework: str = "pytorch") -> str:
    """The head-to-head table (Markdown) of the committed results of ``size``: Chapter 5's and this chapter's."""
    files = [ROOT / "book/05-neural-machine-translation/results" / f"{size}-{framework}.json",
             RESULTS / f"{size}-{framework}.json"]
    for f in files:
        if not f.exists():
            raise SystemExit(f"no results file {f.relative_to(ROOT)}: run its chapter's results tool with "
                             f"--size {size} --framework {framework} first")
    rnn, transformer = (json.loads(f.read_text()) for f in files)
    return chapter8.head_to_head(rnn["runs"], transformer["runs"]).round(2).to_markdown()


def overrides(argv: list[str]) -> tuple[list[str], dict[str, float]]:
    """``argv`` without its ``--set KEY=VALUE`` pairs, and those pairs (numbers) as a dict."""
    rest, changed = [], {}
    items = iter(argv)
    for a in items:
        if a != "--set":
            rest.append(a)
            continue
        key, _, value = next(items, "").partition("=")
        if key not in chapter8.SIZES["full"] or not value:
            raise SystemExit(f"--set takes KEY=VALUE with KEY one of {', '.join(chapter8.SIZES['full'])}")
        changed[key] = float(value) if "." in value or "e" in value else int(value)
    return rest, changed


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--table" in argv:
        rest = [a for a in argv if a != "--table"]
        size = rest[rest.index("--size") + 1] if "--size" in rest else "full"
        print(table(size))
        return 0
    rest, changed = overrides(argv)
    args = full_run.arguments(__doc__, chapter8.SIZES, list(chapter8.MODELS), RESULTS, rest, parallel=True)

    import attention_course as ac

    fw = ac.torch if args.framework == "pytorch" else ac.keras
    sizes = {**chapter8.SIZES[args.size], **changed}
    data_sizes = chapter5.SIZES[chapter8.DATA[args.size]]
    data = chapter5.corpus(data_sizes)
    results = {"command": "tools/chapter8_full.py " + " ".join(map(shlex.quote, argv)),
               "size": args.size, "sizes": sizes, "data": data_sizes, "framework": args.framework,
               "devices": args.devices, "hardware": machine.in_words(), "date": time.strftime("%Y-%m-%d"),
               "pairs": {"train": data.train.n, "val": data.val.n, "test": data.test.n}, "runs": []}
    out = args.out / f"{args.size}-{args.framework}.json"
    for seed in args.seeds:
        for name in args.models:
            norm_first, warmup = chapter8.MODELS[name]
            model = chapter8.build(fw, data, sizes, norm_first=norm_first, seed=seed)
            slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
            tag = "".join(f"-{k}{v}" for k, v in changed.items())
            ckpt = ROOT / "build/chapter8" / f"{args.size}{tag}-{args.framework}-{slug}-seed{seed}.ckpt"
            ckpt.parent.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            history = chapter8.train(fw, model, data, sizes, seed=seed, warmup=warmup, checkpoint=ckpt, desc=name)
            seconds = full_run.seconds_so_far(ckpt, start)                # summed over resumed runs
            run = {"model": name, "seed": seed, "norm_first": norm_first, "warmup": warmup,
                   "parameters": chapter5.parameters(model), "train_seconds": seconds, "epochs": len(history),
                   "best_epoch": history.best_epoch, "history": history.metrics}
            for beam in (1, 5):
                start = time.perf_counter()
                hyps, _ = chapter5.translate(model, data, beam=beam, alpha=0.6 if beam > 1 else 0.0,
                                             batch_size=1000)
                run[f"beam{beam}"] = {**chapter5.evaluate(hyps, data), "decode_seconds": time.perf_counter() - start,
                                      "examples": hyps[:5]}
            full_run.save_run_weights(args, model, results, run, data=data_sizes,
                                      bleu={b: run[f"beam{b}"]["bleu"] for b in (1, 5)})
            full_run.save_tokenizers(args, results, data)
            results["runs"].append(run)
            print(f"{name} seed {seed}: BLEU {run['beam1']['bleu']:.1f} (greedy), {run['beam5']['bleu']:.1f} "
                  f"(beam 5), {seconds:.0f} s", flush=True)
            full_run.write(out, results)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
