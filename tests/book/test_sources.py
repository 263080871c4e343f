"""The five documents the course was created from are cited wherever a chapter speaks of them."""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))
# how the chapters speak of each source → its key in book/references.bib
SOURCES = {
    "talk": "teruel2018neural",
    "guide": "hore_chatterjee_guide",
    "slides": "nlplab_attention_slides",
    "article": "mohandas2017interpretability",
    "notes": "notes_attention_dnns",
}


def _prose(notebook: Path) -> str:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def _cited(prose: str) -> set[str]:
    keys = set()
    for group in re.findall(r"\{(?:cite|cite:p|cite:t|footcite)\}`([^`]+)`", prose):
        keys.update(k.strip() for k in group.split(","))
    return keys


def test_every_source_is_in_the_bibliography():
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    missing = [key for key in SOURCES.values() if not re.search(r"@\w+\{" + re.escape(key) + ",", bib)]
    assert not missing, f"book/references.bib lacks {missing}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_a_chapter_that_names_a_source_cites_it(notebook):
    prose = _prose(notebook)
    cited = _cited(prose)
    uncited = [f'"the {word}" without {{cite}}`{key}`' for word, key in SOURCES.items()
               if re.search(rf"\bthe {word}\b", prose, re.IGNORECASE) and key not in cited]
    assert not uncited, f"{notebook.relative_to(ROOT)}: " + "; ".join(uncited)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_no_opaque_or_stale_words(notebook):
    prose = _prose(notebook)
    found = re.findall(r"[^.\n]*(?:the seeds|in preparation|first part)[^.\n]*", prose, re.IGNORECASE)
    assert not found, f"{notebook.relative_to(ROOT)}: {found}"
