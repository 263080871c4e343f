"""Every chapter draws its architectures: SVG diagrams in the chapter's images/, shown as figures with alt text."""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))
SVGS = sorted((ROOT / "book").glob("[0-9][0-9]-*/images/*.svg"))
FIGURE = re.compile(r"```\{figure\} (images/[^\s]+\.svg)\n:alt: (.+)\n")


def _figures(notebook: Path) -> dict[str, str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return dict(FIGURE.findall(text))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_every_chapter_shows_a_diagram_with_alt_text(notebook):
    figures = _figures(notebook)
    assert figures, f"{notebook.relative_to(ROOT)} shows no SVG diagram (```{{figure}} images/….svg)"
    for path, alt in figures.items():
        assert (notebook.parent / path).is_file(), f"{notebook.relative_to(ROOT)} shows {path}, which is missing"
        assert len(alt.split()) >= 8, f"{path}: the alt text is too short to describe the figure: {alt!r}"
        assert "#" not in alt, f"{path}: a '#' in a directive option starts a comment (a warning under -W)"


@pytest.mark.parametrize("svg", SVGS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_diagram_is_described_shown_and_legible_in_dark_mode(svg):
    text = svg.read_text(encoding="utf-8")
    assert re.search(r"<title[^>]*>[^<]{5,}</title>", text) and re.search(r"<desc[^>]*>[^<]{40,}</desc>", text)
    assert re.search(r'<rect width="\d+" height="\d+" fill="white"', text), "no white background: dark mode"
    pages = sorted(svg.parent.parent.glob("*.ipynb"))                    # a chapter may have several pages
    assert any(f"images/{svg.name}" in _figures(page) for page in pages), \
        f"{svg.name} is not shown in {', '.join(p.name for p in pages)}"
