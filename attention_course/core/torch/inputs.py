"""How the course's PyTorch layers take their inputs (the twin of ``attention_course.core.keras.inputs``).

The rule, the same in both frameworks: every layer, model and function takes the framework's own tensors or
NumPy arrays; NumPy arrays become tensors at the entry (float arrays as float32, on the layer's device).
Half-precision floats (float16, bfloat16) are computed in float32, so large scores do not overflow (Keras
casts every float input of a layer to its float32 policy). Queries, keys, values and states must be floats;
a mask bool, or numbers that are all 0 or 1; token ids integers in [0, vocab). Anything else raises the
course's error, naming the argument, the rule and the value (rules and messages: ``attention_course.core.validate``).
"""

from __future__ import annotations

import numpy as np
import torch

from attention_course.core import validate


def dtype_name(x) -> str:
    return str(x.dtype).removeprefix("torch.")


def device_of(module):
    """Where a module's parameters live (None when it has none): NumPy inputs are moved there."""
    p = next(module.parameters(), None)
    return None if p is None else p.device


def tensor(x, name: str, device=None) -> torch.Tensor:
    """``x`` as a tensor: a NumPy array is converted (float arrays as float32) and moved to ``device``."""
    if isinstance(x, np.ndarray):
        validate.numeric(name, x.dtype, x.shape)
        x = torch.as_tensor(x.astype(np.float32) if x.dtype.kind == "f" else x)
        return x if device is None else x.to(device)
    if not isinstance(x, torch.Tensor):
        raise validate.not_a_tensor(name, x, "PyTorch")
    return x


def floats(x, name: str, device=None) -> torch.Tensor:
    """A float tensor; float16 and bfloat16 become float32."""
    x = tensor(x, name, device)
    validate.floating(name, dtype_name(x), validate.shape_of(x))
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def finite(x: torch.Tensor, name: str) -> torch.Tensor:
    """``x`` unchanged, once checked to hold no NaN or infinite value (one reduction)."""
    bad = ~torch.isfinite(x)
    if bool(bad.any()):
        validate.finite(name, int(bad.sum()), tuple(int(i) for i in bad.nonzero()[0]))
    return x


def shares(x, name: str, meaning: str, device=None) -> torch.Tensor:
    """Float weights in [0, 1] (``meaning``: what each does, for the error; one min/max reduction checks them)."""
    x = floats(x, name, device)
    if x.numel():
        low, high = (float(v) for v in torch.aminmax(x.detach()))          # a value check, outside autograd
        validate.shares(name, meaning, float("nan") if torch.isnan(x).any() else low, high)
    return x


def bool_mask(m, name: str = "mask", device=None, rule: str = validate.MASK_RULE):
    """A bool mask from bool or 0/1 values (one reduction checks the values); None stays None. ``rule`` says what
    the mask means, in the error."""
    if m is None:
        return None
    m = tensor(m, name, device)
    validate.mask_dtype(name, dtype_name(m), validate.shape_of(m))
    if m.dtype == torch.bool:
        return m
    if not ((m == 0) | (m == 1)).all():
        raise validate.bad_mask(name, np.unique(m[(m != 0) & (m != 1)].double().cpu().numpy())[:4], rule)
    return m != 0


def source_mask(m, src, name: str = "src_mask"):
    """The mask (B, S) of right-padded sources ``src`` (B, S), for an encoder that packs the first ``length``
    positions of each row: bool or 0/1, the shape of ``src``, at least one row, and right-padded with at least one
    real token per row. Returns the bool mask on src's device and the lengths (B,) on the CPU (one copy of the
    mask to the host checks it and gives the lengths that packing needs there anyway)."""
    if m is None:
        raise validate.missing_mask(name)
    m = bool_mask(m, name, src.device)
    validate.same_shape(name, validate.shape_of(m), validate.shape_of(src), "src")
    validate.some_rows("src", validate.shape_of(src))
    host = m.cpu()
    validate.right_padded(name, host.numpy())
    return m, host.sum(1)


def ids(x, name: str, embed, ndim: int = 2, length: int | None = None) -> torch.Tensor:
    """Token ids for the embedding ``embed``: integers in [0, vocab) (one min/max reduction checks them),
    shaped (batch,) or (batch, T) with 1 <= T (<= ``length``), on the embedding's device."""
    vocab = embed.num_embeddings
    x = tensor(x, name, embed.weight.device)
    validate.ids(name, dtype_name(x), validate.shape_of(x), vocab)                 # the dtype
    validate.id_shape(name, validate.shape_of(x), ndim, length)
    if x.numel():
        low, high = torch.stack(torch.aminmax(x)).tolist()
        validate.ids(name, dtype_name(x), validate.shape_of(x), vocab, low, high)
    return x


def positions(x, ids_shape, device=None) -> torch.Tensor:
    """Indices (B, P) of positions in sequences of shape ``ids_shape`` (B, T), on ``device``."""
    x = tensor(x, "positions", device)
    validate.token_positions("positions", dtype_name(x), validate.shape_of(x), tuple(ids_shape))
    if x.numel():
        low, high = torch.stack(torch.aminmax(x)).tolist()
        validate.token_positions("positions", dtype_name(x), validate.shape_of(x), tuple(ids_shape), low, high)
    return x


def attention(query, key, value, mask=None, same_d: bool = True):
    """The inputs of an attention layer: float query (B, T_q, d), key (B, T_k, d), value (B, T_k, d_v) on the
    query's device, the shapes checked, and the mask as bool (or None)."""
    query = floats(query, "query")
    key, value = floats(key, "key", query.device), floats(value, "value", query.device)
    mask = None if mask is None else tensor(mask, "mask", query.device)
    validate.attention_shapes(query, key, value, mask, same_d=same_d)
    return query, key, value, bool_mask(mask)


def pair(query, key):
    """The inputs of a score function: float query and key (their shapes are the score's to check)."""
    query = floats(query, "query")
    return query, floats(key, "key", query.device)


def hide(value, visible):
    """Zero the value rows that no query may see: value (B, T_k, d_v), visible bool (B, T_q or 1, T_k) or
    (B, T_k). A weight of 0 times a NaN or inf there would still give NaN."""
    if visible is None:
        return value
    keep = visible if visible.dim() == 2 else visible.any(dim=1)     # (B, T_k)
    return value.masked_fill(~keep[..., None], 0)


def finite_visible(query, key, mask=None) -> None:
    """Check that the query, and every key that some query may see, hold finite numbers (one reduction each): a
    NaN or inf there gives a row of NaN, or of zeros, without a word. A hidden key may hold anything (the mask
    keeps it out). ``mask`` bool (B, T_k) or (B, T_q or 1, T_k), or None (every key is seen)."""
    finite(query, "query")
    finite(hide(key, mask), "key")

