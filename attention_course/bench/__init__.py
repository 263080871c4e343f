"""Timed comparisons, done once and properly: ``make bench``.

Wall-clock times depend on the machine and on whatever else it is doing, so no notebook or test asserts one.
The chapters assert counted costs (``ac.bench.torch_cost.tensor_elements``), show a live timing, and quote the
timings that ``make bench`` measured: every case with warm-up runs, then the cases of one comparison taking
turns ``repeats`` times (a busy moment slows them alike), reported as median and interquartile range.
Results are written per machine to ``attention_course/benchmarks/<machine>.json`` (package data, so a notebook on
Colab has them too) and read back with :func:`load`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from attention_course.core import validate
from attention_course.core.backend import backend
from attention_course.core.errors import ConfigError
from attention_course.core.machine import describe
from attention_course.core.text import BOS

#: What ``ac.bench.torch_cost.forward`` / ``ac.bench.keras_cost.forward`` can build.
KINDS = ("global", "local-m", "local-p", "dot", "general", "additive", "score-additive", "score-concat")
#: Where the committed results live: inside the package, so that they are installed with it.
RESULTS = Path(__file__).resolve().parents[1] / "benchmarks"




def build_layer(kind: str, fw, *, window: int, dim: int):
    """The layer of ``kind`` from ``fw`` (``ac.torch`` or ``ac.keras``): what ``cost.forward`` runs. Score kinds
    (``score-*``) are score layers, called on (query, key); the others are attention layers, on (q, k, v)."""
    validate.choice("attention kind to time", kind, KINDS)
    if kind == "global":
        return fw.DotProductAttention(scale=True)
    if kind.startswith("local-"):
        return fw.LocalAttention(mode=kind[-1], window=window, dim=dim, scale=True)
    if kind.startswith("score-"):
        return (fw.AdditiveScore if kind == "score-additive" else fw.ConcatScore)(dim, dim, dim)
    return fw.ScoredAttention(kind, d_query=dim, units=dim)


def time_interleaved(runs: dict[str, Callable[[], object]], repeats: int = 7,
                     warmup: int = 2) -> dict[str, list[float]]:
    """Seconds of each run, ``repeats`` samples each: every run is first called ``warmup`` times untimed (first
    calls pay for tracing and caches), then the runs take turns, so that a busy moment hits all of them."""
    if repeats < 1 or warmup < 0:
        raise ConfigError(f"repeats must be >= 1 and warmup >= 0; got repeats={repeats}, warmup={warmup}")
    for run in runs.values():
        for _ in range(warmup):
            run()
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - start)
    return samples


def summarize(samples: list[float]) -> dict[str, float]:
    """Median and quartiles of a list of seconds, in milliseconds."""
    import numpy as np

    q1, median, q3 = np.percentile(np.asarray(samples) * 1000, [25, 50, 75])
    return {"median_ms": float(median), "q1_ms": float(q1), "q3_ms": float(q3), "runs": len(samples)}


def attention_flops(kind: str, length: int, *, batch: int = 8, heads: int = 8, d_head: int = 64,
                    backward: bool = False) -> int:
    """Floating-point operations of one pass of a ``ch7-mha`` or ``ch10-flash`` case, counting the matrix products
    only (2 per multiply-add; the softmax and the scaling are a few per score and left out): QKᵀ and the weighted
    sum of V cost 4·B·h·T²·d_head (the tiled pass does the same products); the two layers (``course``,
    ``framework``) add the four projections, 8·B·T·D² with D = h·d_head. A backward pass does two products for
    each product of the forward pass: ×3 in all."""
    validate.choice("attention kind", kind, ("explicit", "fused", "course", "framework", "tiled"))
    width = heads * d_head
    flops = 4 * batch * heads * length ** 2 * d_head
    if kind in ("course", "framework"):
        flops += 8 * batch * length * width ** 2
    return 3 * flops if backward else flops


def decoding_pass(fw, kind: str, steps: int, *, batch: int = 8, src_len: int = 16, vocab: int = 1000,
                  seed: int = 0) -> Callable[[], None]:
    """A function that decodes ``steps`` tokens greedily (no early stop) for ``batch`` random sentences of
    ``src_len`` tokens with a seeded random-weight ``fw.Transformer`` (d_model 64, 4 heads, 2 layers, d_ff 256):
    with its key–value cache (``kind="cache"``) or recomputing the whole prefix at every step
    (``"recompute"``, :class:`attention_course.core.decode.Recompute`)."""
    import numpy as np

    from attention_course.core import decode
    from attention_course.notebook import session

    validate.choice("decoding kind", kind, ("cache", "recompute"))
    session.seed_everything(seed)
    model = fw.Transformer(vocab, vocab, d_model=64, heads=4, layers=2, d_ff=256, dropout=0.0)
    src = np.random.default_rng(seed).integers(4, vocab, size=(batch, src_len))
    mask = np.ones((batch, src_len), bool)
    decoder = model if kind == "cache" else decode.Recompute(model)

    def run() -> None:
        state, tokens = decoder.start(src, mask), np.full(batch, BOS)
        for _ in range(steps):
            log_probs, state, _ = decoder.step(tokens, state)
            tokens = log_probs.argmax(-1)

    return run


#: ``training_pass``'s models: each chapter's model at its quick-profile size, and the mini-batch it trains on.
TRAINED = ("ch5-bahdanau", "ch6-soft", "ch8-transformer", "ch9-masked-lm")


def training_pass(fw, model: str, *, seed: int = 0) -> Callable[[], float]:
    """A function that runs one training step (forward, backward, Adam) of a chapter's model at its quick-profile
    size on one seeded random mini-batch, through the chapter's own training code: Chapter 5's Bahdanau translator
    and Chapter 8's Transformer (``fit``'s trainer; batch 128, sources of 20 tokens, targets of 22), Chapter 6's
    soft-attention captioner (``CaptionerTrainer``; 64 scenes of 48 × 48, captions of 8 words) and Chapter 9's
    masked LM (``fit``'s trainer; 32 sequences of 64 pieces, 16 predictions each). It returns the step's loss."""
    import numpy as np

    from attention_course.notebook import session

    validate.choice("trained model", model, TRAINED)
    session.seed_everything(seed)
    rng = np.random.default_rng(seed)
    framework = backend(fw)
    train = framework.train_module()
    xs: tuple[np.ndarray, ...]
    if model == "ch6-soft":
        vocab, words = 30, 8
        net = fw.Captioner(vocab, "soft", embed=32, hidden=128, dim=64, units=64)
        images = rng.random((64, 48, 48, 3), dtype=np.float32)
        tokens = rng.integers(4, vocab, size=(64, words + 1))
        xs, y = (images, tokens[:, :-1]), tokens[:, 1:]
        chapter6 = framework.module("attention_course.ch06_image_captioning")
        if not framework.is_torch:
            net(*[a[:2] for a in xs])                                  # build the variables eagerly
        trainer = chapter6.CaptionerTrainer(net, rng, chapter6.grid_locations(images), lr=1e-3, clip_norm=5.0,
                                            doubly_stochastic=1.0, entropy=0.0, expect_share=0.5)
    else:
        if model == "ch9-masked-lm":
            vocab, batch, length, predictions = 3000, 32, 64, 16
            net = fw.MaskedLM(vocab, d_model=64, heads=4, layers=2, d_ff=256, dropout=0.1)
            ids = rng.integers(5, vocab, size=(batch, length))
            xs = (ids, np.ones((batch, length), bool), np.sort(rng.permutation(length)[:predictions])[None]
                  .repeat(batch, 0))
            y, options = rng.integers(5, vocab, size=(batch, predictions)), {}
        else:
            vocab, batch, src_len, tgt_len = 1000, 128, 20, 22
            net = (fw.Translator(vocab, vocab, "bahdanau", embed=32, hidden=64) if model == "ch5-bahdanau" else
                   fw.Transformer(vocab, vocab, d_model=64, heads=4, layers=2, d_ff=256, dropout=0.1))
            tokens = rng.integers(4, vocab, size=(batch, tgt_len + 1))
            xs = (rng.integers(4, vocab, size=(batch, src_len)), np.ones((batch, src_len), bool), tokens[:, :-1])
            y = tokens[:, 1:]
            options = {"clip_norm": 1.0} if model == "ch5-bahdanau" else {"label_smoothing": 0.1}
        trainer = train.make_trainer(net, xs, y, batch_size=len(y), lr=1e-3, ignore_index=0, **options)
    steps = iter(range(1, 1 << 30))

    def run() -> float:
        return trainer.step(list(xs), y, next(steps))[0]

    return run


def machine() -> dict[str, object]:
    """The hardware and software a result was measured on."""
    info = describe()
    return {key: info[key] for key in ("cpu", "cores", "python", "system", "date")}


def machine_name(info: dict[str, object], gpu: str | None = None) -> str:
    """A file name for a machine: its GPU, or its CPU and core count (``cpu-2-amd-epyc``)."""
    words = (gpu or str(info["cpu"])).lower().replace("(r)", "").replace("(tm)", "").split()
    label = "-".join(w for w in words[:3] if w.isalnum() or "-" in w)
    return f"gpu-{label}" if gpu else f"cpu-{info['cores']}-{label}"


def load(case: str | None = None) -> list[dict]:
    """The committed results, one dict per machine (``machine``, ``versions``, ``cases``); with ``case``, only
    that case's rows, each with the machine's name added (an error when no machine has that case)."""
    found = []
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if case is None:
            found.append(data)
        else:
            found += [{**row, "machine": data["name"]} for row in data["cases"].get(case, [])]
    if case is not None and not found:
        raise ConfigError(f"no committed benchmark results for {case!r} in {RESULTS}: run `make bench` "
                          f"(tools/bench.py) and commit attention_course/benchmarks/<machine>.json")
    return found


def __getattr__(name: str):
    """``bench.torch_cost`` and ``bench.keras_cost``, each imported (with its framework) when first used."""
    if name in ("torch_cost", "keras_cost"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
