"""Chapter 3: the sentiment article's configuration, as the article ran it and one choice at a time, over seeds;
writes book/03-timestep-feature-attention/results/article.json, which the chapter shows in every profile.
The experiment is ``attention_course.ch03_timestep_feature_attention.article``; this is its command line.

    COURSE_DATA_DIR=/path/to/data .venv/bin/python tools/chapter3_article.py --framework keras --seeds 5

Runs of several frameworks go into the same file (a run replaces that framework's rows).
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
from attention_course.ch03_timestep_feature_attention import article  # noqa: E402
from attention_course.core import machine  # noqa: E402
from attention_course.core.backend import backend  # noqa: E402

OUT = ROOT / "book" / "03-timestep-feature-attention" / "results" / "article.json"


def chapter3_backend(framework: str, threads: int):
    fw = backend(framework)
    fw.threads(threads)
    return fw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", choices=["pytorch", "keras"], default="keras")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--configs", default=";".join(article.CONFIGS),
                        help="the configurations to run, separated by ';' (default: all)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    configs = [c.strip() for c in args.configs.split(";") if c.strip()]
    start = time.perf_counter()
    rows = article.run(chapter3_backend(args.framework, args.threads), range(args.seeds), configs)
    old = json.loads(args.out.read_text()) if args.out.exists() else {"runs": [], "commands": {}}
    old["runs"] = [r for r in old["runs"] if r["framework"] != args.framework] + rows
    old["commands"][args.framework] = {
        "command": "tools/chapter3_article.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "minutes": round((time.perf_counter() - start) / 60, 1),
        "hardware": machine.describe(args.threads),
        "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(time.time() - (time.perf_counter() - start))),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    from attention_course.core.files import rewrite_file

    rewrite_file(args.out, json.dumps(old, indent=1) + "\n")          # the earlier file is moved aside
    print(article.summary(old["runs"]).round(3).to_string())
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
