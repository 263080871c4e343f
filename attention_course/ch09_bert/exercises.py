"""Exercise checkers of Chapter 9 (BERT), in NumPy.

``attention_entropy``: ``fn(weights, mask)`` with weights (B, h, T, T) (each real query row a distribution over the
keys) and mask (B, T) bool → (h,) the mean entropy in nats of each head's attention, over the real query tokens
(0 · log 0 counted as 0).

``mlm_mask``: ``fn(ids, special, mask_id, vocab, rng)`` with ids (B, T) int, special (B, T) bool (True on [CLS],
[SEP] and [PAD]) → (inputs, labels), both (B, T) int: BERT's masked-LM rule. 15 % of the other tokens are chosen;
of those, 80 % become ``mask_id``, 10 % a random id in [0, vocab), 10 % stay as they are. ``labels`` holds the
original id at the chosen positions and -100 (ignored by the loss) everywhere else.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attention_course.ch01_sequence_models.exercises import _pass
from attention_course.core.grading import ExerciseError, call, start

__all__ = ["attention_entropy", "mlm_mask", "reference_attention_entropy", "reference_mlm_mask"]

IGNORE = -100


def reference_attention_entropy(weights, mask, log=np.log, real_rows: bool = True):
    """The answer of ``attention_entropy`` (``log`` and ``real_rows`` give the checker's wrong variants)."""
    w = np.asarray(weights, dtype=np.float64)
    terms = -(w * log(np.where(w > 0, w, 1.0))).sum(-1)                                  # (B, h, T)
    rows = np.asarray(mask, bool) if real_rows else np.ones(np.shape(mask), bool)
    return (terms * rows[:, None, :]).sum((0, 2)) / rows.sum()


def _attention(rng, b, h, t, mask):
    scores = rng.normal(scale=2.0, size=(b, h, t, t))
    scores[rng.random((b, h, t, t)) < 0.2] = -np.inf                                  # some exact zeros
    scores[..., 0] = np.maximum(scores[..., 0], 0)                                    # every row keeps a key
    scores = np.where(mask[:, None, None, :], scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    return w / w.sum(-1, keepdims=True)


def attention_entropy(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(weights, mask) -> (h,)``, the mean entropy of each head's attention over the real tokens."""
    rng = start(fn, trials, seed)
    for _ in range(trials):
        b, h, t = int(rng.integers(2, 4)), int(rng.integers(2, 5)), int(rng.integers(4, 9))
        mask = np.arange(t)[None, :] < rng.integers(2, t + 1, size=(b, 1))
        mask[0] = True
        mask[-1, -1] = False                                                           # a padded sentence always
        weights = _attention(rng, b, h, t, mask)
        got = np.asarray(call(fn, {"weights": weights, "mask": mask}), dtype=np.float64)
        want = reference_attention_entropy(weights, mask)
        if got.shape != want.shape:
            raise ExerciseError(f"with weights {weights.shape}, return one entropy per head, shape {want.shape}; "
                                f"got {got.shape}")
        if np.isnan(got).any():
            raise ExerciseError("NaN: a weight of exactly 0 gives 0 · log 0, which is 0 by convention; "
                                "leave those terms out (np.where) instead of computing log(0)")
        if np.allclose(got, want, rtol=1e-6, atol=1e-9):
            continue
        candidates = {
            "the entropy is in nats here: use the natural log, not log2": reference_attention_entropy(
                weights, mask, log=np.log2),
            "average over the real query tokens only: a padded position's row is not a token's attention":
                reference_attention_entropy(weights, mask, real_rows=False),
            "the entropy is -Σ w log w, with the minus sign": -want,
        }
        raise ExerciseError(next((m for m, c in candidates.items() if np.allclose(got, c, rtol=1e-6, atol=1e-9)),
                                 f"the mean entropies per head should be {np.round(want, 4)}; got {np.round(got, 4)}"))
    _pass("attention entropy", trials)


def reference_mlm_mask(ids, special, mask_id: int, vocab: int, rng, rate: float = 0.15):
    """The answer of ``mlm_mask``: BERT's 15 % of the non-special tokens, 80/10/10 (the chapter's ``mlm_mask``, which
    pretrains its small BERT)."""
    from attention_course.ch09_bert.experiment import mlm_mask as answer

    return answer(ids, special, mask_id, vocab, rng, rate)


def mlm_mask(fn: Callable, *, trials: int = 3, seed: int | None = None) -> None:
    """Check ``fn(ids, special, mask_id, vocab, rng) -> (inputs, labels)``, BERT's masking rule, on large batches
    (the shares are checked within a tolerance a correct answer meets with near certainty)."""
    rng = start(fn, trials, seed)
    vocab, mask_id = 1000, 3
    for _ in range(trials):
        b, t = 64, 128
        ids = rng.integers(5, vocab, size=(b, t))
        special = np.zeros((b, t), bool)
        special[:, 0] = special[:, -1] = True                                            # [CLS] … [SEP]
        lengths = rng.integers(t // 2, t, size=b)
        special |= np.arange(t)[None, :] >= lengths[:, None]                             # [PAD]s
        out = call(fn, {"ids": ids.copy(), "special": special.copy(), "mask_id": mask_id, "vocab": vocab,
                        "rng": np.random.default_rng(int(rng.integers(2**31)))})
        if not isinstance(out, tuple) or len(out) != 2:
            raise ExerciseError("return two arrays, (inputs, labels)")
        inputs, labels = (np.asarray(a) for a in out)
        if inputs.shape != ids.shape or labels.shape != ids.shape:
            raise ExerciseError(f"inputs and labels must have the shape of ids {ids.shape}; got {inputs.shape} "
                                f"and {labels.shape}")
        labelled = labels != IGNORE
        if (labelled & special).any() or (inputs[special] != ids[special]).any():
            raise ExerciseError("never choose [CLS], [SEP] or [PAD]: leave the special tokens as they are, with "
                                "label -100")
        if (labelled & (labels != ids)).any():
            raise ExerciseError("a label is the original token id of its position (what the model must recover)")
        changed = inputs != ids
        if (changed & ~labelled).any():
            raise ExerciseError("every token you change must carry a label: the loss is computed on the chosen "
                                "tokens, and only on them")
        share = labelled.sum() / (~special).sum()
        if share > 0.5:
            raise ExerciseError(f"{share:.0%} of the tokens carry a label: only the 15 % chosen do; the others get "
                                f"-100, so the loss ignores them")
        if not 0.12 < share < 0.18:
            raise ExerciseError(f"choose 15 % of the non-special tokens; you chose {share:.1%}")
        masked = (inputs == mask_id) & labelled
        random = changed & labelled & ~masked
        kept = labelled & ~changed
        shares = np.array([masked.sum(), random.sum(), kept.sum()]) / labelled.sum()
        if shares[0] > 0.97:
            raise ExerciseError("every chosen token became [MASK]: 10 % must become a random token and 10 % stay "
                                "unchanged (so that the model cannot rely on seeing [MASK] at fine-tuning)")
        if not (0.74 < shares[0] < 0.86 and 0.06 < shares[1] < 0.14 and 0.06 < shares[2] < 0.14):
            raise ExerciseError(f"of the chosen tokens, 80 % become [MASK], 10 % a random token, 10 % stay; you "
                                f"have {shares[0]:.0%} / {shares[1]:.0%} / {shares[2]:.0%}")
        _check_random_tokens(inputs[random], vocab)
    _pass("masked-LM rule", trials)


def _check_random_tokens(drawn: np.ndarray, vocab: int) -> None:
    """The "random" tokens are drawn uniformly from the whole vocabulary [0, vocab): not one id again and again,
    not a few small ids. With about 90 draws from 1,000 ids, a uniform draw has nearly all distinct and a mean
    within 150 of 500 (five standard errors)."""
    if drawn.size == 0:
        return
    if drawn.min() < 0 or drawn.max() >= vocab:
        raise ExerciseError(f"a random token must be an id in [0, vocab) = [0, {vocab}); you drew "
                            f"{int(drawn.min())}…{int(drawn.max())}")
    distinct = len(np.unique(drawn))
    if distinct < 0.6 * drawn.size:
        raise ExerciseError(f"the {drawn.size} random tokens hold only {distinct} different ids: draw each one anew, "
                            "uniformly from the whole vocabulary (rng.integers(0, vocab, size=…))")
    if abs(drawn.mean() - (vocab - 1) / 2) > 0.15 * vocab:
        raise ExerciseError(f"the random tokens average {drawn.mean():.0f}, where a uniform draw from [0, {vocab}) "
                            f"averages {(vocab - 1) / 2:.0f}: draw from the whole vocabulary, not a part of it")
