"""Chapter 6's measures: BLEU-1…4 of captions (sacreBLEU, several references per image) and attention correctness
(Liu et al. 2017): the share of a word's attention mass that falls inside the box of the object it names.

An attention map is a distribution over a grid of gh × gw cells laid over the canvas; each cell's weight is spread
evenly over its pixels, so the mass inside a box is Σ_cells α · (the share of the cell's pixels inside the box).
DRAW's window is measured the same way, at the pixel level: ``draw_filterbank`` is its filterbank in NumPy.
Framework-neutral: NumPy arrays in, floats out.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from attention_course.ch06_image_captioning.validate import SIGMA2_MIN
from attention_course.core.errors import ConfigError, InputError, ShapeError

__all__ = ["caption_bleu", "cell_overlap", "box_share", "attention_correctness", "draw_filterbank"]

SUM_TOLERANCE = 1e-3                  # float32 softmax weights sum to 1 within about 1e-6
Box = tuple[int, int, int, int]       # (top, left, bottom, right) in pixels, bottom and right exclusive


def caption_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str]], max_order: int = 4) -> float:
    """Corpus BLEU-``max_order`` (sacreBLEU, its default smoothing and tokenizer) of ``hypotheses`` against
    every reference of each image (``references[i]``: one or more captions of image i)."""
    from sacrebleu.metrics import BLEU

    if isinstance(hypotheses, str):
        raise ConfigError(f"hypotheses must be a list of captions, one per image; got one string {hypotheses!r:.40}")
    if len(hypotheses) != len(references):
        raise ConfigError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists: one list per image")
    if not hypotheses or any(not refs for refs in references):
        raise ConfigError("every image needs at least one reference caption")
    for i, refs in enumerate(references):
        if isinstance(refs, str) or not all(isinstance(r, str) for r in refs):
            raise ConfigError(f"references[{i}] must be a list of captions (strings) of image {i}, even when it has "
                              f"one; got {refs!r:.60}")
    if not all(isinstance(h, str) for h in hypotheses):
        raise ConfigError("hypotheses must be captions: strings of words separated by spaces")
    if max_order not in (1, 2, 3, 4):
        raise ConfigError(f"max_order is 1, 2, 3 or 4 (BLEU-1 … BLEU-4); got {max_order!r}")
    width = max(len(refs) for refs in references)          # sacreBLEU: None where an image has fewer references
    streams = [[refs[k] if k < len(refs) else None for refs in references] for k in range(width)]
    return float(BLEU(max_ngram_order=max_order).corpus_score(list(hypotheses), streams).score)  # type: ignore[arg-type]


def _sizes(name: str, value, n: int, what: str) -> tuple[int, ...]:
    """``n`` whole numbers (NumPy's included) >= 1, e.g. a canvas (height, width) or a grid (gh, gw)."""
    items = tuple(value) if isinstance(value, (tuple, list, np.ndarray)) else ()
    if len(items) != n or any(isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1 for v in items):
        raise ConfigError(f"{name} must be {n} whole numbers >= 1, {what}; got {value!r}")
    return tuple(int(v) for v in items)


def _box(box, canvas) -> Box:
    """``box`` (top, left, bottom, right), four whole numbers, a box of at least one pixel inside ``canvas``."""
    height, width = _sizes("canvas", canvas, 2, "(height, width) in pixels")
    items = tuple(box) if isinstance(box, (tuple, list, np.ndarray)) else ()
    if len(items) != 4 or any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in items):
        raise ConfigError(f"box must be four whole numbers (top, left, bottom, right) in pixels, bottom and right "
                          f"exclusive; got {box!r}")
    top, left, bottom, right = (int(v) for v in items)
    if not (0 <= top < bottom <= height and 0 <= left < right <= width):
        raise ConfigError(f"box {box} (top, left, bottom, right) is not inside the canvas {canvas}")
    return top, left, bottom, right


def cell_overlap(box: Box, canvas: tuple[int, int], grid: tuple[int, int]) -> np.ndarray:
    """(gh, gw): the share of each grid cell's pixels that lie inside ``box`` on a ``canvas`` (height, width)."""
    (height, width), (gh, gw) = (_sizes("canvas", canvas, 2, "(height, width) in pixels"),
                                 _sizes("grid", grid, 2, "(gh, gw) cells"))
    if height % gh or width % gw:
        raise ShapeError(f"the grid {grid} must divide the canvas {canvas} into whole cells")
    top, left, bottom, right = _box(box, canvas)
    ch, cw = height // gh, width // gw
    rows = np.clip(np.minimum(bottom, (np.arange(gh) + 1) * ch) - np.maximum(top, np.arange(gh) * ch), 0, None)
    cols = np.clip(np.minimum(right, (np.arange(gw) + 1) * cw) - np.maximum(left, np.arange(gw) * cw), 0, None)
    return np.outer(rows, cols) / (ch * cw)


def box_share(box: Box, canvas: tuple[int, int]) -> float:
    """The box's share of the canvas: the attention correctness of a uniform map (chance)."""
    top, left, bottom, right = _box(box, canvas)
    return (bottom - top) * (right - left) / (canvas[0] * canvas[1])


def attention_correctness(alpha: Any, box: Box, canvas: tuple[int, int]) -> float:
    """The share of the attention map ``alpha`` (gh, gw), a distribution over the grid, inside ``box``. A map of
    zeros (a model without attention, such as Show and Tell) has none inside: 0."""
    alpha = np.asarray(alpha, dtype=np.float64)
    if alpha.ndim != 2:
        raise ShapeError(f"alpha must be one attention map (gh, gw); got shape {alpha.shape}")
    total = alpha.sum()
    if not np.isfinite(alpha).all() or (alpha < 0).any() or (alpha.any() and abs(total - 1) > SUM_TOLERANCE):
        raise InputError(f"alpha must be a distribution over the grid: weights >= 0 that sum to 1 (or all 0, no "
                         f"attention); got weights from {alpha.min():g} to {alpha.max():g} summing to {total:g}")
    return float((alpha * cell_overlap(box, canvas, alpha.shape)).sum())


def draw_filterbank(g: float, sigma2: float, delta: float, n: int, size: int, normalise: bool = True) -> np.ndarray:
    """DRAW's filters along one axis of ``size`` pixels (Gregor et al. 2015, eq. 25-26), as ``DrawRead.filters``
    computes them: (n, size), filter i (i = 1 … n) exp(−(a − μ_i)² / 2σ²) centred at μ_i = g + (i − n/2 − 0.5) δ,
    each divided by its sum when ``normalise`` (a filter that misses the axis entirely stays 0). A σ² below
    ``SIGMA2_MIN`` counts as it: a point filter (0 would give 0/0 = NaN for a filter centred on a pixel)."""
    sigma2 = max(float(sigma2), SIGMA2_MIN)
    centres = g + (np.arange(1, n + 1) - n / 2 - 0.5) * delta                          # (n,)
    f = np.exp(-(np.arange(size)[None, :] - centres[:, None]) ** 2 / (2 * sigma2))   # (n, size)
    return f / (f.sum(-1, keepdims=True) + 1e-8) if normalise else f
