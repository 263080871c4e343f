"""What an attention layer costs, in Keras: one timed forward pass, and the tensors it writes.

The twin of ``ac.bench.torch_cost`` (same functions and kinds; see there). The Keras layers run as compiled graphs
(``tf.function``), as in training; ``tensor_elements`` reads the graph: the elements of every operation's
output, without the operations that only relabel a tensor (reshape, expand_dims, identity, …).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf

from attention_course.bench import build_layer

__all__ = ["forward", "tensor_elements", "attention_pass", "decode_step", "MHA_KINDS", "FLASH_KINDS", "DECODE_KINDS"]

#: What ``attention_pass`` can run (see ``ac.bench.torch_cost``).
MHA_KINDS = ("explicit", "fused", "course", "framework")
FLASH_KINDS = ("explicit", "fused", "tiled")
#: What ``decode_step`` can run: softmax attention over a cache, linear attention's recurrent step.
DECODE_KINDS = ("softmax", "linear")
FLASH_BLOCK = 128

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


def _attention_case(kind: str, length: int, batch: int, heads: int, d_head: int, seed: int):
    """The function of ``kind`` and its inputs: (B, h, T, d_head) for the explicit path, (B, T, h, d_head) for
    Keras' fused op, (B, T, h·d_head) for the layers."""
    from keras import ops

    from attention_course import keras as fw

    if kind not in (*MHA_KINDS, *FLASH_KINDS):
        raise ValueError(f"unknown attention kind {kind!r}; choose one of {(*MHA_KINDS, 'tiled')}")
    rng = np.random.default_rng(seed)
    if kind in FLASH_KINDS:
        shape = (batch, length, heads, d_head) if kind == "fused" else (batch, heads, length, d_head)
        qkv = [tf.convert_to_tensor(rng.normal(size=shape).astype(np.float32)) for _ in range(3)]
        if kind == "fused":
            return (lambda q, k, v: ops.dot_product_attention(q, k, v)), qkv, []
        if kind == "tiled":
            return (lambda q, k, v: fw.flash_attention(q, k, v, block=FLASH_BLOCK)), qkv, []
        return (lambda q, k, v: fw.scaled_dot_product_attention(q, k, v, return_weights=True)[0]), qkv, []
    x = tf.convert_to_tensor(rng.normal(size=(batch, length, heads * d_head)).astype(np.float32))
    import keras

    keras.utils.set_random_seed(seed)
    ours = fw.MultiHeadAttention(heads * d_head, heads)
    ours(x[:, :1])
    if kind == "course":
        return ours, [x], ours.trainable_variables
    theirs = fw.as_framework_layer(ours)
    return (lambda x: theirs(x, x)), [x], theirs.trainable_variables


def attention_pass(kind: str, length: int, *, batch: int = 8, heads: int = 8, d_head: int = 64,
                   backward: bool = False, seed: int = 0) -> Callable[[], None]:
    """A function that runs one forward (and with ``backward``, one backward) pass of ``kind`` (``MHA_KINDS`` or
    ``FLASH_KINDS``) at sequence length ``length`` as a compiled graph, and waits for it."""
    fn, inputs, variables = _attention_case(kind, length, batch, heads, d_head, seed)

    def forward_backward(*xs):
        with tf.GradientTape() as tape:
            tape.watch(xs)
            total = tf.reduce_sum(fn(*xs))
        return tape.gradient(total, [*xs, *variables])

    graph = tf.function(forward_backward if backward else fn, autograph=False)
    graph(*inputs)                                                    # trace once, outside the timing

    def run() -> None:
        tf.nest.map_structure(lambda t: t.numpy(), graph(*inputs))    # .numpy() waits for the result

    return run


def decode_step(kind: str, length: int, *, batch: int = 1, heads: int = 8, d_head: int = 64,
                seed: int = 0) -> Callable[[], None]:
    """A function that runs one decoding step of ``kind`` (``DECODE_KINDS``) after ``length`` tokens, as a compiled
    graph, and waits: ``"softmax"`` attends over the ``length`` cached keys and values (the weights formed),
    ``"linear"`` updates linear attention's fixed-size state and reads it."""
    from attention_course import keras as fw

    if kind not in DECODE_KINDS:
        raise ValueError(f"unknown decoding kind {kind!r}; choose one of {DECODE_KINDS}")
    rng = np.random.default_rng(seed)
    q, k, v = (tf.convert_to_tensor(rng.normal(size=(batch, heads, d_head)).astype(np.float32)) for _ in range(3))
    if kind == "softmax":                  # the cache holds a key and a value per earlier token and head
        keys, values = (tf.convert_to_tensor(rng.normal(size=(batch, heads, length, d_head)).astype(np.float32))
                        for _ in range(2))
        def step():
            return fw.scaled_dot_product_attention(q[:, :, None], keys, values, return_weights=True)[0]

        graph = tf.function(step, autograph=False)
    else:                                  # the state holds d_head × d_head numbers per head, whatever the length
        state = tf.convert_to_tensor((rng.random((batch, heads, d_head, d_head)) * length).astype(np.float32))
        norm = tf.convert_to_tensor((rng.random((batch, heads, d_head)) * length).astype(np.float32))
        graph = tf.function(lambda: fw.linear_attention_step(state, norm, q, k, v)[0], autograph=False)
    graph()                                                           # trace once, outside the timing

    def run() -> None:
        graph().numpy()                                               # .numpy() waits for the result

    return run
