"""Data for neural machine translation (chapter 5): sentence pairs, a subword tokenizer and padded arrays.

Typical use::

    data = translation_pairs("spa-eng", max_words=10)           # raw (english, spanish) strings
    src_tok = SubwordTokenizer.cached("spa-eng-en", [s for s, _ in data.train], 4000)
    tgt_tok = SubwordTokenizer.cached("spa-eng-es", [t for _, t in data.train], 4000)
    arrays, kept = encode_pairs(data.train, src_tok, tgt_tok, max_src=24, max_tgt=24)
    # arrays.src (N, 24) int64, arrays.tgt_in / arrays.tgt_out (N, 24) int64

The special tokens have the ids of :mod:`attention_course.core.text`: ``PAD=0, UNK=1, BOS=2, EOS=3``.
Importing this module is cheap: numpy and ``tokenizers`` are imported when a function needs them.
"""

from __future__ import annotations

import hashlib
import os
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from attention_course.core import validate
from attention_course.core.errors import ConfigError, EnvError, InputError, MissingFileError
from attention_course.core.files import write_file
from attention_course.core.text import BOS, EOS, PAD, SPECIALS, UNK
from attention_course.data.download import derived_dir
from attention_course.data.loaders import load_multi30k, load_spa_eng

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    from tokenizers import Tokenizer

__all__ = [
    "TRANSLATION_DATASETS",
    "ParallelArrays",
    "SubwordTokenizer",
    "TranslationData",
    "encode_pairs",
    "translation_pairs",
]

Pair = tuple[str, str]

# name -> (source language, target language)
TRANSLATION_DATASETS: dict[str, tuple[str, str]] = {"spa-eng": ("en", "es"), "multi30k": ("de", "en")}
_SPA_ENG_HELD_OUT = 1000  # default size of the spa-eng val and test splits (pairs)
_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


# --------------------------------------------------------------------------------------------------
# sentence pairs
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class TranslationData:
    """The splits of a translation dataset: lists of raw ``(source, target)`` strings."""

    name: str
    src_lang: str
    tgt_lang: str
    train: list[Pair]
    val: list[Pair]
    test: list[Pair]

    def __repr__(self) -> str:
        return (f"TranslationData({self.name!r}, {self.src_lang}->{self.tgt_lang}, train={len(self.train):,}, "
                f"val={len(self.val):,}, test={len(self.test):,})")


def _count(what: str, value: int | None, low: int) -> None:
    if value is not None:
        validate.integer(what, value, minimum=low, hint=" (or None: no limit)")


def translation_pairs(
    name: str = "spa-eng",
    *,
    max_words: int | None = None,
    n_train: int | None = None,
    n_val: int | None = None,
    n_test: int | None = None,
    seed: int = 0,
) -> TranslationData:
    """Train, validation and test pairs of ``name``.

    * ``"spa-eng"``: English -> Spanish (Tatoeba). Tatoeba gives some English sentences several Spanish
      translations, so the split is made by unique English sentence (shuffled with ``seed``): no source
      sentence of val or test is in train, and val and test cover every sentence length. ``n_val`` and
      ``n_test`` default to 1,000 pairs each; train gets the rest (at most ``n_train``), in shuffled order.
    * ``"multi30k"``: German -> English, the official train / val / test 2016 (Flickr) splits. ``n_*``
      ``None`` keeps the whole split. Train is shuffled with ``seed`` (so ``n_train=k`` takes its first ``k``
      pairs); val and test keep the file order.

    ``max_words`` keeps the pairs whose source has at most that many words (split on whitespace).
    """
    if not isinstance(name, str) or name not in TRANSLATION_DATASETS:
        raise ConfigError(f"unknown translation dataset {name!r}; choose one of: {', '.join(TRANSLATION_DATASETS)}")
    _count("max_words", max_words, 1)
    for what, n in (("n_train", n_train), ("n_val", n_val), ("n_test", n_test)):
        _count(what, n, 0)
    seed = validate.seed(seed)
    import numpy as np

    rng = np.random.default_rng(seed)

    def short(pairs: list[Pair]) -> list[Pair]:
        return pairs if max_words is None else [p for p in pairs if len(p[0].split()) <= max_words]

    if name == "spa-eng":
        n_val = _SPA_ENG_HELD_OUT if n_val is None else n_val
        n_test = _SPA_ENG_HELD_OUT if n_test is None else n_test
        groups: dict[str, list[Pair]] = {}
        for pair in short(load_spa_eng()):
            groups.setdefault(pair[0], []).append(pair)
        sources = list(groups)
        test: list[Pair] = []
        val: list[Pair] = []
        rest: list[Pair] = []
        for i in rng.permutation(len(sources)):
            group = groups[sources[i]]
            if len(test) < n_test:
                test.extend(group)  # a cut group's extra pairs are dropped, never moved to train
            elif len(val) < n_val:
                val.extend(group)
            else:
                rest.extend(group)
        train = [rest[i] for i in rng.permutation(len(rest))]
        test, val = test[:n_test], val[:n_val]
    else:
        train = short(load_multi30k("train"))
        train = [train[i] for i in rng.permutation(len(train))]
        val = short(load_multi30k("val"))[:n_val]
        test = short(load_multi30k("test2016"))[:n_test]
    train = train[:n_train]
    for split, pairs, n in (("train", train, n_train), ("val", val, n_val), ("test", test, n_test)):
        if not pairs and n != 0:
            limit = "" if max_words is None else f" with at most max_words={max_words} source words"
            raise ConfigError(f"{name}: no pairs{limit} are left for the {split} split; "
                              "raise max_words or ask for fewer val/test pairs")
    src_lang, tgt_lang = TRANSLATION_DATASETS[name]
    return TranslationData(name, src_lang, tgt_lang, train, val, test)


# --------------------------------------------------------------------------------------------------
# subword tokenizer
# --------------------------------------------------------------------------------------------------
def _as_ints(ids: Any) -> list[int]:
    """One sequence of token ids (a list, a 1-D array or tensor) as Python ints; anything else is refused."""
    import numbers

    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise InputError(f"decode expects one sequence of integer ids (a list or a 1-D array); got "
                         f"{type(ids).__name__} {ids!r:.40}")
    ids = list(ids)
    bad = next((i for i in ids if isinstance(i, bool) or not isinstance(i, numbers.Integral)), None)
    if bad is not None:
        raise InputError(f"decode expects one sequence of integer ids (a list or a 1-D array); it holds "
                         f"{type(bad).__name__} {bad!r:.40}" + (" (a 2-D array? use decode_batch)"
                                                              if isinstance(bad, list) else ""))
    return [int(i) for i in ids]


def _text_list(texts: Iterable[str]) -> list[str]:
    if isinstance(texts, str):
        raise ConfigError("expected a list of sentences, got one string")
    texts = list(texts)
    bad = next((t for t in texts if not isinstance(t, str)), None)
    if bad is not None:
        raise ConfigError(f"expected a list of strings, found {type(bad).__name__} {bad!r}")
    if not any(t.strip() for t in texts):
        raise ConfigError("cannot train a tokenizer on no text: texts is empty (or only blank strings)")
    return texts


def _check_vocab_size(vocab_size: int) -> None:
    validate.integer("vocab_size", vocab_size, minimum=len(SPECIALS) + 1,
                     hint=f" (the {len(SPECIALS)} special tokens and at least one more)")


def _digest(texts: list[str]) -> str:
    """First 12 hex digits of the sha256 of the texts (each in UTF-8, followed by a NUL byte)."""
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:12]


class SubwordTokenizer:
    """A BPE subword tokenizer (a thin wrapper around the ``tokenizers`` library).

    Text is normalised first: NFKC, lowercase, runs of whitespace -> one space, no spaces at the ends.
    Words are split at spaces and marked with "▁" (Metaspace), so ``decode(encode(s)) == normalize(s)``
    whenever every character of ``s`` was seen in training. Because of the lowercasing, BLEU computed on
    decoded text is case-insensitive.

    Ids 0-3 are always ``<pad> <unk> <bos> <eos>`` (``.pad .unk .bos .eos``); ``encode`` never adds them
    (a literal ``"<eos>"`` in the text is encoded as ordinary characters).
    """

    pad, unk, bos, eos = PAD, UNK, BOS, EOS

    def __init__(self, backend: Tokenizer, path: Path | None = None) -> None:
        """Wrap a trained ``tokenizers.Tokenizer`` whose ids 0-3 are the special tokens."""
        got = [backend.token_to_id(s) for s in SPECIALS]
        if got != list(range(len(SPECIALS))):
            raise ConfigError(f"the tokenizer's special tokens {SPECIALS} must have ids 0-3, they have {got}")
        backend.encode_special_tokens = True  # not saved in the json: set on every load
        self.backend = backend
        self.path = path  # the file it was loaded from or saved to; None: in memory only

    @staticmethod
    def _new_backend() -> Tokenizer:
        from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

        tk = Tokenizer(models.BPE(unk_token=SPECIALS[UNK]))
        tk.normalizer = normalizers.Sequence(
            [normalizers.NFKC(), normalizers.Lowercase(), normalizers.Replace(Regex(r"\s+"), " "),
             normalizers.Strip()]
        )
        tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
        tk.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
        return tk

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, *, min_frequency: int = 2) -> SubwordTokenizer:
        """Learn BPE merges on ``texts`` until ``vocab_size`` ids (fewer on a small corpus; never fewer than
        the specials plus every character seen). ``min_frequency``: merge only pairs seen this often."""
        texts = _text_list(texts)
        _check_vocab_size(vocab_size)
        validate.integer("min_frequency", min_frequency)
        from tokenizers import trainers

        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                      special_tokens=list(SPECIALS), show_progress=False)
        tk = cls._new_backend()
        tk.train_from_iterator(texts, trainer, length=len(texts))
        return cls(tk)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SubwordTokenizer:
        """A tokenizer saved with :meth:`save`."""
        from tokenizers import Tokenizer

        path = Path(path)
        if not path.is_file():
            raise MissingFileError(f"no tokenizer file at {path}: save one with SubwordTokenizer.save(path), or "
                                   f"train one with SubwordTokenizer.train or .cached")
        try:
            tk = Tokenizer.from_file(str(path))
        except Exception as exc:  # the library raises a bare Exception on a bad file
            raise ConfigError(f"{path} is not a tokenizer file ({exc})") from exc
        return cls(tk, path)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the tokenizer as json to ``path``, through a temporary file renamed into place; a file already
        there is moved aside (``<name>.replaced-<date>-<time>``, printed), never overwritten."""
        path = Path(path)
        old = write_file(path, self.backend.to_str())
        if old is not None:
            print(f"{path} already existed: moved it, untouched, to {old}")
        self.path = path
        return path

    @classmethod
    def cache_path(cls, key: str, texts: Iterable[str], vocab_size: int) -> Path:
        """Where :meth:`cached` keeps this tokenizer: ``derived_dir()/tokenizers/{key}-{vocab_size}-{digest}.json``,
        ``digest`` the first 12 hex digits of the sha256 of ``texts``."""
        if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
            raise ConfigError(f"key must be a short name of letters, digits, '.', '_' or '-', got {key!r}")
        _check_vocab_size(vocab_size)
        return derived_dir() / "tokenizers" / f"{key}-{vocab_size}-{_digest(_text_list(texts))}.json"

    @classmethod
    def cached(cls, key: str, texts: Iterable[str], vocab_size: int) -> SubwordTokenizer:
        """Load the tokenizer of ``(key, texts, vocab_size)`` from the data cache, or train and save it.

        Other texts give another file (their sha256 is in its name). If the cache cannot be written (a
        read-only ``COURSE_CACHE_DIR``), the tokenizer is trained in memory with a warning.
        """
        texts = _text_list(texts)
        try:
            path = cls.cache_path(key, texts, vocab_size)
        except EnvError as exc:
            warnings.warn(f"no tokenizer cache ({exc}); training in memory", stacklevel=2)
            return cls.train(texts, vocab_size)
        if path.is_file():
            try:
                return cls.load(path)
            except (ConfigError, OSError) as exc:
                warnings.warn(f"ignoring the unreadable cached tokenizer {path} ({exc}); training again",
                              stacklevel=2)
        tok = cls.train(texts, vocab_size)
        try:
            tok.save(path)
        except OSError as exc:
            warnings.warn(f"could not cache the tokenizer in {path.parent} ({exc}); it was trained in memory "
                          "and will be trained again next time", stacklevel=2)
        return tok

    def __len__(self) -> int:
        return self.backend.get_vocab_size()

    def normalize(self, text: str) -> str:
        """``text`` as the tokenizer sees it (what ``decode(encode(text))`` gives back)."""
        return self.backend.normalizer.normalize_str(text)

    def encode(self, text: str) -> list[int]:
        """Subword ids of ``text``, without special tokens."""
        if not isinstance(text, str):
            raise InputError(f"encode expects a string, got {type(text).__name__}; use encode_batch for lists")
        return self.backend.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Iterable[str]) -> list[list[int]]:
        """``[encode(t) for t in texts]``, in parallel."""
        if isinstance(texts, str):
            raise InputError("encode_batch expects a list of strings, got one string; use encode")
        texts = list(texts)
        bad = next((k for k, t in enumerate(texts) if not isinstance(t, str)), None)
        if bad is not None:
            raise InputError(f"encode_batch expects a list of strings; item {bad} is {type(texts[bad]).__name__} "
                             f"{texts[bad]!r:.40}")
        return [e.ids for e in self.backend.encode_batch(texts, add_special_tokens=False)]

    def tokens(self, text: str) -> list[str]:
        """The subword pieces of ``text`` (for display), e.g. ``['▁¿dónde', '▁está', ...]``."""
        if not isinstance(text, str):
            raise InputError(f"tokens expects a string, got {type(text).__name__}")
        return self.backend.encode(text, add_special_tokens=False).tokens

    def decode(self, ids: Iterable[int] | Any) -> str:
        """Text of the 1-D ``ids`` (list, array or tensor): stops at the first ``<eos>``, skips ``<pad>`` and
        ``<bos>``; ``<unk>`` is shown as ``"<unk>"``."""
        size = len(self)
        kept = []
        for i in _as_ints(ids):
            if i == EOS:
                break
            if i in (PAD, BOS):
                continue
            if not 0 <= i < size:
                raise InputError(f"id {i} is outside the vocabulary (ids 0..{size - 1})")
            kept.append(i)
        return self.backend.decode(kept, skip_special_tokens=False)

    def decode_batch(self, rows: Iterable[Any]) -> list[str]:
        """``[decode(r) for r in rows]``, e.g. for a ``(B, T)`` array of predictions."""
        if isinstance(rows, str):
            raise InputError("decode_batch expects rows of integer ids (a list of lists or a 2-D array), got one "
                             "string")
        return [self.decode(r) for r in rows]

    def __repr__(self) -> str:
        where = f", path={str(self.path)!r}" if self.path is not None else ""
        return f"SubwordTokenizer(vocab_size={len(self)}{where})"


# --------------------------------------------------------------------------------------------------
# padded arrays
# --------------------------------------------------------------------------------------------------
class ParallelArrays(NamedTuple):
    """Encoded pairs, right-padded with ``PAD`` to fixed widths ``S`` (source) and ``T`` (target)."""

    src: np.ndarray  # (N, S) int64: ids + [EOS], then PAD
    src_mask: np.ndarray  # (N, S) bool: True on real tokens, the EOS included
    tgt_in: np.ndarray  # (N, T) int64: [BOS] + ids, then PAD (decoder input)
    tgt_out: np.ndarray  # (N, T) int64: ids + [EOS], then PAD (what to predict)
    src_lengths: np.ndarray  # (N,) int64: real source tokens, the EOS included

    @property
    def n(self) -> int:
        """The number of pairs ``N``."""
        return int(self.src.shape[0])

    def subset(self, index: Any) -> ParallelArrays:
        """The rows ``index`` (a slice, integer array or boolean mask) of every array."""
        import numpy as np

        if not isinstance(index, slice) and np.ndim(index) == 0:
            index = [index]
        return ParallelArrays(*(a[index] for a in self))


def encode_pairs(
    pairs: Sequence[Pair], src_tok: SubwordTokenizer, tgt_tok: SubwordTokenizer, *, max_src: int, max_tgt: int
) -> tuple[ParallelArrays, list[int]]:
    """Encode ``pairs`` into arrays of exactly ``(N, max_src)`` and ``(N, max_tgt)`` (fixed shapes: no retracing).

    A pair whose source needs more than ``max_src`` ids or whose target more than ``max_tgt`` (the EOS/BOS
    included) is dropped, never truncated. Returns the arrays and the indices in ``pairs`` of the ``N`` kept.
    """
    import numpy as np

    for what, width in (("max_src", max_src), ("max_tgt", max_tgt)):
        validate.integer(what, width)
    pairs = list(pairs)
    bad = next((k for k, p in enumerate(pairs) if not isinstance(p, tuple | list) or len(p) != 2
                or not all(isinstance(x, str) for x in p)), None)
    if bad is not None:
        raise InputError(f"pairs must be (source, target) pairs of strings; pairs[{bad}] is {pairs[bad]!r:.60}")
    srcs = src_tok.encode_batch([s for s, _ in pairs])
    tgts = tgt_tok.encode_batch([t for _, t in pairs])
    kept = [i for i, (s, t) in enumerate(zip(srcs, tgts, strict=True))
            if len(s) + 1 <= max_src and len(t) + 1 <= max_tgt]
    n = len(kept)
    src = np.full((n, max_src), PAD, dtype=np.int64)
    tgt_in = np.full((n, max_tgt), PAD, dtype=np.int64)
    tgt_out = np.full((n, max_tgt), PAD, dtype=np.int64)
    src_lengths = np.zeros(n, dtype=np.int64)
    for row, i in enumerate(kept):
        s, t = srcs[i], tgts[i]
        src[row, : len(s) + 1] = [*s, EOS]
        tgt_in[row, : len(t) + 1] = [BOS, *t]
        tgt_out[row, : len(t) + 1] = [*t, EOS]
        src_lengths[row] = len(s) + 1
    src_mask = np.arange(max_src)[None, :] < src_lengths[:, None]
    return ParallelArrays(src, src_mask, tgt_in, tgt_out, src_lengths), kept
