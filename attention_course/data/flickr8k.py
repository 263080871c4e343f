"""Flickr8k's files, checked by structure (no sha256 of its archives is known): the caption file, the three split
files and the image folder, with the sizes of the real dataset. Chapter 6 loads it
(:mod:`attention_course.ch06_image_captioning.flickr8k`); the data registry runs this check on every download."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from attention_course.core.errors import ConfigError, StructureError

CAPTIONS = "Flickr8k.token.txt"
SPLITS = {"train": "Flickr_8k.trainImages.txt", "dev": "Flickr_8k.devImages.txt", "test": "Flickr_8k.testImages.txt"}
IMAGES = "Flicker8k_Dataset"  # sic
#: What the real files hold: lines of the caption file, images it captions, images of each split.
COUNTS = {"lines": 40_460, "images": 8_092, "train": 6_000, "dev": 1_000, "test": 1_000}
PER_IMAGE = 5

_LINE = re.compile(r"([^\s#]+)#(\d+)\t(.*\S.*)")
_SHOWN = 3  # examples named per problem



@dataclass(frozen=True)
class Flickr8kIndex:
    """A checked copy: ``captions[image]`` its 5 raw captions (#0 … #4), ``splits[split]`` the image names of each
    split in file order, ``folder`` the image folder."""

    captions: dict[str, list[str]]
    splits: dict[str, list[str]]
    folder: Path


def _examples(items: list[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN:,} more" if len(items) > _SHOWN else "")


def _lines(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of the non-blank lines of a text file, without line ends (LF or CRLF)."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    return [(i, line.rstrip("\r")) for i, line in enumerate(text.split("\n"), 1) if line.strip()]


def _read_captions(path: Path, problems: list[str]) -> tuple[dict[str, list[str]], int]:
    found: dict[str, dict[int, str]] = {}
    bad, repeated, lines = [], [], _lines(path)
    for number, line in lines:
        match = _LINE.fullmatch(line)
        if match is None or int(match[2]) >= PER_IMAGE:
            bad.append(f"line {number} {line[:60]!r}")
            continue
        image, n, caption = match[1], int(match[2]), match[3].strip()
        if n in found.setdefault(image, {}):
            repeated.append(f"{image}#{n} (line {number})")
        found[image][n] = caption
    if bad:
        problems.append(f"{CAPTIONS}: {len(bad):,} line(s) are not 'IMAGE.jpg#N<TAB>caption' with N in 0..4: "
                        f"{_examples(bad)}")
    if repeated:
        problems.append(f"{CAPTIONS}: {len(repeated):,} caption(s) appear twice: {_examples(repeated)}")
    short = [f"{image} ({len(c)})" for image, c in found.items() if len(c) != PER_IMAGE]
    if short:
        problems.append(f"{CAPTIONS}: {len(short):,} image(s) do not have {PER_IMAGE} captions: {_examples(short)}")
    return {image: [c[n] for n in sorted(c)] for image, c in found.items()}, len(lines)


def check_flickr8k(paths: Mapping[str, Path] | str | os.PathLike[str],
                   counts: Mapping[str, int] | None = COUNTS) -> Flickr8kIndex:
    """Check a copy of Flickr8k and return what it holds.

    Args:
        paths: the folder holding the files (laid out as the cache's ``flickr8k`` folder), or ``{name: path}`` for
            each of :data:`CAPTIONS`, the :data:`SPLITS` files and :data:`IMAGES` (how the downloader calls it,
            with files still in its staging folder).
        counts: the sizes the copy must have, keys as in :data:`COUNTS` (the real dataset's, the default); ``None``
            checks the structure only (a small copy made for tests).

    Raises:
        StructureError: naming every problem found: a missing file or folder, malformed caption lines, images
            without 5 captions, split lines naming an image without captions or named twice, an image in two
            splits, images of a split missing from the image folder or empty, counts that are not ``counts``.
    """
    if counts is not None and not set(counts) <= set(COUNTS):
        raise ConfigError(f"counts takes the keys {', '.join(COUNTS)}; got {', '.join(map(repr, counts))}")
    if not isinstance(paths, Mapping):
        paths = {name: Path(paths) / name for name in (CAPTIONS, *SPLITS.values(), IMAGES)}
    missing = [name for name in (CAPTIONS, *SPLITS.values()) if not Path(paths[name]).is_file()]
    missing += [f"{IMAGES}/"] if not Path(paths[IMAGES]).is_dir() else []
    if missing:
        raise StructureError(f"missing: {', '.join(missing)}")

    problems: list[str] = []
    captions, lines = _read_captions(Path(paths[CAPTIONS]), problems)
    splits: dict[str, list[str]] = {}
    seen: dict[str, str] = {}
    for split, name in SPLITS.items():
        unknown, twice = [], []
        splits[split] = []
        for number, line in _lines(Path(paths[name])):
            image = line.strip()
            if image not in captions:
                unknown.append(f"{image!r} (line {number})")
            elif image in seen:
                twice.append(f"{image} (also in {SPLITS[seen[image]]})")
            else:
                seen[image] = split
                splits[split].append(image)
        if unknown:
            problems.append(f"{name}: {len(unknown):,} line(s) name an image without captions in {CAPTIONS}: "
                            f"{_examples(unknown)}")
        if twice:
            problems.append(f"{name}: {len(twice):,} image(s) listed twice: {_examples(twice)}")
    with os.scandir(paths[IMAGES]) as entries:
        sizes = {e.name: e.stat().st_size for e in entries if e.is_file()}
    absent = [image for images in splits.values() for image in images if image not in sizes]
    if absent:
        problems.append(f"{IMAGES}/ lacks {len(absent):,} of the {len(seen):,} images the splits name: "
                        f"{_examples(absent)}")
    empty = [image for images in splits.values() for image in images if sizes.get(image) == 0]
    if empty:
        problems.append(f"{IMAGES}/ holds {len(empty):,} empty image file(s): {_examples(empty)}")
    if counts is not None:
        found = {"lines": lines, "images": len(captions), **{s: len(images) for s, images in splits.items()}}
        wrong = [f"{key} {found[key]:,} (expected {value:,})" for key, value in counts.items() if found[key] != value]
        if wrong:
            problems.append("not the sizes of Flickr8k (lines and images of the captions, images of each split): "
                            + ", ".join(wrong))
    if problems:
        raise StructureError("\n  - " + "\n  - ".join(problems))
    return Flickr8kIndex(captions, splits, Path(paths[IMAGES]))
