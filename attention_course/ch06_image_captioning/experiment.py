"""Chapter 6's experiment: captioners trained on scenes of handwritten digits, their captions, BLEU and attention
correctness; DRAW's glimpse classifier on cluttered digits, its accuracy and where its windows read.

The notebook (quick profile) and ``tools/chapter6_full.py`` (the results table) both call these functions, so the
book and the command measure the same thing. Importing this module loads no framework: the functions take the
framework's module (``ac.torch`` or ``ac.keras``) as an argument.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from attention_course.ch05_neural_machine_translation.experiment import parameters
from attention_course.ch06_image_captioning import flickr8k as f8k
from attention_course.ch06_image_captioning import metrics as cm
from attention_course.ch06_image_captioning import validate
from attention_course.ch06_image_captioning.scenes import DIGIT_WORDS, Cluttered, Scenes, cluttered_digits, digit_scenes
from attention_course.core import decode
from attention_course.core.backend import backend, no_grad, to_numpy
from attention_course.core.errors import ConfigError, ShapeError
from attention_course.core.text import BOS, EOS, PAD, Vocab, pad_batch
from attention_course.notebook import session

__all__ = ["SIZES", "MODELS", "CaptionData", "corpus", "in_vocabulary", "build", "train", "caption", "bleu_scores",
           "teacher_forced_attention", "correctness", "ESTIMATORS", "attention_gradients", "relative_variance",
           "parameters", "flickr8k_available", "FeatureSplit", "FeatureData", "flickr8k_corpus",
           "GLIMPSES", "cluttered", "classify", "window_mass", "glimpse_correctness", "seed_table"]

#: Sizes of each run: scenes, model, training.
SIZES: dict[str, dict[str, Any]] = {
    "quick": {"n_train": 2000, "n_test": 300, "canvas": 48, "embed": 32, "hidden": 128, "dim": 64, "units": 64,
              "epochs": 6, "batch_size": 64, "lr": 3e-3},
    "cpu": {"n_train": 8000, "n_test": 1000, "canvas": 48, "embed": 64, "hidden": 256, "dim": 64, "units": 128,
            "epochs": 15, "batch_size": 64, "lr": 2e-3},
    "full": {"n_train": 30000, "n_test": 2000, "canvas": 48, "embed": 128, "hidden": 512, "dim": 128, "units": 256,
             "epochs": 30, "batch_size": 128, "lr": 1e-3},
    # Flickr8k (flickr8k_corpus), the paper's setting with a ResNet-50: 7 × 7 × 2,048 grids of 224-pixel photographs
    # (Xu et al.: VGG's 14 × 14 × 512), all 6,000 training photographs with their 5 captions (30,000 pairs, as the
    # paper trains) and the 1,000 test ones, each scored against its 5 references (BLEU-4 in the paper's Table 1:
    # soft 19.5, hard 21.3). Words seen at least 5 times in the training captions (rarer ones read UNK), training
    # captions cut at 30 words (every step of every batch costs; the references stay whole). The annotations are
    # projected to 512, the paper's D. Adam (the paper used RMSProp on Flickr8k), no dropout, no early stopping on
    # BLEU: 12 epochs, an estimate (not measured) of a few minutes per captioner on one GPU, so that the features
    # (computed once for 7,000 JPEGs, then cached) and the chapter's captioners fit in a session of about an hour.
    # n_train / n_test: the first photographs of each split (None: all of them).
    "flickr8k": {"n_train": None, "n_test": None, "image_size": 224, "min_count": 5, "max_words": 30, "embed": 256,
                 "hidden": 512, "dim": 512, "units": 512, "epochs": 12, "batch_size": 64, "lr": 1e-3},
}
#: DRAW's glimpse classifier (``GlimpseClassifier``, ``train_glimpses``) on cluttered digits (``cluttered_digits``):
#: canvases, model and training of each profile. A 16-pixel digit on a 32-pixel canvas (a quarter of it), 8 × 8
#: glimpses. Quick: three pieces of clutter, three glimpses. Full: four pieces, four glimpses, a larger model and
#: more data (PyTorch on a CPU, seed 0: test accuracy 0.83 with four glimpses, 0.60 with one; a 40-pixel canvas
#: with five pieces learned too slowly: 0.37 after 20 epochs, its windows off the digit).
GLIMPSES: dict[str, dict[str, Any]] = {
    "quick": {"n_train": 6000, "n_test": 500, "canvas": 32, "clutter": 3, "n": 8, "glimpses": 3, "hidden": 128,
              "epochs": 6, "batch_size": 32, "lr": 2e-3},
    "full": {"n_train": 20000, "n_test": 2000, "canvas": 32, "clutter": 4, "n": 8, "glimpses": 4, "hidden": 256,
             "epochs": 12, "batch_size": 32, "lr": 2e-3},
}
#: The chapter's captioners: name → ``Captioner`` arguments and the training's regularisers.
MODELS: dict[str, dict[str, Any]] = {
    "Show and Tell": {"attention": "none"},
    "mean pooling": {"attention": "mean"},
    "soft": {"attention": "soft"},
    "soft, no gate": {"attention": "soft", "gate": False},
    "soft, λ = 1": {"attention": "soft", "doubly_stochastic": 1.0},
    "hard": {"attention": "hard", "gate": False, "entropy": 0.01},
}


@dataclass
class CaptionData:
    """Training and test scenes, the caption vocabulary, and the captions as padded ids:
    ``*_in`` (n, T) = BOS + caption, ``*_out`` (n, T) = caption + EOS."""

    train: Scenes
    test: Scenes
    vocab: Vocab
    train_in: np.ndarray
    train_out: np.ndarray
    test_in: np.ndarray
    test_out: np.ndarray

    @property
    def grid(self) -> tuple[int, int]:
        """(gh, gw): the attention grid of the encoder (one cell per 8 × 8 pixels)."""
        return self.train.images.shape[1] // 8, self.train.images.shape[2] // 8

    @property
    def features(self) -> None:
        """The captioner reads images, not a pretrained CNN's grids (see :class:`FeatureData`)."""
        return None


def _in_out(ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Captions as ids → (BOS + caption, caption + EOS), each padded (n, T)."""
    return pad_batch([[BOS, *x] for x in ids]).ids, pad_batch([[*x, EOS] for x in ids]).ids


def _same_width(*ids: np.ndarray) -> list[np.ndarray]:
    """Padded id arrays (n_i, T_i), padded on the right to the widest T (training and test captions alike)."""
    width = max(a.shape[1] for a in ids)
    return [np.pad(a, ((0, 0), (0, width - a.shape[1]))) for a in ids]


def _ids(scenes: Scenes, vocab: Vocab) -> tuple[np.ndarray, np.ndarray]:
    return _in_out([vocab.encode(c.split()) for c in scenes.captions])


def corpus(sizes: dict[str, Any], seed: int = 0) -> CaptionData:
    """Scenes from the training scans and from the held-out scans (seeded), and a word vocabulary of the training
    captions. Training and test captions are padded to the same width."""
    train = digit_scenes(sizes["n_train"], split="train", canvas=sizes["canvas"], seed=seed)
    test = digit_scenes(sizes["n_test"], split="test", canvas=sizes["canvas"], seed=seed + 10_000)
    vocab = Vocab.build([c.split() for c in train.captions])
    return CaptionData(train, test, vocab, *_same_width(*_ids(train, vocab), *_ids(test, vocab)))


def in_vocabulary(data: CaptionData, tokens: list[str]) -> CaptionData:
    """The same scenes with their captions as ids of another vocabulary: ``tokens`` in id order, the specials first
    (``Vocab.tokens``, which a trained captioner's record keeps), so that a model trained on other scenes reads
    and writes these. A word of the captions that ``tokens`` lacks raises ``ConfigError``."""
    vocab = Vocab(tokens)
    if vocab.tokens != list(tokens):
        raise ConfigError(f"the vocabulary must start with {vocab.tokens[:4]} and hold each word once; got "
                          f"{list(tokens)[:6]}…")
    missing = sorted({w for c in data.train.captions + data.test.captions for w in c.split()} - set(tokens))
    if missing:
        raise ConfigError(f"the vocabulary lacks words of these captions: {missing}")
    return CaptionData(data.train, data.test, vocab, *_same_width(*_ids(data.train, vocab), *_ids(data.test, vocab)))


class _Rows:
    """An array read row by row through an index: ``rows[i]`` is ``array[index[i]]``, gathered when indexed (the
    grids of 30,000 caption pairs without copying each photograph's grid 5 times)."""

    def __init__(self, array: np.ndarray, index: np.ndarray):
        self.array, self.index = array, index
        self.shape, self.dtype = (len(index), *array.shape[1:]), array.dtype

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, rows) -> np.ndarray:
        return np.asarray(self.array[self.index[rows]])


@dataclass
class FeatureSplit:
    """Photographs as a pretrained CNN sees them: ``features`` (n, L, D) grids (float16, memory-mapped from the
    cache), ``paths`` their JPEGs, ``references`` the 5 captions of each (strings, for BLEU). ``photo`` (m,): the
    photograph of each example (the training split has one per caption); ``images`` (m, L, D) reads the examples'
    grids, what a captioner built with ``features`` reads (the name the scenes use)."""

    features: np.ndarray
    paths: list[Path]
    references: list[list[str]]
    photo: np.ndarray

    @property
    def images(self) -> _Rows:
        return _Rows(self.features, self.photo)

    def __len__(self) -> int:
        return len(self.photo)


@dataclass
class FeatureData:
    """Flickr8k for one framework (:func:`flickr8k_corpus`), laid out as :class:`CaptionData`: ``train_in`` (m, T) =
    BOS + caption, ``train_out`` = caption + EOS for every training caption (row 5i + k: caption k of photograph i);
    ``test_in``/``test_out`` (n, T) the first caption of each test photograph (for teacher-forced attention)."""

    train: FeatureSplit
    test: FeatureSplit
    vocab: Vocab
    train_in: np.ndarray
    train_out: np.ndarray
    test_in: np.ndarray
    test_out: np.ndarray

    @property
    def features(self) -> int:
        """D, the size of an annotation vector of the CNN (2,048 for ResNet-50)."""
        return self.train.features.shape[2]

    @property
    def grid(self) -> tuple[int, int]:
        """(gh, gw): the CNN's square grid (7 × 7 at 224 pixels), from L; (1, L) if L is not a square."""
        L = self.train.features.shape[1]
        side = math.isqrt(L)
        return (side, side) if side * side == L else (1, L)


def flickr8k_corpus(fw: ModuleType | str, sizes: dict[str, Any], *, root: str | os.PathLike[str] | None = None,
                    counts: Mapping[str, int] | None = f8k.COUNTS, model: Any = None, name: str | None = None
                    ) -> FeatureData:
    """Flickr8k as framework ``fw``'s captioner reads it: ResNet-50 grids of the training and test photographs
    (computed once at ``sizes["image_size"]`` pixels, then read from the cache:
    :func:`~attention_course.ch06_image_captioning.image_features.image_features`), every training caption paired
    with its
    photograph, cut to ``sizes["max_words"]`` words, the vocabulary of training words seen at least
    ``sizes["min_count"]`` times, and the 5 uncut references of each test photograph. ``sizes["n_train"]`` /
    ``["n_test"]``: the first photographs of each split (None: all). ``root``, ``counts``: as
    :func:`~attention_course.data.load_flickr8k`; ``model``, ``name``: another network for the grids (as
    ``image_features`` takes them; the tests use a random one)."""
    from attention_course.ch06_image_captioning import image_features as imf

    splits = {}
    for split in ("train", "test"):
        part = f8k.load_flickr8k(split, root=root, counts=counts)
        n = len(part) if sizes.get(f"n_{split}") is None else min(sizes[f"n_{split}"], len(part))
        grids = imf.image_features(part.images[:n], fw, model=model, name=name or imf.NAME, size=sizes["image_size"])
        splits[split] = (part.images[:n], part.captions[:n], grids)             # grids (n, L, D)
    words = [c[:sizes["max_words"]] for caps in splits["train"][1] for c in caps]  # 5 per photograph
    vocab = Vocab.build(words, min_freq=sizes["min_count"])
    firsts = [caps[0][:sizes["max_words"]] for caps in splits["test"][1]]
    ids = _same_width(*_in_out([vocab.encode(w) for w in words]), *_in_out([vocab.encode(w) for w in firsts]))
    data = []
    for split, per in (("train", f8k.PER_IMAGE), ("test", 1)):
        paths, caps, grids = splits[split]
        data.append(FeatureSplit(grids, paths, [[" ".join(c) for c in cs] for cs in caps],
                                 np.repeat(np.arange(len(paths)), per)))
    return FeatureData(data[0], data[1], vocab, *ids)


def build(fw: ModuleType, data: CaptionData | FeatureData, sizes: dict[str, Any], *, attention: str, gate: bool = True,
          seed: int = 0, **_):
    """A ``Captioner`` of framework ``fw`` (``ac.torch`` or ``ac.keras``), seeded. Extra keys (a ``MODELS``
    entry's regularisers) are ignored, so ``build(fw, data, sizes, **MODELS[name])`` works."""
    session.seed_everything(seed)
    return fw.Captioner(len(data.vocab), attention, gate=gate, embed=sizes["embed"], hidden=sizes["hidden"],
                        dim=sizes["dim"], units=sizes["units"], features=data.features)


def train(fw: ModuleType, model, data: CaptionData | FeatureData, sizes: dict[str, Any], *, seed: int = 0,
          doubly_stochastic: float = 0.0, entropy: float = 0.0, desc: str | None = None, **_):
    """Teacher forcing on the training scenes (``fw.train_captioner``); returns the history."""
    return fw.train_captioner(model, data.train.images, data.train_in, data.train_out, epochs=sizes["epochs"],
                              batch_size=sizes["batch_size"], lr=sizes["lr"], doubly_stochastic=doubly_stochastic,
                              entropy=entropy, seed=seed, desc=desc)


class _ImageSearch:
    """What ``decode``'s searches need, for images: their ``src`` (B, L) holds each image's index at its L
    locations (the mask is all True), so the attention they return is (N, L)."""

    def __init__(self, model, images: np.ndarray | _Rows):
        self.model, self.images = model, images

    def start(self, src, src_mask):
        return self.model.start(self.images[np.asarray(src)[:, 0]])

    def step(self, tokens, state):
        return self.model.step(tokens, state)

    def reorder(self, state, index):
        return self.model.reorder(state, index)


def caption(model, data: CaptionData | FeatureData, images: np.ndarray | None = None, *, beam: int = 1,
            batch_size: int = 100) -> tuple[list[str], list[np.ndarray]]:
    """Captions of ``images`` (the test scenes or photographs by default) by greedy (``beam=1``) or beam search, and the
    attention of each generated word, the end token included: (len(words) + 1, gh, gw)."""
    inputs = data.test.images if images is None else images
    grid, max_len = data.grid, data.test_out.shape[1]
    search = _ImageSearch(model, inputs)
    captions, maps = [], []
    for i in range(0, len(inputs), batch_size):
        index = np.arange(i, min(i + batch_size, len(inputs)))
        src = np.repeat(index[:, None], grid[0] * grid[1], 1)
        mask = np.ones_like(src, dtype=bool)
        found = (decode.greedy_search(search, src, mask, max_len=max_len) if beam == 1 else
                 decode.beam_search(search, src, mask, beam=beam, max_len=max_len))
        captions += [" ".join(data.vocab.decode(t)) for t in found.tokens]
        maps += [a.reshape(-1, *grid) for a in (found.attention or [np.zeros((1, grid[0] * grid[1]))] * len(index))]
    return captions, maps


def bleu_scores(captions: list[str], scenes: Scenes | FeatureSplit) -> dict[str, float]:
    """BLEU-1 … BLEU-4 (sacreBLEU) of ``captions`` against every caption the grammar allows for each scene (every
    reference caption of each photograph: Flickr8k's 5)."""
    return {f"BLEU-{n}": cm.caption_bleu(captions, scenes.references, n) for n in (1, 2, 3, 4)}


def teacher_forced_attention(fw: ModuleType, model, data: CaptionData | FeatureData, batch_size: int = 100
                             ) -> np.ndarray:
    """The attention of every word of the reference test captions (the model reads the true previous words):
    (n, T, gh, gw), the step that emits word t at [:, t]. Hard attention gives its distribution α, not a sample."""
    out = []
    with no_grad(model):
        for i in range(0, len(data.test), batch_size):
            _, alpha, _ = model(data.test.images[i:i + batch_size], data.test_in[i:i + batch_size], greedy=True)
            out.append(to_numpy(alpha))
    return np.concatenate(out).reshape(len(data.test), -1, *data.grid)


def correctness(alpha: np.ndarray, scenes: Scenes, words: tuple[str, ...] = DIGIT_WORDS) -> dict[str, Any]:
    """Attention correctness of the caption words in ``words`` (by default the digit names): for each such word
    of each reference caption, the share of its attention (``alpha`` (n, T, gh, gw), step t emits word t) inside
    the box of the digit it names, and chance, the box's share of the canvas. Returns the means over the words
    ("correctness", "chance", "n") and one row per word ("rows": scene, position, word, correctness, chance)."""
    canvas = scenes.images.shape[1:3]
    rows = []
    for i, (text, names) in enumerate(zip(scenes.captions, scenes.word_objects, strict=True)):
        for t, (word, obj) in enumerate(zip(text.split(), names, strict=True)):
            if obj < 0 or word not in words:
                continue
            box = scenes.objects[i][obj].box
            rows.append({"scene": i, "position": t, "word": word, "small": scenes.objects[i][obj].small,
                         "correctness": cm.attention_correctness(alpha[i, t], box, canvas),
                         "chance": cm.box_share(box, canvas)})
    if not rows:
        return {"correctness": float("nan"), "chance": float("nan"), "n": 0, "rows": rows}
    return {"correctness": float(np.mean([r["correctness"] for r in rows])),
            "chance": float(np.mean([r["chance"] for r in rows])), "n": len(rows), "rows": rows}


def seed_table(*results: dict[str, Any]):
    """The results files of ``tools/chapter6_full.py`` (one per framework) as one table over seeds: for each
    framework and captioner, the number of seeds, the mean and standard deviation of attention correctness and of
    greedy BLEU-4, the lowest correctness of any seed, and chance (the mean box share)."""
    import pandas as pd

    rows = [{"framework": f["framework"], "model": r["model"], "seed": r["seed"], "bleu": r["beam1"]["BLEU-4"],
             "correct": r["correctness"]["correctness"], "chance": r["correctness"]["chance"]}
            for f in results for r in f["runs"]]
    order = {name: k for k, name in enumerate(MODELS)}
    table = pd.DataFrame(rows).groupby(["framework", "model"]).agg(
        **{"seeds": ("seed", "count"), "correctness": ("correct", "mean"), "sd correctness": ("correct", "std"),
           "lowest correctness": ("correct", "min"), "chance": ("chance", "mean"), "BLEU-4 greedy": ("bleu", "mean"),
           "sd BLEU-4": ("bleu", "std")})
    return table.sort_index(key=lambda idx: idx.map(order) if idx.name == "model" else idx)


#: The three gradient estimators of :func:`attention_gradients`.
ESTIMATORS = ("expectation", "sample", "sample, baseline")


def attention_gradients(fw: ModuleType, model, data: CaptionData, *, draws: int = 30, batch_size: int = 32,
                        seed: int = 0) -> dict[str, np.ndarray]:
    """How noisy each way of training hard attention is: ``draws`` gradients of the training loss with respect
    to the attention's weights (``model.attend``, f_att), each on a fresh mini-batch of training scenes, for three
    estimators at the same weights (a ``"hard"`` ``Captioner``):

    * ``"expectation"``: every caption reads the expected context Σ_i α_ti a_i (soft attention's exact,
      pathwise gradient; only the mini-batch varies);
    * ``"sample"``: every caption reads one sampled location, and the gradient is REINFORCE's
      r · ∇ Σ_t log π(s_t), r the caption's mean log-likelihood (Xu et al.'s eq. 12 without a baseline);
    * ``"sample, baseline"``: the same samples with (r − b) · ∇ Σ_t log π(s_t), b the mean reward of the
      sampled draws (what the moving average of training tracks).

    The three share the mini-batches and the Gumbel noise. Returns estimator → gradients (draws, n_weights)."""

    if getattr(model, "attention", None) != "hard":
        raise ConfigError(f"attention_gradients needs a Captioner with attention='hard', got "
                          f"{getattr(model, 'attention', type(model).__name__)!r}")
    draws, batch_size = validate.sizes(draws=draws, batch_size=batch_size)
    rng = np.random.default_rng(seed)
    n, (gh, gw) = len(data.train), data.grid
    picks = [rng.choice(n, size=min(batch_size, n), replace=False) for _ in range(draws)]
    noise = [rng.gumbel(size=(len(p), data.train_in.shape[1], gh * gw)).astype(np.float32) for p in picks]
    grad = (_torch_attention_gradient if backend(fw).is_torch else _keras_attention_gradient)(model)

    def run(sampled: bool, baseline: float) -> tuple[np.ndarray, list[float]]:
        out, rewards = [], []
        for p, z in zip(picks, noise, strict=True):
            g, r = grad(data.train.images[p], data.train_in[p], data.train_out[p], z,
                        np.full(len(p), not sampled), baseline)
            out.append(g)
            rewards.append(r)
        return np.stack(out), rewards

    expectation, _ = run(False, 0.0)
    sample, rewards = run(True, 0.0)
    with_baseline, _ = run(True, float(np.mean(rewards)))
    return {"expectation": expectation, "sample": sample, "sample, baseline": with_baseline}


def relative_variance(gradients: np.ndarray) -> float:
    """E‖g − ḡ‖² / ‖ḡ‖² over the rows of ``gradients`` (draws, n): the noise of an estimator against its
    signal (below 1: one draw points roughly where the mean does; far above: a single draw is mostly noise)."""
    mean = gradients.mean(0)
    return float(((gradients - mean) ** 2).sum(1).mean() / max((mean ** 2).sum(), 1e-30))


def _torch_attention_gradient(model):
    """A function (images, tokens_in, tokens_out, noise, expect, baseline) → (flat gradient of the loss with
    respect to model.attend's weights, mean reward), PyTorch."""
    import torch
    from torch import nn

    params = list(model.attend.parameters())

    def grad(images, tokens_in, tokens_out, noise, expect, baseline):
        y = torch.as_tensor(tokens_out, device=params[0].device)
        logits, _, log_pi = model(images, tokens_in, noise=noise, expect=expect)
        keep = (y != PAD).float()                                                        # (b, T)
        ce = nn.functional.cross_entropy(logits.transpose(1, 2), y, reduction="none")   # (b, T)
        reward = -((ce * keep).sum(1) / keep.sum(1)).detach()                           # (b,)
        loss = (ce * keep).sum() / keep.sum() - ((reward - baseline) * (log_pi * keep).sum(1)).mean()
        grads = torch.autograd.grad(loss, params, allow_unused=True)                     # log π = 0 where expected
        flat = torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1)
                          for g, p in zip(grads, params, strict=True)])
        return flat.double().cpu().numpy(), float(reward.mean())
    return grad


def _keras_attention_gradient(model):
    """The same as :func:`_torch_attention_gradient`, Keras (one traced graph for every batch)."""
    import keras
    import tensorflow as tf
    from keras import ops

    @tf.function(reduce_retracing=True)
    def step(images, tokens_in, tokens_out, noise, expect, baseline):
        params = model.attend.trainable_variables
        with tf.GradientTape() as tape:
            logits, _, log_pi = model(images, tokens_in, noise=noise, expect=expect)
            keep = ops.cast(tokens_out != PAD, "float32")                                # (b, T)
            ce = keras.losses.sparse_categorical_crossentropy(tokens_out, logits, from_logits=True)   # (b, T)
            reward = ops.stop_gradient(-ops.sum(ce * keep, 1) / ops.sum(keep, 1))      # (b,)
            loss = ops.sum(ce * keep) / ops.sum(keep) - ops.mean((reward - baseline) * ops.sum(log_pi * keep, 1))
        grads = tape.gradient(loss, params)
        grads = [ops.zeros_like(p) if g is None else tf.convert_to_tensor(g)
                 for g, p in zip(grads, params, strict=True)]
        return grads, reward

    def grad(images, tokens_in, tokens_out, noise, expect, baseline):
        if not model.built:
            model(images[:2], tokens_in[:2])                                         # build the variables
        grads, reward = step(*(tf.convert_to_tensor(x) for x in (images, tokens_in, tokens_out, noise, expect)),
                             tf.constant(baseline, "float32"))
        flat = np.concatenate([np.asarray(g).reshape(-1) for g in grads])
        return flat.astype(np.float64), float(np.mean(np.asarray(reward)))
    return grad


def flickr8k_available(frameworks=None, *, download: bool = False) -> tuple[bool, str]:
    """Whether the Flickr8k part of the chapter can run here, and why (not): (ok, reason). The data must be in the
    data cache and pass its structure check (with ``download=True`` missing files are fetched first, about 1 GB);
    then, for each framework in ``frameworks`` (names or modules; ``None``: both), ResNet-50's ImageNet weights
    must be cached or downloadable (and torchvision installed, for PyTorch). Only ``download=True`` downloads."""
    from attention_course.ch06_image_captioning import image_features
    from attention_course.ch06_image_captioning.flickr8k import instructions
    from attention_course.core.errors import CourseError
    from attention_course.data import download as dl
    from attention_course.data.registry import get

    ds = get("flickr8k")
    folder = dl.cache_dir() / ds.folder
    if not download and not all((folder / fn).exists() for fn in ds.files):
        return False, (f"Flickr8k is not in the data cache ({folder}); call flickr8k_available(download=True) "
                       "or load_flickr8k() to download it (about 1 GB).\n" + instructions())
    try:
        dl.fetch("flickr8k")
    except CourseError as exc:
        return False, str(exc)
    if frameworks is None:
        frameworks = ("keras", "pytorch")
    elif isinstance(frameworks, (str, ModuleType)):
        frameworks = (frameworks,)
    reasons = [f"Flickr8k in {folder}"]
    for fw in frameworks:
        ok, why = image_features.weights_available(fw)
        if not ok:
            return False, why
        reasons.append(why)
    return True, "; ".join(reasons)


def cluttered(sizes: dict[str, Any], seed: int = 0) -> tuple[Cluttered, Cluttered]:
    """Training and test canvases of a ``GLIMPSES`` entry: the test ones drawn from the held-out scans, with
    another seed."""
    kw = {"canvas": sizes["canvas"], "clutter": sizes["clutter"]}
    return (cluttered_digits(sizes["n_train"], split="train", seed=seed, **kw),
            cluttered_digits(sizes["n_test"], split="test", seed=seed + 1, **kw))


def classify(fw: ModuleType, model, images: np.ndarray, batch_size: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """A ``GlimpseClassifier``'s predicted classes (n,) and windows (n, T, 5: g_x, g_y, σ², δ, γ) for ``images``."""
    classes, windows = [], []
    with no_grad(model):
        for i in range(0, len(images), batch_size):
            logits, window = model(images[i:i + batch_size])
            classes.append(to_numpy(logits).argmax(-1))
            windows.append(to_numpy(window))
    return np.concatenate(classes), np.concatenate(windows)


def window_mass(window, shape: tuple[int, int], n: int) -> np.ndarray:
    """Where a DRAW window reads: the share of its glimpse's weight on each pixel, (H, W), summing to 1. A glimpse
    pixel (i, j) weighs image pixel (a, b) by F_Y[i, a] F_X[j, b]; averaged over the N × N glimpse pixels that is
    (mean_i F_Y[i, a]) (mean_j F_X[j, b]). ``window``: (g_x, g_y, σ², δ[, γ]), as ``DrawRead.window`` gives.
    A window whose filters all miss the canvas (their weights underflow to 0) reads nothing: a map of zeros."""
    window = np.asarray(window, dtype=np.float64)
    if window.shape not in ((4,), (5,)):
        raise ShapeError(f"window must be (g_x, g_y, σ², δ[, γ]), one glimpse's parameters; got shape {window.shape}")
    for name, value in zip(("gx", "gy", "sigma2", "delta"), window, strict=False):
        validate.window_parameter(name, (), None, value)
    n = validate.integer("n (the glimpse size)", n)
    gx, gy, sigma2, delta = (float(v) for v in window[:4])
    mass = np.outer(cm.draw_filterbank(gy, sigma2, delta, n, shape[0]).mean(0),
                    cm.draw_filterbank(gx, sigma2, delta, n, shape[1]).mean(0))
    return mass / mass.sum() if mass.sum() > 0 else mass


def glimpse_correctness(windows: np.ndarray, data: Cluttered, n: int) -> dict[str, Any]:
    """For each glimpse step, the mean share of the window's weight inside the digit's box (``window_mass``,
    attention correctness at the pixel level), and chance: the box's share of the canvas."""
    windows = np.asarray(windows)
    if windows.ndim != 3 or windows.shape[0] != len(data) or windows.shape[2] < 4:
        raise ShapeError(f"windows must be (n, T, 5), one row of window parameters per canvas and glimpse, for the "
                         f"{len(data)} canvases; got {windows.shape}")
    shape = data.images.shape[1:3]
    share = [[cm.attention_correctness(window_mass(w, shape, n), tuple(box), shape) for w in row]
             for row, box in zip(windows, data.boxes, strict=True)]
    return {"share": np.mean(share, 0).tolist(),
            "chance": float(np.mean([cm.box_share(tuple(b), shape) for b in data.boxes])), "n": len(data)}
