"""The appendix "Results and measurements" is what the committed measurement files say."""
import json
import subprocess
import sys
from pathlib import Path

from tools import chapter_times

ROOT = Path(__file__).resolve().parents[2]


def test_the_measurements_page_is_written_from_the_committed_files():
    done = subprocess.run([sys.executable, "tools/measurements.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_chapter_has_its_quick_profile_measured_and_within_the_limits():
    rows = json.loads((ROOT / "book" / "measurements.json").read_text(encoding="utf-8"))["quick_profile"]["rows"]
    chapters = sorted(p.parent.name for p in (ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))
    assert [r["chapter"].split(".")[0].zfill(2) for r in rows] == [c[:2] for c in chapters]
    over = [r for r in rows if r["peak_mb"] >= 1800]              # the aim: under 1.8 GB (Binder gives about 2)
    assert not over, over


def test_every_time_the_book_tells_is_the_committed_one():
    """The chapters' boxes, their metadata, the introduction's table and the README's say what
    book/measurements.json says (tools/chapter_times.py writes them)."""
    done = subprocess.run([sys.executable, "tools/chapter_times.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_chapter_is_measured_on_one_cpu_in_each_framework():
    m = json.loads((ROOT / "book" / "measurements.json").read_text(encoding="utf-8"))
    rows = m["one_cpu"]["rows"]
    chapters = sorted(p.parent.name for p in (ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))
    assert [r["chapter"].split(".")[0].zfill(2) for r in rows] == [c[:2] for c in chapters]
    assert all(r[f"{fw}_s"] > 0 and r[f"{fw}_peak_mb"] > 0 for r in rows for fw in ("pytorch", "keras")), rows
    pages = [chapter_times.page_key(json.loads(p.read_text(encoding="utf-8")))
             for p in sorted((ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))]
    assert sorted(m["chapter_times"]["chapters"], key=float) == sorted(pages, key=float)   # "11", "11.2": a page each


def test_every_page_has_its_time_in_the_book_build():
    """`tools/execute_book.py` plans the order of the notebooks on these times; a page without one runs first."""
    rows = json.loads((ROOT / "book" / "measurements.json").read_text(encoding="utf-8"))["book_build"]["rows"]
    pages = [chapter_times.page_key(json.loads(p.read_text(encoding="utf-8")))
             for p in sorted((ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"))]
    assert sorted(chapter_times.row_page(r) for r in rows) == sorted(pages)
    assert all(r["time_s"] > 0 for r in rows), rows


def test_the_page_is_in_the_book():
    assert "book/measurements" in (ROOT / "_toc.yml").read_text(encoding="utf-8")


def test_every_page_ran_on_binders_share_inside_a_1200_mb_limit():
    """The committed one-CPU runs inside a container's memory limit (`tools/run_notebook.py --memory-limit 1200`):
    every page, in each framework, ran to the end."""
    rows = json.loads((ROOT / "book" / "measurements.json").read_text(encoding="utf-8"))["one_cpu"]["rows"]
    for row in rows:
        for fw in ("pytorch", "keras"):
            limited = row[f"{fw}_limit"]
            assert limited["limit_mb"] == 1200 and limited["ok"], (row["chapter"], fw, limited)
            assert limited["container_peak_mb"] <= limited["limit_mb"], (row["chapter"], fw, limited)


def test_a_kernel_told_to_run_one_framework_held_only_that_one():
    """The committed one-CPU runs say which frameworks each kernel imported (`tools/run_notebook.py`'s ``loaded``):
    its own, and no other, except on Chapter 9's page, whose check against the reference implementation of BERT
    (Hugging Face's, in PyTorch) runs in either framework."""
    reference_in_pytorch = {"9"}
    rows = json.loads((ROOT / "book" / "measurements.json").read_text(encoding="utf-8"))["one_cpu"]["rows"]
    for row in rows:
        page = row["chapter"].split(" ")[0].rstrip(".")
        for fw in ("pytorch", "keras"):
            allowed = {fw, "pytorch"} if page in reference_in_pytorch else {fw}
            assert fw in row[f"{fw}_loaded"] and set(row[f"{fw}_loaded"]) <= allowed, (row["chapter"], fw, row)


def test_the_box_says_which_framework_did_not_run_inside_the_limit():
    ran = {"limit_mb": 1200, "ok": True, "container_peak_mb": 900, "peak_rss_mb": 700}
    assert chapter_times._within({"pytorch": ran, "keras": ran}) == \
        ", and each runs to the end within a 1,200 MB memory limit"
    assert "Keras does not run to the end" in chapter_times._within({"pytorch": ran, "keras": {**ran, "ok": False}})
    assert chapter_times._within({"pytorch": ran, "keras": None}) == ""        # not measured: the box says nothing


def test_each_timed_comparison_says_when_it_was_measured(tmp_path):
    # a machine's file keeps the cases of earlier runs: each case names its own date, the header the file's last
    from tools import measurements

    row = {"framework": "keras", "kind": "cache", "steps": 8, "median_ms": 25.5, "q1_ms": 24.0, "q3_ms": 27.0,
           "runs": 7}
    path = tmp_path / "cpu-2-example.json"
    path.write_text(json.dumps({"name": "cpu-2-example", "machine": {"cpu": "Example", "cores": 2, "torch_threads": 1,
                                                                     "date": "2026-11-29"},
                                "versions": {"keras": "3"}, "repeats": 7,
                                "measured": {"ch8-kvcache": "2026-11-29", "train-step": "2026-11-26"},
                                "cases": {"train-step": [{**row, "kind": "ch5-bahdanau"}], "ch8-kvcache": [row]}}))
    lines = measurements._bench_section(path)
    assert lines[0] == "### 2-core Example, PyTorch on 1 thread" and "last written on 2026-11-29" in lines[2]
    headings = [line for line in lines[3:] if line.startswith("**")]           # after the machine's "How" line
    assert headings == ["**Chapter 8: decoding with and without the key–value cache** (`ch8-kvcache`, measured "
                        "2026-11-29)",
                        "**Chapters 5, 6, 8 and 9: one training step of each chapter's model at its quick size** "
                        "(`train-step`, measured 2026-11-26)"]
    assert "| keras | cache | 8 | 25.5 |" in lines


def test_the_boxes_round_half_a_minute_up():
    # 150 s is "3 min", as a reader rounds (Python's round() would say 2); never "0 min"
    assert [chapter_times._minutes(s) for s in (10, 89, 90, 149, 150, 151)] == [1, 1, 2, 2, 3, 3]


def test_the_page_is_a_reference_not_a_log():
    """Every table sits under one line that says how it was measured, and no row tells its own history: a number a
    new measurement replaced is in ``earlier``, which the page folds away at its end."""
    import re

    from tools import measurements

    page = measurements.render()
    main, _, earlier = page.partition("\n## Earlier measurements\n")
    assert "{admonition}" in earlier and ":class: dropdown" in earlier
    for section in re.split(r"^#{2,3} ", main, flags=re.M)[1:]:
        title = section.splitlines()[0]
        if "\n|---" in section and title not in ("The machines", "What the memory numbers count"):
            assert "**How it was measured.**" in section, title
    assert not re.search(r"\(before\b|\bbefore:|\bearlier,|unless a row says otherwise", main)
