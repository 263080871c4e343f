"""Attention layers in PyTorch. Shapes: B batch, T_q queries, T_k keys, d features.

Inputs: tensors or NumPy arrays (float arrays as float32); a mask bool or 0/1 (see ``inputs``)."""

from __future__ import annotations

import math

import torch
from torch import nn

from .. import validate
from . import inputs


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis (the keys) that gives exactly 0 to masked positions.

    scores (B, T_q, T_k); mask (B, T_k) or broadcastable to (B, T_q, T_k), True (or 1) where a key may be
    attended, False (or 0) where it is hidden. A row with every key masked gets all zeros (not NaN).
    """
    scores = inputs.floats(scores, "scores")
    mask = None if mask is None else inputs.tensor(mask, "mask", scores.device)
    validate.softmax_shapes(validate.shape_of(scores), None if mask is None else validate.shape_of(mask))
    if mask is None:
        return torch.softmax(scores, dim=-1)
    mask = inputs.bool_mask(mask)                          # bool, or 0/1 numbers: anything else is an error
    if mask.dim() == 2:                                    # (B, T_k) key mask → (B, 1, T_k)
        mask = mask[:, None, :]
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(filled, dim=-1) * mask            # fully masked rows: uniform × 0 = 0


class DotProductAttention(nn.Module):
    """Dot-product attention: a weighted average of the values, weighted by query·key similarity.

    ``scale=True`` divides the scores by √d (the Transformer's scaled dot product).
    """

    def __init__(self, scale: bool = False):
        super().__init__()
        self.scale = scale

    def forward(self, query, key, value, mask=None, return_weights: bool = False):
        # query (B, T_q, d), key (B, T_k, d), value (B, T_k, d_v), mask (B, T_k) or (B, T_q, T_k)
        query, key, value, mask = inputs.attention(query, key, value, mask)   # floats, bool mask
        scores = query @ key.transpose(1, 2)              # (B, T_q, T_k)
        if self.scale:
            scores = scores / math.sqrt(query.shape[-1])
        weights = masked_softmax(scores, mask)            # (B, T_q, T_k), rows sum to 1
        context = weights @ inputs.hide(value, mask)      # (B, T_q, d_v); hidden rows zeroed (0 × NaN = NaN)
        return (context, weights) if return_weights else context
