"""BBC News (Greene & Cunningham, 2006): 2,225 English news articles in five classes, one file per article (a title
line, a blank line, then paragraphs), in ``bbc/<class>/NNN.txt``. No sha256 of the archive is enforced (a mirror may
re-zip it); the copy is checked by its structure: every class folder with its number of articles, and one digest of
all of them (the sha256 of ``"<class>/<file>\\0<sha256 of the file>\\n"`` over the files in sorted order), so that a
changed, missing or extra article is found and named. Chapter 11 (hierarchical attention) loads it.

98 articles repeat another article of the same class word for word; :func:`split` keeps one copy of each text and
splits the texts, so that no text is in both the training and the test set.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from attention_course.core.errors import ConfigError, StructureError

__all__ = ["CLASSES", "COUNTS", "DIGEST", "Article", "check_bbc_news", "articles", "split", "sentences", "words"]

FOLDER = "bbc"
#: The five classes, as the archive's folders, and how many articles each holds.
COUNTS = {"business": 510, "entertainment": 386, "politics": 417, "sport": 511, "tech": 401}
CLASSES = tuple(COUNTS)
#: The digest of the whole copy (see the module's docstring).
DIGEST = "53ee0f4ad6474a297f496c096e8d01f59b382436f2410b3160d15ab3a1553795"


@dataclass(frozen=True)
class Article:
    """One article: its ``title``, its ``body`` (the paragraphs, joined by newlines), its class ``label`` (an index
    into ``CLASSES``) and its ``file`` (``"sport/199.txt"``)."""

    title: str
    body: str
    label: int
    file: str


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*/*.txt"))


def check_bbc_news(paths: Mapping[str, Path]) -> Path:
    """The data registry's structure check: ``paths[FOLDER]`` holds the five class folders with their articles,
    byte for byte (one digest over all of them). Returns the folder; raises ``StructureError`` naming the
    problem."""
    folder = Path(paths[FOLDER])
    if not folder.is_dir():
        raise StructureError(f"{folder} is not a folder: BBC News is a folder of five class folders of articles")
    files = _files(folder)
    counts = {c: sum(p.parent.name == c for p in files) for c in CLASSES}
    others = sorted({p.parent.name for p in files} - set(CLASSES))
    if counts != COUNTS or others:
        wrong = [f"{c}: {counts[c]} articles, expected {n}" for c, n in COUNTS.items() if counts[c] != n]
        raise StructureError(f"{folder} does not hold BBC News' 2,225 articles: " + "; ".join(
            wrong + ([f"unknown folders {', '.join(others)}"] if others else [])))
    digest = hashlib.sha256()
    for p in files:
        digest.update(f"{p.parent.name}/{p.name}\0{hashlib.sha256(p.read_bytes()).hexdigest()}\n".encode())
    if digest.hexdigest() != DIGEST:
        raise StructureError(f"the articles in {folder} have the right numbers but not the right contents (digest "
                             f"{digest.hexdigest()}, expected {DIGEST}): an article was changed or replaced; "
                             "download the archive again")
    return folder


def _read(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:                      # sport/199.txt: one Latin-1 pound sign, as in the original
        return data.decode("latin-1")


def articles(folder: Path) -> list[Article]:
    """Every article of a checked copy, in class and file order: ``folder`` is what
    ``attention_course.data.fetch("bbc-news", "bbc")`` returns (downloaded if need be, and checked)."""
    out = []
    for p in _files(Path(folder)):
        lines = _read(p).replace("\r\n", "\n").strip().split("\n")
        body = "\n".join(line.strip() for line in lines[1:] if line.strip())
        out.append(Article(lines[0].strip(), body, CLASSES.index(p.parent.name), f"{p.parent.name}/{p.name}"))
    return out


def split(items: list[Article], shares: tuple[float, float] = (0.1, 0.1), seed: int = 0):
    """(train, validation, test) lists: one copy of each distinct text (title and body), shuffled with ``seed`` and
    cut within each class, ``shares`` of it for validation and test; no text is in two of them."""
    import numpy as np

    if len(shares) != 2 or not all(0 < s < 1 for s in shares) or sum(shares) >= 1:
        raise ConfigError(f"shares are the validation and test fractions, each in (0, 1), summing below 1; "
                          f"got {shares!r}")
    seen, unique = set(), []
    for a in items:
        if (a.title, a.body) not in seen:
            seen.add((a.title, a.body))
            unique.append(a)
    rng = np.random.default_rng(seed)
    parts: tuple[list[Article], list[Article], list[Article]] = ([], [], [])
    for label in sorted({a.label for a in unique}):
        group = [a for a in unique if a.label == label]
        group = [group[i] for i in rng.permutation(len(group))]
        n_val, n_test = (max(1, round(s * len(group))) for s in shares)
        parts[1].extend(group[:n_val])
        parts[2].extend(group[n_val:n_val + n_test])
        parts[0].extend(group[n_val + n_test:])
    return parts


_SENTENCE = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’]))\s+(?=[\"'“‘]?[A-Z0-9])")
_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?|[£$%]")


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences: at each line break, and after ``.``, ``!`` or ``?`` (a closing quote kept)
    followed by space and a capital or a digit."""
    return [s.strip() for line in text.split("\n") for s in _SENTENCE.split(line) if s.strip()]


def words(sentence: str) -> list[str]:
    """The lower-cased words of a sentence (letters and digits, an apostrophe's ending kept) and the signs £, $,
    %."""
    return _WORD.findall(sentence.lower())
