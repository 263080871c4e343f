"""PyTorch's default initialisations for Keras layers, so that a Keras twin starts from the same distributions as
its PyTorch twin (the weights differ, being random; their ranges do not) and the two train alike.

PyTorch draws an ``nn.Linear(fan_in, units)``'s weight with ``kaiming_uniform_(a=√5)``, which is U(±1/√fan_in), and
its bias from the same U(±1/√fan_in); an ``nn.Conv1d`` likewise with fan_in = in_channels × kernel size; every
weight and bias of an ``nn.GRU`` or ``nn.LSTM`` from U(±1/√hidden); an ``nn.Embedding``'s table from N(0, 1).
Keras' defaults differ: Glorot-uniform kernels, zero biases, orthogonal recurrent kernels, U(±0.05) embeddings.

- ``torch_kernel()``: a Dense or Conv kernel as PyTorch's weight (the fan-in is read from the kernel's shape).
- ``torch_bias(fan_in)``: U(±1/√fan_in), a Dense or Conv bias as PyTorch's (the bias' own shape does not hold the
  fan-in, so it is given).
- ``torch_uniform(fan_in)``: the same U(±1/√fan_in) for any weight, such as every kernel and bias of a recurrent
  layer (``kernel_initializer``, ``recurrent_initializer``, ``bias_initializer``), with fan_in = its hidden size.
- ``torch_embedding()``: N(0, 1), an Embedding table as PyTorch's.
- ``torch_dense(units, fan_in=None, use_bias=True, **kwargs)``: a ``keras.layers.Dense`` initialised as
  ``nn.Linear``; without ``fan_in``, it reads it from its input when it builds.

Each call returns a fresh initializer: one unseeded Keras initializer shared by several layers would draw the same
numbers for each of them. Seeded by ``keras.utils.set_random_seed`` as Keras' own.
"""

from __future__ import annotations

import math
import operator

import keras

__all__ = ["torch_kernel", "torch_bias", "torch_uniform", "torch_embedding", "torch_dense", "TorchDense"]


def torch_kernel() -> keras.initializers.Initializer:
    """U(±1/√fan_in), fan_in from the kernel's shape (a Dense's inputs, a Conv's kernel size × input channels):
    PyTorch's ``kaiming_uniform_(a=√5)`` of ``nn.Linear`` and ``nn.Conv*``. The variance of U(±b) is b²/3, so this
    is Keras' ``VarianceScaling(1/3, "fan_in", "uniform")``."""
    return keras.initializers.VarianceScaling(scale=1 / 3, mode="fan_in", distribution="uniform")


def torch_bias(fan_in: int) -> keras.initializers.Initializer:
    """U(±1/√fan_in): PyTorch's bias of an ``nn.Linear(fan_in, …)`` or ``nn.Conv*`` (fan_in = input channels ×
    kernel size)."""
    return torch_uniform(fan_in)


def torch_uniform(fan_in: int) -> keras.initializers.Initializer:
    """U(±1/√fan_in) for any weight: every kernel, recurrent kernel and bias of PyTorch's ``nn.GRU``/``nn.LSTM``
    (fan_in = its hidden size), a bias (``torch_bias``)."""
    try:
        size = operator.index(fan_in)                                  # an int, NumPy's too; not 2.5 or None
    except TypeError:
        size = 0
    if isinstance(fan_in, bool) or size < 1:
        raise ValueError(f"fan_in must be a positive int; got {fan_in!r}")
    bound = 1 / math.sqrt(size)
    return keras.initializers.RandomUniform(-bound, bound)


def torch_embedding() -> keras.initializers.Initializer:
    """N(0, 1): PyTorch's ``nn.Embedding`` table."""
    return keras.initializers.RandomNormal(stddev=1.0)


class TorchDense(keras.layers.Dense):
    """Keras' ``Dense`` initialised as PyTorch's ``nn.Linear``: kernel and bias U(±1/√fan_in). ``fan_in`` None:
    the input's last dimension, read when the layer builds. Computes as ``Dense`` (``core.parity`` treats it as one)."""

    def __init__(self, units: int, fan_in: int | None = None, use_bias: bool = True, **kwargs):
        for name in ("kernel_initializer", "bias_initializer"):
            if name in kwargs:
                raise TypeError(f"TorchDense sets its own {name}; use keras.layers.Dense for another")
        bias = torch_bias(fan_in) if fan_in is not None else "zeros"    # without fan_in: replaced in build()
        super().__init__(units, use_bias=use_bias, kernel_initializer=torch_kernel(), bias_initializer=bias,
                         **kwargs)
        self.fan_in = fan_in

    def build(self, input_shape):
        if self.fan_in is None:
            self.bias_initializer = torch_bias(int(input_shape[-1]))
        super().build(input_shape)

    def get_config(self):
        config = super().get_config()
        for name in ("kernel_initializer", "bias_initializer"):
            config.pop(name, None)
        return {**config, "fan_in": self.fan_in}


def torch_dense(units: int, fan_in: int | None = None, use_bias: bool = True, **kwargs) -> TorchDense:
    """A Dense layer of ``units`` outputs that starts as PyTorch's ``nn.Linear(fan_in, units, bias=use_bias)``:
    kernel and bias U(±1/√fan_in). ``fan_in`` None: the input's last dimension, when the layer first runs. Other
    keyword arguments go to ``keras.layers.Dense`` (``activation``, ``name``)."""
    return TorchDense(units, fan_in=fan_in, use_bias=use_bias, **kwargs)
