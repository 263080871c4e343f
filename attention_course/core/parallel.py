"""Data-parallel training, the part both frameworks share: which process this is.

PyTorch runs one process per device, started by ``torchrun`` (its environment gives each its ``RANK`` among
``WORLD_SIZE``); Keras runs one process over several devices (``tf.distribute.MirroredStrategy``), so it is always
process 0 of 1. Every process trains on its share of each mini-batch; only the first writes files."""

from __future__ import annotations

import os


def rank() -> int:
    """This process's number among those ``torchrun`` started (0 without it)."""
    return int(os.environ.get("RANK", "0"))


def processes() -> int:
    """How many processes ``torchrun`` started (1 without it)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main() -> bool:
    """Whether this process writes results, checkpoints and weights (process 0: they are written once)."""
    return rank() == 0
