"""What every Keras layer and model of the course shares, so that each states it once.

The course passes masks as explicit arguments (``mask=``, ``src_mask=``); Keras' implicit mask propagation is not
used. Sub-layers build on their first call, so a layer made of them needs no ``build()`` of its own. NumPy
arguments of strings or objects are refused, by name, before Keras converts them.
"""

from __future__ import annotations

import inspect

import keras
import numpy as np

from attention_course.core import validate


def _none_by_name(call, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Keras fills an argument named ``<x>_mask`` that is None with the Keras mask of the tensor ``x``, by keyword,
    so a None given for it by position reaches ``call`` twice ("got multiple values for argument 'src_mask'").
    Pass the arguments from the first None on by name instead: the course's own check of the argument then runs."""
    first = next((i for i, a in enumerate(args) if a is None), 0)
    if not first:                                        # no None, or the first argument (Keras' own error)
        return args, kwargs
    names = [p.name for p in inspect.signature(call).parameters.values()
             if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    if len(args) > len(names) or any(n in kwargs for n in names[first:len(args)]):
        return args, kwargs
    return args[:first], {**dict(zip(names[first:], args[first:], strict=False)), **kwargs}


def _numbers_only(call, args: tuple, kwargs: dict) -> None:
    """Keras turns NumPy arguments into tensors before ``call`` runs, so an array of strings or objects would fail
    inside TensorFlow; refuse it first, with the course's error naming the argument."""
    if not any(isinstance(a, np.ndarray) and a.dtype.kind in "OSUV" for a in (*args, *kwargs.values())):
        return
    names = [p.name for p in inspect.signature(call).parameters.values()]
    for name, value in (*zip(names, args, strict=False), *kwargs.items()):
        if isinstance(value, np.ndarray):
            validate.numeric(name, value.dtype, value.shape)


def _course_arguments(layer, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """What the course's layers and models do before Keras' own ``__call__``: refuse string arrays, mark a layer
    made of sub-layers built (it has nothing to build from input shapes, and Keras 3.10, Colab's, fails when it
    infers the shapes of a nested argument holding a None, such as a decoder's memory without keys), and pass the
    arguments from the first None on by name."""
    _numbers_only(layer.call, args, kwargs)
    if isinstance(layer, BuildOnCall) and not layer.built:
        layer.built = True
    return _none_by_name(layer.call, args, kwargs)


class Layer(keras.layers.Layer):
    """A layer whose masks are explicit arguments: ``compute_mask`` returns None (no implicit mask flows on),
    and ``supports_masking`` is True (Keras does not warn that an incoming implicit mask is dropped)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_mask(self, *args, **kwargs):
        return None

    def __call__(self, *args, **kwargs):
        args, kwargs = _course_arguments(self, args, kwargs)
        return super().__call__(*args, **kwargs)


class BuildOnCall:
    """Mixin for a layer or model made of sub-layers that build on their first call."""

    def build(self, *args, **kwargs):
        self.built = True


class Model(BuildOnCall, keras.Model):
    """A subclassed model whose sub-layers build on their first call (no ``build()`` needed), and whose arguments
    may be None by position (see ``_none_by_name``)."""

    def __call__(self, *args, **kwargs):
        args, kwargs = _course_arguments(self, args, kwargs)
        return super().__call__(*args, **kwargs)


class Dense(keras.layers.Dense):
    """Keras' ``Dense`` as one 2-D matrix product whatever the input's rank: inputs (..., d) → (..., units).
    TensorFlow 2.20 (Colab's in 2026) corrupts its memory, and the kernel dies, in some batched products of an input
    (B, 1, N, d) by a kernel, such as (B > 1, d ≥ 32) by (d, 1): an additive attention's score at a single decoding
    step."""

    def call(self, inputs, training=None):
        if len(inputs.shape) <= 2:
            return super().call(inputs, training=training)
        flat = super().call(keras.ops.reshape(inputs, (-1, inputs.shape[-1])), training=training)   # (rows, units)
        return keras.ops.reshape(flat, (*keras.ops.shape(inputs)[:-1], self.units))
