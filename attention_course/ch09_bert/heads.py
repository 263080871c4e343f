"""Chapter 9 on a pretrained BERT: the attention maps of every layer and head, and Clark et al.'s statistics of what
each head attends to. Importing this module loads no framework."""

from __future__ import annotations

import string
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from attention_course.core.backend import backend, to_numpy

__all__ = ["SENTENCES", "Encoded", "encode", "forward", "attention_maps", "head_statistics", "STATISTICS"]


#: The seeds' sentences: the Analytics Vidhya guide's chasing example, the NLP-lab slides' "Thinking Machines", and
#: the classic coreference sentence of the Transformer's blog posts.
SENTENCES = ["The FBI is chasing a criminal on the run.",
             "Thinking machines learn to pay attention.",
             "The animal didn't cross the street because it was too tired."]

#: What ``head_statistics`` measures per head (Clark et al. 2019, sections 3 and 4).
STATISTICS = ["[CLS]", "[SEP]", "punctuation", "previous token", "next token", "entropy"]


@dataclass
class Encoded:
    """Sentences as WordPiece ids, padded: ids and mask (N, T), and each sentence's tokens (no padding)."""

    ids: np.ndarray
    mask: np.ndarray
    tokens: list[list[str]]


def encode(tokenizer, sentences: list[str], max_len: int = 128) -> Encoded:
    """[CLS] sentence [SEP] for each sentence (``tokenizers``' BERT tokenizer), cut at ``max_len`` tokens."""
    tokenizer.no_padding()                       # MiniLM's tokenizer.json pads every sentence to 128 tokens
    tokenizer.enable_truncation(max_len)
    encoded = tokenizer.encode_batch(list(sentences))
    width = max(len(e.ids) for e in encoded)
    ids = np.zeros((len(encoded), width), np.int64)
    mask = np.zeros((len(encoded), width), bool)
    for i, e in enumerate(encoded):
        ids[i, :len(e.ids)], mask[i, :len(e.ids)] = e.ids, True
    return Encoded(ids, mask, [list(e.tokens) for e in encoded])


def forward(fw: ModuleType, model, ids, mask) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``model`` (a ``Bert``) on ids and mask (N, T): the hidden states [embeddings, layer 1, …] (N, T, d) and the
    attention of each layer (N, h, T, T), as NumPy arrays, without gradients."""
    _, extra = run_inference(fw, model, ids, mask, return_weights=True)
    return [to_numpy(h) for h in extra["hidden"]], [to_numpy(a) for a in extra["attention"]]


def run_inference(fw: ModuleType, model, *args, **kwargs):
    """``model(*args, **kwargs)`` for inference: PyTorch's in eval mode without gradients; Keras' as it is."""
    with backend(fw).inference(model):
        return model(*args, **kwargs)


def attention_maps(fw: ModuleType, model, data: Encoded, batch_size: int = 8) -> list[np.ndarray]:
    """Each sentence's attention, (layers, heads, T_i, T_i) with T_i its real tokens, from ``model`` (a ``Bert``),
    ``batch_size`` sentences at a time (MiniLM in Keras: about 200 MB more at the peak with 32 than with 8)."""
    out: list[np.ndarray] = []
    for start in range(0, len(data.ids), batch_size):
        ids, mask = data.ids[start:start + batch_size], data.mask[start:start + batch_size]
        width = int(mask.sum(1).max())
        _, attention = forward(fw, model, ids[:, :width], mask[:, :width])
        layers = np.stack(attention, axis=1)                                             # (b, L, h, T, T)
        for row, n in zip(layers, mask[:, :width].sum(1), strict=True):
            out.append(row[:, :, :n, :n].copy())                                        # not a view: frees the batch
    return out


def _is_punctuation(token: str) -> bool:
    return len(token) > 0 and all(c in string.punctuation for c in token)


def head_statistics(attention: list[np.ndarray], tokens: list[list[str]]):
    """Per layer and head, averaged over every token of every sentence (as queries): the share of its attention on
    [CLS], on [SEP], on punctuation, on the previous token and on the next one, and the entropy of its attention
    (nats; ln T for uniform attention over T tokens). A DataFrame: layer, head (from 1), statistic, value."""
    import pandas as pd

    if len(attention) != len(tokens):
        raise ValueError(f"got {len(attention)} attention arrays for {len(tokens)} token lists")
    sums: dict[str, np.ndarray] = {}
    count = 0
    for a, toks in zip(attention, tokens, strict=True):
        a = np.asarray(a, dtype=np.float64)                                         # (L, h, T, T)
        if a.shape[-1] != len(toks):
            raise ValueError(f"attention over {a.shape[-1]} keys for {len(toks)} tokens")
        kinds = {"[CLS]": [t == "[CLS]" for t in toks], "[SEP]": [t == "[SEP]" for t in toks],
                 "punctuation": [_is_punctuation(t) for t in toks]}
        shares = {name: a[..., np.array(keys)].sum(-1).sum(-1) for name, keys in kinds.items()}   # (L, h)
        t = len(toks)
        shares["previous token"] = np.diagonal(a, offset=-1, axis1=2, axis2=3).sum(-1)
        shares["next token"] = np.diagonal(a, offset=1, axis1=2, axis2=3).sum(-1)
        shares["entropy"] = -(a * np.log(np.where(a > 0, a, 1.0))).sum(-1).sum(-1)
        for name, value in shares.items():
            sums[name] = sums.get(name, 0) + value
        count += t
    layers, heads = next(iter(sums.values())).shape
    rows = [{"layer": layer + 1, "head": head + 1, "statistic": name, "value": float(sums[name][layer, head] / count)}
            for name in STATISTICS for layer in range(layers) for head in range(heads)]
    return pd.DataFrame(rows)
