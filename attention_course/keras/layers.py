"""Attention layers in Keras 3. Shapes: B batch, T_q queries, T_k keys, d features.

Inputs: tensors or NumPy arrays (float arrays as float32); a mask bool or 0/1 (see ``inputs``)."""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import ops

from .. import validate
from . import inputs
from .base import Layer


def masked_softmax(scores, mask=None):
    """Softmax over the last axis (the keys) that gives exactly 0 to masked positions.

    scores (B, T_q, T_k); mask (B, T_k) or broadcastable to (B, T_q, T_k), True (or 1) where a key may be
    attended, False (or 0) where it is hidden. A row with every key masked gets all zeros (not NaN).
    """
    scores = inputs.floats(scores, "scores")
    mask = None if mask is None else inputs.tensor(mask, "mask")
    validate.softmax_shapes(validate.shape_of(scores), None if mask is None else validate.shape_of(mask))
    if mask is None:
        return ops.softmax(scores, axis=-1)
    mask = inputs.bool_mask(mask)                          # bool, or 0/1 numbers: anything else is an error
    if len(mask.shape) == 2:                               # (B, T_k) key mask → (B, 1, T_k)
        mask = ops.expand_dims(mask, 1)
    lowest = float(np.finfo(keras.backend.standardize_dtype(scores.dtype)).min)
    filled = ops.where(mask, scores, ops.full_like(scores, lowest))
    return ops.softmax(filled, axis=-1) * ops.cast(mask, scores.dtype)  # fully masked rows → 0


class DotProductAttention(Layer):
    """Dot-product attention: a weighted average of the values, weighted by query·key similarity.

    ``scale=True`` divides the scores by √d (the Transformer's scaled dot product).
    """

    def __init__(self, scale: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, query, key, value, mask=None, return_weights: bool = False):
        # query (B, T_q, d), key (B, T_k, d), value (B, T_k, d_v), mask (B, T_k) or (B, T_q, T_k)
        query, key, value, mask = inputs.attention(query, key, value, mask)   # floats, bool mask
        scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))   # (B, T_q, T_k)
        if self.scale:
            scores = scores / math.sqrt(query.shape[-1])
        weights = masked_softmax(scores, mask)                      # (B, T_q, T_k), rows sum to 1
        context = ops.matmul(weights, inputs.hide(value, mask))     # (B, T_q, d_v); hidden rows zeroed
        return (context, weights) if return_weights else context

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}
