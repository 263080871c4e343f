"""Course datasets: a registry of pinned files, a checked download cache, and simple loaders.

>>> from attention_course import data
>>> data.names()                      # the registered datasets
>>> pairs = data.load_spa_eng()       # downloads once, checks the sha256 on every load
>>> print(data.verify())              # which cached files are present and intact
>>> train = data.load_flickr8k("train")  # Chapter 6: image paths and 5 tokenised captions each (about 1 GB)

Set ``COURSE_DATA_DIR`` to a folder laid out as ``<dataset folder>/<file>`` to work offline.
Importing this package is cheap: pooch, pandas and numpy are imported only when a function needs them.
"""

from __future__ import annotations

from .download import (
    ENV_VAR,
    ChecksumError,
    DataUnavailableError,
    FileCheck,
    StructureError,
    VerifyReport,
    cache_dir,
    fetch,
    file_path,
    sha256sum,
    verify,
)
from .flickr8k import Flickr8kSplit, check_flickr8k, load_flickr8k
from .loaders import (
    TaggedSentence,
    load_multi30k,
    load_ner,
    load_sentiment,
    load_spa_eng,
    load_tinyshakespeare,
    load_wikitext2_subset,
    repair_cp1252,
)
from .prepare import prepare_ner, prepare_sentiment, sentiment_words
from .registry import Dataset, RemoteFile, get, names
from .translation import (
    ParallelArrays,
    SubwordTokenizer,
    TranslationData,
    encode_pairs,
    translation_pairs,
)

try:  # synthetic tasks live in their own module; the rest of the package works without it
    from . import synthetic
except ModuleNotFoundError as exc:  # pragma: no cover
    if exc.name != f"{__name__}.synthetic":
        raise  # synthetic.py exists but one of its own imports is missing: show that error
    synthetic = None  # type: ignore[assignment]

__all__ = [
    "ENV_VAR",
    "ChecksumError",
    "DataUnavailableError",
    "Dataset",
    "FileCheck",
    "Flickr8kSplit",
    "ParallelArrays",
    "RemoteFile",
    "StructureError",
    "SubwordTokenizer",
    "TaggedSentence",
    "TranslationData",
    "VerifyReport",
    "cache_dir",
    "check_flickr8k",
    "encode_pairs",
    "fetch",
    "file_path",
    "get",
    "load_flickr8k",
    "load_multi30k",
    "load_ner",
    "load_sentiment",
    "load_spa_eng",
    "load_tinyshakespeare",
    "load_wikitext2_subset",
    "names",
    "prepare_ner",
    "prepare_sentiment",
    "repair_cp1252",
    "sentiment_words",
    "sha256sum",
    "synthetic",
    "translation_pairs",
    "verify",
]
