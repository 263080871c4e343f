"""Argument validation shared by the two frameworks' layers, models and training loops.

Each function takes plain facts that the framework code reads off its tensors (a shape, a dtype name, a few
values) and raises the course's own error (``attention_course.core.errors``) with a message that names the argument,
the rule and what it got, so a bad input gets the same message in Keras and in PyTorch. Call them by module,
``validate.sizes(vocab=vocab)``, ``validate.attention_shapes(query, key, value, mask)``: "check" is the word of
``ac.exercises``, which grades a learner's exercise. Nothing here imports a framework;
``attention_course.core.torch.inputs`` and ``attention_course.core.keras.inputs`` read the facts.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from attention_course.core.errors import ConfigError, InputError, ShapeError

MASK_RULE = "a mask is True/1 where a key may be attended and False/0 where it is hidden"


# ---- constructor arguments -----------------------------------------------------------------------------------

def integer(name: str, value, minimum: int = 1, hint: str = "") -> int:
    """A size, count or window: a Python or NumPy integer >= ``minimum`` (2.5, 2.0 and True are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name} must be a whole number (int) >= {minimum}; got {value!r} "
                          f"({type(value).__name__}){hint}")
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}; got {value}{hint}")
    return int(value)


def sizes(**values) -> tuple[int, ...]:
    """Layer sizes (a vocabulary, units, a length) and counts (steps, a batch size): whole numbers >= 1, returned
    as Python ints in the order given (a NumPy integer works in both frameworks)."""
    return tuple(integer(name, value) for name, value in values.items())


def positive(name: str, value, hint: str = "") -> float:
    """A finite number > 0 (a temperature, a learning rate)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) < math.inf:
        raise ConfigError(f"{name} must be a finite number > 0; got {value!r}{hint}")
    return float(value)


def non_negative(name: str, value, hint: str = "") -> float:
    """A finite number >= 0 (a penalty or a regulariser's weight: 0 turns it off)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) < math.inf:
        raise ConfigError(f"{name} must be a finite number >= 0{hint}; got {value!r}")
    return float(value)


def probability(name: str, value) -> float:
    """A probability: a number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) <= 1:
        raise ConfigError(f"{name} is a probability: a number in [0, 1]; got {value!r}")
    return float(value)


def seed(value, name: str = "seed") -> int:
    """A seed for NumPy's generator: a whole number >= 0."""
    return integer(name, value, minimum=0)


def optional_size(name: str, value) -> int | None:
    """A size that may be left out: None, or a whole number >= 1."""
    return None if value is None else integer(name, value)


def rate(name: str, value, what: str = "a dropout rate") -> float:
    """A share such as a dropout rate: a number in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) < 1:
        raise ConfigError(f"{name} ({what}) must be a number in [0, 1); got {value!r}")
    return float(value)


# ---- tensors: type, dtype, values ----------------------------------------------------------------------------

def kind(dtype) -> str:
    """"bool", "int", "float" or "other" for a dtype name ("float32", "int64", "<U3", …)."""
    name = str(dtype)
    if name == "bool":
        return "bool"
    if name.startswith(("int", "uint")):
        return "int"
    return "float" if name.startswith(("float", "bfloat")) else "other"


def not_a_tensor(name: str, x, framework: str) -> InputError:
    """The error for an argument that is neither a tensor of ``framework`` nor a NumPy array."""
    return InputError(f"{name} must be a {framework} tensor or a NumPy array; got {type(x).__name__} {x!r:.60}")


def numeric(name: str, dtype, shape) -> None:
    """A NumPy array handed to a layer holds numbers (bool, int or float)."""
    if kind(dtype) == "other":
        raise InputError(f"{name} must hold numbers (bool, int or float); got {dtype} values of shape {tuple(shape)}")


def floating(name: str, dtype, shape) -> None:
    """Queries, keys, values, states and scores are real numbers: a float dtype."""
    if kind(dtype) != "float":
        raise InputError(f"{name} must be a float tensor (e.g. float32); got {dtype} of shape {tuple(shape)}: "
                         f"convert it to float32 first")


def mask_dtype(name: str, dtype, shape) -> None:
    """A mask is bool, or numbers (whose values are checked next)."""
    numeric(name, dtype, shape)


def finite_rule(name: str) -> str:
    return f"{name} must hold finite numbers: a NaN or infinite value spreads through every layer after it"


def finite(name: str, bad: int, first: tuple | None) -> None:
    """No NaN or infinite value: ``bad`` is how many there are, ``first`` the index of the first."""
    if bad:
        raise InputError(f"{finite_rule(name)}; got {bad} (the first at index {first}): fix or drop that example")


def share_rule(name: str, meaning: str) -> str:
    """What values a tensor of weights in [0, 1] (``meaning``: what each weight does) must hold."""
    return f"{name} must hold weights in [0, 1] ({meaning}); NaN is not a weight"


def shares(name: str, meaning: str, low: float, high: float) -> None:
    """Weights in [0, 1]: ``low`` and ``high`` are the smallest and largest value (NaN fails)."""
    if not (0.0 <= low and high <= 1.0):
        raise InputError(f"{share_rule(name, meaning)}; got values from {low:.4g} to {high:.4g}")


def missing_mask(name: str) -> InputError:
    """The error for a required mask left out (None)."""
    return InputError(f"{name} is required: a (B, S) mask, True on each sentence's real tokens and False on its "
                      f"pads (for PAD = 0: src != 0); got None")


def bad_mask(name: str, values, rule: str = MASK_RULE) -> InputError:
    """The error for a numeric mask with values other than 0 and 1 (``values``: a few of them); ``rule`` says what
    the mask means (an attention mask by default, which an additive mask would invert)."""
    shown = ", ".join(f"{float(v):g}" for v in values)
    hint = (f". An additive mask (0 keep, -inf hide) says the opposite: pass ({name} == 0) instead"
            if rule == MASK_RULE else "")
    return InputError(f"{name}: {rule}; got values {shown}{hint}")


def ids_rule(name: str, vocab: int) -> str:
    return f"{name} must hold integer token ids in [0, {vocab}) (the vocabulary size is {vocab})"


def ids(name: str, dtype, shape, vocab: int, low=None, high=None) -> None:
    """Token ids: an integer dtype and, when the values are known (``low``, ``high``), inside [0, vocab)."""
    if kind(dtype) != "int":
        raise InputError(f"{ids_rule(name, vocab)}; got a {dtype} tensor of shape {tuple(shape)}")
    if low is not None and (low < 0 or high >= vocab):
        raise InputError(f"{ids_rule(name, vocab)}; got ids from {low} to {high}")


def token_positions(name: str, dtype, shape, ids_shape, low=None, high=None) -> None:
    """Indices of positions to gather, (B, P), into sequences of shape ``ids_shape`` (B, T): integers in [0, T)."""
    rule = (f"{name} must be integer indices (B, P) of positions in [0, {ids_shape[1]}) of ids "
            f"{tuple(ids_shape)}")
    if kind(dtype) != "int" or len(shape) != 2 or (shape[0] is not None and shape[0] != ids_shape[0]):
        raise InputError(f"{rule}; got a {dtype} tensor of shape {tuple(shape)}")
    if low is not None and (low < 0 or high >= ids_shape[1]):
        raise InputError(f"{rule}; got indices from {low} to {high}")


# ---- shapes --------------------------------------------------------------------------------------------------

def shape_of(x) -> tuple:
    """The shape of an array or tensor of any framework as a plain tuple of ints (None if unknown)."""
    return tuple(None if d is None else int(d) for d in x.shape)


def attention_shapes(query, key, value, mask=None, same_d: bool = True) -> None:
    """Raise :class:`ShapeError` unless query ``(B, T_q, d)``, key ``(B, T_k, d)``, value ``(B, T_k, d_v)``
    and mask (broadcastable to ``(B, T_q, T_k)``) fit together. ``same_d=False`` lets the query and key sizes
    differ (scores with learned matrices)."""
    q, k, v = shape_of(query), shape_of(key), shape_of(value)
    if len(q) != 3 or len(k) != 3 or len(v) != 3:
        raise ShapeError(
            f"attention expects 3-D query (batch, T_q, d), key (batch, T_k, d) and value (batch, T_k, d_v); "
            f"got query {q}, key {k}, value {v}"
        )
    if same_d and q[-1] != k[-1]:
        raise ShapeError(f"query and key must share their last size d: query {q} has d={q[-1]}, key {k} has d={k[-1]}")
    if k[1] != v[1]:
        raise ShapeError(f"key and value must have the same number of positions T_k: key {k}, value {v}")
    if q[0] != k[0] or k[0] != v[0]:
        raise ShapeError(f"query, key and value must share the batch size: query {q}, key {k}, value {v}")
    if mask is not None:
        m = shape_of(mask)
        expected = (q[0], q[1], k[1])
        if len(m) == 2:
            ok = m == (q[0], k[1])
            hint = f"a 2-D key mask must be (batch, T_k) = {(q[0], k[1])}"
        elif len(m) == 3:
            ok = all(a in (1, b) for a, b in zip(m, expected, strict=True))
            hint = f"a 3-D mask must broadcast to (batch, T_q, T_k) = {expected}"
        else:
            ok, hint = False, "a mask must be 2-D (batch, T_k) or 3-D (batch, T_q, T_k)"
        if not ok:
            raise ShapeError(f"mask of shape {m} does not fit query {q} and key {k}: {hint}")


def choice(what: str, value, options) -> None:
    """Raise :class:`ConfigError` unless ``value`` is one of ``options``; the message lists them."""
    if value not in options:
        raise ConfigError(f"unknown {what} {value!r}; choose one of: {', '.join(map(str, options))}")


def sequence_shapes(name: str, x, mask=None, features: int | None = None, steps: int | None = None,
                          mask_name: str = "mask") -> None:
    """Shape errors for a layer over a sequence ``x`` ``(B, T, d)`` with an optional ``mask`` ``(B, T)``:
    ``features`` is the d it was built for, ``steps`` the one length T it accepts (a T × T layer). ``mask_name``
    names the (B, T) companion in the message (e.g. "gates")."""
    s = shape_of(x)
    if len(s) != 3:
        raise ShapeError(f"{name} expects a 3-D input (batch, T, d); got {s}")
    if features is not None and s[2] != features:
        raise ShapeError(f"{name} was built for d={features} features, but got input {s} (d={s[2]})")
    if steps is not None and s[1] != steps:
        raise ShapeError(f"{name} was built for exactly T={steps} timesteps (its Dense is {steps}×{steps}), "
                         f"but got input {s} (T={s[1]}): pad or cut every sequence to {steps}")
    if mask is not None and shape_of(mask) != s[:2]:
        raise ShapeError(f"{name}: the {mask_name} must be (batch, T) = {s[:2]} to fit the input {s}; "
                         f"got {mask_name} {shape_of(mask)}")


def some_rows(name: str, shape) -> None:
    """A batch needs at least one row (a sentence, an image) on axis 0."""
    if shape[0] == 0:
        raise ShapeError(f"{name} holds no rows: shape {tuple(shape)} has batch size 0; pass at least one")


def right_padded(name: str, mask) -> None:
    """A source mask (B, S) of host values (NumPy bool) for an encoder that reads the first ``length`` positions
    of each row: True on each row's real tokens, then False on its pads, with at least one real token."""
    mask = np.asarray(mask, dtype=bool)
    lengths = mask.sum(1)
    empty = np.flatnonzero(lengths == 0)
    if len(empty):
        raise InputError(f"{name} row {int(empty[0])} has no real token (all False): every sentence needs at least "
                         f"one (its EOS)")
    holes = np.flatnonzero((mask != (np.arange(mask.shape[1]) < lengths[:, None])).any(1))
    if len(holes):
        row = "".join("1" if v else "0" for v in mask[holes[0]])
        raise InputError(f"{name} must be right-padded: True on each sentence's real tokens, then False on its pads "
                         f"(the encoder reads the first length tokens of each row); row {int(holes[0])} is {row}")


def step_tokens(name: str, tokens, rows: int | None, vocab: int) -> np.ndarray:
    """The previous tokens of one decoding step, host values: (rows,) integer ids in [0, vocab), one per row of the
    decoder's state. Returns them as a NumPy array."""
    tokens = np.asarray(tokens)
    if tokens.ndim != 1 or (rows is not None and len(tokens) != rows):
        raise ShapeError(f"{name} must be ({rows},): one previous token per row of the state; got shape "
                         f"{tokens.shape}")
    ids(name, tokens.dtype, tokens.shape, vocab)
    if tokens.size:
        ids(name, tokens.dtype, tokens.shape, vocab, int(tokens.min()), int(tokens.max()))
    return tokens


def row_index(name: str, index, rows: int | None) -> np.ndarray:
    """Rows to take from a state of ``rows`` rows, host values: a 1-D array of integers in [0, rows), repeats
    allowed. Returns it as a NumPy array."""
    index = np.asarray(index)
    rule = f"{name} must be a 1-D array of integer rows in [0, {rows}) (the state has {rows} rows)"
    if index.ndim != 1 or kind(index.dtype) != "int":
        raise InputError(f"{rule}; got {index.dtype} of shape {index.shape}")
    if index.size and rows is not None and (index.min() < 0 or index.max() >= rows):
        raise InputError(f"{rule}; got rows from {int(index.min())} to {int(index.max())}")
    return index


def query_and_memory(layer: str, query, d_query: int, memory, d_memory: int, mask=None,
                     names: tuple[str, str] = ("s_prev", "a"), steps: str = "S") -> None:
    """One step of attention: a query (B, d_query), one per row, over a memory (B, ``steps``, d_memory) (S source
    positions, L image locations), with an optional mask (B, S). A size that is None (unknown while traced) fits
    any."""
    q, m = shape_of(query), shape_of(memory)
    fits = lambda a, b: None in (a, b) or a == b
    q_name, m_name = names
    if len(q) != 2 or len(m) != 3 or not fits(q[1], d_query) or not fits(m[2], d_memory) or not fits(q[0], m[0]):
        raise ShapeError(f"{layer} expects {m_name} (batch, {steps}, {d_memory}) and {q_name} (batch, {d_query}) "
                         f"with the same batch; got {m_name} {m}, {q_name} {q}")
    if mask is not None:
        k = shape_of(mask)
        if len(k) != 2 or not all(fits(a, b) for a, b in zip(k, m[:2], strict=True)):
            raise ShapeError(f"{layer}: the mask must be (batch, {steps}) = {m[:2]} to fit {m_name} {m}; got mask {k}")


def not_empty(name: str, shape, axis: int = 1, what: str = "T") -> None:
    """A sequence needs at least one position on ``axis``."""
    if shape[axis] == 0:
        raise ShapeError(f"{name} has no positions: shape {tuple(shape)} has {what} = 0; "
                         f"give every sequence at least one position")


def id_shape(name: str, shape, ndim: int = 2, length: int | None = None) -> None:
    """Token ids of ``ndim`` axes: (batch,), (batch, T) with 1 <= T (<= ``length``, when the model learned one
    position embedding per step), or (batch, S, W): documents of S sentences of W words."""
    if len(shape) != ndim:
        expected = {1: "(batch,)", 2: "(batch, T)"}.get(ndim, "(batch, S, W): S sentences of W words")
        raise ShapeError(f"{name} must be {ndim}-D token ids {expected}; got shape {tuple(shape)}")
    if ndim == 2:
        not_empty(name, shape)
    if length is not None and shape[1] is not None and shape[1] > length:
        raise ShapeError(f"{name} has {shape[1]} positions, but the model was built for length={length} "
                         f"(one learned position embedding each); got shape {tuple(shape)}")


def same_batch(**shapes) -> None:
    """Arguments that go together (source and target ids, …) share their batch size, axis 0."""
    if len({shape[0] for shape in shapes.values()} - {None}) > 1:          # None: unknown while traced
        raise ShapeError("these arguments must share their batch size (axis 0): "
                         + ", ".join(f"{name} {tuple(shape)}" for name, shape in shapes.items()))


def same_shape(name: str, shape, expected, expected_name: str) -> None:
    """``shape`` equals ``expected`` (a size that is None, unknown while traced, fits any)."""
    same = len(shape) == len(expected) and all(None in (a, b) or a == b for a, b in zip(shape, expected, strict=True))
    if not same:
        raise ShapeError(f"{name} must have the shape of {expected_name}, {tuple(expected)}; got {tuple(shape)}")


def positions(length, max_len: int) -> None:
    """Learned position vectors exist for positions 0 … max_len − 1 only."""
    if length is not None and length > max_len:
        raise ShapeError(f"LearnedPositions has vectors for {max_len} positions, but the input has T={length}: a "
                         f"learned table cannot go past the length it was built for (sinusoids and RoPE can)")


# ---- training data and metrics -------------------------------------------------------------------------------

def examples(inputs, targets=None) -> int:
    """fit/predict/accuracy: ``inputs`` a tuple of arrays (one per argument of the model) with the examples on
    axis 0, as many in each (and in ``targets``). Returns that number."""
    if not isinstance(inputs, (tuple, list)) or not inputs:
        raise InputError(f"inputs must be a non-empty tuple of arrays, one per argument of the model, e.g. (x,) or "
                         f"(src, tgt_in, src_mask); got {type(inputs).__name__}")
    named = {f"inputs[{i}]": a for i, a in enumerate(inputs)}
    if targets is not None:
        named["targets"] = targets
    counts = {}
    for name, a in named.items():
        shape = np.shape(a)
        if not shape:
            raise ShapeError(f"{name} must be an array with the examples on axis 0; got a scalar {a!r:.40}")
        counts[name] = shape[0]
    if len(set(counts.values())) > 1:
        raise ShapeError("every input and the targets must hold the same number of examples (axis 0); got "
                         + ", ".join(f"{name}: {n}" for name, n in counts.items()))
    n = next(iter(counts.values()))
    if n == 0:
        raise ShapeError("there are no examples: the inputs have 0 rows")
    return n


def targets(targets, logits_shape, ignore_index=None) -> None:
    """Class ids for a cross-entropy: integers in [0, classes) (or ``ignore_index``), shaped like the logits
    without their last axis, and at least one that is not ignored. ``logits_shape``: (n, [T,] classes)."""
    t = np.asarray(targets)
    classes = logits_shape[-1]
    if kind(t.dtype) != "int":
        raise InputError(f"targets must be integer class ids in [0, {classes}); got {t.dtype}")
    if t.shape[1:] != tuple(logits_shape[1:-1]):
        raise ShapeError(f"targets {t.shape} do not fit the model's logits {tuple(logits_shape)}: each example needs "
                         f"one class id per position, shape (n, {', '.join(map(str, logits_shape[1:-1]))})")
    keep = t != ignore_index if ignore_index is not None else np.ones(t.shape, bool)
    if not keep.any():
        raise InputError(f"every target equals ignore_index={ignore_index}: there is nothing to learn or count")
    low, high = int(t[keep].min()), int(t[keep].max())
    if low < 0 or high >= classes:
        raise InputError(f"targets must be class ids in [0, {classes}) (the model has {classes} outputs) or "
                         f"ignore_index={ignore_index}; got ids from {low} to {high}")


def counted(count: int, ignored, what: str = "accuracy") -> None:
    """An accuracy or a mean loss needs at least one target that is not ignored (else it would be 0/0)."""
    if count == 0:
        raise InputError(f"{what} of no targets: there is nothing to count (no targets, or every target equals "
                         f"the pad/ignored id {ignored})")
