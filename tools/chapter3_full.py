r"""Chapter 3, full profile: train every model of the chapter on the whole datasets and write the results that
the book shows in every profile (book/03-timestep-feature-attention/results/: a JSON file and a markdown table).
The experiment itself is ``attention_course.ch03_timestep_feature_attention.experiment``; this is its command line.

    COURSE_DATA_DIR=/path/to/data nice -n 19 .venv/bin/python tools/chapter3_full.py --framework pytorch

The committed results came from seven runs, each recorded with its command in its results.json:

    tools/chapter3_full.py --framework pytorch --threads 1                     # results/: NER and sentiment
    tools/chapter3_full.py --framework keras --threads 2 --skip-sentiment --out results/keras-ner
    tools/chapter3_full.py --framework keras --threads 1 --skip-ner --out results/keras-sentiment
    tools/chapter3_full.py --framework pytorch --threads 1 --skip-ner --models 'last state,attention' \
        --embed-init 0.05 --out results/pytorch-embed-init-0.05               # Keras' embedding initialiser
    tools/chapter3_full.py --framework keras --threads 1 --skip-ner --models 'last state,attention' \
        --embed-init 1.732 --out results/keras-embed-init-1.732               # PyTorch's embedding scale
    tools/chapter3_full.py --framework pytorch --threads 1 --skip-ner --models 'bag of words' \
        --out results/pytorch-bag-of-words                                     # the bag-of-words baseline
    tools/chapter3_full.py --framework keras --threads 1 --skip-ner --models 'bag of words' \
        --out results/keras-bag-of-words

The taggers added later (the talk's model 1 and the block after the BiLSTM) run on their own, in each framework;
the chapter shows their full-run reports once these folders exist:

    tools/chapter3_full.py --framework pytorch --threads 1 --skip-sentiment \
        --ner-models "talk's model 1 · softmax,talk's model 1 · linear,feature · softmax, after the BiLSTM" \
        --out results/pytorch-talk-models
    tools/chapter3_full.py --framework keras --threads 2 --skip-sentiment \
        --ner-models "talk's model 1 · softmax,talk's model 1 · linear,feature · softmax, after the BiLSTM" \
        --out results/keras-talk-models

(``results/`` is book/03-timestep-feature-attention/results.)

``--smoke`` runs a few hundred sentences for one epoch (checks the script in a minute, writes to /tmp).
The data preparation is the notebook's: both call ``ac.data.prepare_ner`` and ``ac.data.prepare_sentiment``. The
defaults are what the committed results ran: PyTorch on one CPU thread, the taggers for 5 epochs (the BiLSTM
with recurrent dropout steps through 104 timesteps in Python, 0.1-0.2 s per batch of 32 on one core: 5 epochs of
6 taggers take 1-2 CPU-hours), the sentiment models for 15 epochs over 10 seeds. Sentiment runs first;
``results/partial.json`` holds it until the taggers are done.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attention_course.core.quiet import quiet_frameworks  # noqa: E402

quiet_frameworks()
from attention_course.ch03_timestep_feature_attention import experiment as chapter3  # noqa: E402

OUT = ROOT / "book" / "03-timestep-feature-attention" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", choices=["pytorch", "keras"], default="pytorch")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (1 leaves a core to others)")
    parser.add_argument("--ner-epochs", type=int, default=5)
    parser.add_argument("--sentiment-epochs", type=int, default=15)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help="tiny subsets, one epoch, results under /tmp")
    parser.add_argument("--skip-ner", action="store_true", help="the sentiment part only (no NER section)")
    parser.add_argument("--skip-sentiment", action="store_true", help="the NER part only (no sentiment section)")
    parser.add_argument("--models", default=",".join(chapter3.SENTIMENT_MODELS),
                        help="the sentiment models to train, separated by a comma without a space, as in "
                             "'last state,attention, no mask' (default: all four)")
    parser.add_argument("--ner-models", default=",".join(chapter3.NER_MODELS),
                        help="the taggers to train, separated by a comma (default: all)")
    parser.add_argument("--embed-init", type=float, default=None,
                        help="draw the sentiment models' embeddings from U(-x, x) (default: the framework's own)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"folder for results.json and results.md (default: {OUT.relative_to(ROOT)})")
    args = parser.parse_args()
    try:
        models = chapter3.parse_models(args.models)
        ner_models = chapter3.parse_ner_models(args.ner_models)
    except ValueError as err:
        parser.error(str(err))
    res = chapter3.run(args.framework, threads=args.threads, ner_epochs=args.ner_epochs,
                       sentiment_epochs=args.sentiment_epochs, seeds=args.seeds, smoke=args.smoke,
                       skip_ner=args.skip_ner, skip_sentiment=args.skip_sentiment, models=models,
                       ner_models=ner_models,
                       embed_init=args.embed_init,
                       out_dir=args.out or (Path("/tmp/chapter3_smoke") if args.smoke else OUT),
                       command=shlex.join(["tools/chapter3_full.py", *sys.argv[1:]]))
    print(chapter3.markdown(res))


if __name__ == "__main__":
    main()
