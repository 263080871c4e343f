"""Chapter 10's trained comparison: the same small decoder-only Llama on Tiny Shakespeare's characters with
multi-head (MHA), grouped-query (GQA), multi-query (MQA) and latent (MLA) attention, trained on the same windows for
the same number of steps, over seeds: the validation loss against what each keeps in its key-value cache per token, the
trade-off of Ainslie et al.'s GQA paper in miniature. The notebook trains the quick size; ``tools/chapter10_full.py``
the full size on a GPU. Importing this module loads no framework."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from attention_course.ch08_transformer import experiment as chapter8
from attention_course.ch10_modern_attention.cache import CacheShape, rope_half
from attention_course.core import validate
from attention_course.core.errors import ConfigError, ShapeError
from attention_course.notebook import session

__all__ = ["SIZES", "VARIANTS", "LATENT", "LINEAR", "DECAYED", "MODELS", "kv_heads", "build", "train", "start_windows",
           "train_with_start", "recomputed_windows", "cache_numbers", "state_numbers"]

SIZES: dict[str, dict[str, Any]] = {
    "quick": {"d_model": 64, "heads": 4, "layers": 2, "hidden": 176, "context": 64, "windows": 2048, "epochs": 3,
              "val_windows": 256, "batch_size": 32, "lr": 3e-3, "latent": 32},
    "full": {"d_model": 256, "heads": 8, "layers": 6, "hidden": 688, "context": 256, "windows": 16_000,
             "epochs": 6, "val_windows": 2000, "batch_size": 64, "lr": 1e-3, "latent": 64},
}
VARIANTS = ("MHA", "GQA", "MQA")       # every head its own keys and values; heads / 4 groups (at least 2); one
LATENT = "MLA"                         # every head's keys and values from one cached latent of sizes["latent"]
LINEAR = "linear"                      # MHA's heads with linear attention in place of the softmax (no cache)
DECAYED = "decayed"                    # linear attention with each head forgetting at RetNet's rate
MODELS = (*VARIANTS, LATENT, LINEAR, DECAYED)   # every model the comparison trains, in the order of its tables


def kv_heads(variant: str, heads: int) -> int:
    """How many key-value heads ``variant`` gives a model of ``heads`` query heads."""
    if variant not in MODELS:
        raise ConfigError(f"variant must be one of {', '.join(MODELS)}; got {variant!r}")
    return {"MHA": heads, "GQA": max(2, heads // 4), "MQA": 1, LATENT: heads, LINEAR: heads, DECAYED: heads}[variant]


def build(fw: ModuleType, vocab: int, sizes: dict[str, Any], variant: str, seed: int = 0):
    """A ``Llama`` of framework ``fw`` (``ac.torch`` or ``ac.keras``) with ``variant``'s key-value heads (and linear
    attention for ``LINEAR``, with RetNet's decay for ``DECAYED``; latent attention for ``LATENT``), seeded."""
    session.seed_everything(seed)
    return fw.Llama(vocab, sizes["d_model"], sizes["heads"], kv_heads(variant, sizes["heads"]), sizes["layers"],
                    sizes["hidden"], max_len=sizes["context"], linear=variant in (LINEAR, DECAYED),
                    decay=variant == DECAYED, latent=sizes["latent"] if variant == LATENT else 0)


def train(fw: ModuleType, model, data: chapter8.Characters, sizes: dict[str, Any], *, seed: int = 0,
          checkpoint=None, desc: str | None = None):
    """Chapter 8's training of a character model: the same random windows for every variant of a seed, the same
    validation windows for all; the weights of the best epoch kept. Returns the history."""
    return chapter8.train_lm(fw, model, data, sizes, seed=seed, checkpoint=checkpoint, desc=desc)


def start_windows(ids: np.ndarray, context: int, count: int, start: int,
                  seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``count`` windows of ``context`` ids that begin with the start-of-text id ``start``, as each document a
    language model is trained on does: ``start`` and then ``context`` − 1 characters from a random place of ``ids``.
    Inputs x and targets y, each (count, context); y[:, t] is the character after x[:, t]."""
    x, y = chapter8.windows(ids, context - 1, count, seed=seed)                 # (count, context − 1) each
    first = np.full((len(x), 1), start, dtype=x.dtype)
    return np.concatenate([first, x], axis=1), np.concatenate([x[:, :1], y], axis=1)


def train_with_start(fw: ModuleType, model, data: chapter8.Characters, sizes: dict[str, Any], *, seed: int = 0,
                     desc: str | None = None):
    """``train``'s recipe on windows that begin with a start token, the id ``len(data.vocabulary)`` (the model needs
    one id more than the characters): the same steps, clipping and best epoch kept. Returns the history."""
    start = len(data.vocabulary)
    x, y = start_windows(data.train, sizes["context"], sizes["windows"], start, seed=seed)
    val_x, val_y = start_windows(data.val, sizes["context"], sizes["val_windows"], start, seed=chapter8.VAL_SEED)
    return fw.fit(model, (x,), y, epochs=sizes["epochs"], batch_size=sizes["batch_size"], lr=sizes["lr"], seed=seed,
                  clip_norm=1.0, desc=desc, validation=((val_x,), val_y))


def recomputed_windows(x: np.ndarray, window: int, after: int, start: int | None = None) -> np.ndarray:
    """StreamingLLM's third arm, a sliding window with re-computation: for every sequence of ``x`` (n, T) and every
    position p ≥ ``after``, the ``window`` tokens that end at p as a text of its own, re-encoded from scratch (no
    cache), after the start-of-text id ``start`` when one is given. Returns (n · (T − after), [1 +] window): row
    i · (T − after) + (p − after) is position p of sequence i; a model's prediction at its last position is its
    prediction after token p."""
    window, after = validate.integer("window", window), validate.integer("after", after, minimum=0)
    x = np.asarray(x)
    if x.ndim != 2 or not window - 1 <= after < x.shape[1]:
        raise ShapeError(f"x must be (n, T) with window − 1 ≤ after < T (window={window}, after={after}); "
                         f"got shape {x.shape}")
    n, t = x.shape
    positions = np.arange(after, t)[:, None] - np.arange(window - 1, -1, -1)[None, :]   # (T − after, window)
    texts = x[:, positions].reshape(n * (t - after), window)
    if start is None:
        return texts
    return np.concatenate([np.full((len(texts), 1), start, dtype=x.dtype), texts], axis=1)


def cache_numbers(sizes: dict[str, Any], variant: str) -> int:
    """Numbers the key-value cache keeps per token, over all layers, for ``variant`` at ``sizes``; 0 for ``LINEAR``
    and ``DECAYED``, whose decoders carry a state of fixed size instead (``state_numbers``)."""
    heads, d_head = sizes["heads"], sizes["d_model"] // sizes["heads"]
    if variant in (LINEAR, DECAYED):
        return 0
    if variant == LATENT:                                # the latent and the shared rotary key
        return CacheShape(variant, "MLA", sizes["layers"], heads, heads, d_head, d_latent=sizes["latent"],
                          d_rope=rope_half(d_head)).numbers_per_token
    return CacheShape(variant, "MHA" if variant == "MHA" else "GQA", sizes["layers"], heads,
                      kv_heads(variant, heads), d_head).numbers_per_token


def state_numbers(sizes: dict[str, Any]) -> int:
    """Numbers a decoder with linear attention carries over all layers, whatever the length: per head a d_head × d_head
    state and a d_head normaliser."""
    d_head = sizes["d_model"] // sizes["heads"]
    return sizes["layers"] * sizes["heads"] * (d_head * d_head + d_head)
