"""What an attention layer costs, in Keras: one timed forward pass, and the tensors it writes.

The twin of ``ac.torch.cost`` (same functions and kinds; see there). The Keras layers run as compiled graphs
(``tf.function``), as in training; ``tensor_elements`` reads the graph: the elements of every operation's
output, without the operations that only relabel a tensor (reshape, expand_dims, identity, …).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf

from ..bench import build_layer

__all__ = ["forward", "tensor_elements"]

_RELABEL = {"Reshape", "ExpandDims", "Squeeze", "Identity", "Placeholder", "Const", "Shape", "NoOp",
            "ReadVariableOp", "VarHandleOp"}


def _build(kind: str, length: int, window: int, dim: int, batch: int, seed: int):
    from attention_course import keras as fw

    layer = build_layer(kind, fw, window=window, dim=dim)
    rng = np.random.default_rng(seed)
    q, k, v = (tf.convert_to_tensor(rng.normal(size=(batch, length, dim)).astype(np.float32)) for _ in range(3))
    inputs = (q, k) if kind.startswith("score-") else (q, k, v)
    return tf.function(lambda *x: layer(*x), autograph=False), inputs


def forward(kind: str, length: int, *, window: int = 8, dim: int = 32, batch: int = 1,
            seed: int = 0) -> Callable[[], None]:
    """A function that runs one forward pass of ``kind`` on (batch, length, dim) inputs and waits for it."""
    graph, inputs = _build(kind, length, window, dim, batch, seed)
    graph(*inputs)                                                    # trace once, outside the timing

    def run() -> None:
        graph(*inputs).numpy()                                        # .numpy() waits for the result

    return run


def tensor_elements(kind: str, length: int, *, window: int = 8, dim: int = 32, batch: int = 1,
                    seed: int = 0) -> dict[str, int]:
    """``{"elements": …, "largest": …}``: the elements written by one forward pass of ``kind`` (every
    operation's outputs in the compiled graph) and the size of its largest tensor."""
    graph, inputs = _build(kind, length, window, dim, batch, seed)
    ops = graph.get_concrete_function(*inputs).graph.get_operations()
    sizes = [out.shape.num_elements() or 0 for op in ops if op.type not in _RELABEL for out in op.outputs]
    return {"elements": int(sum(sizes)), "largest": int(max(sizes, default=0))}
