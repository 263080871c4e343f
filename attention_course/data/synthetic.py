"""Seeded synthetic tasks, generated rather than downloaded.

Token ids follow :mod:`attention_course.text`: 0 pad, 1 unk, 2 bos, 3 eos, then the symbols from
``FIRST_SYMBOL`` on. Every generator takes a ``seed`` and returns NumPy arrays (framework-neutral).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..text import BOS, EOS, PAD, UNK  # noqa: F401  (synthetic.PAD … are part of its API)

FIRST_SYMBOL = 4

__all__ = [
    "SequenceTask", "sequence_task", "one_to_one_task", "one_to_many_task", "many_to_one_task",
    "many_to_many_task", "FIRST_SYMBOL", "shifted_copy_task",
]


@dataclass(frozen=True)
class SequenceTask:
    """A seq2seq data set.

    ``src`` (n, S) source ids, left-padded so the last column is the last real token;
    ``src_mask`` (n, S) True on real tokens; ``tgt_in`` (n, T) = bos + target, right-padded;
    ``tgt_out`` (n, T) = target + eos, right-padded; ``lengths`` (n,) source lengths.
    """

    kind: str
    src: np.ndarray
    src_mask: np.ndarray
    tgt_in: np.ndarray
    tgt_out: np.ndarray
    lengths: np.ndarray
    n_symbols: int

    @property
    def vocab_size(self) -> int:
        return FIRST_SYMBOL + self.n_symbols

    def __len__(self) -> int:
        return len(self.src)

    def subset(self, index) -> SequenceTask:
        """The examples at ``index`` (a slice, a boolean mask or integer indices)."""
        return SequenceTask(self.kind, self.src[index], self.src_mask[index], self.tgt_in[index],
                            self.tgt_out[index], self.lengths[index], self.n_symbols)

    def target_tokens(self, i: int) -> list[int]:
        """The target of example ``i`` without specials."""
        return [int(t) for t in self.tgt_out[i] if t >= FIRST_SYMBOL]


def sequence_task(n: int, *, kind: str = "reverse", min_len: int = 3, max_len: int = 20,
                  n_symbols: int = 10, seed: int = 0) -> SequenceTask:
    """``n`` random symbol strings of length ``min_len..max_len`` (uniform) and their copy or reversal."""
    if kind not in ("copy", "reverse"):
        raise ConfigError(f"unknown sequence task {kind!r}: use 'copy' or 'reverse'")
    if not 1 <= min_len <= max_len:
        raise ConfigError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_len, max_len + 1, size=n)
    src = np.full((n, max_len), PAD, dtype=np.int64)
    tgt_in = np.full((n, max_len + 1), PAD, dtype=np.int64)
    tgt_out = np.full((n, max_len + 1), PAD, dtype=np.int64)
    for i, length in enumerate(lengths):
        seq = rng.integers(FIRST_SYMBOL, FIRST_SYMBOL + n_symbols, size=length)
        target = seq[::-1] if kind == "reverse" else seq
        src[i, max_len - length:] = seq          # left padding: the encoder ends on a real token
        tgt_in[i, 0] = BOS
        tgt_in[i, 1:length + 1] = target
        tgt_out[i, :length] = target
        tgt_out[i, length] = EOS
    return SequenceTask(kind, src, src != PAD, tgt_in, tgt_out, lengths, n_symbols)


def one_to_one_task(n: int, *, n_symbols: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One input, one output: a symbol ``x`` (n,) and its label ``(x * 3 + 1) mod n_symbols`` (n,)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_symbols, size=n)
    return x.astype(np.int64), ((x * 3 + 1) % n_symbols).astype(np.int64)


def one_to_many_task(n: int, *, steps: int = 8, n_symbols: int = 10, seed: int = 0):
    """One input, a sequence out: a start symbol ``x`` (n,) and the count-up ``x, x+2, x+4, …`` (mod
    ``n_symbols``) as token ids: ``tgt_in`` (n, steps) starts with bos, ``tgt_out`` (n, steps)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_symbols, size=n)
    seq = (x[:, None] + 2 * np.arange(steps)[None, :]) % n_symbols + FIRST_SYMBOL
    tgt_in = np.concatenate([np.full((n, 1), BOS), seq[:, :-1]], axis=1)
    return x.astype(np.int64), tgt_in.astype(np.int64), seq.astype(np.int64)


def many_to_one_task(n: int, *, length: int = 12, n_symbols: int = 10, seed: int = 0):
    """A sequence in, one label out: ids (n, length) and the largest symbol in each sequence (n,), 0-based."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_symbols, size=(n, length))
    return (x + FIRST_SYMBOL).astype(np.int64), x.max(axis=1).astype(np.int64)


def many_to_many_task(n: int, *, length: int = 12, n_symbols: int = 10, seed: int = 0):
    """Sequence labeling: ids (n, length) and, at every step, the running maximum so far (n, length)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_symbols, size=(n, length))
    return (x + FIRST_SYMBOL).astype(np.int64), np.maximum.accumulate(x, axis=1).astype(np.int64)


def shifted_copy_task(n: int, *, length: int = 32, shift: int = 3, n_symbols: int = 10, seed: int = 0):
    """A pointer task: a source of ``length`` random symbols; output step t must emit the source symbol at
    position t + ``shift``, for t = 0 … length - shift - 1 (so every output depends on ONE source position).

    Returns ids (n, length) (symbols from ``FIRST_SYMBOL`` on) and labels (n, length - shift), 0-based.
    """
    if not 0 <= shift < length:
        raise ConfigError(f"need 0 <= shift < length, got shift={shift}, length={length}")
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_symbols, size=(n, length))
    return (x + FIRST_SYMBOL).astype(np.int64), x[:, shift:].astype(np.int64)
