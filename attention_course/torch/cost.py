"""What an attention layer costs, in PyTorch: one timed forward pass, and the tensors it writes.

``forward(kind, length, ...)`` builds a layer and its inputs and returns a function that runs one forward pass
and waits for it (``make bench`` and the chapters time it). ``tensor_elements(kind, length, ...)`` counts the
elements of every new tensor that pass writes, and the largest one: a cost that does not depend on how busy
the machine is, so the chapters can assert it. Kinds: ``"global"``, ``"local-m"``, ``"local-p"`` (Chapter 2,
half-width ``window``), ``"dot"``, ``"general"``, ``"additive"`` (Chapter 4's ``ScoredAttention``, d = u =
``dim``), ``"score-additive"``, ``"score-concat"`` (the score layers alone). Same names in ``ac.keras.cost``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from ..bench import build_layer
from .train import device

__all__ = ["forward", "tensor_elements"]


def _build(kind: str, length: int, window: int, dim: int, batch: int, seed: int):
    from attention_course import torch as fw

    layer = build_layer(kind, fw, window=window, dim=dim).to(device())
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, length, dim, generator=gen).to(device()) for _ in range(3))
    return layer, ((q, k) if kind.startswith("score-") else (q, k, v))


def forward(kind: str, length: int, *, window: int = 8, dim: int = 32, batch: int = 1,
            seed: int = 0) -> Callable[[], None]:
    """A function that runs one forward pass of ``kind`` on (batch, length, dim) inputs and waits for it."""
    layer, inputs = _build(kind, length, window, dim, batch, seed)
    sync = torch.cuda.synchronize if device().type == "cuda" else (lambda: None)

    def run() -> None:
        with torch.no_grad():
            layer(*inputs)
        sync()

    return run


class _CountWrites(TorchDispatchMode):
    """Counts the elements of every tensor an operation creates (views of existing tensors are free)."""

    def __init__(self):
        super().__init__()
        self.elements, self.largest = 0, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        seen = {t.untyped_storage().data_ptr() for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in seen:
                self.elements += t.numel()
                self.largest = max(self.largest, t.numel())
        return out


def tensor_elements(kind: str, length: int, *, window: int = 8, dim: int = 32, batch: int = 1,
                    seed: int = 0) -> dict[str, int]:
    """``{"elements": …, "largest": …}``: the elements written by one forward pass of ``kind`` (all new
    tensors together) and the size of its largest tensor. Counts, not times: the same on every machine."""
    layer, inputs = _build(kind, length, window, dim, batch, seed)
    with torch.no_grad(), _CountWrites() as counter:
        layer(*inputs)
    return {"elements": counter.elements, "largest": counter.largest}
