"""Flickr8k (Hodosh, Young & Hockenmaier 2013): 8,091 photographs with 5 captions each, for Chapter 6.

Its folder (``<data root>/flickr8k``, see :func:`~attention_course.data.cache_dir`) holds what the two archives of
the registry hold::

    Flickr8k.token.txt          40,460 lines "IMAGE.jpg#N<TAB>caption", N = 0..4: 5 captions for each of 8,092 images
    Flickr_8k.trainImages.txt   6,000 image names, one a line
    Flickr_8k.devImages.txt     1,000
    Flickr_8k.testImages.txt    1,000
    Flicker8k_Dataset/          the JPEGs (sic: the archive misspells the folder)

No sha256 of these files is known, so the copy is verified by its structure (:func:`check_flickr8k`): the line
formats, 5 captions per image, splits that name distinct captioned images, every image a split names present (and
not empty), and the counts above. The caption file also names ``2258277193_586949ec62.jpg.1``, which is in no split
and not in the image folder; only the 8,000 images of the splits are used.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from attention_course.core.errors import ConfigError, DataUnavailableError
from attention_course.core.text import tokenize
from attention_course.data.download import cache_dir, fetch, structure_hint
from attention_course.data.flickr8k import CAPTIONS, COUNTS, IMAGES, PER_IMAGE, SPLITS, check_flickr8k
from attention_course.data.registry import get

__all__ = ["CAPTIONS", "COUNTS", "IMAGES", "PER_IMAGE", "SPLITS", "Flickr8kSplit", "check_flickr8k", "instructions",
           "load_flickr8k"]


@dataclass(frozen=True)
class Flickr8kSplit:
    """One split: ``images[i]`` the path of a JPEG, ``captions[i]`` its 5 captions, each a list of lower-case word
    tokens (:func:`attention_course.core.text.tokenize`, punctuation dropped), in the order of the split's file."""

    split: str
    images: list[Path]
    captions: list[list[list[str]]]

    def __len__(self) -> int:
        return len(self.images)


def instructions() -> str:
    """Where to put Flickr8k by hand and where to download it from (the data cache's ``flickr8k`` folder)."""
    ds = get("flickr8k")
    return structure_hint(ds, cache_dir() / ds.folder)


def load_flickr8k(split: str = "train", *, root: str | os.PathLike[str] | None = None,
                  counts: Mapping[str, int] | None = COUNTS) -> Flickr8kSplit:
    """The images and tokenised captions of one split of Flickr8k.

    Args:
        split: ``"train"`` (6,000 images), ``"dev"`` (1,000) or ``"test"`` (1,000).
        root: a folder holding the files as the cache's ``flickr8k`` folder does (nothing is downloaded); ``None``:
            the data cache (``COURSE_DATA_DIR``, else the user cache), downloading the two archives (about 1 GB)
            when they are missing.
        counts: passed to :func:`check_flickr8k` (``None`` for a small copy made for tests).

    Raises:
        DataUnavailableError: the files are missing and cannot be downloaded (offline); the message says where to
            put them and the addresses to fetch them from.
        StructureError: the copy is incomplete or malformed (see :func:`check_flickr8k`).
    """
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; choose one of: {', '.join(SPLITS)}")
    if root is None:
        index = check_flickr8k(fetch("flickr8k"), counts)
    else:
        folder = Path(root)
        absent = [n for n in (CAPTIONS, *SPLITS.values(), IMAGES) if not (folder / n).exists()]
        if absent:
            urls = "\n".join(f"    {u}" for u in dict.fromkeys(u for rf in get("flickr8k").files.values()
                                                                 for u in rf.urls))
            raise DataUnavailableError(
                f"Flickr8k is not in {folder}: {', '.join(absent)} missing. Download\n{urls}\nextract them and put "
                f"{CAPTIONS}, {', '.join(SPLITS.values())} and the folder {IMAGES}/ in {folder}; or call "
                "load_flickr8k() without root to use the data cache (COURSE_DATA_DIR).")
        index = check_flickr8k(folder, counts)
    names = index.splits[split]
    words = [[[t for t in tokenize(c) if t[0].isalnum()] for c in index.captions[name]] for name in names]
    return Flickr8kSplit(split, [index.folder / name for name in names], words)
