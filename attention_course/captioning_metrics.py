"""Chapter 6's measures: BLEU-1…4 of captions (sacreBLEU, several references per image) and attention correctness
(Liu et al. 2017): the share of a word's attention mass that falls inside the box of the object it names.

An attention map is a distribution over a grid of gh × gw cells laid over the canvas; each cell's weight is spread
evenly over its pixels, so the mass inside a box is Σ_cells α · (the share of the cell's pixels inside the box).
Framework-neutral: NumPy arrays in, floats out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import ConfigError, ShapeError

__all__ = ["caption_bleu", "cell_overlap", "box_share", "attention_correctness"]

Box = tuple[int, int, int, int]       # (top, left, bottom, right) in pixels, bottom and right exclusive


def caption_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str]], max_order: int = 4) -> float:
    """Corpus BLEU-``max_order`` (sacreBLEU, its default smoothing and tokenizer) of ``hypotheses`` against
    every reference of each image (``references[i]``: one or more captions of image i)."""
    from sacrebleu.metrics import BLEU

    if len(hypotheses) != len(references):
        raise ConfigError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists: one list per image")
    if not hypotheses or any(not refs for refs in references):
        raise ConfigError("every image needs at least one reference caption")
    if max_order not in (1, 2, 3, 4):
        raise ConfigError(f"max_order is 1, 2, 3 or 4 (BLEU-1 … BLEU-4); got {max_order!r}")
    width = max(len(refs) for refs in references)          # sacreBLEU: None where an image has fewer references
    streams = [[refs[k] if k < len(refs) else None for refs in references] for k in range(width)]
    return float(BLEU(max_ngram_order=max_order).corpus_score(list(hypotheses), streams).score)  # type: ignore[arg-type]


def cell_overlap(box: Box, canvas: tuple[int, int], grid: tuple[int, int]) -> np.ndarray:
    """(gh, gw): the share of each grid cell's pixels that lie inside ``box`` on a ``canvas`` (height, width)."""
    (height, width), (gh, gw) = canvas, grid
    if height % gh or width % gw:
        raise ShapeError(f"the grid {grid} must divide the canvas {canvas} into whole cells")
    top, left, bottom, right = box
    if not (0 <= top < bottom <= height and 0 <= left < right <= width):
        raise ConfigError(f"box {box} (top, left, bottom, right) is not inside the canvas {canvas}")
    ch, cw = height // gh, width // gw
    rows = np.clip(np.minimum(bottom, (np.arange(gh) + 1) * ch) - np.maximum(top, np.arange(gh) * ch), 0, None)
    cols = np.clip(np.minimum(right, (np.arange(gw) + 1) * cw) - np.maximum(left, np.arange(gw) * cw), 0, None)
    return np.outer(rows, cols) / (ch * cw)


def box_share(box: Box, canvas: tuple[int, int]) -> float:
    """The box's share of the canvas: the attention correctness of a uniform map (chance)."""
    top, left, bottom, right = box
    return (bottom - top) * (right - left) / (canvas[0] * canvas[1])


def attention_correctness(alpha: Any, box: Box, canvas: tuple[int, int]) -> float:
    """The share of the attention map ``alpha`` (gh, gw), a distribution over the grid, inside ``box``."""
    alpha = np.asarray(alpha, dtype=np.float64)
    if alpha.ndim != 2:
        raise ShapeError(f"alpha must be one attention map (gh, gw); got shape {alpha.shape}")
    return float((alpha * cell_overlap(box, canvas, alpha.shape)).sum())
