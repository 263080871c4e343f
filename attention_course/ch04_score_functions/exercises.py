"""Exercise checkers of Chapter 4 (score functions).

NumPy conventions (row vectors, as in ``x @ W``): query (B, T_q, d_q), key (B, T_k, d_k), value (B, T_k, d_v),
mask (B, T_k) bool with True where a key may be attended; scores and weights (B, T_q, T_k).

* general:  score = q W kᵀ                 with W (d_q, d_k)
* concat:   score = tanh([q; k] W) v       with W (d_q + d_k, units), v (units,)
* additive: score = tanh(q W + k U) v      with W (d_q, units), U (d_k, units), v (units,)
* linear_concat: score = [q; k] W          with W (d_q + d_k,): the slides' "concat", no tanh and no v

Each checker runs the learner's function on fresh random inputs against the reference and, when the answer
is wrong, names the mistake (or the combination of mistakes) that produces the same numbers.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from attention_course.ch01_sequence_models.exercises import _close, _diagnose, _pass, reference_masked_softmax
from attention_course.core.grading import ExerciseError, call, softmax, start

__all__ = [
    "reference_score", "score_params", "scaled_dot_attention", "general_score", "concat_score", "additive_score",
]


def reference_score(kind: str, query: np.ndarray, key: np.ndarray, params: dict | None = None) -> np.ndarray:
    """Scores (B, T_q, T_k) of ``kind`` ("dot", "scaled_dot", "general", "concat", "additive", "linear_concat")
    in NumPy;
    ``params`` holds the matrices named in the module docstring (W, U, v)."""
    params = params or {}
    if kind == "dot":
        return query @ key.transpose(0, 2, 1)
    if kind == "scaled_dot":
        return query @ key.transpose(0, 2, 1) / np.sqrt(query.shape[-1])
    if kind == "general":
        return query @ params["W"] @ key.transpose(0, 2, 1)
    if kind == "concat":
        b, t_q, t_k = query.shape[0], query.shape[1], key.shape[1]
        pairs = np.concatenate([np.broadcast_to(query[:, :, None], (b, t_q, t_k, query.shape[-1])),
                                np.broadcast_to(key[:, None], (b, t_q, t_k, key.shape[-1]))], axis=-1)
        return np.tanh(pairs @ params["W"]) @ params["v"]
    if kind == "additive":
        return np.tanh((query @ params["W"])[:, :, None] + (key @ params["U"])[:, None]) @ params["v"]
    if kind == "linear_concat":
        b, t_q, t_k = query.shape[0], query.shape[1], key.shape[1]
        pairs = np.concatenate([np.broadcast_to(query[:, :, None], (b, t_q, t_k, query.shape[-1])),
                                np.broadcast_to(key[:, None], (b, t_q, t_k, key.shape[-1]))], axis=-1)
        return pairs @ params["W"]
    raise ValueError(f"unknown score {kind!r}: choose one of dot, scaled_dot, general, concat, additive, "
                     f"linear_concat")


def score_params(score) -> dict[str, np.ndarray]:
    """The NumPy matrices (W, U, v of the module docstring) of a course score layer of either framework."""
    def matrix(sub):                              # as used in NumPy: x @ matrix
        if hasattr(sub, "kernel"):                # Keras Dense: kernel (in, out)
            return np.asarray(sub.kernel)
        return sub.weight.detach().cpu().numpy().T  # PyTorch Linear: weight (out, in)

    kind = type(score).__name__
    if kind == "GeneralScore":                    # W_a maps a key into query space: q · (W_a k) = q (W_aᵀ)ᵀ kᵀ
        return {"W": matrix(score.W_a).T}
    if kind == "ConcatScore":
        return {"W": matrix(score.W_a), "v": matrix(score.v_a)[:, 0]}
    if kind == "AdditiveScore":
        return {"W": matrix(score.W_a), "U": matrix(score.U_a), "v": matrix(score.v_a)[:, 0]}
    if kind == "LinearConcatScore":
        return {"W": matrix(score.W_a)[:, 0]}
    return {}


# ---------------------------------------------------------------------------------------------------------
# helpers shared by the checkers
# ---------------------------------------------------------------------------------------------------------

def _same(a, b) -> bool:
    """Like ``_close``, but NaN matches NaN (a mistake that makes NaN is still recognisable)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True))


def _call(fn: Callable, inputs: dict, hint: str = ""):
    """The learner's function on ``inputs``, NumPy's warnings silenced (a wrong answer may divide by zero)."""
    with np.errstate(all="ignore"):
        return call(fn, inputs, hint)


def _softmax_with(scores, mask3, axis, fill):
    """Softmax of ``scores`` over ``axis`` where ``mask3`` (broadcast to the scores) hides entries by ``fill``:
    "zero" (the reference: exactly 0, fully hidden rows all 0), "-1e9" or "-inf" (what learners write)."""
    with np.errstate(all="ignore"):
        if mask3 is None:
            return softmax(scores, axis=axis)
        mask3 = np.broadcast_to(mask3, scores.shape)
        if fill == "zero":
            if axis == -1:
                return reference_masked_softmax(scores, mask3)
            return np.swapaxes(reference_masked_softmax(np.swapaxes(scores, 1, 2), np.swapaxes(mask3, 1, 2)), 1, 2)
        filled = np.where(mask3, scores, -1e9 if fill == "-1e9" else -np.inf)
        e = np.exp(filled - filled.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)


def _mask_inputs(rng, square: bool):
    b, t_k = int(rng.integers(2, 4)), int(rng.integers(3, 7))
    t_q = t_k if square else int(rng.choice([t for t in range(2, 8) if t != t_k]))
    d, d_v = int(rng.integers(4, 17)), int(rng.integers(2, 6))
    q, k, v = rng.normal(size=(b, t_q, d)), rng.normal(size=(b, t_k, d)), rng.normal(size=(b, t_k, d_v))
    mask = rng.random((b, t_k)) > 0.4
    mask[0, 0] = False                                         # every trial hides at least one key
    mask[np.arange(b), rng.integers(1, t_k, size=b)] = True    # and every example keeps at least one visible
    return q, k, v, mask


# ---------------------------------------------------------------------------------------------------------
# scaled dot-product attention with a key mask
# ---------------------------------------------------------------------------------------------------------

_AXIS = {-1: None, 1: "softmax over the wrong axis: the weights of a query must sum to 1 over the keys "
                      "(the last axis), not over the queries"}
_SCALE = {
    "ok": None,
    "none": "missing scale: divide the scores by √d before the softmax",
    "d": "the scores were divided by d; the scale is √d",
    "times": "the scores were multiplied by √d; divide by it",
}
_MASK = {
    "ok": None,
    "none": "mask not applied: masked keys must get weight 0 (fill their scores with -inf before the softmax)",
    "queries": "mask broadcast wrongly, over the queries instead of the keys: a (B, T_k) mask must become "
               "(B, 1, T_k) (mask[:, None, :]), not (B, T_k, 1)",
    "inverted": "the mask is inverted: True means 'may attend'",
    "after": "masked after the softmax without renormalising: the visible weights no longer sum to 1",
}


def _weights_variant(q, k, mask, axis, scale, masking, fill):
    d = q.shape[-1]
    raw = q @ k.transpose(0, 2, 1)
    s = {"ok": raw / np.sqrt(d), "none": raw, "d": raw / d, "times": raw * np.sqrt(d)}[scale]
    m3 = {"ok": mask[:, None, :], "none": None, "inverted": ~mask[:, None, :], "after": None,
          "queries": mask[:, :, None] if q.shape[1] == k.shape[1] else None}[masking]
    if masking == "queries" and m3 is None:
        return None
    w = _softmax_with(s, m3, axis, fill)
    return w * mask[:, None, :] if masking == "after" else w


def _diagnose_weights(got, q, k, mask) -> str:
    got = np.asarray(got, dtype=np.float64)
    found = []
    for axis, scale, masking, fill in itertools.product(_AXIS, _SCALE, _MASK, ("zero", "-1e9", "-inf")):
        if (axis, scale, masking) == (-1, "ok", "ok"):
            continue
        candidate = _weights_variant(q, k, mask, axis, scale, masking, fill)
        if candidate is not None and _same(got, candidate):
            found = [m for m in (_AXIS[axis], _SCALE[scale], _MASK[masking]) if m]
            break
    if found:
        return found[0] if len(found) == 1 else "; ".join(f"({i}) {m}" for i, m in enumerate(found, 1))
    if np.isnan(got).any():
        return ("the result contains NaN, though every example has a visible key: a masked score of -inf "
                "multiplied by 0 (or inf − inf) gives NaN; fill the masked scores with -inf, do not multiply them")
    return "it differs from the reference in a way none of the common mistakes explains"


def scaled_dot_attention(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(query, key, value, mask) -> (context, weights)``: scaled dot-product attention with a key mask.

    query (B, T_q, d), key (B, T_k, d), value (B, T_k, d_v), mask (B, T_k) bool (True = may attend; every
    example has at least one visible key) → context (B, T_q, d_v), weights (B, T_q, T_k).
    Odd trials use T_q ≠ T_k, so a mask broadcast over the wrong axis is caught either way.
    """
    rng = start(fn, trials, seed)
    for trial in range(trials):
        q, k, v, mask = _mask_inputs(rng, square=trial % 2 == 0)
        shapes = f"query {q.shape}, key {k.shape}, value {v.shape}, mask {mask.shape}"
        hint = ("\n  Hint: T_q ≠ T_k here; if this is a broadcasting error, a (B, T_k) mask must become "
                "(B, 1, T_k) to apply to every query." if q.shape[1] != k.shape[1] else "")
        out = _call(fn, {"query": q, "key": k, "value": v, "mask": mask}, hint)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ExerciseError("return a pair (context, weights)")
        context, weights = (np.asarray(o) for o in out)
        ref_w = reference_masked_softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), mask)
        ref_c = ref_w @ v
        if not _close(weights, ref_w):
            if weights.shape != ref_w.shape:
                raise ExerciseError(f"weights have shape {weights.shape}; expected (B, T_q, T_k) = {ref_w.shape} "
                                    f"for {shapes}")
            raise ExerciseError(f"weights are wrong (trial {trial + 1}, {shapes}): "
                                f"{_diagnose_weights(weights, q, k, mask)}")
        if not _close(context, ref_c):
            if context.shape != ref_c.shape:
                raise ExerciseError(f"context has shape {context.shape}; expected (B, T_q, d_v) = {ref_c.shape}")
            wrong = {"the context averages the keys; it must average the values":
                     ref_w @ k if k.shape[-1] == v.shape[-1] else np.zeros(0),
                     "the context uses the scores instead of the weights":
                     (q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])) @ v}
            raise ExerciseError(f"context is wrong: {_diagnose(context, wrong)}")
    _pass("scaled dot-product attention with a mask", trials)


# ---------------------------------------------------------------------------------------------------------
# the learned scores
# ---------------------------------------------------------------------------------------------------------

def _score_inputs(rng, same_d: bool, square: bool):
    b, t_k = int(rng.integers(1, 4)), int(rng.integers(2, 7))
    t_q = t_k if square else int(rng.choice([t for t in range(1, 8) if t != t_k]))
    d_q = int(rng.integers(2, 9))
    d_k = d_q if same_d else int(rng.choice([d for d in range(2, 10) if d != d_q]))
    units = int(rng.choice([u for u in range(2, 12) if u not in (d_q, d_k)]))
    return rng.normal(size=(b, t_q, d_q)), rng.normal(size=(b, t_k, d_k)), units


def _check_scores(name, got, ref, candidates, shapes, trial):
    got = np.asarray(got)
    if _close(got, ref):
        return
    b, t_q, t_k = ref.shape
    if got.shape == (b, t_k, t_q) and _close(got.transpose(0, 2, 1), ref):
        raise ExerciseError(f"{name}: the result is (B, T_k, T_q); put the queries on axis 1 and the keys on "
                            f"axis 2: expected {ref.shape} for {shapes}")
    if got.shape != ref.shape:
        extra = (" Every query must meet every key: expand the query side to (B, T_q, 1, ·) and the key side "
                 "to (B, 1, T_k, ·) before combining them." if got.shape in ((b, t_q), (b, t_k)) else "")
        raise ExerciseError(f"{name}: scores have shape {got.shape}; expected (B, T_q, T_k) = {ref.shape} for "
                            f"{shapes}.{extra}")
    raise ExerciseError(f"{name} is wrong (trial {trial + 1}, {shapes}): {_diagnose(got, candidates)}")


def _run_score_checker(name, fn, make_params, reference, mistakes, trials, seed):
    rng = start(fn, trials, seed)
    for trial in range(trials):
        # trial 0: d_q = d_k and T_q = T_k, where swapped matrices or axes still run; later trials vary them
        q, k, units = _score_inputs(rng, same_d=trial % 3 == 0, square=trial % 2 == 0)
        params = make_params(rng, q.shape[-1], k.shape[-1], units)
        shapes = (f"query {q.shape}, key {k.shape}, "
                  + ", ".join(f"{n} {p.shape}" for n, p in params.items()))
        got = _call(fn, {"query": q, "key": k, **params})
        _check_scores(name, got, reference(q, k, params), mistakes(q, k, params), shapes, trial)
    _pass(name, trials)


def general_score(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(query, key, W) -> scores``: Luong's general (bilinear) score q W kᵀ, W (d_q, d_k)."""
    def params(rng, d_q, d_k, units):
        return {"W": rng.normal(size=(d_q, d_k))}

    def mistakes(q, k, p):
        w = p["W"]
        out = {"no W: that is the plain dot product": q @ k.transpose(0, 2, 1) if q.shape[-1] == k.shape[-1]
               else np.zeros(0)}
        if w.shape[0] == w.shape[1]:
            out["W is transposed: with W of shape (d_q, d_k) the score is q @ W @ kᵀ"] = q @ w.T @ k.transpose(0, 2, 1)
        return out

    _run_score_checker("general score", fn, params, lambda q, k, p: reference_score("general", q, k, p),
                       mistakes, trials, seed)


def concat_score(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(query, key, W, v) -> scores``: Luong's concat score tanh([q; k] W) v,
    W (d_q + d_k, units), v (units,)."""
    def params(rng, d_q, d_k, units):
        return {"W": rng.normal(size=(d_q + d_k, units)) / np.sqrt(d_q + d_k), "v": rng.normal(size=units)}

    def mistakes(q, k, p):
        d_q, w, v = q.shape[-1], p["W"], p["v"]
        qw, kw = (q @ w[:d_q])[:, :, None], (k @ w[d_q:])[:, None]
        out = {"tanh is missing: score = tanh([q; k] W) v": (qw + kw) @ v,
               "tanh is applied after v; it belongs before: tanh([q; k] W) v": np.tanh((qw + kw) @ v),
               "v is missing: the units were summed instead of weighted by v": np.tanh(qw + kw).sum(-1)}
        if q.shape[-1] == k.shape[-1]:
            out["the concatenation is in the wrong order: [q; k], the query first"] = \
                np.tanh((q @ w[d_q:])[:, :, None] + (k @ w[:d_q])[:, None]) @ v
        return out

    _run_score_checker("concat score", fn, params, lambda q, k, p: reference_score("concat", q, k, p),
                       mistakes, trials, seed)


def additive_score(fn: Callable, *, trials: int = 20, seed: int | None = None) -> None:
    """Check ``fn(query, key, W, U, v) -> scores``: Bahdanau's additive score tanh(q W + k U) v,
    W (d_q, units), U (d_k, units), v (units,)."""
    def params(rng, d_q, d_k, units):
        return {"W": rng.normal(size=(d_q, units)) / np.sqrt(d_q), "U": rng.normal(size=(d_k, units)) / np.sqrt(d_k),
                "v": rng.normal(size=units)}

    def mistakes(q, k, p):
        qw, ku, v = (q @ p["W"])[:, :, None], (k @ p["U"])[:, None], p["v"]
        out = {"tanh is missing: score = tanh(q W + k U) v": (qw + ku) @ v,
               "tanh is applied after v; it belongs before: tanh(q W + k U) v": np.tanh((qw + ku) @ v),
               "v is missing: the units were summed instead of weighted by v": np.tanh(qw + ku).sum(-1),
               "the query and key projections are multiplied; the additive score adds them":
                   np.tanh(qw * ku) @ v}
        if p["W"].shape == p["U"].shape:
            out["W and U are swapped: W projects the query, U the key"] = \
                np.tanh((q @ p["U"])[:, :, None] + (k @ p["W"])[:, None]) @ v
        return out

    _run_score_checker("additive score", fn, params, lambda q, k, p: reference_score("additive", q, k, p),
                       mistakes, trials, seed)
