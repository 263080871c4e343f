"""Framework-neutral training: the loop every ``fit`` runs (epochs of shuffled mini-batches, validation, keeping the
best weights, resuming from a checkpoint, progress), mini-batches, progress bars and a history for plots.

A framework takes part through a :class:`Trainer`: one training step on a mini-batch, its weights, the validation
loss and its checkpoints. ``attention_course.core.torch.train`` and ``core.keras.train`` each write one; the loop
itself, :func:`run`, is written once."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

from attention_course.core import validate
from attention_course.core.metrics import token_accuracy


class History:
    """Per-epoch metrics: ``history.log(loss=…, accuracy=…)``; ``history["loss"]`` is a list."""

    def __init__(self) -> None:
        self.metrics: dict[str, list[float]] = {}
        self.best_epoch: int | None = None       # set by ``fit(validation=...)``: the epoch whose weights it kept

    def log(self, **values: float) -> None:
        for key, value in values.items():
            self.metrics.setdefault(key, []).append(float(value))

    def __getitem__(self, key: str) -> list[float]:
        return self.metrics[key]

    def __len__(self) -> int:
        return max((len(v) for v in self.metrics.values()), default=0)

    def last(self, key: str) -> float:
        return self.metrics[key][-1]

    def __repr__(self) -> str:
        last = ", ".join(f"{k}={v[-1]:.4f}" for k, v in self.metrics.items() if v)
        return f"History({len(self)} epochs: {last})"


def batches(n: int, batch_size: int, rng: np.random.Generator | None = None) -> Iterator[np.ndarray]:
    """Index arrays of mini-batches over ``n`` examples, shuffled when ``rng`` is given."""
    order = rng.permutation(n) if rng is not None else np.arange(n)
    for start in range(0, n, batch_size):
        yield order[start:start + batch_size]


def progress(total: int, desc: str):
    """A tqdm progress bar (a widget in Jupyter, text elsewhere); ``COURSE_PROGRESS=0`` hides it."""
    from tqdm.auto import tqdm

    disable = os.environ.get("COURSE_PROGRESS", "1") == "0"
    return tqdm(total=total, desc=desc, disable=disable, leave=True, mininterval=0.5)


def accuracy_of(classes: Callable, model, inputs, targets, ignore_index: int | None = None) -> float:
    """Share of correct predicted classes ``classes(model, inputs)`` (either framework's ``predict`` with
    ``classes=True``), leaving out ``ignore_index`` targets: what ``ac.torch.accuracy`` and ``ac.keras.accuracy``
    return."""
    validate.examples(inputs, targets)
    return token_accuracy(classes(model, inputs), np.asarray(targets), pad=ignore_index)


def warmup_schedule(d_model: int, warmup: int, factor: float = 1.0) -> Callable[[int], float]:
    """The Transformer's learning rate (Vaswani et al., eq. 3): ``factor · d_model^-0.5 · min(step^-0.5,
    step · warmup^-1.5)``, rising linearly for ``warmup`` steps, then falling as 1/√step. Steps count from 1."""
    d_model, warmup = validate.sizes(d_model=d_model, warmup=warmup)
    validate.positive("factor", factor)

    def rate(step: int) -> float:
        step = max(int(step), 1)
        return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)

    return rate


class Step(Protocol):
    """What every training run needs from a framework: put the model in training mode, train on a mini-batch."""

    def start_epoch(self) -> None:
        """Put the model in training mode."""

    def step(self, xs: list[np.ndarray], y: np.ndarray, step: int) -> tuple[float, int, int]:
        """Train on one mini-batch (``step`` counts from 1): its mean loss (per example, or per counted target
        with ``run(average="target")``), correct predictions, counted targets."""


class Trainer(Step, Protocol):
    """A framework's side of :func:`run` with validation and checkpoints (``fit``'s)."""

    def weights(self) -> Any:
        """A copy of the model's weights."""

    def set_weights(self, weights: Any) -> None: ...

    def validation_loss(self, inputs, targets) -> float: ...

    def save(self, path: Path, history: History, best: dict | None, epoch: int) -> None:
        """The run so far (weights, optimizer, history, best weights) as a course checkpoint."""

    def load(self, path: Path) -> tuple[dict, dict | None, int]:
        """Put a checkpoint back; return (history metrics, best, epochs done)."""


class Shuffled:
    """An epoch is every example once, in mini-batches of ``batch_size``, in an order drawn from the run's
    generator (``fit``'s and the captioners' epochs)."""

    def __init__(self, n: int, batch_size: int):
        self.n, self.batch_size = n, batch_size

    def count(self, epoch: int) -> int:
        return (self.n + self.batch_size - 1) // self.batch_size

    def __call__(self, rng: np.random.Generator, epoch: int) -> Iterator[np.ndarray]:
        return batches(self.n, self.batch_size, rng)


class Drawn:
    """``steps`` mini-batches of ``batch_size`` examples drawn with replacement, ``every`` to an epoch (the last
    epoch may be shorter): training by steps with an evaluation every ``every`` steps (Chapter 2's pointers)."""

    def __init__(self, n: int, batch_size: int, steps: int, every: int):
        self.n, self.batch_size, self.steps, self.every = n, batch_size, steps, every
        self.epochs = -(-steps // every)

    def count(self, epoch: int) -> int:
        return min(self.every, self.steps - epoch * self.every)

    def __call__(self, rng: np.random.Generator, epoch: int) -> Iterator[np.ndarray]:
        return (rng.integers(0, self.n, size=self.batch_size) for _ in range(self.count(epoch)))


def run(trainer: Step, inputs, targets, *, epochs: int, batch_size: int, seed: int, desc: str,
        validation: tuple | None = None, checkpoint: str | os.PathLike | None = None, context=None,
        rng: np.random.Generator | None = None, draw: Shuffled | Drawn | None = None, average: str = "example",
        after_epoch: Callable[[int], None] | None = None) -> History:
    """The training loop of every model in the course: ``epochs`` passes over ``inputs``/``targets`` in
    mini-batches shuffled by ``seed``; after each epoch the validation loss (when ``validation`` = (inputs,
    targets) is given, the weights of the best epoch are put back at the end) and a checkpoint (a run that finds
    ``checkpoint`` resumes after the epoch it holds, with the same shuffles as an unbroken run); both need a full
    :class:`Trainer`. ``context``: a context manager around the loop.
    ``rng``: the generator the batches are drawn from, when the trainer draws its noise from it too (one stream
    for both, as the frameworks share it); ``draw``: how an epoch's mini-batches are chosen (:class:`Shuffled`,
    the default, or :class:`Drawn`); ``average``: the history's loss per ``"example"`` or per counted
    ``"target"`` (a caption's words); ``after_epoch(epochs_done)`` runs after each epoch (an evaluation)."""
    n = len(targets)
    draw = draw or Shuffled(n, batch_size)
    history, best, done = History(), None, 0
    full = cast(Trainer, trainer)                                            # validation and checkpoints need it
    if checkpoint is not None and Path(checkpoint).exists():                 # resume an interrupted run
        history.metrics, best, done = full.load(Path(checkpoint))
    rng = np.random.default_rng(seed) if rng is None else rng
    for epoch in range(done):                                                # the same shuffles as an unbroken run
        for _ in draw(rng, epoch):
            pass
    steps = sum(draw.count(epoch) for epoch in range(done, epochs))
    step = sum(draw.count(epoch) for epoch in range(done))
    with context or nullcontext(), progress(total=steps, desc=desc) as bar:
        for epoch in range(done, epochs):
            trainer.start_epoch()
            total, weight, correct, count = 0.0, 0, 0, 0
            for idx in draw(rng, epoch):
                step += 1
                loss, hits, kept = trainer.step([a[idx] for a in inputs], targets[idx], step)
                share = len(idx) if average == "example" else kept
                total += loss * share
                weight += share
                correct += hits
                count += kept
                bar.update(1)
            history.log(loss=total / weight, accuracy=correct / max(count, 1))
            if validation is not None:
                val_loss = full.validation_loss(*validation)
                history.log(val_loss=val_loss)
                if best is None or val_loss < best["val_loss"]:
                    best = {"val_loss": val_loss, "epoch": epoch + 1, "model": full.weights()}
            bar.set_postfix(loss=f"{total / weight:.3f}", acc=f"{correct / max(count, 1):.3f}")
            if checkpoint is not None:
                full.save(Path(checkpoint), history, best, epoch + 1)
            if after_epoch is not None:
                after_epoch(epoch + 1)
    if best is not None:
        full.set_weights(best["model"])                                  # the epoch with the lowest validation loss
        history.best_epoch = best["epoch"]
    return history
