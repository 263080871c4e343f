#!/usr/bin/env python3
"""Install the book's pinned third-party JavaScript and copy what the book serves into _static/vendor.

    python tools/vendor_static.py            # npm ci if needed, then copy
    python tools/vendor_static.py --check    # only verify that book/_static/vendor is complete

The versions are pinned in package.json / package-lock.json (repository root).  ``npm ci`` runs only
when node_modules is missing or was installed from a different package-lock.json.  Nothing under
node_modules/ or book/_static/vendor/ is committed.

Layout of book/_static/vendor/ (paths used by _config.yml and book/_static/widgets-config.js):

    vega.min.js, vega-lite.min.js, vega-embed.min.js   loaded on every page, before require.js
    require.js                                         RequireJS, for the ipywidgets embed manager
    jupyter-widgets/embed-amd.js                       @jupyter-widgets/html-manager (bundles base,
    jupyter-widgets/*.woff2                            controls and output) + its Font Awesome fonts
    jupyter-widgets/cdn/                               where third-party widget modules would go
    mathjax/                                           tex-chtml.js and what it loads lazily
    LICENSES/                                          the licences of everything above
    VERSIONS.json                                      what was copied, from which package version
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODE_MODULES = ROOT / "node_modules"
VENDOR = ROOT / "book" / "_static" / "vendor"
STAMP = NODE_MODULES / ".attention-course-lock.sha256"

NPM_MISSING = """\
npm was not found on PATH. The book serves its JavaScript (Vega, MathJax, ipywidgets) from local
copies that are installed from the npm registry at build time. Install Node.js 18 or newer with npm:
  Debian/Ubuntu:  sudo apt-get install nodejs npm
  macOS:          brew install node
  Windows:        winget install OpenJS.NodeJS.LTS
  or see https://nodejs.org/en/download
then run `make book` (or `python tools/vendor_static.py`) again."""

# (package, source path inside the package, destination inside VENDOR); a directory source is
# copied recursively, keeping only files whose names match `pattern` when one is given.
FILES: list[tuple[str, str, str]] = [
    ("vega", "build/vega.min.js", "vega.min.js"),
    ("vega-lite", "build/vega-lite.min.js", "vega-lite.min.js"),
    ("vega-embed", "build/vega-embed.min.js", "vega-embed.min.js"),
    ("requirejs", "require.js", "require.js"),
    ("@jupyter-widgets/html-manager", "dist/embed-amd.js", "jupyter-widgets/embed-amd.js"),
    ("mathjax", "es5/tex-chtml.js", "mathjax/tex-chtml.js"),
]
TREES: list[tuple[str, str, str, str]] = [
    # Font Awesome 5 fonts that embed-amd.js references relative to its own URL (modern browsers
    # take the woff2 variant first; eot/ttf/svg are for browsers nobody uses any more).
    ("@jupyter-widgets/html-manager", "dist", "jupyter-widgets", "*.woff2"),
    # MathJax: what tex-chtml loads lazily: TeX extensions (\require, autoload of e.g. \color,
    # \cancel, mhchem), the CommonHTML web fonts, the context menu and the accessibility tools
    # (assistive MathML, explorer, speech rule engine with English and Nemeth rules).
    ("mathjax", "es5/input/tex/extensions", "mathjax/input/tex/extensions", "*.js"),
    ("mathjax", "es5/output/chtml/fonts/woff-v2", "mathjax/output/chtml/fonts/woff-v2", "*.woff"),
    ("mathjax", "es5/ui", "mathjax/ui", "*.js"),
    ("mathjax", "es5/a11y", "mathjax/a11y", "*.js"),
    ("mathjax", "es5/sre/mathmaps", "mathjax/sre/mathmaps", "base.json"),
    ("mathjax", "es5/sre/mathmaps", "mathjax/sre/mathmaps", "en.json"),
    ("mathjax", "es5/sre/mathmaps", "mathjax/sre/mathmaps", "nemeth.json"),
]
LICENSE_NAMES = ("LICENSE", "LICENSE.txt", "LICENSE.md", "LICENCE", "license")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _pinned() -> dict[str, str]:
    return json.loads((ROOT / "package.json").read_text(encoding="utf-8"))["dependencies"]


def _installed_version(package: str) -> str | None:
    manifest = NODE_MODULES / package / "package.json"
    if not manifest.is_file():
        return None
    return json.loads(manifest.read_text(encoding="utf-8")).get("version")


def _needs_install() -> str | None:
    """Why node_modules must be (re)installed, or None when it is up to date."""
    if not (ROOT / "package-lock.json").is_file():
        sys.exit("vendor_static: package-lock.json is missing; it pins the book's JavaScript. Restore it "
                 "from git, or regenerate it with `npm install --package-lock-only --ignore-scripts`.")
    if not NODE_MODULES.is_dir():
        return "node_modules/ is missing"
    if not STAMP.is_file() or STAMP.read_text().strip() != _sha256(ROOT / "package-lock.json"):
        return "package-lock.json changed since the last install"
    for package, version in _pinned().items():
        found = _installed_version(package)
        if found != version:
            return f"{package} is {found or 'not installed'}, package.json pins {version}"
    return None


def npm_ci() -> None:
    npm = shutil.which("npm")
    if npm is None:
        sys.exit(NPM_MISSING)
    cmd = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
    print("vendor_static:", " ".join(cmd[1:]), flush=True)
    result = subprocess.run(cmd, cwd=ROOT)
    if result.returncode != 0:
        sys.exit(
            f"vendor_static: `npm ci` failed (exit {result.returncode}). It needs the npm registry "
            "(https://registry.npmjs.org or the one configured in .npmrc) to be reachable once; "
            "afterwards the book builds offline."
        )
    STAMP.write_text(_sha256(ROOT / "package-lock.json") + "\n")


def _copy(src: Path, dst: Path) -> int:
    if not src.is_file():
        sys.exit(f"vendor_static: {src.relative_to(ROOT)} is missing; delete node_modules/ and retry")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst.stat().st_size


def _license(package: str) -> Path | None:
    """The package's licence file, if it ships one."""
    for name in LICENSE_NAMES:
        candidate = NODE_MODULES / package / name
        if candidate.is_file():
            return candidate
    return None


def vendor() -> Path:
    """Copy the served files into a fresh VENDOR directory; return it."""
    staging = VENDOR.with_name(VENDOR.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    total = 0
    for package, src, dst in FILES:
        total += _copy(NODE_MODULES / package / src, staging / dst)
    for package, src, dst, pattern in TREES:
        files = sorted(p for p in (NODE_MODULES / package / src).rglob(pattern) if p.is_file())
        if not files:
            sys.exit(f"vendor_static: nothing matches {package}/{src}/**/{pattern}")
        for path in files:
            rel = path.relative_to(NODE_MODULES / package / src)
            total += _copy(path, staging / dst / rel)
    # Third-party widget modules (not used by the course yet) would be served from here; see
    # book/_static/widgets-config.js.  Core ipywidgets are bundled in embed-amd.js.
    (staging / "jupyter-widgets" / "cdn").mkdir(parents=True, exist_ok=True)
    (staging / "jupyter-widgets" / "cdn" / "README.txt").write_text(
        "Put AMD builds of third-party Jupyter widget libraries here as\n"
        "<package>@<version>/dist/index.js so that the offline book can load them.\n"
    )
    packages = sorted({p for p, *_ in FILES} | {p for p, *_ in TREES})
    (staging / "LICENSES").mkdir()
    for package in packages:
        target = staging / "LICENSES" / (package.lstrip("@").replace("/", "__") + ".txt")
        lic = _license(package)
        if lic is not None:
            _copy(lic, target)
            continue
        # Some packages (requirejs, @jupyter-widgets/html-manager) ship no licence file: record the
        # SPDX identifier from package.json and where the full text is.
        meta = json.loads((NODE_MODULES / package / "package.json").read_text(encoding="utf-8"))
        repo = meta.get("repository")
        repo = repo.get("url", "") if isinstance(repo, dict) else (repo or "")
        target.write_text(
            f"{package}@{meta.get('version')} is distributed under the {meta.get('license')} licence.\n"
            f"The package ships no licence file; see {meta.get('homepage') or repo}.\n"
        )
    versions = {p: _installed_version(p) for p in packages}
    (staging / "VERSIONS.json").write_text(json.dumps(versions, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(VENDOR, ignore_errors=True)
    staging.rename(VENDOR)
    size = sum(p.stat().st_size for p in VENDOR.rglob("*") if p.is_file())
    print(f"vendor_static: {VENDOR.relative_to(ROOT)} ready, {size / 2**20:.1f} MiB "
          f"({', '.join(f'{k} {v}' for k, v in versions.items())})")
    return VENDOR


def check() -> list[str]:
    """Paths the book needs that are missing from VENDOR (empty when complete and current)."""
    missing = [dst for _, _, dst in FILES if not (VENDOR / dst).is_file()]
    manifest = VENDOR / "VERSIONS.json"
    if not manifest.is_file():
        return [*missing, "VERSIONS.json"]
    recorded = json.loads(manifest.read_text())
    for package, version in _pinned().items():
        if recorded.get(package) != version:
            missing.append(f"{package}@{version} (vendored: {recorded.get(package)})")
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check book/_static/vendor")
    parser.add_argument("--force", action="store_true", help="run npm ci even if node_modules is current")
    args = parser.parse_args(argv)
    if args.check:
        missing = check()
        if missing:
            print("vendor_static: out of date or incomplete, run `python tools/vendor_static.py`:",
                  *missing, sep="\n  ")
            return 1
        print("vendor_static: book/_static/vendor is complete")
        return 0
    reason = "--force" if args.force else _needs_install()
    if reason:
        print(f"vendor_static: installing JavaScript packages ({reason})")
        npm_ci()
    vendor()
    return 0


if __name__ == "__main__":
    sys.exit(main())
