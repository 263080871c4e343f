"""Framework-neutral loaders: plain Python lists, strings, numpy and pandas.

Every loader goes through :func:`~attention_course.data.fetch`, so the sha256 of each file is checked
on every load (hashing the largest file, the 15 MB NER csv, takes a few hundredths of a second).

Encodings, as measured on the pinned files:

* UCI sentiment, spa-eng, Multi30k, Tiny Shakespeare, WikiText-2: valid UTF-8 (Latin-1 is never needed).
  ``imdb_labelled.txt`` however holds C1 control characters U+0085, U+0096, U+0097: Windows-1252
  punctuation ("…", "–", "—") that was once decoded as Latin-1 and re-encoded to UTF-8.
  :func:`load_sentiment` maps them back (``fix_c1=True``), because U+0085 is a line break for
  :meth:`str.splitlines`.
* NER (``ner_dataset.csv``): not UTF-8. Its non-ASCII bytes are 0x85, 0x91-0x94, 0x96, 0x97, 0xA0, 0xB0,
  0xE9, 0xEB, 0xF6, 0xFC: Windows-1252, which agrees with Latin-1 on 0xA0-0xFF but turns 0x85/0x91-0x97
  into "…", "‘", "’", "“", "”", "–", "—" instead of invisible C1 controls. :func:`load_ner` reads it as
  ``cp1252``; ``encoding="latin-1"`` gives the same tokens and counts, with C1 characters.
"""

from __future__ import annotations

import codecs
import gc
import gzip
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from attention_course.core.errors import ConfigError
from attention_course.data.download import fetch

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "SENTIMENT_SOURCES",
    "MULTI30K_SPLITS",
    "WIKITEXT2_SPLITS",
    "TaggedSentence",
    "repair_cp1252",
    "load_multi30k",
    "load_ner",
    "load_sentiment",
    "load_spa_eng",
    "load_tinyshakespeare",
    "load_wikitext2_subset",
]

SENTIMENT_SOURCES = {
    "amazon": "amazon_cells_labelled.txt",
    "imdb": "imdb_labelled.txt",
    "yelp": "yelp_labelled.txt",
}
MULTI30K_SPLITS = {"train": "train", "val": "val", "test2016": "test_2016_flickr"}
WIKITEXT2_SPLITS = {"valid": "valid.txt", "test": "test.txt"}

_C1 = {c: bytes([c]).decode("cp1252", errors="ignore") or chr(c) for c in range(0x80, 0xA0)}


def _choice(what: str, value: str, options) -> None:
    if value not in options:
        raise ConfigError(f"unknown {what} {value!r}; choose one of: {', '.join(options)}")


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _lines(text: str) -> list[str]:
    """Split on ``\\n`` only (not :meth:`str.splitlines`, which also breaks on U+0085 and friends)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def repair_cp1252(text: str) -> str:
    """Replace C1 control characters U+0080-U+009F by the Windows-1252 characters they stand for.

    Such characters come from Windows-1252 text that was decoded as Latin-1 (``"\\x85"`` -> ``"…"``).
    """
    return text.translate(_C1)


def load_sentiment(source: str = "all", *, fix_c1: bool = True) -> pd.DataFrame:
    """The UCI sentiment-labelled sentences as a DataFrame.

    Args:
        source: ``"amazon"``, ``"imdb"``, ``"yelp"`` (1000 rows each, 500 per label) or ``"all"`` (3000).
        fix_c1: map the Windows-1252 leftovers in ``imdb`` (U+0085, U+0096, U+0097) to "…", "–", "—".

    Returns:
        DataFrame with columns ``sentence`` (str, surrounding whitespace stripped), ``label``
        (int64: 1 positive, 0 negative) and ``source``, in file order.
    """
    import csv

    import pandas as pd

    _choice("source", source, [*SENTIMENT_SOURCES, "all"])
    sources = list(SENTIMENT_SOURCES) if source == "all" else [source]
    frames = []
    for src in sources:
        path = fetch("sentiment", SENTIMENT_SOURCES[src])
        df = pd.read_csv(
            path,
            sep="\t",
            header=None,
            names=["sentence", "label"],
            quoting=csv.QUOTE_NONE,
            encoding="utf-8",
            dtype={"sentence": str, "label": "int64"},
            keep_default_na=False,
        )
        df["sentence"] = df["sentence"].str.strip()
        if fix_c1:
            df["sentence"] = df["sentence"].map(repair_cp1252)
        df["source"] = src
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


class TaggedSentence(NamedTuple):
    """One NER sentence: three aligned lists of the same length."""

    words: list[str]
    pos: list[str]
    tags: list[str]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small containers."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_ner(encoding: str = "cp1252") -> list[TaggedSentence]:
    """The GMB/Kaggle NER corpus: 47,959 sentences, 1,048,575 tokens, 17 BIO tags.

    Each item is a :class:`TaggedSentence` ``(words, pos, tags)`` of aligned lists. Words such as
    ``"None"`` or ``"NA"`` stay strings (no NaN). The file names the sentence (``Sentence: N``) only on
    its first token; the loader groups the following tokens with it.

    Args:
        encoding: ``"cp1252"`` (default, correct quotes and dashes) or ``"latin-1"``.
    """
    import numpy as np
    import pandas as pd

    try:
        known = codecs.lookup(encoding).name in ("cp1252", "iso8859-1")
    except (LookupError, TypeError):
        known = False
    if not known:
        raise ConfigError(f"load_ner reads the Kaggle file as 'cp1252' (the default) or 'latin-1'; "
                          f"got encoding={encoding!r}")
    path = fetch("ner-gmb", "ner_dataset.csv")
    with _gc_paused():  # ~3 million small objects: the cyclic GC would only slow this down (~40 %)
        df = pd.read_csv(path, encoding=encoding, keep_default_na=False, na_filter=False, dtype=str)
        starts = np.flatnonzero(df["Sentence #"].to_numpy() != "")
        if len(starts) == 0 or starts[0] != 0:
            raise ValueError(f"{path}: the first row does not start a sentence; is this the Kaggle file?")
        bounds = [*starts.tolist(), len(df)]
        words, pos, tags = (df[c].tolist() for c in ("Word", "POS", "Tag"))
        return [
            TaggedSentence(words[a:b], pos[a:b], tags[a:b])
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)
        ]


def load_spa_eng() -> list[tuple[str, str]]:
    """The Tatoeba English-Spanish pairs of the TensorFlow NMT tutorial: 118,964 ``(english, spanish)``."""
    pairs = []
    for line in _lines(_read_text(fetch("spa-eng", "spa.txt"))):
        en, es = line.split("\t")
        pairs.append((en, es))
    return pairs


def load_multi30k(split: str = "train") -> list[tuple[str, str]]:
    """Multi30k task-1 ``(german, english)`` pairs.

    Args:
        split: ``"train"`` (29,000 pairs), ``"val"`` (1,014) or ``"test2016"`` (1,000, Flickr test 2016).
    """
    _choice("split", split, MULTI30K_SPLITS)
    stem = MULTI30K_SPLITS[split]
    sides = []
    for lang in ("de", "en"):
        with gzip.open(fetch("multi30k", f"{stem}.{lang}.gz"), "rt", encoding="utf-8", newline="") as f:
            sides.append([line.strip() for line in _lines(f.read())])
    de, en = sides
    if len(de) != len(en):
        raise ValueError(f"multi30k {split}: {len(de)} German lines but {len(en)} English lines")
    return list(zip(de, en, strict=True))


def load_tinyshakespeare() -> str:
    """Tiny Shakespeare as one string (1,115,394 characters)."""
    return _read_text(fetch("tinyshakespeare", "input.txt"))


def load_wikitext2_subset(split: str = "valid") -> list[str]:
    """Lines of the tokenized WikiText-2 ``"valid"`` (3,760) or ``"test"`` (4,358) split, without the
    trailing newline and otherwise unchanged (headings look like ``" = Title = "``, blank lines are ``" "``).
    """
    _choice("split", split, WIKITEXT2_SPLITS)
    return _lines(_read_text(fetch("wikitext2-subset", WIKITEXT2_SPLITS[split])))
