"""Bad input to Chapter 10's functions is the course's clear error, naming the argument: a NaN or infinite value in a
query, or in a key or value some query may see, in ``flash_attention`` and in linear attention (in parallel and step
by step), where it once gave a row of zeros or NaN without a word; a NaN behind the padding mask is still ignored.
The llama2.c tokenizer refuses ids outside its vocabulary (−1 once decoded as the last piece)."""

import struct

import numpy as np
import pytest
import torch
from conftest import to_numpy

from attention_course.ch10_modern_attention import keras as ch10_keras
from attention_course.ch10_modern_attention import reference as ref
from attention_course.ch10_modern_attention import torch as ch10_torch
from attention_course.ch10_modern_attention.llama2c import Tokenizer
from attention_course.core.errors import InputError

pytestmark = pytest.mark.chapter(10)
MODULES = {"keras": ch10_keras, "pytorch": ch10_torch}
PADS = np.array([[True] * 6 + [False] * 2, [True] * 8])


def _as(framework, x):
    return torch.as_tensor(x) if framework == "pytorch" else x


def _qkv(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s).astype("float32") for s in ((2, 2, 8, 4), (2, 2, 8, 4), (2, 2, 8, 3))]


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
@pytest.mark.parametrize("where", ["query", "key", "value"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_flash_attention_refuses_a_value_that_is_not_finite(framework, where, bad):
    """A NaN or ±inf in a query, or in a key or value at a real (visible) position: an InputError naming it, with
    and without a mask and a causal mask (no longer a row of zeros)."""
    f = MODULES[framework].flash_attention
    for mask, causal in ((None, False), (PADS, True)):
        x = dict(zip(("query", "key", "value"), _qkv(), strict=True))
        x[where][1, 0, 3, 1] = bad                                       # the second example has no pads
        args = [_as(framework, x[name]) for name in ("query", "key", "value")]
        with pytest.raises(InputError, match=rf"{where} must hold finite numbers.*index \(1, 0, 3, 1\)"):
            f(*args, None if mask is None else _as(framework, mask), causal=causal, block=3)


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_flash_attention_ignores_a_nan_behind_the_mask(framework):
    """A NaN in a padded key or value changes nothing: those keys are no query's, and the reference says so."""
    q, k, v = _qkv(1)
    clean = to_numpy(MODULES[framework].flash_attention(*(_as(framework, a) for a in (q, k, v, PADS)), block=3))
    k[0, :, 6:], v[0, :, 7] = np.nan, np.inf
    dirty = to_numpy(MODULES[framework].flash_attention(*(_as(framework, a) for a in (q, k, v, PADS)), block=3))
    np.testing.assert_allclose(dirty, clean, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dirty, ref.explicit_attention(*(a.astype(float) for a in _qkv(1)), PADS[:, None]),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
@pytest.mark.parametrize("where", ["query", "key", "value"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_linear_attention_refuses_a_value_that_is_not_finite(framework, where, bad):
    """NaN or inf in a query, key or value: an InputError naming it, in parallel (with and without rotary positions)
    and for one step of the recurrence (NaN once spread to every later output without a word)."""
    module = MODULES[framework]
    x = dict(zip(("query", "key", "value"), _qkv(2), strict=True))
    x[where][0, 1, 2, 0] = bad
    args = [_as(framework, x[name]) for name in ("query", "key", "value")]
    for rotary in (False, True):
        with pytest.raises(InputError, match=rf"{where} must hold finite numbers"):
            module.linear_attention(*args, rotary=rotary)
    state, norm = _as(framework, np.zeros((2, 2, 4, 3), "float32")), _as(framework, np.zeros((2, 2, 4), "float32"))
    with pytest.raises(InputError, match=rf"{where} must hold finite numbers.*index \(0, 1, 0\)"):
        module.linear_attention_step(state, norm, *(_as(framework, x[name][:, :, 2]) for name in
                                                    ("query", "key", "value")))


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_a_linear_attention_layer_names_the_nan_in_its_input(framework):
    """``LinearAttention`` on an input holding NaN: the error names the queries it projected, not a NaN output."""
    layer = MODULES[framework].LinearAttention(8, 2, 2, rotary=True)
    x = np.random.default_rng(3).normal(size=(1, 5, 8)).astype("float32")
    x[0, 2, 3] = np.nan
    with pytest.raises(InputError, match="must hold finite numbers"), torch.no_grad():
        layer(_as(framework, x), causal=True)


def _tokenizer(tmp_path) -> Tokenizer:
    """A llama2.c tokenizer of five pieces, written in its own format: the longest piece, then (score, length, bytes)
    per piece."""
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n", b" a", b"b"]
    raw = struct.pack("<I", max(map(len, pieces)))
    for i, piece in enumerate(pieces):
        raw += struct.pack("<fi", float(-i), len(piece)) + piece
    path = tmp_path / "tok5.bin"
    path.write_bytes(raw)
    return Tokenizer(path, len(pieces))


@pytest.mark.parametrize("bad", [-1, 5, 2**31])
def test_the_tokenizer_refuses_ids_outside_its_vocabulary(tmp_path, bad):
    """−1 once decoded as the last piece (Python's negative index) and 5 of 5 raised an IndexError: both are now an
    InputError that names the id and the range; the good ids still decode."""
    tokenizer = _tokenizer(tmp_path)
    assert tokenizer.decode([1, 3, 4, 2]) == "ab"
    with pytest.raises(InputError, match=rf"token ids in \[0, 5\).*got {bad}"):
        tokenizer.decode([1, 3, bad])
    with pytest.raises(InputError, match=rf"token ids in \[0, 5\).*got {bad}"):
        tokenizer.piece(bad)
    with pytest.raises(InputError, match="token ids"):
        tokenizer.decode([1, 3.0])
    with pytest.raises(InputError, match="a list of token ids"):
        tokenizer.decode("ab")
