"""Tokens to ids and back: a tiny tokenizer, a vocabulary and batch padding (numpy only).

Special tokens have fixed ids in every :class:`Vocab`::

    PAD = 0  "<pad>"   padding, ignored by masks and losses
    UNK = 1  "<unk>"   any token not in the vocabulary
    BOS = 2  "<bos>"   beginning of sequence (decoder input)
    EOS = 3  "<eos>"   end of sequence

Typical use::

    vocab = Vocab.build(tokenize(s) for s in sentences)
    ids, lengths = pad_batch([vocab.encode(tokenize(s), add_eos=True) for s in batch])
    # ids: (batch, max_len) int64, lengths: (batch,) int64
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from attention_course.core.errors import ConfigError, InputError, OutOfVocabularyError

__all__ = [
    "BOS",
    "EOS",
    "PAD",
    "SPECIALS",
    "UNK",
    "Padded",
    "Vocab",
    "pad_batch",
    "tokenize",
]

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIALS: tuple[str, ...] = ("<pad>", "<unk>", "<bos>", "<eos>")

# a word (letters/digits/underscore, with inner apostrophes as in "don't") or one punctuation mark
_TOKEN_RE = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Lowercase ``text`` and split it into words and single punctuation marks.

    >>> tokenize("Don't panic, Arthur!")
    ["don't", 'panic', ',', 'arthur', '!']
    """
    if not isinstance(text, str):
        raise InputError(f"tokenize expects a string; got {type(text).__name__} {text!r:.60}")
    return _TOKEN_RE.findall(text.lower())


def _as_ints(ids: Any, what: str = "ids") -> list[int]:
    """A flat list of ints from a list, a 1-D numpy array or a 1-D tensor; anything else is an InputError."""
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if ids is None or isinstance(ids, str | bytes) or not hasattr(ids, "__iter__"):
        raise InputError(f"{what} must be a sequence of integer ids; got {type(ids).__name__} {ids!r:.60}")
    out = []
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int | np.integer | float) or int(i) != i:
            raise InputError(f"{what} must hold integer ids; found {i!r:.60} ({type(i).__name__})")
        out.append(int(i))
    return out


def _as_tokens(tokens: Any, what: str) -> list[str]:
    """A list of string tokens; anything else is an InputError naming ``what``."""
    if tokens is None or isinstance(tokens, str) or not hasattr(tokens, "__iter__"):
        hint = " (use tokenize(text) to split a string)" if isinstance(tokens, str) else ""
        raise InputError(f"{what} must be a list of string tokens{hint}; got {type(tokens).__name__} "
                         f"{tokens!r:.60}")
    tokens = list(tokens)
    for t in tokens:
        if not isinstance(t, str):
            raise InputError(f"{what} must hold strings; found {t!r:.60} ({type(t).__name__})")
    return tokens


class Vocab:
    """A mapping between tokens and integer ids; ids 0-3 are always ``<pad> <unk> <bos> <eos>``.

    ``vocab["cat"]`` gives the id of ``"cat"`` (``UNK`` if unknown), ``vocab.lookup(5)`` the token of id 5,
    ``len(vocab)`` the number of ids (the size of an embedding table).
    """

    def __init__(self, tokens: Iterable[str] = ()) -> None:
        """Build from ``tokens`` in id order, after the four specials (repeats and specials are skipped)."""
        self._itos: list[str] = list(SPECIALS)
        self._stoi: dict[str, int] = {t: i for i, t in enumerate(SPECIALS)}
        for tok in _as_tokens(tokens, "Vocab(tokens)"):
            if tok not in self._stoi:
                self._stoi[tok] = len(self._itos)
                self._itos.append(tok)

    @classmethod
    def build(
        cls, token_lists: Iterable[Iterable[str]], min_freq: int = 1, max_size: int | None = None
    ) -> Vocab:
        """Count tokens in ``token_lists`` (e.g. tokenized sentences) and keep the frequent ones.

        Args:
            token_lists: an iterable of token sequences.
            min_freq: keep tokens seen at least this often.
            max_size: at most this many ids *in total*, the 4 specials included (``None``: no limit).

        The order is deterministic: by decreasing frequency, ties broken alphabetically.
        """
        if min_freq < 1:
            raise ConfigError(f"min_freq must be >= 1, got {min_freq}")
        if max_size is not None and max_size < len(SPECIALS):
            raise ConfigError(f"max_size must be >= {len(SPECIALS)} (the special tokens), got {max_size}")
        counts: Counter[str] = Counter()
        for tokens in token_lists:
            if isinstance(tokens, str):
                raise ConfigError(
                    "Vocab.build expects token lists (e.g. [tokenize(s) for s in texts]), not strings"
                )
            counts.update(_as_tokens(tokens, "each token list of Vocab.build"))
        for special in SPECIALS:
            counts.pop(special, None)
        ordered = sorted((t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t))
        if max_size is not None:
            ordered = ordered[: max_size - len(SPECIALS)]
        return cls(ordered)

    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, token: object) -> bool:
        return token in self._stoi

    def __getitem__(self, token: str) -> int:
        """The id of ``token``, ``UNK`` if it is not in the vocabulary. Only a token (a string) indexes it: an id
        is refused (no token is the number 5, so ``vocab[5]`` would be ``UNK``); its token is ``lookup(id)``."""
        if not isinstance(token, str):
            whole = isinstance(token, int | np.integer) and not isinstance(token, bool)
            hint = f"; the token of id {token} is vocab.lookup({token})" if whole else ""
            shown = str(token) if isinstance(token, int | float | np.number) else repr(token)
            raise InputError(f"vocab[...] takes a token (a string) and gives its id; got {type(token).__name__} "
                             f"{shown:.60}{hint}")
        return self._stoi.get(token, UNK)

    def lookup(self, index: int) -> str:
        """The token with id ``index`` (the inverse of ``vocab[token]``): a whole number (an int, a NumPy integer,
        a float such as 2.0, or an array or tensor of one); a fraction or a bool is refused, not rounded."""
        if getattr(index, "ndim", None) == 0 and not isinstance(index, np.generic):      # a 0-d array or tensor
            index = index.item() if hasattr(index, "item") else np.asarray(index).item()
        index = _as_ints([index], "Vocab.lookup(index)")[0]
        if not 0 <= index < len(self._itos):
            raise OutOfVocabularyError(f"id {index} is outside the vocabulary (ids 0..{len(self._itos) - 1})")
        return self._itos[index]

    @property
    def tokens(self) -> list[str]:
        """All tokens in id order (a copy), specials first."""
        return list(self._itos)

    def encode(self, tokens: Iterable[str], add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Ids of ``tokens``: length ``T`` (+1 for each of ``add_bos``/``add_eos``); unknown -> ``UNK``."""
        if isinstance(tokens, str):
            raise ConfigError("Vocab.encode expects a list of tokens; use encode(tokenize(text))")
        ids = [self._stoi.get(t, UNK) for t in _as_tokens(tokens, "Vocab.encode(tokens)")]
        if add_bos:
            ids.insert(0, BOS)
        if add_eos:
            ids.append(EOS)
        return ids

    def decode(self, ids: Iterable[int] | Any, strip_special: bool = True) -> list[str]:
        """Tokens of the 1-D ``ids`` (list, numpy array or tensor).

        With ``strip_special``, ``<pad>``, ``<bos>`` and ``<eos>`` are dropped (``<unk>`` is kept, since
        it stands for a real token).
        """
        out = [self.lookup(i) for i in _as_ints(ids, "Vocab.decode(ids)")]
        if strip_special:
            drop = {SPECIALS[PAD], SPECIALS[BOS], SPECIALS[EOS]}
            out = [t for t in out if t not in drop]
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description; :meth:`from_dict` rebuilds the same vocabulary."""
        return {"specials": list(SPECIALS), "tokens": self._itos[len(SPECIALS) :]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Vocab:
        """Rebuild a vocabulary saved with :meth:`to_dict`."""
        if not isinstance(d, dict) or "tokens" not in d:
            raise ConfigError(f"not a saved vocabulary: expected a dict with 'tokens' (Vocab.to_dict()); got "
                              f"{type(d).__name__} {str(d)[:60]}")
        specials = tuple(d.get("specials", SPECIALS))
        if specials != SPECIALS:
            raise ConfigError(f"vocabulary saved with specials {specials}, expected {SPECIALS}")
        return cls(d["tokens"])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self._itos == other._itos

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        head = ", ".join(repr(t) for t in self._itos[len(SPECIALS) : len(SPECIALS) + 5])
        more = ", ..." if len(self._itos) > len(SPECIALS) + 5 else ""
        return f"Vocab(size={len(self)}, tokens=[{head}{more}])"


class Padded(NamedTuple):
    """Result of :func:`pad_batch`: ``ids`` ``(batch, max_len)`` int64 and ``lengths`` ``(batch,)`` int64."""

    ids: np.ndarray
    lengths: np.ndarray


def pad_batch(
    sequences: Sequence[Sequence[int]] | Iterable[Any],
    max_len: int | None = None,
    pad: int = PAD,
    truncate: str = "post",
    padding: str = "post",
) -> Padded:
    """Pad a batch of id sequences into one int64 array (at the end, or with ``padding="pre"`` at the start).

    Args:
        sequences: ``B`` sequences of ids of any lengths (lists, 1-D arrays or tensors).
        max_len: width ``T`` of the result; ``None``: the longest sequence. Longer ones are truncated.
        pad: the id used for padding (``PAD`` = 0): a whole number that no sequence holds, so that ``ids != pad``
            tells the real ids from the pads (a row padded before is refused: pass ``row[:length]``).
        truncate: ``"post"`` keeps the first ``max_len`` ids, ``"pre"`` the last ``max_len``.
        padding: ``"post"`` puts the pads after the ids, ``"pre"`` before them, so that the last position of
            every row is a real id (what a model that reads the last state needs; the default of Keras'
            ``pad_sequences``).

    Returns:
        ``Padded(ids, lengths)``: ``ids`` of shape ``(B, T)`` int64, ``lengths`` of shape ``(B,)`` int64,
        the number of real (non-pad) positions of each row, after truncation.
    """
    if truncate not in ("post", "pre"):
        raise ConfigError(f"truncate must be 'post' or 'pre', got {truncate!r}")
    if padding not in ("post", "pre"):
        raise ConfigError(f"padding must be 'post' or 'pre', got {padding!r}")
    if max_len is not None and (isinstance(max_len, bool) or not isinstance(max_len, int | np.integer)
                                or max_len < 0):
        raise ConfigError(f"max_len must be a whole number >= 0 (or None: the longest), got {max_len!r}")
    if isinstance(pad, bool) or not isinstance(pad, int | np.integer):
        raise ConfigError(f"pad must be a whole number, the id that pads the rows (PAD = 0); got {pad!r:.60} "
                          f"({type(pad).__name__})")
    seqs = [_as_ints(s, f"sequence {i} of pad_batch") for i, s in enumerate(sequences)]
    for i, seq in enumerate(seqs):
        if pad in seq:
            raise InputError(f"pad={pad} is also an id of the sequences (sequence {i} holds it at position "
                             f"{seq.index(pad)}): the padded rows could not tell it from a pad; choose a pad that no "
                             f"sequence holds (e.g. -1), or, for rows padded before, pass row[:length]")
    width = max((len(s) for s in seqs), default=0) if max_len is None else max_len
    ids = np.full((len(seqs), width), pad, dtype=np.int64)
    lengths = np.zeros(len(seqs), dtype=np.int64)
    for row, seq in enumerate(seqs):
        if len(seq) > width:
            seq = seq[:width] if truncate == "post" else seq[len(seq) - width :]
        if padding == "post":
            ids[row, : len(seq)] = seq
        elif seq:
            ids[row, width - len(seq) :] = seq
        lengths[row] = len(seq)
    return Padded(ids, lengths)
