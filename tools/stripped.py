"""Fail when a chapter notebook is stored with outputs or execution counts (they are built, never committed).

    python tools/stripped.py [--fix]     # --fix strips them in place, as nbstripout would
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def dirty_cells(nb: dict) -> list[int]:
    return [i for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "code"
            and (cell.get("outputs") or cell.get("execution_count") is not None)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fix", action="store_true", help="strip outputs and execution counts in place")
    args = parser.parse_args(argv)
    bad = []
    for path in sorted((ROOT / "book").glob("**/*.ipynb")):
        if "_build" in path.parts:
            continue
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = dirty_cells(nb)
        if cells and args.fix:
            for i in cells:
                nb["cells"][i]["outputs"], nb["cells"][i]["execution_count"] = [], None
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        elif cells:
            bad.append(f"{path.relative_to(ROOT)}: outputs in cells {cells[:8]}")
    print("\n".join(bad) if bad else "notebooks are stored without outputs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
