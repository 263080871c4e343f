"""Chapter 6's argument checks (``images``, ``captioner_inputs``, ``window_parameter``, ``captions``), beside the
generic ones of :mod:`attention_course.core.validate`, which this module re-exports: the chapter's code says
``validate.…`` for both."""

from __future__ import annotations

import math

import numpy as np

from attention_course.core.errors import InputError, ShapeError
from attention_course.core.validate import *  # noqa: F403  (the generic checks)
from attention_course.core.validate import floating, ids, kind, same_shape

EXPECT_RULE = "one bool (or 0/1) per caption, True where it uses the expectation instead of a sample"


def images(name: str, dtype, shape, multiple: int = 1, channels: int | None = None, floats: bool = True) -> None:
    """Images (B, H, W, C), H and W multiples of ``multiple`` and at least 1, C = ``channels`` when given, of
    floats when ``floats`` (a model that learned from intensities in [0, 1]; a linear read takes any numbers)."""
    want = f"(B, H, W, {channels if channels else 'C'})" + (f" with H and W multiples of {multiple}"
                                                             if multiple > 1 else "")
    shape = tuple(shape)
    if (len(shape) != 4 or (channels is not None and shape[-1] not in (None, channels))
            or any(d is not None and (d == 0 or d % multiple) for d in shape[1:3])):
        empty = len(shape) == 4 and 0 in shape[1:3]
        raise ShapeError(f"{name} must be {want}; got {shape}" + (", images of no pixels" if empty else ""))
    if floats and kind(dtype) != "float":
        raise InputError(f"{name} must hold floats (intensities in [0, 1]); got {dtype} of shape {shape}: convert "
                         f"them to float32 (divide 0-255 pixels by 255)")

def captioner_inputs(name: str, dtype, shape, features: int | None) -> None:
    """What a captioner reads: images (B, H, W, 3) with H and W multiples of 8, or, built with ``features``, grids of
    annotation vectors (B, L, features) that a pretrained CNN computed; floats either way."""
    shape = tuple(shape)
    if features is None:
        images(name, dtype, shape, multiple=8, channels=3)
    elif len(shape) != 3 or shape[2] not in (None, features) or shape[1] == 0:
        raise ShapeError(f"{name} must be (B, L, {features}): L annotation vectors of {features} features per image "
                         f"(the model was built with features={features}); got {shape}")
    else:
        floating(name, dtype, shape)

#: The smallest variance DRAW's filters use: a σ² below it (0, what exp(log σ²) underflows to, or a tensor's negative
#: value, which ``read`` does not look at) counts as it, the limit of a narrowing Gaussian: a filter centred on a
#: pixel reads that pixel alone, one centred between pixels reads nothing (0/0 = NaN without it).
SIGMA2_MIN = 1e-6

WINDOW_RULES = {"sigma2": (0.0, False, "the filters' variance: 0 divides by zero"),
                "delta": (0.0, True, "the stride between filters"), "gamma": (0.0, True, "the intensity")}

def window_parameter(name: str, shape, batch: int | None, values=None) -> None:
    """One of DRAW's window parameters (gx, gy, sigma2, delta, gamma) for ``batch`` images: a number or one per
    image, shape (B,) (or (B, 1)). ``values``, when the caller has them on the host (numbers and NumPy arrays, not
    the model's own tensors), must be finite, sigma2 > 0, delta >= 0 and gamma >= 0."""
    shape = tuple(shape)
    rest = [d for d in shape if d != 1]                              # none: one number for every image
    if rest and not (len(rest) == 1 and (None in (rest[0], batch) or rest[0] == batch)):
        raise ShapeError(f"{name} must be a number or one per image, shape (B,) = ({batch},); got shape {shape}")
    if values is None:
        return
    values = np.asarray(values, dtype=np.float64)
    low, inclusive, what = WINDOW_RULES.get(name, (-math.inf, False, "a position in pixels"))
    if not np.isfinite(values).all() or (values < low).any() or (not inclusive and (values <= low).any()):
        bound = "" if low == -math.inf else f" and {'>=' if inclusive else '>'} {low:g}"
        raise InputError(f"{name} ({what}) must be finite{bound}; got {values.ravel()[:4].tolist()}")

def captions(tokens_in, tokens_out, vocab: int, pad: int = 0) -> None:
    """Captions to learn from: ``tokens_in`` (n, T) = BOS + caption and ``tokens_out`` (n, T) = caption + EOS,
    integer ids in [0, vocab), the same shape, and at least one word (not ``pad``) in every target row: a caption
    of pads only has no words to average its loss over (0/0, a NaN that the hard-attention reward spreads)."""
    tokens_in, tokens_out = np.asarray(tokens_in), np.asarray(tokens_out)
    if tokens_in.ndim != 2:
        raise ShapeError(f"tokens_in must be (n, T) ids, one caption per image; got shape {tokens_in.shape}")
    same_shape("tokens_out", tokens_out.shape, tokens_in.shape, "tokens_in")
    for name, t in (("tokens_in", tokens_in), ("tokens_out", tokens_out)):
        ids(name, t.dtype, t.shape, vocab)
        if t.size:
            ids(name, t.dtype, t.shape, vocab, int(t.min()), int(t.max()))
    empty = np.flatnonzero((tokens_out == pad).all(1))
    if len(empty):
        raise InputError(f"tokens_out row {int(empty[0])} holds only pads ({pad}): every caption needs at least one "
                         f"word to learn (its EOS at least); {len(empty)} of {len(tokens_out)} rows are empty")
