"""Chapter 11's computations in plain NumPy, the references the framework layers are tested against.

Shapes: B batch, N input positions, T output steps, e and d the encoder's and decoder's widths, u the pointer's;
K sources of S positions each.
"""

from __future__ import annotations

import numpy as np

__all__ = ["pointer_log_probs", "convolutional_scores", "context_attention", "hierarchical_pooling", "multi_source",
           "pointer_generator", "monotonic_alignment", "hard_monotonic"]


def pointer_log_probs(encoded, decoded, W_1, W_2, v, mask=None) -> np.ndarray:
    """Vinyals et al.'s pointer (2015, eq. 3): u_tj = vᵀ tanh(W_1 e_j + W_2 d_t) for every input position j and
    output step t, then a softmax over the positions, which *is* the output: log p(output t = position j).

    encoded (B, N, e), decoded (B, T, d), W_1 (e, u), W_2 (d, u), v (u,), mask (B, N) True at real positions
    → (B, T, N); a hidden position gets −inf (probability 0), and a list with no real position −inf everywhere."""
    scores = np.tanh((encoded @ W_1)[:, None] + (decoded @ W_2)[:, :, None]) @ v          # (B, T, N)
    if mask is None:
        mask = np.ones(scores.shape[::2], bool)
    visible = np.broadcast_to(np.asarray(mask, bool)[:, None], scores.shape)
    top = np.where(visible, scores, -np.inf).max(-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)                                               # no real position
    total = np.where(visible, np.exp(scores - top), 0.0).sum(-1, keepdims=True)
    with np.errstate(divide="ignore"):
        return np.where(visible, scores - top - np.log(total), -np.inf)


def convolutional_scores(query, keys, kernel, bias, W_q, v, mask=None) -> np.ndarray:
    """Allamanis et al.'s convolutional attention (2016), in the additive form: each key's features come from a
    convolution over it and its neighbours, e_j = vᵀ tanh(Σ_o K_o k_{j+o} + b + W_q q) for the offsets o of a
    window of ``width`` keys centred on j (zeros beyond the ends), so a score can say "the key after this one".

    query (B, d_q), keys (B, N, d_k), kernel (width, d_k, u) (odd width), bias (u,), W_q (d_q, u), v (u,),
    mask (B, N) → scores (B, N); a hidden position gets −inf, and is read as zeros by its neighbours' windows (as
    beyond the ends: a right-padded sequence scores as the same sequence unpadded). A width of 1 is Bahdanau's
    additive score."""
    width = kernel.shape[0]
    half = width // 2
    if mask is not None:
        keys = np.where(np.asarray(mask, bool)[..., None], keys, 0.0)                        # pads: zeros
    padded = np.pad(keys, ((0, 0), (half, half), (0, 0)))
    features = sum(padded[:, o:o + keys.shape[1]] @ kernel[o] for o in range(width)) + bias        # (B, N, u)
    scores = np.tanh(features + (query @ W_q)[:, None]) @ v
    return scores if mask is None else np.where(np.asarray(mask, bool), scores, -np.inf)


def context_attention(states, mask, W, b, c) -> tuple[np.ndarray, np.ndarray]:
    """Yang et al.'s attention pooling (2016): u_t = tanh(Wᵀ h_t + b), weights a = softmax over the real steps of
    u_t · c (c the learned context vector), pooled = Σ_t a_t h_t.

    states (B, T, H), mask (B, T) True at real steps, W (H, u), b (u,), c (u,) → pooled (B, H), weights (B, T);
    a hidden step gets weight 0, and a row with no real step pools to zeros."""
    states, mask = np.asarray(states, float), np.asarray(mask, bool)
    scores = np.where(mask, np.tanh(states @ W + b) @ c, -np.inf)                         # (B, T)
    top = np.where(mask.any(-1, keepdims=True), scores.max(-1, keepdims=True), 0.0)
    e = np.where(mask, np.exp(scores - top), 0.0)
    total = e.sum(-1, keepdims=True)
    weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return np.einsum("bt,bth->bh", weights, states), weights


def hierarchical_pooling(states, mask, W_w, b_w, c_w, W_s, b_s, c_s) -> tuple[np.ndarray, np.ndarray]:
    """The two levels of a hierarchical attention network (Yang et al., 2016), without the sentence encoder between
    them: ``context_attention`` pools each sentence's words into a sentence vector (W_w, b_w, c_w), then the
    document's sentences into one vector (W_s, b_s, c_s); a sentence with no real word takes no part.

    states (B, S, T, H) the words' states, sentence by sentence, mask (B, S, T) → document (B, H) and the sentences'
    weights (B, S)."""
    states, mask = np.asarray(states, float), np.asarray(mask, bool)
    b, s, t, h = states.shape
    sentences, _ = context_attention(states.reshape(b * s, t, h), mask.reshape(b * s, t), W_w, b_w, c_w)
    return context_attention(sentences.reshape(b, s, h), mask.any(-1), W_s, b_s, c_s)


def multi_source(query, keys, mask, W_c, b_c, additive=None) -> tuple[np.ndarray, np.ndarray]:
    """Zoph and Knight's multi-source attention (2016): for each source k its own softmax over its own positions,
    c^k_t = Σ_j a^k_tj k^k_j, then h̃_t = tanh([q_t; c¹_t; …; cᴷ_t] W_c + b_c). The scores are dot products
    q_t · k^k_j, or with ``additive`` (one (W_a, U_a, v_a) per source) Bahdanau's v_aᵀ tanh(W_aᵀ q_t + U_aᵀ k^k_j).

    query (B, T, d_q), keys (B, K, S, d_k), mask (B, K, S) True at real positions (None: all), W_c
    (d_q + K·d_k, d_q), b_c (d_q,) → h̃ (B, T, d_q) and the weights (B, K, T, S)."""
    query, keys = np.asarray(query, float), np.asarray(keys, float)
    mask = np.ones(keys.shape[:3], bool) if mask is None else np.asarray(mask, bool)
    contexts, weights = [], []
    for k in range(keys.shape[1]):
        if additive is None:
            scores = query @ keys[:, k].transpose(0, 2, 1)                                     # (B, T, S)
        else:
            W_a, U_a, v_a = additive[k]
            scores = np.tanh((query @ W_a)[:, :, None] + (keys[:, k] @ U_a)[:, None]) @ v_a
        scores = np.where(mask[:, k, None], scores, -np.inf)
        top = scores.max(-1, keepdims=True)
        a = np.exp(scores - top)
        a /= a.sum(-1, keepdims=True)                                                        # per source
        weights.append(a)
        contexts.append(a @ keys[:, k])                                                      # (B, T, d_k)
    return np.tanh(np.concatenate([query, *contexts], -1) @ W_c + b_c), np.stack(weights, 1)


def pointer_generator(logits, weights, src_ext, p_gen, extra: int) -> np.ndarray:
    """See et al.'s final distribution (2017, eq. 9) over the extended vocabulary (the V target words, then
    ``extra`` ids for source words the vocabulary lacks): P(w) = p_gen P_vocab(w) + (1 − p_gen) Σ_{j: w_j = w} a_tj.

    logits (B, T, V), weights (B, T, S) the attention over the source, src_ext (B, S) the source words' extended ids,
    p_gen (B, T) → P (B, T, V + extra)."""
    logits, weights, p_gen = (np.asarray(a, float) for a in (logits, weights, p_gen))
    vocab = np.exp(logits - logits.max(-1, keepdims=True))
    vocab /= vocab.sum(-1, keepdims=True)
    b, t, v = logits.shape
    mixed = np.concatenate([vocab, np.zeros((b, t, extra))], -1) * p_gen[..., None]
    for i in range(b):
        for j, word in enumerate(np.asarray(src_ext)[i]):
            mixed[i, :, word] += (1 - p_gen[i]) * weights[i, :, j]                 # a word twice adds both weights
    return mixed


def monotonic_alignment(p) -> np.ndarray:
    """Raffel et al.'s expected monotonic alignment (2017, eq. 13), written as the recurrence over the keys:
    β_ij = (1 − p_i,j−1) β_i,j−1 + α_i−1,j and α_ij = p_ij β_ij, from α_0 = (1, 0, …, 0): the probability that step i
    stops at key j, having started where step i − 1 stopped and passed every key in between (β_ij, the probability
    that the scan reaches key j, is the paper's q_ij).

    p (B, T, S) the stopping probabilities → α (B, T, S); a row sums to at most 1 (the rest: the scan ran off the
    end)."""
    p = np.asarray(p, float)
    b, t, s = p.shape
    previous = np.zeros((b, s))
    previous[:, 0] = 1.0
    alpha = np.zeros((b, t, s))
    for i in range(t):
        q = np.zeros(b)
        for j in range(s):
            q = (1 - p[:, i, j - 1]) * q + previous[:, j] if j else previous[:, 0]
            alpha[:, i, j] = p[:, i, j] * q
        previous = alpha[:, i]
    return alpha


def hard_monotonic(p) -> np.ndarray:
    """The test-time scan: step i starts at the key where step i − 1 stopped and stops at the first key j with
    p_ij ≥ 0.5; it attends to that key alone, or to none once the scan has run off the end (and so do the steps
    after it). p (B, T, S) → one-hot (or all-zero) rows (B, T, S)."""
    p = np.asarray(p, float)
    b, t, s = p.shape
    alpha = np.zeros((b, t, s))
    for n in range(b):
        start = 0
        for i in range(t):
            stops = [j for j in range(start, s) if p[n, i, j] >= 0.5]
            if stops:
                alpha[n, i, stops[0]], start = 1.0, stops[0]
            else:
                start = s
    return alpha
