"""Code that runs either framework's models: their outputs as NumPy arrays, and inference without autograd.

Neither function imports a framework unless it is handed one of its objects.
"""

from __future__ import annotations

import contextlib

import numpy as np


def to_numpy(x) -> np.ndarray:
    """A model's output as a NumPy array: a PyTorch tensor is detached and brought to the CPU first."""
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def no_grad(model) -> contextlib.AbstractContextManager:
    """``torch.no_grad()`` for a PyTorch model (less memory, no graph); nothing for a Keras model."""
    if hasattr(model, "zero_grad"):   # torch.nn.Module
        import torch

        return torch.no_grad()
    return contextlib.nullcontext()
