"""Copy weights between the PyTorch and Keras twins of a model, so the two can be compared exactly.

The twins share sub-layer names (``embed``, ``encoder``, ``out`` …); each sub-layer is converted by type:
Embedding ↔ Embedding, Linear ↔ Dense (transposed), GRU ↔ GRU or Bidirectional(GRU), GRUCell ↔ GRUCell
(gate order r,z,n ↔ z,r,h, transposed), LSTM ↔ LSTM or Bidirectional(LSTM) (same gate order i,f,g,o;
transposed; the two biases summed), LSTMCell ↔ LSTMCell, Conv1d ↔ Conv1D and Conv2d ↔ Conv2D (channels last),
LayerNorm ↔ LayerNormalization, BatchNorm2d ↔ BatchNormalization (compare in evaluation mode), and a ModuleList
of course modules ↔ a list of layers.
Both frameworks are imported: use it only when both are on.
"""

from __future__ import annotations

import numpy as np


def _gru_to_keras(gru) -> list[np.ndarray]:
    """torch ``nn.GRU`` (1 layer) or ``nn.GRUCell`` → Keras GRU / GRUCell (reset_after=True) [kernel, recurrent,
    bias], then the backward direction's three for ``Bidirectional`` (forward layer first)."""
    if type(gru).__name__ == "GRUCell":
        suffixes = [""]
    elif gru.num_layers != 1:
        raise ValueError("only single-layer GRUs are converted")
    else:
        suffixes = ["_l0", "_l0_reverse"] if gru.bidirectional else ["_l0"]

    def reorder(w):                                     # torch gates r, z, n → keras z, r, h
        r, z, n = np.split(w, 3, axis=0)
        return np.concatenate([z, r, n], axis=0)

    weights = []
    for suffix in suffixes:
        w = {n: reorder(getattr(gru, f"{n}{suffix}").detach().cpu().numpy())
             for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        weights += [w["weight_ih"].T, w["weight_hh"].T, np.stack([w["bias_ih"], w["bias_hh"]])]  # (in, 3H), (H, 3H)
    return weights


def _lstm_to_keras(lstm) -> list[np.ndarray]:
    """torch ``nn.LSTM`` (1 layer) → Keras LSTM [kernel, recurrent, bias], then the backward direction's
    three for ``Bidirectional`` (forward layer first, as ``Bidirectional.get_weights`` lists them)."""
    if lstm.num_layers != 1 or getattr(lstm, "proj_size", 0):
        raise ValueError("only single-layer LSTMs without projection are converted")
    weights = []
    for suffix in ("", "_reverse") if lstm.bidirectional else ("",):
        w = {n: getattr(lstm, f"{n}_l0{suffix}").detach().cpu().numpy()
             for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        weights += [w["weight_ih"].T, w["weight_hh"].T, w["bias_ih"] + w["bias_hh"]]  # (in, 4H), (H, 4H), (4H,)
    return weights


def torch_to_keras(torch_model, keras_model, example_inputs=None) -> None:
    """Load the weights of ``torch_model`` into its Keras twin, matched by sub-layer name.

    ``example_inputs`` (a tuple of arrays) builds an unbuilt Keras model first.
    """
    from torch import nn

    if example_inputs is not None and not keras_model.built:
        keras_model(*example_inputs)
    for name, module in torch_model.named_children():
        if not list(module.parameters()):
            continue
        layer = getattr(keras_model, name, None)
        if layer is None:
            raise ValueError(f"the Keras model {type(keras_model).__name__} has no sub-layer {name!r}")
        if isinstance(module, nn.ModuleList):                 # a stack of course modules ↔ a list of layers
            if len(module) != len(layer):
                raise ValueError(f"{name}: PyTorch has {len(module)} layers, Keras {len(layer)}")
            for sub, sub_layer in zip(module, layer, strict=True):
                torch_to_keras(sub, sub_layer)
            continue
        if isinstance(module, nn.Embedding):
            weights = [module.weight.detach().cpu().numpy()]
        elif isinstance(module, nn.Linear):
            weights = [module.weight.detach().cpu().numpy().T]
            if module.bias is not None:                 # nn.Linear(bias=False) ↔ Dense(use_bias=False)
                weights.append(module.bias.detach().cpu().numpy())
        elif isinstance(module, nn.GRU | nn.GRUCell):
            weights = _gru_to_keras(module)
        elif isinstance(module, nn.LSTM):
            weights = _lstm_to_keras(module)
        elif isinstance(module, nn.LSTMCell):                 # same gate order i, f, g, o; the two biases summed
            weights = [module.weight_ih.detach().cpu().numpy().T, module.weight_hh.detach().cpu().numpy().T,
                       (module.bias_ih + module.bias_hh).detach().cpu().numpy()]
        elif isinstance(module, nn.LayerNorm):                # γ, β (set the same epsilon on both sides)
            weights = [module.weight.detach().cpu().numpy(), module.bias.detach().cpu().numpy()]
        elif isinstance(module, nn.BatchNorm2d):              # γ, β, running mean and variance
            weights = [t.detach().cpu().numpy() for t in (module.weight, module.bias, module.running_mean,
                                                           module.running_var)]
        elif isinstance(module, nn.Conv2d):                   # (out, in, kh, kw) → (kh, kw, in, out)
            weights = [module.weight.detach().cpu().numpy().transpose(2, 3, 1, 0)]
            if module.bias is not None:
                weights.append(module.bias.detach().cpu().numpy())
        elif isinstance(module, nn.Conv1d):                   # (out, in, k) → (k, in, out)
            weights = [module.weight.detach().cpu().numpy().transpose(2, 1, 0)]
            if module.bias is not None:
                weights.append(module.bias.detach().cpu().numpy())
        elif type(module).__module__.startswith("torch.nn"):  # pragma: no cover
            raise TypeError(f"no conversion for {type(module).__name__} ({name}): add one to parity.py")
        else:                                           # a course module: recurse by sub-layer name
            torch_to_keras(module, layer)
            continue
        expected = [tuple(w.shape) for w in layer.get_weights()]
        got = [tuple(w.shape) for w in weights]
        if expected != got:
            raise ValueError(f"{name}: Keras expects weight shapes {expected}, PyTorch gives {got}")
        layer.set_weights(weights)
