r"""Chapter 8's decoder-only Transformer: train the character model on Tiny Shakespeare at one of
``chapter8.LM_SIZES`` and write book/08-transformer/results/lm-<size>-<framework>.json: the validation loss after
each epoch (with the training steps), the unigram and bigram baselines, the parameters, the training time, the
hardware, and samples at temperatures 0, 0.5 and 1.

    COURSE_DATA_DIR=/path/to/data .venv/bin/python tools/chapter8_lm.py --size full     # a GPU
    .venv/bin/python tools/chapter8_lm.py --size cpu       # a reduced run for a CPU (a quarter of an hour)
    ... --size cpu --set epochs=10 --label "twice as long"   # one size changed for this run (recorded)

Checkpoints go to build/chapter8/lm-<size>[-<changed sizes>]-<framework>-seed<seed>.ckpt after every epoch; an
interrupted run started again resumes from them (delete them to start over).
"""

from __future__ import annotations

import argparse
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
TEMPERATURES = (0.0, 0.5, 1.0)
PROMPT = "ROMEO:\n"


def sizes_with(size: str, settings: list[str]) -> dict:
    """``LM_SIZES[size]`` with each ``KEY=VALUE`` of ``settings`` put in (numbers, of the same type)."""
    return full_run.sizes_with(chapter8.LM_SIZES, size, settings)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(chapter8.LM_SIZES), default="full")
    parser.add_argument("--framework", choices=("pytorch", "keras"), default="pytorch")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change one size")
    parser.add_argument("--label", default="", help="what the run is, when not the size as defined (kept)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "build/chapter8")
    parser.add_argument("--weights", type=Path, help="save the trained model's weights (float16) to this file "
                        "(PyTorch)")
    full_run.add_devices(parser)
    args = parser.parse_args(argv)
    if args.weights and args.framework != "pytorch":
        parser.error("--weights saves a PyTorch model (both frameworks load it, Keras through "
                     "core.parity.torch_to_keras): run it with --framework pytorch")
    sizes = sizes_with(args.size, args.set)

    from attention_course import data
    from attention_course.core import decode
    from attention_course.notebook import frameworks, session

    frameworks.use(args.framework)
    devices = full_run.start_devices(args.framework, args.devices)
    import attention_course as ac

    fw = ac.torch if args.framework == "pytorch" else ac.keras
    chars = chapter8.characters(data.load_tinyshakespeare())
    vocab = len(chars.vocabulary)
    session.seed_everything(args.seed)
    model = fw.LanguageModel(vocab, d_model=sizes["d_model"], heads=sizes["heads"], layers=sizes["layers"],
                             d_ff=sizes["d_ff"], dropout=sizes["dropout"], context=sizes["context"])
    tag = "".join(f"-{item.replace('=', '')}" for item in args.set)          # a changed size: its own checkpoint
    ckpt = args.checkpoints / f"lm-{args.size}{tag}-{args.framework}-seed{args.seed}.ckpt"
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    history = chapter8.train_lm(fw, model, chars, sizes, seed=args.seed, checkpoint=ckpt, desc="language model")
    seconds = full_run.seconds_so_far(ckpt, start)
    steps_per_epoch = -(-sizes["windows"] // sizes["batch_size"])
    prompt = chars.encode(PROMPT)
    out_ids = decode.sample(model, [prompt] * len(TEMPERATURES), steps=sizes["sample"],
                            temperature=list(TEMPERATURES), seed=args.seed)
    results = {"command": "tools/chapter8_lm.py " + " ".join(map(shlex.quote, argv)), "size": args.size,
               "label": args.label, "sizes": sizes, "framework": args.framework, "devices": devices, "seed": args.seed,
               "hardware": machine.in_words(), "date": time.strftime("%Y-%m-%d"),
               "characters": {"vocabulary": vocab, "train": len(chars.train), "val": len(chars.val)},
               "baselines": {name: chapter8.ngram_loss(chars.train, chars.val, vocab, order)
                             for name, order in (("unigram", 1), ("bigram", 2))},
               "parameters": chapter5.parameters(model), "train_seconds": seconds,
               "steps": [(e + 1) * steps_per_epoch for e in range(len(history))],
               "best_epoch": history.best_epoch, "history": history.metrics,
               "samples": {str(t): PROMPT + chars.decode(ids) for t, ids in zip(TEMPERATURES, out_ids, strict=True)}}
    if args.weights:
        results["weights"] = full_run.save_weights(args.weights, model, {
            "command": results["command"], "seed": args.seed, "size": args.size, "sizes": sizes,
            "val_loss": min(history.metrics["val_loss"])})
    out = args.out / f"lm-{args.size}-{args.framework}.json"
    full_run.write(out, results)
    print(f"validation loss {min(history.metrics['val_loss']):.3f} (bigram {results['baselines']['bigram']:.3f}), "
          f"{seconds:.0f} s; wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
