"""Chapter 11's computations in plain NumPy, the references the framework layers are tested against.

Shapes: B batch, N input positions, T output steps, e and d the encoder's and decoder's widths, u the pointer's.
"""

from __future__ import annotations

import numpy as np

__all__ = ["pointer_log_probs", "convolutional_scores"]


def pointer_log_probs(encoded, decoded, W_1, W_2, v, mask=None) -> np.ndarray:
    """Vinyals et al.'s pointer (2015, eq. 3): u_tj = vᵀ tanh(W_1 e_j + W_2 d_t) for every input position j and
    output step t, then a softmax over the positions, which *is* the output: log p(output t = position j).

    encoded (B, N, e), decoded (B, T, d), W_1 (e, u), W_2 (d, u), v (u,), mask (B, N) True at real positions
    → (B, T, N); a hidden position gets −inf."""
    scores = np.tanh((encoded @ W_1)[:, None] + (decoded @ W_2)[:, :, None]) @ v          # (B, T, N)
    if mask is not None:
        scores = np.where(np.asarray(mask, bool)[:, None], scores, -np.inf)
    top = scores.max(-1, keepdims=True)
    return scores - top - np.log(np.exp(scores - top).sum(-1, keepdims=True))


def convolutional_scores(query, keys, kernel, bias, W_q, v, mask=None) -> np.ndarray:
    """Allamanis et al.'s convolutional attention (2016), in the additive form: each key's features come from a
    convolution over it and its neighbours, e_j = vᵀ tanh(Σ_o K_o k_{j+o} + b + W_q q) for the offsets o of a
    window of ``width`` keys centred on j (zeros beyond the ends), so a score can say "the key after this one".

    query (B, d_q), keys (B, N, d_k), kernel (width, d_k, u) (odd width), bias (u,), W_q (d_q, u), v (u,),
    mask (B, N) → scores (B, N); a hidden position gets −inf. A width of 1 is Bahdanau's additive score."""
    width = kernel.shape[0]
    half = width // 2
    padded = np.pad(keys, ((0, 0), (half, half), (0, 0)))
    features = sum(padded[:, o:o + keys.shape[1]] @ kernel[o] for o in range(width)) + bias        # (B, N, u)
    scores = np.tanh(features + (query @ W_q)[:, None]) @ v
    return scores if mask is None else np.where(np.asarray(mask, bool), scores, -np.inf)
