"""How the course's Keras layers take their inputs (the twin of ``attention_course.core.torch.inputs``).

The rule, the same in both frameworks: every layer, model and function takes the framework's own tensors or
NumPy arrays. NumPy arrays become tensors at the entry; the float inputs of a layer are computed in its dtype,
float32 (Keras casts float16, bfloat16 and float64 itself; a function such as ``masked_softmax`` keeps the dtype
it is given, NumPy floats as float32). Under a float16 dtype policy the attention layers of Chapters 1–4 still
compute their scores and softmax in float32, as PyTorch does (``attention(..., wide=True)``, ``widen``). Queries,
keys, values and states must be floats; a mask bool, or numbers that are all 0 or 1; token ids integers in
[0, vocab). Anything else raises the course's error, naming the argument, the rule and the value (the rules and
messages live in ``attention_course.core.validate``).

Inside ``tf.function`` (``fit``, ``train_pointer``) the tensors are symbolic: dtypes and shapes are checked
when the function is traced, and the value checks become graph assertions that fail when it runs;
``graph_errors()`` turns such a failure back into the course's error.
"""

from __future__ import annotations

import contextlib
import re

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from attention_course.core import validate
from attention_course.core.errors import InputError
from attention_course.core.validate import MASK_RULE

_MARK = "course: "


def dtype_name(x) -> str:
    return keras.backend.standardize_dtype(x.dtype)


def symbolic(x) -> bool:
    """True while tracing a graph (values unknown)."""
    return isinstance(x, keras.KerasTensor) or not tf.executing_eagerly()


def tensor(x, name: str):
    """``x`` as a tensor: a NumPy array is converted (float arrays as float32), a variable read."""
    if isinstance(x, np.ndarray):
        validate.numeric(name, x.dtype, x.shape)
        return ops.convert_to_tensor(x.astype(np.float32) if x.dtype.kind == "f" else x)
    if isinstance(x, keras.KerasTensor):
        return x
    if not tf.is_tensor(x):
        raise validate.not_a_tensor(name, x, "TensorFlow")
    return tf.convert_to_tensor(x)                                   # a variable is read (gradients flow)


def floats(x, name: str):
    """A float tensor."""
    x = tensor(x, name)
    validate.floating(name, dtype_name(x), validate.shape_of(x))
    return x


def _require(ok, rule: str) -> None:
    """In a traced graph: an assertion that fails with ``rule`` when it runs (no-op on Keras' symbolic tensors)."""
    if not isinstance(ok, keras.KerasTensor):
        tf.debugging.Assert(ok, [_MARK + rule])


def finite(x, name: str):
    """``x`` unchanged, once checked to hold no NaN or infinite value (one reduction, also in a traced graph)."""
    ok = ops.all(ops.isfinite(x))
    if symbolic(x):
        _require(ok, validate.finite_rule(name))
    elif not bool(ok):
        bad = ~np.isfinite(np.asarray(x))
        validate.finite(name, int(bad.sum()), tuple(int(i) for i in np.argwhere(bad)[0]))
    return x


def shares(x, name: str, meaning: str):
    """Float weights in [0, 1] (``meaning``: what each does, for the error; one reduction checks them, also in a
    traced graph)."""
    x = floats(x, name)
    inside = ops.all(ops.logical_and(x >= 0, x <= 1))                     # NaN is neither
    if symbolic(x):
        _require(inside, validate.share_rule(name, meaning))
    elif int(np.prod(x.shape)) and not bool(inside):
        values = np.asarray(x)
        validate.shares(name, meaning, float("nan") if np.isnan(values).any() else float(values.min()),
                        float(values.max()))
    return x


def bool_mask(m, name: str = "mask", rule: str = MASK_RULE):
    """A bool mask from bool or 0/1 values (one reduction checks the values); None stays None. ``rule`` says what
    the mask means, in the error."""
    if m is None:
        return None
    m = tensor(m, name)
    validate.mask_dtype(name, dtype_name(m), validate.shape_of(m))
    if dtype_name(m) == "bool":
        return m
    ok = ops.all(ops.logical_or(ops.equal(m, 0), ops.equal(m, 1)))
    if symbolic(m):
        _require(ok, f"{name}: {rule}")
    elif not bool(ok):
        v = ops.convert_to_numpy(m)
        raise validate.bad_mask(name, np.unique(v[(v != 0) & (v != 1)])[:4], rule)
    return ops.not_equal(m, 0)


def source_mask(m, src, name: str = "src_mask"):
    """The mask (B, S) of right-padded sources ``src`` (B, S), the twin of PyTorch's (whose encoder packs the
    first ``length`` positions of each row): bool or 0/1, the shape of ``src``, at least one row, and right-padded
    with at least one real token per row (one reduction; a graph assertion while traced). Returns the bool mask."""
    if m is None:
        raise validate.missing_mask(name)
    m = bool_mask(m, name)
    validate.same_shape(name, validate.shape_of(m), validate.shape_of(src), "src")
    validate.some_rows("src", validate.shape_of(src))
    ok = ops.logical_and(ops.all(m[:, 0]), ops.all(ops.logical_or(m[:, :-1], ops.logical_not(m[:, 1:]))))
    if symbolic(m):
        _require(ok, f"{name} must be right-padded, with at least one real token in each row")
    elif not bool(ok):
        validate.right_padded(name, ops.convert_to_numpy(m))
    return m


def ids(x, name: str, embed, ndim: int = 2, length: int | None = None):
    """Token ids for the embedding ``embed``: integers in [0, vocab) (one min/max reduction checks them),
    shaped (batch,) or (batch, T) with 1 <= T (<= ``length``)."""
    vocab = embed.input_dim
    x = tensor(x, name)
    validate.ids(name, dtype_name(x), validate.shape_of(x), vocab)                 # the dtype
    validate.id_shape(name, validate.shape_of(x), ndim, length)
    if symbolic(x):
        _require(ops.logical_and(ops.min(x) >= 0, ops.max(x) < vocab), validate.ids_rule(name, vocab))
    elif int(np.prod(x.shape)):
        validate.ids(name, dtype_name(x), validate.shape_of(x), vocab, int(ops.min(x)), int(ops.max(x)))
    return x


def positions(x, ids_shape):
    """Indices (B, P) of positions in sequences of shape ``ids_shape`` (B, T)."""
    x = tensor(x, "positions")
    ids_shape = tuple(ids_shape)
    validate.token_positions("positions", dtype_name(x), validate.shape_of(x), ids_shape)
    if symbolic(x):
        _require(ops.logical_and(ops.min(x) >= 0, ops.max(x) < ids_shape[1]),
                 f"positions must be indices in [0, {ids_shape[1]}) of ids {ids_shape}")
    elif int(np.prod(x.shape)):
        validate.token_positions("positions", dtype_name(x), validate.shape_of(x), ids_shape, int(ops.min(x)),
                                 int(ops.max(x)))
    return x


def attention(query, key, value, mask=None, same_d: bool = True, wide: bool = False):
    """The inputs of an attention layer: float query (B, T_q, d), key (B, T_k, d), value (B, T_k, d_v), the
    shapes checked, and the mask as bool (or None). ``wide=True``: half-precision floats become float32 (``widen``),
    as in PyTorch, so that scores and softmax are computed in float32 under a float16 dtype policy too."""
    query, key, value = floats(query, "query"), floats(key, "key"), floats(value, "value")
    if wide:
        query, key, value = widen(query), widen(key), widen(value)
    mask = None if mask is None else tensor(mask, "mask")
    validate.attention_shapes(query, key, value, mask, same_d=same_d)
    return query, key, value, bool_mask(mask)


def pair(query, key, wide: bool = False):
    """The inputs of a score function: float query and key (their shapes are the score's to check); ``wide=True``:
    half-precision floats become float32 (``widen``)."""
    query, key = floats(query, "query"), floats(key, "key")
    return (widen(query), widen(key)) if wide else (query, key)


def hide(value, visible):
    """Zero the value rows that no query may see: value (B, T_k, d_v), visible bool (B, T_q or 1, T_k) or
    (B, T_k). A weight of 0 times a NaN or inf there would still give NaN."""
    if visible is None:
        return value
    keep = visible if len(visible.shape) == 2 else ops.any(visible, axis=1)     # (B, T_k)
    return ops.where(ops.expand_dims(keep, -1), value, ops.zeros_like(value))


def finite_visible(query, key, mask=None) -> None:
    """Check that the query, and every key that some query may see, hold finite numbers (one reduction each, a
    graph assertion while traced): a NaN or inf there gives a row of NaN, or of zeros, without a word. A hidden key
    may hold anything (the mask keeps it out). ``mask`` bool (B, T_k) or (B, T_q or 1, T_k), or None."""
    finite(query, "query")
    finite(hide(key, mask), "key")


HALF = ("float16", "bfloat16")


def widen(x):
    """``x`` as float32 when it is a half-precision float (float16, bfloat16), else unchanged: what PyTorch's
    ``floats`` does at the entry. A layer built under a float16 dtype policy gets float16 inputs from Keras, and
    float16 ends at ±65 504: a larger score overflows to ±inf (a lone visible key at -inf gets no weight, +inf − inf
    is NaN), and float16's lowest number, as the fill of the hidden keys, ties with a visible key's score there."""
    return ops.cast(x, "float32") if dtype_name(x) in HALF else x


@contextlib.contextmanager
def graph_errors():
    """Turn a failed graph assertion of these checks (inside ``tf.function``) into the course's error."""
    try:
        yield
    except tf.errors.InvalidArgumentError as err:
        found = re.search(r"assertion failed: \[" + _MARK + r"(.*?)\](?:\s|$)", err.message, re.S)
        if found is None:
            raise
        raise InputError(f"{found.group(1)} (found while running a compiled step)") from None

