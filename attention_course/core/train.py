"""Framework-neutral training helpers: progress bars, mini-batches and a history for plots."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

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


def accuracy_of(predict: Callable, model, inputs, targets, ignore_index: int | None = None) -> float:
    """Share of correct argmax predictions of ``predict(model, inputs)`` (either framework's ``predict``),
    leaving out ``ignore_index`` targets: what ``ac.torch.accuracy`` and ``ac.keras.accuracy`` return."""
    validate.examples(inputs, targets)
    return token_accuracy(predict(model, inputs).argmax(-1), np.asarray(targets), pad=ignore_index)


def warmup_schedule(d_model: int, warmup: int, factor: float = 1.0) -> Callable[[int], float]:
    """The Transformer's learning rate (Vaswani et al., eq. 3): ``factor · d_model^-0.5 · min(step^-0.5,
    step · warmup^-1.5)``, rising linearly for ``warmup`` steps, then falling as 1/√step. Steps count from 1."""
    d_model, warmup = validate.sizes(d_model=d_model, warmup=warmup)
    validate.positive("factor", factor)

    def rate(step: int) -> float:
        step = max(int(step), 1)
        return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)

    return rate
