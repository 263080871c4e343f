"""What an attention layer costs, in PyTorch: one timed forward pass, and the tensors it writes.

``forward(kind, length, ...)`` builds a layer and its inputs and returns a function that runs one forward pass
and waits for it (``make bench`` and the chapters time it). ``tensor_elements(kind, length, ...)`` counts the
elements of every new tensor that pass writes, and the largest one: a cost that does not depend on how busy
the machine is, so the chapters can assert it. Kinds: ``"global"``, ``"local-m"``, ``"local-p"`` (Chapter 2,
half-width ``window``), ``"dot"``, ``"general"``, ``"additive"`` (Chapter 4's ``ScoredAttention``, d = u =
``dim``), ``"score-additive"``, ``"score-concat"`` (the score layers alone). Same names in ``ac.bench.keras_cost``.

``attention_pass(kind, length, ...)`` does the same for Chapter 7's multi-head attention at the Transformer's
sizes: ``"explicit"`` (softmax(QKᵀ/√d)V written out, the weights stored), ``"fused"`` (the framework's fused
kernel), ``"course"`` (the course's ``MultiHeadAttention``, weights not requested) and ``"framework"`` (the
framework's own multi-head layer with the same weights), forward or forward and backward; and ``FLASH_KINDS``,
Chapter 10's comparison: ``"explicit"``, ``"fused"`` and ``"tiled"`` (the course's ``flash_attention``, blocks of
128 keys).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from attention_course.bench import build_layer
from attention_course.core.torch.train import device

__all__ = ["forward", "tensor_elements", "attention_pass", "decode_step", "matmul_tflops", "MHA_KINDS", "FLASH_KINDS",
           "DECODE_KINDS"]

#: What ``attention_pass`` can run: Chapter 7's comparison, and Chapter 10's.
MHA_KINDS = ("explicit", "fused", "course", "framework")
FLASH_KINDS = ("explicit", "fused", "tiled")
FLASH_BLOCK = 128
#: What ``decode_step`` can run: softmax attention over a cache, linear attention's recurrent step.
DECODE_KINDS = ("softmax", "linear")


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


def _attention_case(kind: str, length: int, batch: int, heads: int, d_head: int, seed: int):
    """The function of ``kind`` and its inputs: (B, h, T, d_head) for the bare kernels, (B, T, h·d_head) for the
    layers."""
    import torch.nn.functional as F

    from attention_course import torch as fw

    if kind not in (*MHA_KINDS, *FLASH_KINDS):
        raise ValueError(f"unknown attention kind {kind!r}; choose one of {(*MHA_KINDS, 'tiled')}")
    gen = torch.Generator().manual_seed(seed)
    if kind in FLASH_KINDS:
        qkv = [torch.randn(batch, heads, length, d_head, generator=gen).to(device()) for _ in range(3)]
        if kind == "fused":
            return F.scaled_dot_product_attention, qkv
        if kind == "tiled":
            return (lambda q, k, v: fw.flash_attention(q, k, v, block=FLASH_BLOCK)), qkv
        return (lambda q, k, v: fw.scaled_dot_product_attention(q, k, v, return_weights=True)[0]), qkv
    x = torch.randn(batch, length, heads * d_head, generator=gen).to(device())
    torch.manual_seed(seed)
    ours = fw.MultiHeadAttention(heads * d_head, heads).to(device())
    if kind == "course":
        return ours, [x]
    theirs = fw.as_framework_layer(ours)
    return (lambda x: theirs(x, x, x, need_weights=False)[0]), [x]


def attention_pass(kind: str, length: int, *, batch: int = 8, heads: int = 8, d_head: int = 64,
                   backward: bool = False, seed: int = 0) -> Callable[[], None]:
    """A function that runs one forward (and with ``backward``, one backward) pass of ``kind`` (``MHA_KINDS`` or
    ``FLASH_KINDS``) at sequence length ``length`` and waits for it."""
    fn, inputs = _attention_case(kind, length, batch, heads, d_head, seed)
    sync = torch.cuda.synchronize if device().type == "cuda" else (lambda: None)
    if backward:
        for x in inputs:
            x.requires_grad_(True)

    def run() -> None:
        if backward:
            fn(*inputs).sum().backward()
            for x in inputs:
                x.grad = None
        else:
            with torch.no_grad():
                fn(*inputs)
        sync()

    return run


def decode_step(kind: str, length: int, *, batch: int = 1, heads: int = 8, d_head: int = 64,
                seed: int = 0) -> Callable[[], None]:
    """A function that runs one decoding step of ``kind`` (``DECODE_KINDS``) after ``length`` tokens and waits."""
    from attention_course import torch as fw

    if kind not in DECODE_KINDS:
        raise ValueError(f"unknown decoding kind {kind!r}; choose one of {DECODE_KINDS}")
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, d_head, generator=gen).to(device()) for _ in range(3))
    sync = torch.cuda.synchronize if device().type == "cuda" else (lambda: None)
    if kind == "softmax":                  # the cache holds a key and a value per earlier token and head
        keys, values = (torch.randn(batch, heads, length, d_head, generator=gen).to(device()) for _ in range(2))
        step = lambda: fw.scaled_dot_product_attention(q[:, :, None], keys, values, return_weights=True)
    else:                                  # the state holds d_head × d_head numbers per head, whatever the length
        state = torch.rand(batch, heads, d_head, d_head, generator=gen).to(device()) * length
        norm = torch.rand(batch, heads, d_head, generator=gen).to(device()) * length
        step = lambda: fw.linear_attention_step(state, norm, q, k, v)

    def run() -> None:
        with torch.no_grad():
            step()
        sync()

    return run


def matmul_tflops(n: int = 8192, repeats: int = 10) -> float:
    """TFLOP/s of an n × n × n float32 matrix product on ``device()``, the median of ``repeats`` after two warm-up
    products: the reference against which the benchmark reads its attention's TFLOP/s (what this device reaches
    in float32 on the operation it does best)."""
    from attention_course import bench

    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(n, n, generator=gen).to(device()) for _ in range(2))
    sync = torch.cuda.synchronize if device().type == "cuda" else (lambda: None)

    def run() -> None:
        a @ b
        sync()

    seconds = sorted(bench.time_interleaved({"matmul": run}, repeats=repeats)["matmul"])[repeats // 2]
    return 2 * n ** 3 / seconds / 1e12
