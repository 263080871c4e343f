"""Does a classifier's attention explain its prediction? The two probes of Jain & Wallace (2019), on Chapter 9's
fine-tuned ``SentenceClassifier`` in PyTorch; the twin of ``attention_course.keras.explain``.

The attention that feeds the classifier directly is the last layer's, in the row of the [CLS] query: the pooler
reads [CLS]'s final vector and nothing else. ``logits_with_cls_attention`` runs the model with that row replaced
(permuted, say); ``token_gradients`` measures how much the prediction depends on each token's input vector.
Shapes: B sentences, T tokens, h heads, d = d_model.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import validate
from .self_attention import merge_heads, split_heads

__all__ = ["logits_with_cls_attention", "token_gradients"]


@torch.no_grad()
def logits_with_cls_attention(model, ids, mask, attention) -> np.ndarray:
    """The logits (B, classes) of ``model`` (a ``SentenceClassifier`` over a post-LN ``Bert``) when, in the last
    layer, [CLS] attends with ``attention`` (B, h, T) instead of its own weights; the other rows, which the
    classifier does not read, need no change. With the model's own weights it returns the model's logits."""
    model.eval()
    bert, device = model.bert, model.out.weight.device
    ids, mask = torch.as_tensor(np.asarray(ids), device=device), torch.as_tensor(np.asarray(mask), device=device)
    x = bert.embeddings(ids)                                                          # (B, T, d)
    for layer in bert.encoder[:-1]:
        x = layer(x, mask)
    last = bert.encoder[-1]
    heads = last.self_attention.heads
    validate.same_shape("attention", tuple(np.shape(attention)), (x.shape[0], heads, x.shape[1]), "(B, h, T)")
    a = torch.as_tensor(np.asarray(attention), dtype=x.dtype, device=device)
    v = split_heads(last.self_attention.W_v(x), heads)                                # (B, h, T, d_head)
    context = merge_heads(a[:, :, None, :] @ v)                                       # (B, 1, d): [CLS]'s mix
    h = last.norm_1(x[:, :1] + last.self_attention.W_o(context))                      # post-LN, as BERT
    h = last.norm_2(h + last.feed_forward(h))
    return model.out(torch.tanh(model.pooler(h[:, 0]))).cpu().numpy()


def token_gradients(model, ids, mask) -> np.ndarray:
    """(B, T): the norm of the gradient of each sentence's predicted logit with respect to each token's input
    vector (the embeddings' output), the gradient-based importance Jain & Wallace compare attention with."""
    model.eval()
    device = model.out.weight.device
    ids, mask = torch.as_tensor(np.asarray(ids), device=device), torch.as_tensor(np.asarray(mask), device=device)
    x = model.bert.embeddings(ids).detach().requires_grad_(True)                      # (B, T, d)
    h = x
    for layer in model.bert.encoder:
        h = layer(h, mask)
    logits = model.out(torch.tanh(model.pooler(h[:, 0])))                             # (B, classes)
    logits.gather(1, logits.argmax(1, keepdim=True)).sum().backward()
    return x.grad.norm(dim=-1).cpu().numpy()
