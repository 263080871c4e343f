"""The course's one training loop (``attention_course.core.train.run``), driven by a framework-free trainer: how it
draws batches, shares its generator, averages the loss, evaluates and resumes."""

from __future__ import annotations

import numpy as np
import pytest

from attention_course.core.train import Drawn, Shuffled, run


class Recorder:
    """A trainer that learns nothing: it records the batches it is given and draws one number from ``rng`` after
    each (as the pointer and captioning trainers draw their noise), and reports a loss of the batch's first id."""

    def __init__(self, rng=None):
        self.rng, self.seen, self.draws, self.epochs = rng, [], [], 0

    def start_epoch(self) -> None:
        self.epochs += 1

    def step(self, xs, y, step):
        self.seen.append(np.asarray(xs[0]).copy())
        if self.rng is not None:
            self.draws.append(self.rng.random())
        kept = int((y > 0).sum())
        return float(xs[0][0]), kept // 2, kept


def data(n=10):
    return (np.arange(n),), np.arange(n) % 3


def test_an_epoch_is_every_example_once_in_a_seeded_order():
    inputs, targets = data(10)
    trainer = Recorder()
    run(trainer, inputs, targets, epochs=2, batch_size=4, seed=1, desc="t")
    assert [len(b) for b in trainer.seen] == [4, 4, 2, 4, 4, 2] and trainer.epochs == 2
    for epoch in (trainer.seen[:3], trainer.seen[3:]):
        assert sorted(np.concatenate(epoch)) == list(range(10))
    again = Recorder()
    run(again, inputs, targets, epochs=2, batch_size=4, seed=1, desc="t")
    assert all((a == b).all() for a, b in zip(trainer.seen, again.seen, strict=True))


def test_drawn_batches_come_every_few_steps_with_an_evaluation_after_each_group():
    inputs, targets = data(10)
    draw, evaluated = Drawn(10, batch_size=3, steps=7, every=3), []
    assert draw.epochs == 3 and [draw.count(e) for e in range(3)] == [3, 3, 1]
    trainer = Recorder()
    run(trainer, inputs, targets, epochs=draw.epochs, batch_size=3, seed=0, draw=draw, desc="t",
        after_epoch=evaluated.append)
    assert len(trainer.seen) == 7 and all(len(b) == 3 for b in trainer.seen) and evaluated == [1, 2, 3]
    replay = np.random.default_rng(0)                          # with replacement, from the seeded generator
    assert all((b == replay.integers(0, 10, size=3)).all() for b in trainer.seen)


def test_a_shared_generator_interleaves_batches_and_the_trainers_draws():
    """One stream: the batch order then the trainer's number, batch after batch (what makes both frameworks draw
    the same noise)."""
    inputs, targets = data(12)
    rng = np.random.default_rng(5)
    trainer = Recorder(rng)
    run(trainer, inputs, targets, epochs=1, batch_size=12, seed=5, rng=rng, draw=Drawn(12, 4, 2, 2), desc="t")
    replay = np.random.default_rng(5)
    first = replay.integers(0, 12, size=4)
    one = replay.random()
    second = replay.integers(0, 12, size=4)
    assert (trainer.seen[0] == first).all() and trainer.draws[0] == one and (trainer.seen[1] == second).all()


@pytest.mark.parametrize("average", ["example", "target"])
def test_the_history_averages_the_loss_per_example_or_per_counted_target(average):
    inputs, targets = (np.array([5.0, 5.0, 1.0]),), np.array([[1, 1, 1, 1], [1, 1, 1, 1], [1, 0, 0, 0]])
    trainer = Recorder()
    history = run(trainer, inputs, targets, epochs=1, batch_size=1, seed=0, average=average, desc="t")
    want = (5 + 5 + 1) / 3 if average == "example" else (5 * 4 + 5 * 4 + 1 * 1) / 9
    assert history["loss"] == [pytest.approx(want)]
    assert history["accuracy"] == [pytest.approx((2 + 2 + 0) / 9)]


def test_shuffled_counts_the_last_short_batch():
    assert Shuffled(10, 4).count(0) == 3 and Shuffled(8, 4).count(5) == 2
