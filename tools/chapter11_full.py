r"""Chapter 11's experiments at a larger size: the pointer network and the fixed-vocabulary decoder on sorting
(trained on 5–10 numbers, tested up to 40), convolutional attention of each width on the token after a marker
(sequences of 40 from 100 tokens), the hierarchical, flat and bag-of-words classifiers on BBC News (30 sentences of
40 words), the translator with two sources or one (two sources of 12 tokens), and the translator with and without
copying on sentences with names never seen (16 tokens), and soft against monotonic attention spelling 80,000 words
to sound, per seed; writes
book/11-more-attention/results/<size>-<framework>.json: each run's scores as the notebook's tables have them and its
training time, with the sizes and the hardware.
The experiments are ``attention_course.ch11_more_attention.experiment`` (the notebook calls the same functions).

    COURSE_DATA_DIR=/path/to/data .venv/bin/python tools/chapter11_full.py --size full --seeds 0,1,2    # a GPU
    COURSE_DATA_DIR=/path/to/data .venv/bin/python tools/chapter11_full.py --size quick --models copy,spell \
        --seeds 0,1,2 --framework keras        # the chapter's own copying and spelling runs, three seeds: a CPU

The chapter reads the quick files for its three-seed tables and checks that its own run of a seed equals the file's.

Runs share a GPU well: one process per model and seed, each with its own ``--out``, then ``tools/full_run.py
merge``.
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
from attention_course.ch11_more_attention import experiment as chapter11  # noqa: E402
from attention_course.core import machine  # noqa: E402
from tools import full_run  # noqa: E402

#: The runs this tool makes: the two sorting models, the marker readers (every width), the news classifiers and the
#: multi-source translators (both sources, each alone), the translators with and without copying, and the spellers.
MODELS = ["pointer", "fixed", "marker", "news", "multi", "copy", "spell"]


def sizes_of(size: str) -> dict[str, dict]:
    """Each experiment's sizes for the profile ``size``."""
    return {"sorting": chapter11.SIZES[size], "marker": chapter11.MARKER_SIZES[size],
            "news": chapter11.NEWS_SIZES[size], "multi": chapter11.MULTI_SIZES[size],
            "copy": chapter11.COPY_SIZES[size], "spell": chapter11.SPELL_SIZES[size]}


def run_one(fw, model: str, size: str, seed: int) -> list[dict]:
    """Train and score ``model`` at ``size`` with ``seed``: the rows of the notebook's table for it."""
    sizes = sizes_of(size)
    if model in ("pointer", "fixed"):
        table, _ = chapter11.generalisation(fw, sizes["sorting"], seed, models=(model,))
    elif model == "marker":
        table, _ = chapter11.marker_reading(fw, sizes["marker"], seeds=(seed,))
    elif model == "news":
        table, _, _ = chapter11.classify(fw, sizes["news"], seed)
    elif model == "multi":
        table, _, _ = chapter11.multi_source(fw, sizes["multi"], seed)
    elif model == "copy":
        table, _, _ = chapter11.copying(fw, sizes["copy"], seed)
    else:
        table, _, _ = chapter11.spelling_to_sound(fw, sizes["spell"], seed)
    return [{**row, "seed": seed} for row in table.to_dict("records")]


def main(argv: list[str] | None = None) -> int:
    args = full_run.arguments(__doc__, chapter11.SIZES, MODELS, ROOT / "book/11-more-attention/results", argv)

    import attention_course as ac

    fw = ac.torch if args.framework == "pytorch" else ac.keras
    results = {"command": "tools/chapter11_full.py " + " ".join(map(shlex.quote, argv or sys.argv[1:])),
               "size": args.size, "sizes": sizes_of(args.size), "framework": args.framework,
               "hardware": machine.in_words(), "date": time.strftime("%Y-%m-%d"), "runs": []}
    out = args.out / f"{args.size}-{args.framework}.json"
    for seed in args.seeds:
        for model in args.models:
            start = time.perf_counter()
            rows = run_one(fw, model, args.size, seed)
            seconds = time.perf_counter() - start
            results["runs"].append({"model": model, "seed": seed, "seconds": seconds, "rows": rows})
            print(f"{model} seed {seed}, {seconds:.0f} s:", flush=True)
            for row in rows:
                print("  " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                       for k, v in row.items()), flush=True)
            full_run.write(out, results)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
