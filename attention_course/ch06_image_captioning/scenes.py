"""Chapter 6's scenes: canvases of real handwritten digits with captions, generated from scikit-learn's
``load_digits`` (1,797 scans of 8×8 digits that ship inside the scikit-learn wheel, so nothing is downloaded).

Each scene holds two or three digits, some small (8×8) and some large (16×16), some tinted, none overlapping.
Its caption comes from a small grammar, "a red three above a small seven" for two digits, "three digits : a
seven , a small blue two and a one" (left to right) for three, and because the generator placed every digit it
knows which box each word names: that is what attention correctness is measured against.

The handwriting is split once, by scan, so the test scenes are written by hands the model never saw.
``cluttered_digits`` makes the canvases of DRAW's glimpse model from the same scans: one whole digit among pieces
of others.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from attention_course.ch06_image_captioning import validate
from attention_course.core.errors import ConfigError

__all__ = ["DIGIT_WORDS", "COLOURS", "DigitObject", "Scenes", "digit_scenes", "scene_caption", "digit_scans",
           "Cluttered", "cluttered_digits"]

DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
COLOURS = {"red": (1.0, 0.25, 0.2), "green": (0.25, 0.9, 0.3), "blue": (0.3, 0.5, 1.0), "yellow": (1.0, 0.9, 0.1)}
COUNT_WORDS = {2: "two", 3: "three"}
SMALL, LARGE = 8, 16          # digit sizes in pixels: a scan as it is, or each pixel doubled


@dataclass(frozen=True)
class DigitObject:
    """One digit on a canvas: its class, colour word (None: white, no word), size and box.
    ``box`` = (top, left, bottom, right) in pixels, bottom and right exclusive."""

    digit: int
    colour: str | None
    small: bool
    box: tuple[int, int, int, int]

    @property
    def centre(self) -> tuple[float, float]:
        top, left, bottom, right = self.box
        return (top + bottom) / 2, (left + right) / 2

    def words(self) -> list[str]:
        """The noun phrase without its article: [small] [colour] digit."""
        return ["small"] * self.small + ([self.colour] if self.colour else []) + [DIGIT_WORDS[self.digit]]


@dataclass(frozen=True)
class Scenes:
    """n scenes. ``images`` (n, H, W, 3) float32 in [0, 1]; ``objects[i]`` the digits of scene i;
    ``captions[i]`` its caption (words separated by spaces); ``word_objects[i][t]`` the index in ``objects[i]``
    of the digit that caption word t names (its noun phrase: size, colour and digit words), or -1 (articles,
    relations, counts); ``references[i]`` every caption the grammar allows for the scene (for BLEU)."""

    images: np.ndarray
    objects: list[list[DigitObject]]
    captions: list[str]
    word_objects: list[list[int]]
    references: list[list[str]]

    def __len__(self) -> int:
        return len(self.captions)


@functools.cache
def digit_scans(split: str) -> tuple[np.ndarray, np.ndarray]:
    """The scans of one split: (images (n, 8, 8) float32 in [0, 1], labels (n,)). ``"train"``: 4 of every 5
    scans (1,437); ``"test"``: every fifth (360). The split is fixed, the same for every seed."""
    if split not in ("train", "test"):
        raise ConfigError(f"unknown split {split!r}: use 'train' or 'test'")
    from sklearn.datasets import load_digits

    digits = load_digits()
    keep = (np.arange(len(digits.target)) % 5 == 0) == (split == "test")
    return (digits.images[keep] / 16.0).astype(np.float32), digits.target[keep].astype(np.int64)


def scene_caption(objects: list[DigitObject]) -> tuple[list[str], list[int], list[str]]:
    """The caption of a scene's digits: (words, the object each word names or -1, every allowed caption).

    Two digits: "a A <relation> a B", A the left one when they sit side by side (|dx| ≥ |dy|, "left of"),
    else the upper one ("above"); the mirrored sentence ("a B right of a A") is a second reference.
    Three digits: "three digits : a A , a B and a C", left to right."""
    if len(objects) == 2:
        first, second = objects
        (y0, x0), (y1, x1) = first.centre, second.centre
        horizontal = abs(x1 - x0) >= abs(y1 - y0)
        if (x1 < x0) if horizontal else (y1 < y0):
            first, second = second, first
        index = {id(first): objects.index(first), id(second): objects.index(second)}
        relation, mirror = (["left", "of"], ["right", "of"]) if horizontal else (["above"], ["below"])
        words, names = [], []
        for obj, rel in ((first, relation), (second, [])):
            phrase = obj.words()
            words += ["a", *phrase, *rel]
            names += [-1, *[index[id(obj)]] * len(phrase), *[-1] * len(rel)]
        other = ["a", *second.words(), *mirror, "a", *first.words()]
        return words, names, [" ".join(words), " ".join(other)]
    if len(objects) == 3:
        order = sorted(range(3), key=lambda i: (objects[i].centre[1], objects[i].centre[0]))
        words, names = [COUNT_WORDS[3], "digits", ":"], [-1, -1, -1]
        for k, i in enumerate(order):
            phrase = objects[i].words()
            words += ["a", *phrase]
            names += [-1, *[i] * len(phrase)]
            if k < 2:
                words.append("," if k == 0 else "and")
                names.append(-1)
        return words, names, [" ".join(words)]
    raise ConfigError(f"a scene holds 2 or 3 digits; got {len(objects)}")


def _place(rng, sizes: list[int], canvas: int, tries: int = 200) -> list[tuple[int, int, int, int]] | None:
    """Boxes of the given sizes at random places, at least one pixel apart; None when they do not fit."""
    boxes: list[tuple[int, int, int, int]] = []
    for size in sizes:
        for _ in range(tries):
            top, left = (int(v) for v in rng.integers(0, canvas - size + 1, size=2))
            box = (top, left, top + size, left + size)
            if all(box[0] > b[2] or box[2] < b[0] or box[1] > b[3] or box[3] < b[1] for b in boxes):
                boxes.append(box)
                break
        else:
            return None
    return boxes


def digit_scenes(n: int, *, split: str = "train", canvas: int = 48, counts: tuple[int, ...] = (2, 3),
                 small: float = 0.5, tinted: float = 0.6, seed: int = 0) -> Scenes:
    """``n`` scenes of ``canvas`` × ``canvas`` pixels with a number of digits drawn from ``counts`` (2 and/or 3).

    Each digit is a scan of ``split`` (see :func:`digit_scans`), small (8×8) with probability ``small``, else
    large (16×16), and tinted one of ``COLOURS`` with probability ``tinted``, else white. Digits never
    overlap; where two meet the brighter pixel wins. Seeded: the same arguments give the same scenes."""
    n = validate.integer("n (the number of scenes)", n)
    canvas = validate.integer("canvas", canvas, 2 * LARGE + 2, hint=" (two large 16 × 16 digits side by side, "
                                                                    "a pixel apart)")
    if not isinstance(counts, (tuple, list)) or not counts or any(c not in COUNT_WORDS for c in counts):
        raise ConfigError(f"counts must be a tuple of 2 and/or 3 digits per scene; got {counts!r}")
    small, tinted = validate.probability("small", small), validate.probability("tinted", tinted)
    seed = validate.seed(seed)
    validate.choice("split", split, ("train", "test"))
    scans, labels = digit_scans(split)
    rng = np.random.default_rng(seed)
    colour_names = list(COLOURS)
    images = np.zeros((n, canvas, canvas, 3), np.float32)
    objects, captions, word_objects, references = [], [], [], []
    for i in range(n):
        count = int(rng.choice(counts))
        is_small = list(rng.random(count) < small)
        boxes = None
        while boxes is None:                             # three large digits on a small canvas may not fit
            boxes = _place(rng, [SMALL if s else LARGE for s in is_small], canvas)
        scene = []
        for box, s in zip(boxes, is_small, strict=True):
            k = int(rng.integers(len(labels)))
            colour = colour_names[int(rng.integers(len(colour_names)))] if rng.random() < tinted else None
            glyph = scans[k] if s else np.kron(scans[k], np.ones((2, 2), np.float32))
            rgb = glyph[..., None] * np.asarray(COLOURS[colour] if colour else (1.0, 1.0, 1.0), np.float32)
            top, left, bottom, right = box
            images[i, top:bottom, left:right] = np.maximum(images[i, top:bottom, left:right], rgb)
            scene.append(DigitObject(int(labels[k]), colour, bool(s), box))
        words, names, refs = scene_caption(scene)
        objects.append(scene)
        captions.append(" ".join(words))
        word_objects.append(names)
        references.append(refs)
    return Scenes(images, objects, captions, word_objects, references)


@dataclass(frozen=True)
class Cluttered:
    """n cluttered canvases with one whole digit each: ``images`` (n, H, W, 1) float32 in [0, 1] (grey),
    ``labels`` (n,) the digit, ``boxes`` (n, 4) its box (top, left, bottom, right; bottom and right exclusive)."""

    images: np.ndarray
    labels: np.ndarray
    boxes: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


def cluttered_digits(n: int, *, split: str = "train", canvas: int = 32, clutter: int = 3, seed: int = 0
                     ) -> Cluttered:
    """``n`` canvases of ``canvas`` × ``canvas`` pixels, each with one large (16 × 16) digit of ``split`` at a random
    place and ``clutter`` pieces of other digits around it: 8 × 8 crops, with some ink, of large digits of the same
    split, never overlapping the whole digit's box (pieces may overlap each other). This is Mnih et al.'s cluttered
    MNIST (2014), which DRAW classifies in its section 4.1, at the scale of these scans. Seeded."""
    n = validate.integer("n (the number of canvases)", n)
    canvas = validate.integer("canvas", canvas, LARGE + 2 * SMALL, hint=" (room for a piece of clutter beside a "
                                                                        "large digit wherever it stands)")
    clutter = validate.integer("clutter", clutter, 0, hint=" (the number of pieces; 0: none)")
    seed = validate.seed(seed)
    validate.choice("split", split, ("train", "test"))
    scans, labels = digit_scans(split)
    large = np.kron(scans, np.ones((1, 2, 2), np.float32))                     # (m, 16, 16)
    rng = np.random.default_rng(seed)
    images = np.zeros((n, canvas, canvas, 1), np.float32)
    digits, boxes = np.zeros(n, np.int64), np.zeros((n, 4), np.int64)
    for i in range(n):
        k = int(rng.integers(len(labels)))
        top, left = (int(v) for v in rng.integers(0, canvas - LARGE + 1, size=2))
        placed = 0
        while placed < clutter:
            a, b = rng.integers(0, LARGE - SMALL + 1, size=2)
            piece = large[int(rng.integers(len(large))), a:a + SMALL, b:b + SMALL]
            y, x = (int(v) for v in rng.integers(0, canvas - SMALL + 1, size=2))
            if piece.sum() < 4 or (y < top + LARGE and y + SMALL > top and x < left + LARGE and x + SMALL > left):
                continue                                   # nearly blank, or touching the digit: draw again
            images[i, y:y + SMALL, x:x + SMALL, 0] = np.maximum(images[i, y:y + SMALL, x:x + SMALL, 0], piece)
            placed += 1
        images[i, top:top + LARGE, left:left + LARGE, 0] = large[k]
        digits[i], boxes[i] = labels[k], (top, left, top + LARGE, left + LARGE)
    return Cluttered(images, digits, boxes)
