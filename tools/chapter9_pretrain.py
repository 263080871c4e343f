r"""Chapter 9's small BERT: pretrain it with the masked-language-model objective at one of
``chapter9.PRETRAIN_SIZES``, save it where the chapter loads it, and fine-tune it on Chapter 3's sentiment
sentences over several seeds against the same BERT trained from scratch.

    COURSE_DATA_DIR=/path/to/data .venv/bin/python tools/chapter9_pretrain.py              # full size, 5 seeds
    ... --size quick --seeds 2 --out /tmp/smoke                                           # a smoke run
    ... --set epochs=8 --label "two more epochs"                                          # one size changed

Writes
- the pretrained model into ``--model`` (default build/chapter9/small-bert-<size>: config.json, model.safetensors
  with the masked-LM head, tokenizer.json), in the format of ``transformers``, which either framework's
  ``load_pretrained(..., masked_lm=True)`` reads;
- into ``--out`` (default book/09-bert/results) ``pretraining-<size>-<framework>.json``: the sizes, the MLM loss
  and accuracy after each epoch (with the steps), the unigram baseline, fill-in-the-blank examples, the
  fine-tuning runs of every seed, Chapter 3's runs of the same seeds, the hardware and the command.

The pretraining checkpoint goes to build/chapter9/ after every epoch; an interrupted run started again resumes.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attention_course.core.quiet import quiet_frameworks  # noqa: E402

quiet_frameworks()
from attention_course.ch05_neural_machine_translation import experiment as chapter5  # noqa: E402
from attention_course.ch09_bert import experiment as chapter9  # noqa: E402
from attention_course.core import machine  # noqa: E402
from tools import full_run  # noqa: E402

RESULTS = ROOT / "book/09-bert/results"
CHAPTER3 = ROOT / "book/03-timestep-feature-attention/results/results.json"
BLANKS = ["The king [MASK] to the castle.", "It was one of the [MASK] films of the year.",
          "The river flows into the [MASK] sea.", "I [MASK] you, my lord."]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(chapter9.PRETRAIN_SIZES), default="full")
    parser.add_argument("--framework", choices=("pytorch", "keras"), default="pytorch")
    parser.add_argument("--seeds", type=int, default=5, help="fine-tuning seeds 0 … N-1")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change one size")
    parser.add_argument("--label", default="", help="what the run is, when not the size as defined (kept)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "build/chapter9")
    parser.add_argument("--model", type=Path, help="where to save the pretrained model")
    full_run.add_devices(parser)
    args = parser.parse_args(argv)
    sizes = full_run.sizes_with(chapter9.PRETRAIN_SIZES, args.size, args.set)

    from attention_course.ch09_bert import pretrained
    from attention_course.core import parallel
    from attention_course.notebook import frameworks

    frameworks.use(args.framework)
    devices = full_run.start_devices(args.framework, args.devices)
    import attention_course as ac

    fw = ac.torch if args.framework == "pytorch" else ac.keras
    data = chapter9.pretraining_data(sizes)
    vocab = data.tokenizer.get_vocab_size()
    model = chapter9.build_mlm(fw, sizes, vocab, seed=0)
    tag = "".join(f"-{item.replace('=', '')}" for item in args.set)          # a changed size: its own checkpoint
    ckpt = args.checkpoints / f"mlm-{args.size}{tag}-{args.framework}.ckpt"
    start = time.perf_counter()
    history, val = chapter9.pretrain(fw, model, data, sizes, seed=0, checkpoint=ckpt, desc="pretraining")
    seconds = full_run.seconds_so_far(ckpt, start)
    weights = fw.export_bert(model)
    folder = args.model or args.checkpoints / f"small-bert-{args.size}{tag}"
    if parallel.is_main():                                                 # written once, by process 0
        pretrained.write_bert(folder, weights, data.tokenizer)
    sequences = len(data.train) if sizes["sequences"] is None else min(sizes["sequences"], len(data.train))
    per_epoch = -(-sequences * sizes["copies"] // sizes["batch_size"])
    results = {"command": "tools/chapter9_pretrain.py " + " ".join(map(shlex.quote, argv)), "size": args.size,
               "label": args.label, "sizes": sizes, "framework": args.framework, "devices": devices,
               "hardware": machine.in_words(),
               "date": time.strftime("%Y-%m-%d"), "vocabulary": vocab,
               "sequences": {"train": sequences, "val": len(data.val), "length": sizes["length"]},
               "parameters": chapter5.parameters(model), "pretrain_seconds": seconds,
               "steps": [(e + 1) * per_epoch for e in range(len(history))], "history": history.metrics,
               "best_epoch": history.best_epoch,
               "val_accuracy": fw.accuracy(model, val[:3], val[3], ignore_index=chapter9.IGNORE, batch_size=64),
               "unigram": chapter9.unigram_baseline(data, val[3]),
               "fill_in": chapter9.fill_in(fw, model, data.tokenizer, BLANKS), "finetune": []}
    print(f"pretrained: validation loss {min(history['val_loss']):.3f}, accuracy {results['val_accuracy']:.3f} "
          f"(unigram {results['unigram']['loss']:.3f}, {results['unigram']['accuracy']:.3f}), {seconds:.0f} s",
          flush=True)
    for seed in range(args.seeds):
        pieces = chapter9.sentiment_pieces(data.tokenizer, seed)
        for name, start_from in (("small BERT, pretrained", weights), ("small BERT, from scratch", None)):
            run = chapter9.finetune(fw, pieces, sizes, start_from, seed=seed, desc=f"{name} · seed {seed}")
            row = {"model": name, "seed": seed, "val_accuracy": run["val_accuracy"],
                   "train_seconds": run["train_seconds"], "parameters": chapter5.parameters(run["model"])}
            results["finetune"].append(row)
            print(row, flush=True)
    chapter3 = json.loads(CHAPTER3.read_text())
    results["chapter3"] = {"source": str(CHAPTER3.relative_to(ROOT)), "framework": chapter3["framework"],
                           "epochs": chapter3["config"]["sentiment_epochs"],
                           "runs": [r for r in chapter3["sentiment"]["runs"] if r["seed"] < args.seeds]}
    out = args.out / f"pretraining-{args.size}-{args.framework}.json"
    full_run.write(out, results)
    print(chapter9.finetune_table(results["finetune"], results["chapter3"]["runs"]).round(4).to_string())
    print(f"wrote {out} and {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
