"""A small training loop for PyTorch, the twin of ``attention_course.core.keras.train``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn

from attention_course.core import checkpoint as checkpoints
from attention_course.core import parallel, validate
from attention_course.core.torch import parallel as torch_parallel
from attention_course.core.train import History, accuracy_of, run


def device() -> torch.device:
    """The GPU when one is visible, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _tensors(arrays, dev):
    return [torch.as_tensor(np.asarray(a), device=dev) for a in arrays]


def fit(model: nn.Module, inputs, targets, *, epochs: int, batch_size: int = 64, lr: float = 1e-3,
        ignore_index: int | None = None, seed: int = 0, desc: str | None = None, clip_norm: float | None = None,
        validation: tuple | None = None, checkpoint: str | os.PathLike | None = None, label_smoothing: float = 0.0,
        schedule: Callable[[int], float] | None = None) -> History:
    """Train ``model(*inputs)`` with Adam on cross-entropy against integer ``targets``.

    inputs: a tuple of arrays with the examples on axis 0; targets (n,) or (n, T) class ids;
    positions whose target equals ``ignore_index`` (padding) are left out of the loss and accuracy.
    ``clip_norm`` clips the gradients' global norm. ``validation`` = (inputs, targets) adds ``val_loss`` to the
    history and, at the end, puts back the weights of the epoch with the lowest one. ``checkpoint`` (a file)
    is written after every epoch; a run that finds it resumes after the epoch it holds. ``label_smoothing`` moves
    that share of each target's probability onto all classes evenly; ``schedule`` maps the step (1, 2, …) to the
    learning rate, in place of ``lr`` (``attention_course.core.train.warmup_schedule``).
    Returns the per-epoch history (loss, accuracy[, val_loss]).
    """
    epochs, batch_size = validate.sizes(epochs=epochs, batch_size=batch_size)
    trainer = make_trainer(model, inputs, targets, batch_size=batch_size, lr=lr, ignore_index=ignore_index,
                           clip_norm=clip_norm, label_smoothing=label_smoothing, schedule=schedule)
    history = run(trainer, inputs, targets, epochs=epochs, batch_size=batch_size, seed=seed,
                  desc=desc or "pytorch", validation=validation, checkpoint=checkpoint)
    model.eval()
    return history


def make_trainer(model: nn.Module, inputs, targets, *, batch_size: int = 64, lr: float = 1e-3,
                 ignore_index: int | None = None, clip_norm: float | None = None, label_smoothing: float = 0.0,
                 schedule: Callable[[int], float] | None = None) -> _Trainer:
    """``fit``'s side of the training loop for ``model`` on ``inputs`` and ``targets`` (the same settings): Adam on
    cross-entropy; ``.step(xs, y, step)`` trains on one mini-batch (``make bench`` times it)."""
    validate.examples(inputs, targets)                                      # as many examples in each
    validate.positive("lr", lr)
    if clip_norm is not None:
        validate.positive("clip_norm", clip_norm)
    validate.rate("label_smoothing", label_smoothing, "the share of probability spread over all classes")
    return _Trainer(model, targets, lr=lr, ignore_index=ignore_index, clip_norm=clip_norm,
                    label_smoothing=label_smoothing, schedule=schedule, batch_size=batch_size)


class _Trainer:
    """PyTorch's side of the course's training loop (:func:`attention_course.core.train.run`): Adam on
    cross-entropy, with gradient clipping and a learning-rate schedule when asked. In processes started by
    ``torchrun`` (:mod:`attention_course.core.torch.parallel`), each trains on its share of every mini-batch and
    the gradients are summed before the step, which is then the step one process would take on the whole
    mini-batch; only process 0 writes checkpoints."""

    def __init__(self, model: nn.Module, targets, *, lr: float, ignore_index: int | None, clip_norm: float | None,
                 label_smoothing: float, schedule: Callable[[int], float] | None, batch_size: int):
        self.model, self.targets, self.dev = model, targets, device()
        model.to(self.dev).train()
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.loss_fn = nn.CrossEntropyLoss(ignore_index=-100 if ignore_index is None else ignore_index,
                                           label_smoothing=label_smoothing)
        self.ignore_index, self.clip_norm, self.schedule = ignore_index, clip_norm, schedule
        self.batch_size = batch_size
        self.checked = False
        self.processes = torch_parallel.processes()
        if self.processes > 1:
            torch_parallel.same_start(model)                          # process 0's initial weights everywhere
            torch.manual_seed(torch.initial_seed() + parallel.rank())  # but each its own dropout

    def start_epoch(self) -> None:
        self.model.train()

    def step(self, xs, y, step: int) -> tuple[float, int, int]:
        if self.processes > 1:                                       # this process's share of the mini-batch
            share = slice(parallel.rank(), None, self.processes)
            xs, y = [a[share] for a in xs], y[share]
        *xs, y = _tensors([*xs, y], self.dev)
        keep = y != self.ignore_index if self.ignore_index is not None else torch.ones_like(y, dtype=torch.bool)
        kept, hits = int(keep.sum()), 0
        self.optimizer.zero_grad()
        if len(y):
            logits = self.model(*xs)                                 # (b, [T,] classes)
            if not self.checked:                                     # once: do the targets fit the logits?
                validate.targets(self.targets, (len(self.targets), *logits.shape[1:]), self.ignore_index)
                self.checked = True
            loss = self.loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)) if kept else logits.sum() * 0
            if self.processes > 1:              # weighted by this share's targets: the gradients then sum to the mean's
                loss = loss * (kept / max(float(torch_parallel.total(kept)[0]), 1.0))
            loss.backward()
            hits = int(((logits.argmax(-1) == y) & keep).sum())
        else:                                   # nothing to learn from here (a share of a short last mini-batch)
            loss = torch.zeros(())
            if self.processes > 1:
                torch_parallel.total(0)                              # the others are counting their targets
        if self.processes > 1:
            torch_parallel.sum_gradients(self.model)
        if self.schedule is not None:
            for group in self.optimizer.param_groups:
                group["lr"] = self.schedule(step)
        if self.clip_norm is not None:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm)
        self.optimizer.step()
        if self.processes > 1:                  # what the whole mini-batch scored: the same history everywhere
            loss_sum, hits_sum, kept_sum = torch_parallel.total(loss.item(), hits, kept).tolist()
            return loss_sum, int(hits_sum), int(kept_sum)
        return loss.item(), hits, kept

    def weights(self) -> dict:
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def set_weights(self, weights: dict) -> None:
        self.model.load_state_dict(weights)

    def validation_loss(self, inputs, targets) -> float:
        return evaluate_loss(self.model, inputs, targets, ignore_index=self.ignore_index, batch_size=self.batch_size)

    def save(self, path: Path, history: History, best: dict | None, epoch: int) -> None:
        if parallel.is_main():
            _save(path, self.model, self.optimizer, history, best, epoch)
        torch_parallel.barrier()                                     # written before anyone reads it

    def load(self, path: Path) -> tuple[dict, dict | None, int]:
        return _load(path, self.model, self.optimizer, self.dev)


def _numpy(tensors: dict, prefix: str) -> dict[str, np.ndarray]:
    return {f"{prefix}.{k}": v.detach().cpu().numpy() for k, v in tensors.items()}


def _save(path: Path, model: nn.Module, optimizer, history: History, best: dict | None, epoch: int) -> None:
    """The run so far as a course checkpoint (:mod:`attention_course.core.checkpoint`): numbers only, written
    atomically. The optimizer's per-parameter state goes in as arrays, its settings as JSON."""
    opt = optimizer.state_dict()
    arrays = _numpy(model.state_dict(), "model")
    for index, state in opt["state"].items():
        arrays.update(_numpy({k: torch.as_tensor(v) for k, v in state.items()}, f"optimizer.{index}"))
    if best is not None:
        arrays.update(_numpy(best["model"], "best"))
    meta = {"history": history.metrics, "epoch": epoch, "param_groups": opt["param_groups"],
            "optimizer_state": {str(i): sorted(s) for i, s in opt["state"].items()},
            "best": None if best is None else {k: best[k] for k in ("val_loss", "epoch")}}
    checkpoints.save(path, arrays, meta)


def _load(path: Path, model: nn.Module, optimizer, dev) -> tuple[dict, dict | None, int]:
    """Put a course checkpoint's weights and optimizer state back; return (history, best, epochs done)."""
    arrays, meta = checkpoints.load(path)

    def tensors(prefix: str) -> dict:
        return {k: torch.as_tensor(v, device=dev) for k, v in checkpoints.prefixed(arrays, prefix).items()}

    model.load_state_dict(tensors("model"))
    state = {int(i): {k: torch.as_tensor(arrays[f"optimizer.{i}.{k}"]) for k in keys}
             for i, keys in meta["optimizer_state"].items()}
    optimizer.load_state_dict({"state": state, "param_groups": meta["param_groups"]})
    best = None if meta["best"] is None else {**meta["best"], "model": tensors("best")}
    return meta["history"], best, meta["epoch"]


@torch.no_grad()
def evaluate_loss(model: nn.Module, inputs, targets, *, ignore_index: int | None = None,
                  batch_size: int = 256) -> float:
    """Mean cross-entropy per target token of ``model(*inputs)`` (``ignore_index`` left out), in eval mode."""
    n = validate.examples(inputs, targets)
    dev = device()
    model.to(dev).eval()
    loss_fn = nn.CrossEntropyLoss(ignore_index=-100 if ignore_index is None else ignore_index, reduction="sum")
    total, count = 0.0, 0
    for i in range(0, n, batch_size):
        *xs, y = _tensors([a[i:i + batch_size] for a in inputs] + [targets[i:i + batch_size]], dev)
        logits = model(*xs)
        total += float(loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)))
        count += int((y != ignore_index).sum()) if ignore_index is not None else y.numel()
    validate.counted(count, ignore_index, "mean loss")
    return total / count


@torch.no_grad()
def predict(model: nn.Module, inputs, batch_size: int = 512, classes: bool = False) -> np.ndarray:
    """``model(*inputs)`` in evaluation mode, batched, as a NumPy array; with ``classes`` the argmax of its last
    axis, taken batch by batch (a masked LM's logits over a whole validation set would take gigabytes)."""
    n = validate.examples(inputs)
    validate.integer("batch_size", batch_size)
    dev = device()
    model.to(dev).eval()
    outs = []
    for i in range(0, n, batch_size):
        out = model(*_tensors([a[i:i + batch_size] for a in inputs], dev)).cpu().numpy()
        outs.append(out.argmax(-1) if classes else out)
    return np.concatenate(outs)


def accuracy(model: nn.Module, inputs, targets, ignore_index: int | None = None, batch_size: int = 512) -> float:
    """Share of correct argmax predictions, leaving out ``ignore_index`` targets (predicted ``batch_size`` at a
    time: a smaller batch holds less memory)."""
    return accuracy_of(lambda m, x: predict(m, x, batch_size, classes=True), model, inputs, targets, ignore_index)
