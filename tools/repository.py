"""The repository's address lives in one place, ``repository.url`` in ``_config.yml``, and the release a notebook
belongs to in one other, the package's ``__version__`` (release ``v<version>``, a git tag).

The notebooks need them in three forms (their Colab link, the Colab install cell, and raw file addresses), and so
does the package (``attention_course.core.results.URL``, where a notebook on Colab reads the book's results). All
three name the release, so that a notebook opened on Colab installs the package it was written with, not whatever
a branch holds that day. Neither can read ``_config.yml`` on Colab, so this command writes them:

    .venv/bin/python tools/repository.py           # rewrite every notebook's addresses
    .venv/bin/python tools/repository.py --check   # list the addresses that disagree (exit 1); the tests run it

A fork changes the one line ``url:`` in ``_config.yml`` and runs the first command; a release sets
``__version__``, runs it, and tags the commit ``v<version>`` (CONTRIBUTING.md, "Releasing").
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))
MODULES = [ROOT / "attention_course" / "core" / "results.py"]     # package modules holding a raw address
GITHUB = r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+"
PATTERNS = {   # form → (regex, replacement template with {repo} = owner/name and {release} = v<version>)
    "colab": (re.compile(rf"https://colab\.research\.google\.com/github/{GITHUB}/blob/[\w.-]+/"),
              "https://colab.research.google.com/github/{repo}/blob/{release}/"),
    "install": (re.compile(rf"git\+https://github\.com/{GITHUB}(?:@[\w.-]+)?(?=[\"'\s])"),
                "git+https://github.com/{repo}@{release}"),
    "raw": (re.compile(rf"https://raw\.githubusercontent\.com/{GITHUB}/[\w.-]+/"),
            "https://raw.githubusercontent.com/{repo}/{release}/"),
}


def version() -> str:
    """The package's ``__version__``, read without importing the package."""
    text = (ROOT / "attention_course" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([0-9][\w.]*)"$', text, re.MULTILINE)
    if not match:
        raise SystemExit('attention_course/__init__.py: no line __version__ = "X.Y.Z"')
    return match.group(1)


def configured() -> dict[str, str]:
    """``{"repo": "owner/name", "release": "v<version>"}``: the address from _config.yml, the release from the
    package's version."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]
    match = re.fullmatch(rf"https://github\.com/({GITHUB})/?", config["url"])
    if not match:
        raise SystemExit(f"_config.yml: repository.url must be https://github.com/<owner>/<name>; "
                         f"got {config['url']!r}")
    return {"repo": match.group(1), "release": f"v{version()}"}


def disagreements() -> list[str]:
    """Every address in a notebook that differs from the configured one, as ``file: found ≠ expected``."""
    where = configured()
    found = []
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        text = "\n".join("".join(cell["source"]) for cell in cells)
        for regex, template in PATTERNS.values():
            expected = template.format(**where)
            found += [f"{path.relative_to(ROOT)}: {m} ≠ {expected}" for m in regex.findall(text) if m != expected]
        if not PATTERNS["install"][0].search(text):
            found.append(f"{path.relative_to(ROOT)}: no Colab install cell (pip install git+https://github.com/...)")
    regex, template = PATTERNS["raw"]
    for path in MODULES:
        addresses = regex.findall(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(ROOT)}: {m} ≠ {template.format(**where)}" for m in addresses
                  if m != template.format(**where)]
        if not addresses:
            found.append(f"{path.relative_to(ROOT)}: no raw address (https://raw.githubusercontent.com/...)")
    return found


def rewrite() -> int:
    where, changed = configured(), 0
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            text = "".join(cell["source"])
            new = text
            for regex, template in PATTERNS.values():
                new = regex.sub(template.format(**where), new)
            if new != text:
                lines = new.split("\n")
                cell["source"] = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
                changed += 1
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    regex, template = PATTERNS["raw"]
    for path in MODULES:
        text = path.read_text(encoding="utf-8")
        new = regex.sub(template.format(**where), text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed += 1
    return changed


def main(argv: list[str]) -> int:
    if "--check" in argv:
        wrong = disagreements()
        print("\n".join(wrong) or f"every notebook points at {configured()['repo']} ({configured()['release']})")
        return 1 if wrong else 0
    print(f"rewrote {rewrite()} cells and modules from _config.yml and the package's version")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
