"""Copy weights between the PyTorch and Keras twins of a model, so the two can be compared exactly.

The twins share sub-layer names (``embed``, ``encoder``, ``out`` …), so PyTorch's parameter names (a ``state_dict``'s
keys, ``decoder.cell.weight_ih``) name the Keras layer each array belongs to. Each Keras layer of Keras' own takes
its arrays by type: Embedding ↔ Embedding, Linear ↔ Dense (transposed), GRU ↔ GRU or Bidirectional(GRU), GRUCell ↔
GRUCell (gate order r,z,n ↔ z,r,h, transposed), LSTM ↔ LSTM or Bidirectional(LSTM) (same gate order i,f,g,o;
transposed; the two biases summed), LSTMCell ↔ LSTMCell, Conv1d ↔ Conv1D and Conv2d ↔ Conv2D (channels last),
LayerNorm ↔ LayerNormalization, BatchNorm2d ↔ BatchNormalization (compare in evaluation mode); a course layer is
entered by name, and a ModuleList ↔ a list of layers by position.

``arrays_to_keras`` needs Keras only (a trained model's arrays load into Keras without PyTorch);
``torch_to_keras`` takes a PyTorch model, so both frameworks are on.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _gru(a: dict[str, np.ndarray]) -> list[np.ndarray]:
    """PyTorch GRU (one layer) or GRUCell arrays → Keras GRU / GRUCell (reset_after=True) [kernel, recurrent, bias],
    then the backward direction's three for ``Bidirectional`` (forward layer first)."""
    if "weight_ih" in a:
        suffixes = [""]
    elif any(k.endswith("_l1") for k in a):
        raise ValueError("only single-layer GRUs are converted")
    else:
        suffixes = ["_l0", "_l0_reverse"] if "weight_ih_l0_reverse" in a else ["_l0"]

    def reorder(w):                                     # torch gates r, z, n → keras z, r, h
        r, z, n = np.split(w, 3, axis=0)
        return np.concatenate([z, r, n], axis=0)

    weights = []
    for suffix in suffixes:
        w = {n: reorder(a[f"{n}{suffix}"]) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        weights += [w["weight_ih"].T, w["weight_hh"].T, np.stack([w["bias_ih"], w["bias_hh"]])]  # (in, 3H), (H, 3H)
    return weights


def _lstm(a: dict[str, np.ndarray]) -> list[np.ndarray]:
    """PyTorch LSTM (one layer, no projection) or LSTMCell arrays → Keras LSTM / LSTMCell [kernel, recurrent, bias]
    (same gate order, the two biases summed), then the backward direction's three for ``Bidirectional``."""
    if "weight_ih" in a:
        suffixes = [""]
    elif any(k.endswith("_l1") or k.startswith("weight_hr") for k in a):
        raise ValueError("only single-layer LSTMs without projection are converted")
    else:
        suffixes = ["_l0", "_l0_reverse"] if "weight_ih_l0_reverse" in a else ["_l0"]
    weights = []
    for suffix in suffixes:
        w = {n: a[f"{n}{suffix}"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        weights += [w["weight_ih"].T, w["weight_hh"].T, w["bias_ih"] + w["bias_hh"]]  # (in, 4H), (H, 4H), (4H,)
    return weights


def _with_bias(weight: np.ndarray, a: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [weight, a["bias"]] if "bias" in a else [weight]   # Linear(bias=False) ↔ Dense(use_bias=False)


#: Keras layer type → its weights from the PyTorch twin's arrays (named as in that module's ``state_dict``)
CONVERSIONS = {
    "Embedding": lambda a: [a["weight"]],
    "Dense": lambda a: _with_bias(a["weight"].T, a),
    "GRU": _gru, "GRUCell": _gru, "LSTM": _lstm, "LSTMCell": _lstm,
    "LayerNormalization": lambda a: [a["weight"], a["bias"]],                  # γ, β (the same epsilon on both sides)
    "BatchNormalization": lambda a: [a[k] for k in ("weight", "bias", "running_mean", "running_var")],
    "Conv2D": lambda a: _with_bias(a["weight"].transpose(2, 3, 1, 0), a),   # (out, in, kh, kw) → (kh, kw, in, out)
    "Conv1D": lambda a: _with_bias(a["weight"].transpose(2, 1, 0), a),      # (out, in, k) → (k, in, out)
}


def _groups(arrays: dict[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """``{"a.b.w": x, "a.c": y, "d": z}`` → ``{"a": {"b.w": x, "c": y}, "d": {"": z}}``, in the arrays' order."""
    groups: dict[str, dict[str, np.ndarray]] = {}
    for key, value in arrays.items():
        head, _, rest = key.partition(".")
        groups.setdefault(head, {})[rest] = value
    return groups


def _load(arrays: dict[str, np.ndarray], layer: Any, where: str) -> set[int]:
    """Put ``arrays`` into ``layer``'s sub-layers; returns the ids of the Keras variables set."""
    import keras

    done: set[int] = set()
    for name, sub in _groups(arrays).items():
        path = where + name
        if isinstance(layer, list | tuple):               # a ModuleList ↔ a list of layers
            if not name.isdigit() or int(name) >= len(layer):
                raise ValueError(f"{path}: PyTorch has this layer, the Keras list has {len(layer)}")
            target = layer[int(name)]
        else:
            target = getattr(layer, name, None)
        if isinstance(target, list | tuple) or (isinstance(target, keras.layers.Layer) and _course_layer(target)):
            done |= _load(sub, target, path + ".")        # a course layer, or a stack of them: by name
        elif isinstance(target, keras.layers.Layer):      # one of Keras' own layers: by type
            kind = _keras_class(target.forward_layer if isinstance(target, keras.layers.Bidirectional) else target)
            if kind not in CONVERSIONS:
                raise TypeError(f"no conversion for the Keras {type(target).__name__} {path}: add one to parity.py")
            weights = CONVERSIONS[kind](sub)
            expected, got = [tuple(w.shape) for w in target.get_weights()], [tuple(w.shape) for w in weights]
            if expected != got:
                raise ValueError(f"{path}: Keras expects weight shapes {expected}, PyTorch gives {got}")
            target.set_weights([np.asarray(w, dtype=v.dtype) for w, v in zip(weights, target.weights, strict=True)])
            done |= {id(v) for v in target.weights}
        elif isinstance(target, keras.Variable) and target.trainable and "" in sub:   # a parameter of its own
            if tuple(target.shape) != sub[""].shape:
                raise ValueError(f"{path}: Keras expects shape {tuple(target.shape)}, PyTorch gives {sub[''].shape}")
            target.assign(np.asarray(sub[""], dtype=target.dtype))
            done.add(id(target))
        # anything else is a buffer PyTorch keeps and Keras computes (positions, masks, a step count): left out
    return done


def _keras_class(layer: Any) -> str:
    """The name of the Keras class ``layer`` is or extends (the course's 2-D ``Dense`` is Keras' ``Dense``)."""
    return next(c for c in type(layer).__mro__ if c.__module__.startswith("keras")).__name__


def _course_layer(layer: Any) -> bool:
    """A layer of the course's own, matched to PyTorch's by its sub-layers' names; not one of Keras' layers or a
    course class that only changes how one computes (``core.keras.base.Dense``), matched by type."""
    return not type(layer).__module__.startswith("keras") and _keras_class(layer) not in CONVERSIONS


def _names(layer: Any, where: str = "") -> dict[int, str]:
    """The id of each Keras variable under ``layer`` → the PyTorch-style name of the layer holding it
    (``decoder.out``), for messages."""
    import keras

    names: dict[int, str] = {}
    for attr, value in vars(layer).items():
        if attr.startswith("_"):
            continue
        for name, item in [(f"{attr}.{i}", v) for i, v in enumerate(value)] if isinstance(value, list | tuple) \
                else [(attr, value)]:
            if isinstance(item, keras.Variable):
                names.setdefault(id(item), where + name)
            elif isinstance(item, keras.layers.Layer):
                if _course_layer(item):
                    names.update({k: v for k, v in _names(item, f"{where}{name}.").items() if k not in names})
                names.update({id(w): where + name for w in item.weights if id(w) not in names})
    return names


def arrays_to_keras(arrays: dict[str, np.ndarray], keras_model, example_inputs=None) -> None:
    """Load a PyTorch twin's arrays (parameter name → array, as its ``state_dict`` or ``ac.trained.load`` give them)
    into ``keras_model``. ``example_inputs`` (a tuple of arrays) builds an unbuilt Keras model first. Raises
    ``ValueError`` naming a layer whose shapes differ, and the Keras weights no array was found for."""
    if example_inputs is not None and not keras_model.built:
        keras_model(*example_inputs)
    done = _load(dict(arrays), keras_model, "")
    missing = [w for w in keras_model.trainable_weights if id(w) not in done]
    if missing:
        names = _names(keras_model)
        layers = list(dict.fromkeys(names.get(id(w), w.path) for w in missing))
        raise ValueError(f"the arrays hold nothing for {len(missing)} Keras weight(s) of {type(keras_model).__name__}, "
                         f"in {', '.join(layers[:5])}; is it the twin of the model the arrays come from?")


def torch_to_keras(torch_model, keras_model, example_inputs=None) -> None:
    """Load the weights of ``torch_model`` into its Keras twin, matched by sub-layer name (``arrays_to_keras`` of its
    ``state_dict``). ``example_inputs`` (a tuple of arrays) builds an unbuilt Keras model first."""
    arrays = {k: v.detach().cpu().numpy() for k, v in torch_model.state_dict().items()}
    arrays_to_keras(arrays, keras_model, example_inputs)
