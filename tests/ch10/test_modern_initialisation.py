"""The twins of Chapter 10 start from the same distributions, parameter by parameter: every weight and bias of an
``nn.Linear(fan_in, …)`` is U(±1/√fan_in) (PyTorch's ``kaiming_uniform_(a=√5)`` and its bias rule), and so is its
Keras twin's (no longer Keras' Glorot kernels and zero biases); the Llama's embedding is N(0, 0.02) and its RMSNorm
gains are ones in both. Checked for every trained layer: the Llama of each attention (grouped-query, linear, linear
with decay, latent), and grouped-query, linear and latent attention with biases."""

import numpy as np
import pytest
import torch

from attention_course.ch10_modern_attention import keras as ch10_keras
from attention_course.ch10_modern_attention import torch as ch10_torch

pytestmark = pytest.mark.chapter(10)

LLAMAS = {"GQA": {}, "linear": {"linear": True}, "decayed": {"linear": True, "decay": True}, "MLA": {"latent": 8}}
LAYERS = {"GroupedQueryAttention": ((32, 4, 2), {"bias": True, "rotary": True}),
          "LinearAttention": ((32, 4, 2), {"bias": True, "rotary": True}),
          "MultiHeadLatentAttention": ((32, 4, 8), {"bias": True, "d_rope": 4})}


def _keras_variable(model, name: str) -> np.ndarray:
    """The Keras twin's array for PyTorch's parameter ``name`` (``blocks.0.attention.W_q.weight``), in PyTorch's
    layout (a Dense kernel transposed)."""
    *path, leaf = name.split(".")
    layer = model
    for part in path:
        layer = layer[int(part)] if isinstance(layer, list | tuple) else getattr(layer, part)
    if leaf == "bias":
        return np.asarray(layer.bias)
    if hasattr(layer, "kernel"):
        return np.asarray(layer.kernel).T
    if hasattr(layer, "embeddings"):
        return np.asarray(layer.embeddings)
    return np.asarray(getattr(layer, leaf))


def _expected(torch_model, name: str):
    """What PyTorch draws ``name`` from: ("uniform", bound), ("normal", std) or ("ones", None)."""
    owner = torch_model.get_submodule(name.rpartition(".")[0])
    if isinstance(owner, torch.nn.Linear):
        return "uniform", 1 / np.sqrt(owner.in_features)
    if isinstance(owner, torch.nn.Embedding):
        return "normal", 0.02                                         # as llama2.c, in both frameworks
    return "ones", None


def _check(values: np.ndarray, kind: str, scale, where: str) -> None:
    n = values.size
    if kind == "ones":
        assert (values == 1).all(), where
        return
    std = scale / np.sqrt(3) if kind == "uniform" else scale
    if n >= 32:                                                       # a sample's std spreads as 1/√n
        tolerance = 0.15 if n >= 256 else 0.4                         # at 4σ or more
        assert abs(values.std() / std - 1) < tolerance, (where, values.std(), std)
        assert abs(values.mean()) < 5 * std / np.sqrt(n), (where, values.mean())
    else:                                                             # a few numbers: drawn, not a constant
        assert values.std() > std / 10, (where, values)
    if kind == "uniform":
        assert np.abs(values).max() <= scale * (1 + 1e-6), (where, np.abs(values).max(), scale)


def _compare(torch_model, keras_model) -> int:
    checked = 0
    for name, parameter in torch_model.named_parameters():
        kind, scale = _expected(torch_model, name)
        theirs = _keras_variable(keras_model, name)
        assert theirs.shape == tuple(parameter.shape), name
        _check(parameter.detach().numpy(), kind, scale, f"pytorch {name}")
        _check(theirs, kind, scale, f"keras {name}")
        checked += 1
    keras_count = sum(int(np.prod(w.shape)) for w in keras_model.trainable_weights)
    assert keras_count == sum(p.numel() for p in torch_model.parameters()), name
    return checked


@pytest.mark.parametrize("variant", list(LLAMAS))
def test_a_llamas_twins_start_from_the_same_distributions(variant):
    torch.manual_seed(0)
    import keras

    keras.utils.set_random_seed(0)
    sizes = dict(vocab=50, d_model=64, heads=4, kv_heads=2, layers=2, hidden=176, max_len=16, **LLAMAS[variant])
    tm, km = ch10_torch.Llama(**sizes), ch10_keras.Llama(**sizes)
    km(np.zeros((1, 4), "int32"))                                          # built
    assert _compare(tm, km) == len(list(tm.named_parameters())) > 10


@pytest.mark.parametrize("name", list(LAYERS))
def test_the_attention_layers_with_biases_start_alike(name):
    torch.manual_seed(1)
    import keras

    keras.utils.set_random_seed(1)
    args, kwargs = LAYERS[name]
    tm, km = getattr(ch10_torch, name)(*args, **kwargs), getattr(ch10_keras, name)(*args, **kwargs)
    km(np.zeros((1, 4, 32), "float32"), causal=True)                       # built
    assert _compare(tm, km) >= 8
