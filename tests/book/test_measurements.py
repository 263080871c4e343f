"""The appendix "Results and measurements" is what the committed measurement files say."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_measurements_page_is_written_from_the_committed_files():
    done = subprocess.run([sys.executable, "tools/measurements.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_chapter_has_its_quick_profile_measured_and_within_the_limits():
    rows = json.loads((ROOT / "book" / "measurements.json").read_text(encoding="utf-8"))["quick_profile"]["rows"]
    chapters = sorted(p.parent.name for p in (ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))
    assert [r["chapter"].split(".")[0].zfill(2) for r in rows] == [c[:2] for c in chapters]
    # under the 1.8 GB aim, or the row says it is above it (the page shows it; the aim stays an open issue)
    over = [r for r in rows if r["peak_mb"] >= 1800 and "above the 1.8 GB aim" not in r["note"]]
    assert not over, over
    assert all(r["peak_mb"] < 2000 for r in rows), rows          # Binder's limit: about 2 GB


def test_the_page_is_in_the_book():
    assert "book/measurements" in (ROOT / "_toc.yml").read_text(encoding="utf-8")
