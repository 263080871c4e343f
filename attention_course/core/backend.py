"""The one seam between the course's framework-neutral code and the two frameworks.

``backend(x)`` takes a framework's name (``"pytorch"``, ``"keras"``), the course's module of it (``ac.torch``,
``ac.keras``, a chapter's ``torch.py``), or one of its models or tensors, and returns that framework's
:class:`Backend`: its name, seeding, outputs as NumPy, inference without autograd, parameter counts and CPU
threads. Code that must do one thing in PyTorch and another in Keras asks the backend; nothing else in the course
tells the frameworks apart. No framework is imported until a backend method needs it.
"""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from attention_course.core.errors import ConfigError

NAMES = ("pytorch", "keras")


def to_numpy(x) -> np.ndarray:
    """A model's output as a NumPy array: a PyTorch tensor is detached and brought to the CPU first."""
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def _numpy_outputs(out):
    """A model's output, or each of a tuple of them (``None`` kept), as NumPy arrays."""
    if isinstance(out, tuple):
        return tuple(None if o is None else to_numpy(o) for o in out)
    return to_numpy(out)


@dataclass(frozen=True)
class Backend:
    """One framework's side of the seam; ``name`` is ``"pytorch"`` or ``"keras"``."""

    name: str

    @property
    def is_torch(self) -> bool:
        return self.name == "pytorch"

    def seed(self, seed: int) -> None:
        """Seed the framework's generators (and Python's and NumPy's, which Keras seeds with its own)."""
        if self.is_torch:
            import torch

            torch.manual_seed(seed)
        else:
            import keras

            keras.utils.set_random_seed(seed)

    def to_numpy(self, x) -> np.ndarray:
        return to_numpy(x)

    def as_input(self, x, model=None) -> Any:
        """A NumPy array as the framework takes it (a tensor for PyTorch, on ``model``'s device when given; Keras
        takes the array)."""
        if self.is_torch:
            import torch

            weights = next(iter(model.parameters()), None) if model is not None else None
            return torch.as_tensor(x, device=None if weights is None else weights.device)
        return x

    def inference(self, model=None) -> contextlib.AbstractContextManager:
        """Evaluation mode without autograd: ``model.eval()`` and ``torch.no_grad()`` in PyTorch; nothing in Keras,
        whose layers take ``training=`` and record no graph outside a training step."""
        if not self.is_torch:
            return contextlib.nullcontext()
        import torch

        if model is not None:
            model.eval()
        return torch.no_grad()

    def parameters(self, model) -> int:
        """How many numbers the model learns."""
        if self.is_torch:
            return sum(p.numel() for p in model.parameters() if p.requires_grad)
        return int(sum(np.prod(w.shape) for w in model.trainable_weights))

    def module(self, package: str) -> ModuleType:
        """The framework's module of a chapter: ``backend("keras").module(chapter_package)`` is its ``keras.py``."""
        return importlib.import_module(f"{package}.{'torch' if self.is_torch else 'keras'}")

    def fit(self, model, *args, **kwargs):
        """The framework's training loop (:mod:`attention_course.core.torch.train` or ``core.keras.train``)."""
        return self.train_module().fit(model, *args, **kwargs)

    def predict(self, model, *args, **kwargs) -> np.ndarray:
        return self.train_module().predict(model, *args, **kwargs)

    def train_module(self) -> ModuleType:
        """The framework's training loop: :mod:`attention_course.core.torch.train` or ``core.keras.train``."""
        return importlib.import_module(f"attention_course.core.{'torch' if self.is_torch else 'keras'}.train")

    def run(self, model, *args, **kwargs):
        """``model(*args, **kwargs)`` in evaluation mode, the outputs as NumPy (a tuple stays a tuple)."""
        with self.inference(model):
            out = model(*[self.as_input(a, model) for a in args], **kwargs)
        return _numpy_outputs(out)

    def runner(self, model, **kwargs):
        """``run`` as one function of the arrays, for a loop that calls the model many times (greedy decoding):
        ``runner(model, **kwargs)(*arrays)`` is ``run(model, *arrays, **kwargs)``. In Keras the call is compiled
        (``tf.function``) and traced once for any batch size and sequence length (``_any_length``), so each call
        runs one graph instead of stepping through the model's layers in Python; a model that needs those lengths
        fixed is traced again only while they keep changing. A model keeps its runners: asked again with the same
        ``kwargs`` (the next test set, a chart), it reuses the graphs it traced."""
        if self.is_torch:
            return lambda *args: self.run(model, *args, **kwargs)
        import tensorflow as tf

        runners = model.__dict__.setdefault("_course_runners", {})    # kept out of Keras' tracking of attributes
        key = tuple(sorted(kwargs.items()))
        if key in runners:
            return runners[key]
        call = tf.function(lambda *xs: model(*xs, training=False, **kwargs), reduce_retracing=True)

        def run(*args):
            tensors = [tf.convert_to_tensor(a) for a in args]
            if not call.experimental_get_tracing_count():
                with contextlib.suppress(Exception):   # a model that needs fixed lengths: traced as it is called
                    call.get_concrete_function(*[_any_length(tf, t) for t in tensors])
            return _numpy_outputs(call(*tensors))

        run.compiled = call                              # its traces: run.compiled.experimental_get_tracing_count()
        runners[key] = run
        return run

    def version(self) -> dict[str, str]:
        """The framework's packages and their versions."""
        if self.is_torch:
            import torch

            return {"torch": torch.__version__}
        import keras
        import tensorflow as tf

        return {"keras": keras.__version__, "tensorflow": tf.__version__}

    def threads(self, n: int) -> None:
        """Run on ``n`` CPU threads."""
        if self.is_torch:
            import torch

            torch.set_num_threads(n)
        else:
            import tensorflow as tf

            tf.config.threading.set_intra_op_parallelism_threads(n)
            tf.config.threading.set_inter_op_parallelism_threads(n)


def _any_length(tf, tensor):
    """A ``tf.TensorSpec`` of ``tensor`` with its batch axis and its sequence axis unknown: the last axis of ids and
    masks (B, …, T), the one before the features of floating-point inputs (B, T, F)."""
    shape = list(tensor.shape)
    if shape:
        shape[0] = None
    if len(shape) >= 2 and not tensor.dtype.is_floating:
        shape[-1] = None
    elif len(shape) >= 3:
        shape[-2] = None
    return tf.TensorSpec(shape, tensor.dtype)


def backend(x) -> Backend:
    """The :class:`Backend` of ``x``: a framework's name, the course's module of it, or a model or tensor of it."""
    if isinstance(x, Backend):
        return x
    if isinstance(x, str):
        if x not in NAMES:
            raise ConfigError(f"unknown framework {x!r}; choose one of: {', '.join(NAMES)}")
        return Backend(x)
    if isinstance(x, ModuleType):
        last = x.__name__.rsplit(".", 1)[-1]
        if last in ("torch", "keras") and x.__name__.startswith("attention_course."):
            return Backend("pytorch" if last == "torch" else "keras")
        raise ConfigError(f"{x.__name__} is not one of the course's framework modules (ac.torch, ac.keras)")
    roots = _roots(x)                                    # the course's classes derive from the frameworks' own
    if "torch" in roots:
        return Backend("pytorch")
    if roots & {"keras", "tensorflow"}:
        return Backend("keras")
    raise ConfigError(f"cannot tell the framework of a {type(x).__module__}.{type(x).__name__}")


def _roots(x) -> set[str]:
    return {cls.__module__.split(".")[0] for cls in type(x).__mro__}


def no_grad(model) -> contextlib.AbstractContextManager:
    """``torch.no_grad()`` for a PyTorch model (less memory, no graph); nothing for any other model."""
    return Backend("pytorch").inference() if "torch" in _roots(model) else contextlib.nullcontext()
