"""A small training loop for PyTorch, the twin of ``attention_course.keras.train``."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .. import validate
from ..train import History, accuracy_of, batches, progress


def device() -> torch.device:
    """The GPU when one is visible, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _tensors(arrays, dev):
    return [torch.as_tensor(np.asarray(a), device=dev) for a in arrays]


def fit(model: nn.Module, inputs, targets, *, epochs: int, batch_size: int = 64, lr: float = 1e-3,
        ignore_index: int | None = None, seed: int = 0, desc: str | None = None) -> History:
    """Train ``model(*inputs)`` with Adam on cross-entropy against integer ``targets``.

    inputs: a tuple of arrays with the examples on axis 0; targets (n,) or (n, T) class ids;
    positions whose target equals ``ignore_index`` (padding) are left out of the loss and accuracy.
    Returns the per-epoch history (loss, accuracy).
    """
    n = validate.examples(inputs, targets)                                  # as many examples in each
    epochs, batch_size = validate.sizes(epochs=epochs, batch_size=batch_size)
    validate.positive("lr", lr)
    dev = device()
    model.to(dev).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss(ignore_index=-100 if ignore_index is None else ignore_index)
    history = History()
    rng = np.random.default_rng(seed)
    checked = False
    steps = epochs * ((n + batch_size - 1) // batch_size)
    with progress(total=steps, desc=desc or "pytorch") as bar:
        for _ in range(epochs):
            total, correct, count = 0.0, 0, 0
            for idx in batches(n, batch_size, rng):
                *xs, y = _tensors([a[idx] for a in inputs] + [targets[idx]], dev)
                logits = model(*xs)                                  # (b, [T,] classes)
                if not checked:                                      # once: do the targets fit the logits?
                    validate.targets(targets, (n, *logits.shape[1:]), ignore_index)
                    checked = True
                loss = loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                keep = y != ignore_index if ignore_index is not None else torch.ones_like(y, dtype=torch.bool)
                correct += int(((logits.argmax(-1) == y) & keep).sum())
                count += int(keep.sum())
                total += loss.item() * len(idx)
                bar.update(1)
            history.log(loss=total / n, accuracy=correct / max(count, 1))
            bar.set_postfix(loss=f"{total / n:.3f}", acc=f"{correct / max(count, 1):.3f}")
    model.eval()
    return history


@torch.no_grad()
def predict(model: nn.Module, inputs, batch_size: int = 512) -> np.ndarray:
    """``model(*inputs)`` in evaluation mode, batched, as a NumPy array."""
    n = validate.examples(inputs)
    validate.integer("batch_size", batch_size)
    dev = device()
    model.to(dev).eval()
    outs = [model(*_tensors([a[i:i + batch_size] for a in inputs], dev)).cpu().numpy()
            for i in range(0, n, batch_size)]
    return np.concatenate(outs)


def accuracy(model: nn.Module, inputs, targets, ignore_index: int | None = None) -> float:
    """Share of correct argmax predictions, leaving out ``ignore_index`` targets."""
    return accuracy_of(predict, model, inputs, targets, ignore_index)
