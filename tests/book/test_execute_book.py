"""``make book`` runs the notebooks the execution cache lacks, several at a time, before the build renders them
(``tools/execute_book.py``): the table of contents gives the notebooks, a notebook already cached is not run
again, one that ran is cached, and one that fails is left for the build to report."""

import os
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools import chapter_times, execute_book, notebook_cache  # noqa: E402


def test_the_table_of_contents_gives_every_chapter_notebook_in_order():
    found = execute_book.notebooks(ROOT)
    pages = sorted((ROOT / "book").glob("[0-9][0-9]-*/*.ipynb"),              # a chapter's pages in their order
                   key=lambda p: (p.parent.name, nbformat.read(p, as_version=4).metadata["course"].get("part", 1)))
    assert found == [p.resolve() for p in pages]


def test_the_plan_starts_with_the_longest_notebook_and_ends_no_later_than_longest_first():
    import json

    found = execute_book.notebooks(ROOT)
    order = execute_book.planned(found, 2)
    assert sorted(order) == sorted(found), "every notebook, once"
    rows = json.loads((ROOT / "book" / "measurements.json").read_text(encoding="utf-8"))["book_build"]["rows"]
    longest = chapter_times.row_page(max(rows, key=lambda row: row["time_s"]))
    assert chapter_times.page_key(nbformat.read(order[0], as_version=4)) == longest
    planned = [execute_book.measured_seconds(p) for p in order]      # the committed estimates, simulated
    assert execute_book.finish(planned, 2) <= execute_book.finish(sorted(planned, reverse=True), 2)  # not timed


def test_kernels_take_the_next_notebook_when_free():
    assert execute_book.finish([5, 3, 3], 2) == 6                    # 5 | 3 + 3
    assert execute_book.finish([3, 3, 2, 2, 2], 2) == 7              # 3 + 2 + 2 | 3 + 2
    assert execute_book.finish([3, 2, 2, 3, 2], 2) == 6              # 3 + 3 | 2 + 2 + 2
    assert execute_book.finish([4, 4], 1) == 8


def test_the_plan_ends_the_kernels_together_where_longest_first_does_not(tmp_path, monkeypatch):
    book = _book(tmp_path / "book", "1", "2", "3", "4", "5")
    paths = [book / f"nb{i}.ipynb" for i in range(5)]
    times = dict(zip(paths, [3, 2, 3, 2, 2], strict=True))
    monkeypatch.setattr(execute_book, "measured_seconds", times.get)
    order = execute_book.planned(paths, 2)
    assert [times[p] for p in order][:1] == [3] and execute_book.finish([times[p] for p in order], 2) == 6
    assert execute_book.finish(sorted(times.values(), reverse=True), 2) == 7


def test_a_notebook_without_a_measured_time_runs_first(tmp_path):
    book = _book(tmp_path / "book", "1", "2")
    nb = nbformat.read(ROOT / "book" / "01-sequence-models" / "sequence-models.ipynb", as_version=4)
    measured = book / "nb0.ipynb"
    first = nbformat.read(measured, as_version=4)
    first.metadata["course"] = nb.metadata["course"]                      # Chapter 1's row
    nbformat.write(first, measured)
    assert execute_book.measured_seconds(measured) is not None
    assert execute_book.measured_seconds(book / "nb1.ipynb") is None
    assert execute_book.planned([measured, book / "nb1.ipynb"], 2) == [book / "nb1.ipynb", measured]


def _book(tmp_path: Path, *sources: str) -> Path:
    tmp_path.mkdir()
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n" + "".join(
        f"  - file: nb{i}\n" for i in range(len(sources))))
    for i, code in enumerate(sources):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, tmp_path / f"nb{i}.ipynb")
    return tmp_path


def test_a_run_notebook_is_cached_and_not_run_again_and_a_failed_one_is_left_to_the_build(tmp_path, monkeypatch,
                                                                                           capfd):
    pytest.importorskip("nbclient")
    monkeypatch.setattr(notebook_cache, "CACHE_ROOT", tmp_path / "cache")
    book = _book(tmp_path / "book", "print(6 * 7)", "raise ValueError('broken on purpose')")
    (book / "intro.md").write_text("# intro\n")
    paths = execute_book.notebooks(book)
    assert [p.name for p in paths] == ["nb0.ipynb", "nb1.ipynb"]
    assert execute_book.stale(paths) == paths                      # an empty cache: both to run
    for path in paths:                          # in this process (the pool's workers would not see the patch)
        execute_book.execute(path)
    assert execute_book.stale(paths) == [paths[1]], "the notebook that ran is cached; the failed one is not"
    if os.name == "posix":          # the kernels' own output (they write to this process's stderr): no TCP warning
        assert "without encryption" not in capfd.readouterr().err
    monkeypatch.setenv("BOOK_JOBS", "1")
    assert execute_book.jobs(5) == 1 and execute_book.jobs(0) == 1
    monkeypatch.setenv("BOOK_JOBS", "8")
    assert execute_book.jobs(3) == 3, "never more kernels than notebooks"


def _stubbed_make_book(tmp_path: Path, vendor_status: int):
    """``make book`` with the commands it runs replaced by stubs that log what they do: the JavaScript's install
    (``vendor_static.py``) waits until the notebooks have started, and the notebooks until it has started, so a
    recipe that ran one after the other would fail here."""
    import subprocess

    venv, log = tmp_path / "venv", tmp_path / "log"
    (venv / "bin").mkdir(parents=True)
    wait_for = 'for i in $(seq 100); do grep -q "$1" "$LOG" && return 0; sleep 0.05; done; return 1'
    stubs = {
        "python": f"""w() {{ {wait_for}; }}
case "$1" in
  tools/vendor_static.py) echo vendor-started >> "$LOG"; w notebooks-started || exit 3; exit "$VENDOR_STATUS" ;;
  tools/execute_book.py) echo notebooks-started >> "$LOG"; w vendor-started || exit 3; echo notebooks-done >> "$LOG" ;;
  *) echo "python $*" >> "$LOG" ;;
esac""",
        "jupyter-book": 'echo render >> "$LOG"',
        "npm": "true",
    }
    for name, body in stubs.items():
        stub = venv / "bin" / name
        stub.write_text(f"#!/usr/bin/env bash\n{body}\n")
        stub.chmod(0o755)
    (venv / ".installed").touch()                        # the environment is there: make does not install it
    env = {**os.environ, "LOG": str(log), "VENDOR_STATUS": str(vendor_status),
           "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "book", f"VENV={venv}",
                           f"BOOK_SOURCE={tmp_path}"], env=env, capture_output=True, text=True, timeout=120)
    return done, log.read_text().split() if log.exists() else []


@pytest.mark.skipif(os.name != "posix", reason="make and bash stubs")
def test_make_book_installs_the_javascript_while_the_notebooks_run_and_renders_after_both(tmp_path):
    done, log = _stubbed_make_book(tmp_path, vendor_status=0)
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(log[:2]) == {"vendor-started", "notebooks-started"} and log[-1] == "render", log


@pytest.mark.skipif(os.name != "posix", reason="make and bash stubs")
def test_make_book_stops_before_rendering_when_the_javascript_does_not_install(tmp_path):
    done, log = _stubbed_make_book(tmp_path, vendor_status=1)
    assert done.returncode != 0 and "notebooks-done" in log and "render" not in log, (log, done.stderr)
