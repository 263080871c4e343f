"""Open every page of the built book in headless Chromium, with the network cut off.

Run after ``make book``::

    pytest -m browser tests/test_book_browser.py

The book is read from ``_build/html`` (override with ``COURSE_BOOK_HTML``) and served on 127.0.0.1.
Every request to another host is aborted and recorded.  For every page this checks: no console
errors or uncaught exceptions, no blocked or failed requests, every ``.course-vega`` chart drawn
(an SVG with marks, or a canvas), every formula typeset by MathJax, every widget view rendered; on
pages with Keras/PyTorch tabs, that a tab click switches every tab set and that the choice carries
over to the next page.  A per-page summary is printed (and written to ``browser-summary.txt`` next
to the book).  ``COURSE_BROWSER_TIMEOUT_MS`` bounds each wait (default 30000).
"""

from __future__ import annotations

import functools
import gzip
import http.server
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = int(os.environ.get("COURSE_BROWSER_TIMEOUT_MS", "30000"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SKIP_PAGES = {"search.html", "genindex.html", "py-modindex.html"}
STORAGE_KEY = "course-framework"

# --------------------------------------------------------------------------------------------
# JavaScript run in the page
# --------------------------------------------------------------------------------------------

CHARTS_SETTLED = """() => Array.from(document.querySelectorAll('.course-vega')).every(
    el => el.classList.contains('course-vega-error')
       || el.querySelector('svg g.role-mark > *, canvas'))"""

CHARTS_STATE = """() => Array.from(document.querySelectorAll('.course-vega')).map(el => ({
    id: el.id,
    label: el.getAttribute('aria-label') || '',
    error: el.classList.contains('course-vega-error') ? el.textContent : null,
    marks: el.querySelectorAll('svg g.role-mark > *').length,
    canvas: Array.from(el.querySelectorAll('canvas')).some(c => c.width > 0 && c.height > 0),
    selects: el.querySelectorAll('.vega-bindings select').length,
}))"""

MATH_STATE = """async () => {
    const math = Array.from(document.querySelectorAll('.math'));
    if (math.length && window.MathJax && MathJax.startup && MathJax.startup.promise) {
        await MathJax.startup.promise;
    }
    return {
        math: math.length,
        typeset: math.filter(el => el.querySelector('mjx-container')).length,
        containers: document.querySelectorAll('mjx-container').length,
        errors: Array.from(document.querySelectorAll('mjx-merror')).map(e => e.textContent),
        mathjax: !!(window.MathJax && MathJax.startup),
    };
}"""

MATH_READY = """() => {
    if (!document.querySelector('.math')) return true;
    return !!(window.MathJax && MathJax.startup && MathJax.startup.promise
              && document.querySelector('mjx-container'));
}"""

WIDGETS_READY = """() => {
    const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
    return Array.from(views).every(v => {
        const sub = v.previousElementSibling;
        return sub && sub.classList.contains('widget-subarea') && sub.children.length > 0;
    });
}"""

WIDGETS_STATE = """() => {
    const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
    const rendered = Array.from(views).filter(v => {
        const sub = v.previousElementSibling;
        return sub && sub.classList.contains('widget-subarea')
            && sub.querySelector('.jupyter-widgets, [class*="widget-"]');
    });
    return {views: views.length, rendered: rendered.length};
}"""

TABS_STATE = """() => Array.from(document.querySelectorAll('.framework-tabs')).map(set => ({
    selected: Array.from(set.querySelectorAll('[role="tab"][aria-selected="true"]'))
        .map(t => t.dataset.framework),
    visible: Array.from(set.querySelectorAll(':scope > [role="tabpanel"]'))
        .filter(p => !p.hidden && p.offsetParent !== null).map(p => p.dataset.framework),
    tabs: Array.from(set.querySelectorAll('[role="tab"]')).map(t => t.dataset.framework),
}))"""

# What spoils the reading: raw floats in the prose (more than 4 decimals), code lines wider than their block, and
# tables, charts or display equations wider than the column that do not scroll inside it on purpose.
READING = r"""() => {
  const article = document.querySelector('article.bd-article') || document.body;
  const column = article.getBoundingClientRect();
  const out = {raw: [], code: [], tables: [], charts: [], math: [], column: Math.round(column.width)};
  const notProse = '.cell_output, .cell_input, pre, .highlight, mjx-container, script, style, .vega-embed';
  for (const el of article.querySelectorAll('p, li, td, th, dd, h1, h2, h3, h4, .admonition-title')) {
    if (el.closest(notProse)) continue;
    const text = el.innerText || '';
    for (const m of text.matchAll(/\d+\.\d{5,}/g)) {
      out.raw.push(text.slice(Math.max(0, m.index - 40), m.index + m[0].length + 10));
    }
  }
  // the tables a cell prints are read as well: no number with six significant digits or more, no long scientific
  // notation, no run of trailing zeros, no count printed as a float ("0.375008", "1.788139e-07", "64.00000", "7436.0")
  out.cells = [];
  const raw = text => {
    if (/\d\.\d{4,}e[-+]?\d/.test(text) || /\.\d*0000$/.test(text) || /^-?\d{4,}\.0$/.test(text)) return true;
    const m = text.match(/(\d+)\.(\d+)/);
    return !!m && (m[1] + m[2]).replace(/^0+/, '').length >= 6;
  };
  for (const el of article.querySelectorAll('.cell_output table td, .cell_output table th')) {
    const text = (el.innerText || '').trim();
    if (raw(text)) out.cells.push(text.slice(0, 40));
  }
  // a wide element is fine inside a box of the column's width that scrolls sideways on purpose
  const scrolls = el => {
    for (let a = el; a && a !== article; a = a.parentElement) {
      const s = getComputedStyle(a).overflowX;
      if ((s === 'auto' || s === 'scroll') && a.clientWidth <= article.clientWidth + 1) return true;
    }
    return false;
  };
  const beyond = el => el.getBoundingClientRect().right > column.right + 1;
  for (const pre of article.querySelectorAll('div.cell_input pre, div.highlight pre')) {
    if (pre.scrollWidth > pre.clientWidth + 1) {
      out.code.push((pre.innerText.split('\n').find(l => l.length > 60) || pre.innerText).slice(0, 80));
    }
  }
  for (const t of article.querySelectorAll('table')) {
    if ((beyond(t) || t.scrollWidth > t.clientWidth + 1) && !scrolls(t)) {
      out.tables.push((t.innerText || '').slice(0, 60));
    }
  }
  // a chart must fit: scrolling sideways to see the rest of a chart does not count
  for (const c of article.querySelectorAll('.course-vega')) {
    const drawing = c.querySelector('svg, canvas') || c;
    const wide = drawing.getBoundingClientRect().width > c.clientWidth + 1;
    if (beyond(drawing) || wide) out.charts.push(c.id || 'a chart');
  }
  // a framework cell's code is highlighted beyond its %%keras / %%pytorch line
  out.plain = Array.from(article.querySelectorAll('div.cell.tag_keras, div.cell.tag_pytorch'))
    .map(cell => cell.querySelector('div.cell_input pre'))
    .filter(pre => pre && pre.querySelectorAll('span.n, span.nc, span.nf, span.mi, span.s2, span.s1').length === 0)
    .map(pre => pre.innerText.split('\n').slice(0, 2).join(' ').slice(0, 60));
  out.exercises = Array.from(article.querySelectorAll('.exercise .caption-number'), el => el.textContent.trim());
  for (const m of article.querySelectorAll('mjx-container[display="true"]')) {
    if (beyond(m) && !scrolls(m)) out.math.push(m.textContent.slice(0, 40) || 'an equation');
  }
  return out;
}"""
TWO_FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"


# --------------------------------------------------------------------------------------------
# Fixtures: the built book, a local server, Chromium with the network cut off
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def book_dir() -> Path:
    path = Path(os.environ.get("COURSE_BOOK_HTML", ROOT / "_build" / "html")).resolve()
    if not (path / "index.html").is_file() and not any(path.glob("**/*.html")):
        pytest.fail(
            f"The book is not built: no HTML pages under {path}. Run `make book` first "
            "(or set COURSE_BOOK_HTML to the folder holding the built HTML)."
        )
    return path


def _is_redirect(path: Path) -> bool:
    head = path.read_text(encoding="utf-8", errors="replace")[:2000].lower()
    return 'http-equiv="refresh"' in head


def discover_pages(book: Path) -> list[str]:
    """Relative URLs of the book's content pages (not search, index or redirect pages)."""
    pages = []
    for path in sorted(book.rglob("*.html")):
        rel = path.relative_to(book)
        if rel.parts[0].startswith("_") or rel.name in SKIP_PAGES or _is_redirect(path):
            continue
        pages.append(rel.as_posix())
    return pages


COMPRESSED = (".html", ".js", ".css", ".json", ".svg", ".txt", ".map")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the book as a web host does: text files gzip-compressed when the browser asks for it, so the bytes
    a page loads are the bytes a reader downloads."""

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if not (path.suffix in COMPRESSED and path.is_file() and "gzip" in self.headers.get("Accept-Encoding", "")):
            return super().do_GET()
        body = gzip.compress(path.read_bytes(), compresslevel=6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server(book_dir: Path):
    handler = functools.partial(_QuietHandler, directory=str(book_dir))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


SYSTEM_BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover
        pytest.fail("The `playwright` Python package is missing: pip install -r requirements.txt")
    with sync_playwright() as p:
        # The system's Chromium first (Playwright's own download is not always possible); else a
        # browser that `playwright install chromium` put in place.
        executable = next((shutil.which(name) for name in SYSTEM_BROWSERS if shutil.which(name)), None)
        if executable is None and Path(p.chromium.executable_path).is_file():
            executable = p.chromium.executable_path
        if executable is None:
            pytest.fail(
                "Chromium is not installed: the browser test needs the system's `chromium`. "
                "Install it with `sudo apt-get install chromium` (Debian/Ubuntu; `make system` "
                "does this), or run `.venv/bin/playwright install chromium`."
            )
        b = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Offline:
    """A browser context whose requests may only go to 127.0.0.1; others are aborted and recorded."""

    def __init__(self, browser, width: int = 1280, height: int = 900):
        self.blocked: list[str] = []
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.context.set_default_timeout(TIMEOUT_MS)
        self.context.route("**/*", self._route)

    def _route(self, route):
        url = route.request.url
        host = urlparse(url).hostname
        if host == "127.0.0.1":
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def close(self):
        self.context.close()


@dataclass
class PageReport:
    url: str
    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    charts: list[dict] = field(default_factory=list)
    charts_settled: bool = True
    math: dict = field(default_factory=dict)
    math_ready: bool = True
    widgets: dict = field(default_factory=dict)
    widgets_ready: bool = True
    tab_sets: int = 0
    labels: int = 0
    tabs_problems: list[str] = field(default_factory=list)
    tabs_checked: str = ""
    reading: dict = field(default_factory=dict)
    loaded: dict[str, int] = field(default_factory=dict)   # URL path → bytes transferred

    @property
    def weight_mb(self) -> float:
        return sum(self.loaded.values()) / 1e6

    @property
    def charts_drawn(self) -> int:
        return sum(1 for c in self.charts if not c["error"] and (c["marks"] > 0 or c["canvas"]))

    def line(self) -> str:
        m = self.math
        w = self.widgets
        tabs = f"{self.tab_sets} tab sets" + (f" ({self.tabs_checked})" if self.tabs_checked else "")
        return (
            f"{self.url}: charts {self.charts_drawn}/{len(self.charts)} drawn; "
            f"math {m.get('typeset', 0)}/{m.get('math', 0)} typeset; {tabs}, {self.labels} labels; "
            f"widgets {w.get('rendered', 0)}/{w.get('views', 0)}; "
            f"console errors {len(self.console_errors)}; failed requests {len(self.failed_requests)}; "
            f"blocked requests {len(self.blocked)}; {self.weight_mb:.2f} MB loaded"
        )


def _wait(page, script: str) -> bool:
    try:
        page.wait_for_function(script, timeout=TIMEOUT_MS)
        return True
    except Exception:  # playwright TimeoutError; the state is reported by the caller
        return False


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + " [...]"


def _watch(page, report: PageReport) -> None:
    page.on("console", lambda msg: msg.type == "error" and report.console_errors.append(
        f"{_short(msg.text)} @ {msg.location.get('url', '')}:{msg.location.get('lineNumber', '')}"))
    page.on("pageerror", lambda exc: report.console_errors.append(f"uncaught: {_short(exc)}"))
    page.on("response", lambda r: r.status >= 400 and report.failed_requests.append(
        f"{r.status} {r.url}"))
    page.on("requestfailed", lambda r: urlparse(r.url).hostname == "127.0.0.1"
            and report.failed_requests.append(f"{r.failure} {r.url}"))
    page.on("requestfinished", lambda r: report.loaded.__setitem__(
        urlparse(r.url).path, report.loaded.get(urlparse(r.url).path, 0) + r.sizes()["responseBodySize"]))


def _check_tabs(page, report: PageReport) -> None:
    """Tab sets show the stored framework; clicking the other one switches all sets and stores it."""
    stored = page.evaluate(f"() => localStorage.getItem({STORAGE_KEY!r})") or "keras"
    sets = page.evaluate(TABS_STATE)
    for i, s in enumerate(sets):
        if s["selected"] != [stored] or s["visible"] != [stored]:
            report.tabs_problems.append(f"set {i} on load: expected {stored}, got {s}")
    target = "pytorch" if stored == "keras" else "keras"
    page.locator(f'.framework-tabs [role="tab"][data-framework="{target}"]').first.click()
    sets = page.evaluate(TABS_STATE)
    for i, s in enumerate(sets):
        if s["selected"] != [target] or s["visible"] != [target]:
            report.tabs_problems.append(f"set {i} after clicking {target}: {s}")
    now = page.evaluate(f"() => localStorage.getItem({STORAGE_KEY!r})")
    if now != target:
        report.tabs_problems.append(f"localStorage {STORAGE_KEY} is {now!r} after clicking {target}")
    report.tabs_checked = f"showed {stored}, switched to {target}"


def _exercise_bindings(page, report: PageReport) -> None:
    """Pick another option in every bound dropdown of a chart (interactive params keep working)."""
    selects = page.locator(".course-vega .vega-bindings select")
    for i in range(selects.count()):
        select = selects.nth(i)
        options = select.locator("option").all_inner_texts()
        if len(options) > 1:
            select.select_option(index=len(options) - 1, force=True)
    if selects.count():
        page.evaluate(TWO_FRAMES)
        page.evaluate(TWO_FRAMES)


def audit_page(context: Offline, base: str, rel: str) -> PageReport:
    report = PageReport(rel)
    first_blocked = len(context.blocked)
    page = context.context.new_page()
    _watch(page, report)
    try:
        page.goto(base + rel, wait_until="load")
        report.charts_settled = _wait(page, CHARTS_SETTLED)
        report.charts = page.evaluate(CHARTS_STATE)
        report.math_ready = _wait(page, MATH_READY)
        report.math = page.evaluate(MATH_STATE)
        report.widgets_ready = _wait(page, WIDGETS_READY)
        report.widgets = page.evaluate(WIDGETS_STATE)
        report.tab_sets = page.locator(".framework-tabs").count()
        report.labels = page.locator(".framework-label").count()
        if report.tab_sets:
            _check_tabs(page, report)
        report.reading = page.evaluate(READING)
        _exercise_bindings(page, report)
        page.evaluate(TWO_FRAMES)
    finally:
        page.close()
    report.blocked = context.blocked[first_blocked:]
    return report


@pytest.fixture(scope="module")
def pages(book_dir: Path) -> list[str]:
    found = discover_pages(book_dir)
    if not found:
        pytest.fail(f"No content pages found under {book_dir}; run `make book`.")
    return found


@pytest.fixture(scope="module")
def audit(request, browser, server, pages, book_dir) -> dict[str, PageReport]:
    """Visit every page once, in order, in one offline context (so the tab choice carries over)."""
    context = Offline(browser)
    try:
        reports = {rel: audit_page(context, server, rel) for rel in pages}
    finally:
        context.close()
    lines = ["Browser check of the built book (network off):"] + [r.line() for r in reports.values()]
    for r in reports.values():
        for kind, items in (("console error", r.console_errors), ("failed request", r.failed_requests),
                            ("blocked request", r.blocked), ("tabs", r.tabs_problems)):
            lines += [f"  {r.url}: {kind}: {item}" for item in items]
    text = "\n".join(lines)
    try:
        (book_dir / "browser-summary.txt").write_text(text + "\n", encoding="utf-8")
    except OSError:
        pass
    # print past pytest's output capture, so the summary shows in every run
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("")
            for line in lines:
                reporter.write_line(line)
    else:  # pragma: no cover
        print(text)
    return reports


def _fail_on(problems: list[str], what: str) -> None:
    if problems:
        pytest.fail(f"{what}:\n  " + "\n  ".join(problems[:50]), pytrace=False)


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


def test_no_requests_leave_the_machine(audit):
    _fail_on([f"{r.url}: {u}" for r in audit.values() for u in r.blocked],
             "Requests to other hosts (the book must work offline)")


def test_no_console_errors(audit):
    _fail_on([f"{r.url}: {e}" for r in audit.values() for e in r.console_errors],
             "Console errors or uncaught exceptions")


def test_no_failed_requests(audit):
    _fail_on([f"{r.url}: {e}" for r in audit.values() for e in r.failed_requests],
             "Local requests that failed (missing files?)")


def test_charts_are_drawn(audit):
    problems = []
    for r in audit.values():
        for c in r.charts:
            if c["error"] or not (c["marks"] or c["canvas"]):
                why = c["error"] or "no marks"
                problems.append(f"{r.url}: chart {c['id']} ({c['label']!r}) not drawn: {why}")
            if not c["label"]:
                problems.append(f"{r.url}: chart {c['id']} has no aria-label")
    _fail_on(problems, "Charts")


def test_math_is_typeset(audit):
    problems = []
    for r in audit.values():
        m = r.math
        if m.get("math"):
            if not m.get("mathjax"):
                problems.append(f"{r.url}: {m['math']} formulas but MathJax did not load")
            elif m["typeset"] < m["math"]:
                problems.append(f"{r.url}: only {m['typeset']} of {m['math']} formulas typeset")
            problems += [f"{r.url}: MathJax error: {e}" for e in m.get("errors", [])]
    _fail_on(problems, "Math")


def test_widgets_render(audit):
    _fail_on([f"{r.url}: {r.widgets['rendered']} of {r.widgets['views']} widget views rendered"
              for r in audit.values() if r.widgets.get("rendered", 0) < r.widgets.get("views", 0)],
             "Widgets")


def test_framework_tabs_switch_together(audit):
    _fail_on([f"{r.url}: {p}" for r in audit.values() for p in r.tabs_problems], "Framework tabs")


def test_framework_choice_persists_across_pages(browser, server, audit):
    with_tabs = [rel for rel, r in audit.items() if r.tab_sets]
    if not with_tabs:
        pytest.skip("no page of the book has Keras/PyTorch tabs")
    first = with_tabs[0]
    second = with_tabs[1] if len(with_tabs) > 1 else next((p for p in audit if p != first), first)
    context = Offline(browser)
    try:
        page = context.context.new_page()
        page.goto(server + first, wait_until="load")
        state = page.evaluate(TABS_STATE)
        assert all(s["visible"] == ["keras"] for s in state), f"default should be Keras: {state}"
        tab = page.locator('.framework-tabs [role="tab"][data-framework="pytorch"]').first
        tab.click()
        state = page.evaluate(TABS_STATE)
        assert all(s["visible"] == ["pytorch"] and s["selected"] == ["pytorch"] for s in state), state
        # keyboard: the selected tab is focusable, arrows move the selection
        assert tab.get_attribute("tabindex") == "0"
        tab.focus()
        page.keyboard.press("ArrowLeft")
        assert page.evaluate("() => document.activeElement.dataset.framework") == "keras"
        assert all(s["visible"] == ["keras"] for s in page.evaluate(TABS_STATE))
        page.keyboard.press("End")
        assert all(s["visible"] == ["pytorch"] for s in page.evaluate(TABS_STATE))
        # the choice carries over to another page and back
        page.goto(server + second, wait_until="load")
        assert page.evaluate(f"() => localStorage.getItem({STORAGE_KEY!r})") == "pytorch"
        assert all(s["visible"] == ["pytorch"] for s in page.evaluate(TABS_STATE))
        page.goto(server + first, wait_until="load")
        state = page.evaluate(TABS_STATE)
        assert state and all(s["visible"] == ["pytorch"] for s in state), state
    finally:
        context.close()



def test_no_raw_floats_in_prose(audit):
    chapters = [r for r in audit.values() if re.search(r"/\d\d-[^/]+/[^/]+\.html$", r.url)]  # not arXiv ids
    assert chapters, "no chapter pages were read"
    _fail_on([f"{r.url}: …{text}…" for r in chapters for text in r.reading.get("raw", [])],
             "numbers in the prose with more than 4 decimals (glue them with a format)")


def test_output_tables_are_formatted_for_people(audit):
    _fail_on([f"{r.url}: a table cell reads {text!r}" for r in audit.values() for text in r.reading.get("cells", [])],
             "raw numbers in printed tables (round them, or format them with a unit)")


def test_nothing_overflows_its_column(audit):
    what = {"code": "code line", "tables": "table", "charts": "chart", "math": "equation"}
    _fail_on([f"{r.url}: {what[kind]} wider than the {r.reading.get('column')} px column: {item}"
              for r in audit.values() for kind in what for item in r.reading.get(kind, [])],
             "content cut off at 1280 px")


def test_exercises_are_numbered_per_chapter(audit):
    """Exercise N.i, N the chapter, i counting on over the chapter's pages (page 3.2 goes on from page 3's last)."""
    problems, chapters = [], {}
    for r in audit.values():
        found = re.search(r"/(\d\d)-[^/]+/[^/]+\.html$", r.url)
        numbers = r.reading.get("exercises", [])
        if found is None or not numbers:
            continue
        chapter = int(found.group(1))
        first = re.fullmatch(rf"Exercise {chapter}\.(\d+)", numbers[0])
        start = int(first.group(1)) if first else 1
        expected = [f"Exercise {chapter}.{i}" for i in range(start, start + len(numbers))]
        if numbers != expected:
            problems.append(f"{r.url}: {numbers} (expected {expected})")
        chapters.setdefault(chapter, []).append((start, len(numbers), r.url))
    for chapter, pages in chapters.items():      # the chapter's pages together: 1 … k, each number once
        pages.sort()
        starts = [1 + sum(n for _, n, _ in pages[:k]) for k in range(len(pages))]
        if [start for start, _, _ in pages] != starts:
            problems.append(f"chapter {chapter}: its pages start at {[(url, s) for s, _, url in pages]}, "
                            f"expected {starts}")
    _fail_on(problems, "exercise numbers")


def test_framework_cells_are_highlighted(audit):
    _fail_on([f"{r.url}: {text}" for r in audit.values() for text in r.reading.get("plain", [])],
             "framework cells shown as plain text")


STALE = re.compile(r"in preparation|first part|the seeds'|seeds' worked|(BEGIN|END) SOLUTION", re.IGNORECASE)


def _page_text(path: Path) -> str:
    html = path.read_text(encoding="utf-8", errors="replace")
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.DOTALL | re.IGNORECASE)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_no_stale_or_opaque_words_in_the_book(book_dir, pages):
    """No "in preparation", "first part" or "the seeds'" (a reader cannot act on them), and no exercise solution
    shown with its grading markers (they are for the student export)."""
    problems = []
    for rel in pages:
        for m in STALE.finditer(_page_text(book_dir / rel)):
            text = _page_text(book_dir / rel)
            problems.append(f"{rel}: …{text[max(0, m.start() - 60):m.end() + 60]}…")
    _fail_on(problems, "stale or opaque words in the built book")


SCREENSHOTS = os.environ.get("COURSE_SCREENSHOTS")   # a folder: every chapter page at both widths, both frameworks


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_on_a_phone_every_page_reads_without_zooming(browser, server, pages, framework):
    """At a phone's 390 px, with either framework chosen: the page itself never scrolls sideways; what is wider than
    the column (a chart at its own size, a wide table, a long equation) scrolls inside a box of its own with a cue
    under it; no chart text is drawn under 10 px (NARROW). With COURSE_SCREENSHOTS set, every chapter page is also
    saved there as a full-page screenshot at 390 and at 1280 px."""
    problems = []
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
    for width, height in ((390, 844), (1280, 900)):
        if width == 1280 and not SCREENSHOTS:
            break
        context = Offline(browser, width=width, height=height)
        context.context.add_init_script(f"localStorage.setItem({STORAGE_KEY!r}, {framework!r})")
        try:
            page = context.context.new_page()
            for rel in pages:
                page.goto(server + rel, wait_until="load")
                _wait(page, CHARTS_SETTLED)
                page.wait_for_timeout(300)                  # the scroll cues follow the drawn charts
                if width == 390:
                    sideways = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
                    if sideways > 1:
                        problems.append(f"{rel}: the page scrolls {sideways} px sideways")
                    narrow = page.evaluate(NARROW)
                    problems += [f"{rel}: wider than the column, not in a scroll box: {w}" for w in narrow["wide"]]
                    problems += [f"{rel}: scrolls sideways with no cue: {w}" for w in narrow["uncued"]]
                    problems += [f"{rel}: chart text under 10 px: {t}" for t in narrow["small"][:5]]
                if SCREENSHOTS and re.search(r"/\d\d-[^/]+/[^/]+\.html$", rel):
                    name = f"{Path(rel).stem}-{width}-{framework}.png"
                    page.screenshot(path=str(Path(SCREENSHOTS) / name), full_page=True)
        finally:
            context.close()
    _fail_on(problems, f"at 390 px, {framework}")


MACHINE_PATH = re.compile(r"(?<![\w./:])/(?:work|home|root|tmp|Users|opt|srv)/[\w.-]+|\bsite-packages\b|\.venv/")


def test_no_machine_paths_in_the_book(book_dir, pages):
    """A page never shows where the book was built (a local path, a virtual environment's folder)."""
    problems = []
    for rel in pages:
        text = _page_text(book_dir / rel)
        problems += [f"{rel}: …{text[max(0, m.start() - 60):m.end() + 40]}…" for m in MACHINE_PATH.finditer(text)]
    _fail_on(problems, "machine paths in the built book")


CHAPTER_PAGE_MB = 2.5   # what a reader downloads for a chapter page, everything it loads included


def test_each_page_loads_only_the_libraries_it_uses(audit):
    """Vega only where a chart is drawn, MathJax only where a formula is, and never the theme's fontawesome.js (its
    stylesheet draws the icons with Font Awesome's web fonts)."""
    problems = []
    for r in audit.values():
        names = [path.rsplit("/", 1)[-1] for path in r.loaded]
        vega = [n for n in names if n.startswith("vega")]
        if vega and not r.charts:
            problems.append(f"{r.url}: loads {', '.join(vega)} and has no chart")
        if "tex-chtml.js" in names and not r.math.get("math"):
            problems.append(f"{r.url}: loads MathJax and has no formula")
        if "fontawesome.js" in names:
            problems.append(f"{r.url}: loads fontawesome.js")
    _fail_on(problems, "libraries a page does not use")


def test_a_chapter_page_weighs_under_its_budget(audit):
    chapters = {rel: r for rel, r in audit.items() if re.search(r"/\d\d-[^/]+/[^/]+\.html$", rel)}
    assert chapters, "no chapter pages were read"
    largest = lambda r: sorted(r.loaded.items(), key=lambda kv: -kv[1])[:4]
    heavy = [f"{rel}: {r.weight_mb:.2f} MB, the largest: "
             + ", ".join(f"{path.rsplit('/', 1)[-1]} {size / 1e6:.2f}" for path, size in largest(r))
             for rel, r in chapters.items() if r.weight_mb > CHAPTER_PAGE_MB]
    _fail_on(heavy, f"chapter pages over {CHAPTER_PAGE_MB} MB (compressed, as a web host serves them)")


# --------------------------------------------------------------------------------------------
# What a learner reads: every chapter page's visible text, in both tabs, against tests/book/page_rules.py
# --------------------------------------------------------------------------------------------

VISIBLE = r"""() => {
  const article = document.querySelector('article.bd-article') || document.body;
  const shown = el => el.getClientRects().length > 0;
  // provenance lives in a dropdown titled "About these numbers": machines and commands are at home there
  const provenance = el => {
    for (let a = el; a && a !== article; a = a.parentElement) {
      if (a.matches('details, .dropdown, .toggle-details')) {
        const title = a.querySelector('summary, .admonition-title');
        if (title && /about these numbers/i.test(title.textContent)) return true;
      }
    }
    return false;
  };
  const read = (selector, skip) => Array.from(article.querySelectorAll(selector))
    .filter(el => shown(el) && !(skip && el.closest(skip)) && !provenance(el))
    .map(el => (el.innerText || '').trim()).filter(Boolean);
  const notProse = '.cell_output, .cell_input, pre, mjx-container, .course-vega, .vega-embed, script, style';
  return {
    prose: read('p, li, dd, dt, th, td, caption, figcaption, .admonition-title', notProse),
    cells: read('.cell_output table td, .cell_output table th'),
    outputs: read('.cell_output pre'),
    code: read('.cell_input pre'),
    headings: read('h1, h2, h3, h4', notProse).map(h => h.replace(/[#¶]\s*$/, '').trim()),
    exercises: Array.from(article.querySelectorAll('.exercise .caption-number'), el => el.textContent.trim()),
  };
}"""

# at a phone's width: what is wider than the column and does not scroll inside a box of its own, and chart text
# drawn under 10 px
NARROW = r"""() => {
  const article = document.querySelector('article.bd-article') || document.body;
  const column = article.getBoundingClientRect();
  const scrolls = el => {
    for (let a = el; a && a !== article; a = a.parentElement) {
      const s = getComputedStyle(a).overflowX;
      if ((s === 'auto' || s === 'scroll') && a.clientWidth <= article.clientWidth + 1) return true;
    }
    return false;
  };
  const wide = el => el.getBoundingClientRect().right > column.right + 1 || el.scrollWidth > el.clientWidth + 1;
  const out = {wide: [], small: [], uncued: []};
  const name = el => {
    const chart = el.closest('.course-vega');
    const label = chart ? chart.getAttribute('aria-label') || '' : el.innerText || el.textContent || '';
    return el.tagName.toLowerCase() + ': ' + label.slice(0, 60);
  };
  const things = 'table, .course-vega svg, .course-vega canvas, mjx-container[display="true"]';
  for (const el of article.querySelectorAll(things)) {
    if (el.getClientRects().length && wide(el) && !scrolls(el)) out.wide.push(name(el));
  }
  // what scrolls sideways has the cue under it (scroll-cue.js), or a reader on a phone does not know there is more
  for (const el of article.querySelectorAll('.course-vega, table, mjx-container[display="true"]')) {
    if (!el.getClientRects().length || el.scrollWidth <= el.clientWidth + 1) continue;
    const anchor = (el.tagName.toLowerCase() === 'mjx-container' && el.closest('div.math')) || el;  // under it
    const next = anchor.nextElementSibling;
    if (!(next && next.classList.contains('course-scroll-hint'))) out.uncued.push(name(el));
  }
  for (const t of article.querySelectorAll('.course-vega svg text')) {
    if (!t.getClientRects().length || !(t.textContent || '').trim()) continue;
    const matrix = t.getScreenCTM();
    const px = parseFloat(getComputedStyle(t).fontSize) * (matrix ? Math.hypot(matrix.a, matrix.b) : 1);
    if (px < 10) out.small.push(`${(t.textContent || '').slice(0, 30)} (${px.toFixed(1)} px)`);
  }
  return out;
}"""

CHAPTER_PAGE = re.compile(r"(?:^|/)\d\d-[^/]+/[^/]+\.html$")


def _chart_specs(path: Path) -> list[dict]:
    """The Vega-Lite specs a built page draws (the ``var spec = …;`` of each chart's script)."""
    import json

    specs, decoder = [], json.JSONDecoder()
    html = path.read_text(encoding="utf-8", errors="replace")
    for m in re.finditer(r"var spec = ", html):
        try:
            specs.append(decoder.raw_decode(html, m.end())[0])
        except ValueError:
            continue
    return specs


def read_pages(browser, server, book_dir: Path, pages: list[str], width: int) -> dict[tuple[str, str], dict]:
    """(page, framework) → what a reader sees there: the VISIBLE text at ``width`` px and the NARROW layout."""
    seen = {}
    for framework in ("keras", "pytorch"):
        context = Offline(browser, width=width, height=900)
        context.context.add_init_script(f"localStorage.setItem({STORAGE_KEY!r}, {framework!r})")
        try:
            page = context.context.new_page()
            for rel in pages:
                page.goto(server + rel, wait_until="load")
                _wait(page, CHARTS_SETTLED)
                seen[rel, framework] = {"visible": page.evaluate(VISIBLE), "narrow": page.evaluate(NARROW)}
        finally:
            context.close()
    return seen


@pytest.fixture(scope="module")
def chapter_pages(pages) -> list[str]:
    found = [rel for rel in pages if CHAPTER_PAGE.search(rel)]
    assert found, "no chapter pages were read"
    return found


@pytest.fixture(scope="module")
def read_at_1280(browser, server, book_dir, chapter_pages):
    return read_pages(browser, server, book_dir, chapter_pages, 1280)


def visible(book_dir: Path, rel: str, seen: dict):
    from page_rules import Visible, tooltip_formats

    tips = [f for spec in _chart_specs(book_dir / rel) for f in tooltip_formats(spec)]
    return Visible(**seen["visible"], tooltips=tips)


# The pages rewritten in the learner's voice of the design's PAGES.md so far: each is held to every rule below, and a
# page joins the list when it passes them all (the others still print machine names, commands or test talk).
PAGES_IN_THE_LEARNERS_VOICE = (
    "01-sequence-models/sequence-models.html",
    "02-soft-hard-attention/soft-hard-attention.html",
    "03-timestep-feature-attention/timestep-feature-attention.html",
    "03-timestep-feature-attention/attention-pooling.html",
    "04-score-functions/score-functions.html",
    "05-neural-machine-translation/neural-machine-translation.html",
    "06-image-captioning/image-captioning.html",
    "07-self-attention/self-attention.html",
    "08-transformer/transformer.html",
    "09-bert/bert.html",
    "10-modern-attention/modern-attention.html",
    "11-more-attention/more-attention.html",
    "11-more-attention/where-to-look.html",
)


def test_the_pages_held_to_the_rules_are_in_the_book(chapter_pages):
    """Every listed page of a chapter the book holds is built (``make test CHAPTERS=…`` builds some chapters)."""
    built = {rel.rsplit("/", 2)[-2] for rel in chapter_pages}
    missing = [page for page in PAGES_IN_THE_LEARNERS_VOICE if page.split("/")[0] in built
               and not any(rel.endswith(page) for rel in chapter_pages)]
    assert not missing, f"pages listed in PAGES_IN_THE_LEARNERS_VOICE but not built: {missing}"


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_every_chapter_page_reads_as_a_course(read_at_1280, book_dir, chapter_pages, framework):
    """No number printed as a tuple, no NaN in a table, no float longer than 4 significant digits (prose, tables,
    tooltips), no machine names, commands, paths or test talk outside "About these numbers", no Python repr, an
    "Exercises" heading wherever there are exercises (``tests/book/page_rules.py``), in the tab shown, on the pages
    rewritten for learners so far (``PAGES_IN_THE_LEARNERS_VOICE``)."""
    from page_rules import page_findings

    problems = [f"{rel}: {rule}: {sorted(set(found))[:4]}" for rel in chapter_pages
                if rel.endswith(PAGES_IN_THE_LEARNERS_VOICE)
                for rule, found in page_findings(visible(book_dir, rel, read_at_1280[rel, framework])).items()]
    _fail_on(problems, f"what a learner reads, {framework} tab")


def test_no_exercise_number_is_used_twice_in_the_book(read_at_1280, book_dir, chapter_pages):
    from page_rules import repeated_exercise_numbers

    _fail_on(repeated_exercise_numbers({rel: visible(book_dir, rel, read_at_1280[rel, "pytorch"])
                                        for rel in chapter_pages}), "exercise numbers used twice")


# NARROW is applied to every page by test_on_a_phone_every_page_reads_without_zooming, and shown working below.


BROKEN_PAGE = """<!doctype html><html><body><main><article class="bd-article" style="width:360px">
<p>raised it (1, 666) times</p>
<div class="cell_output"><table><tr><td>NaN</td><td>0.989565217391</td></tr></table>
<pre>AMD EPYC, 1 thread(s), GPU: False</pre></div>
<table id="wide"><tr>""" + "".join(f"<td>column {i} of many</td>" for i in range(17)) + """</tr></table>
<div style="overflow-x:auto;width:360px"><table><tr>""" + "".join(f"<td>fine {i} scrolls</td>" for i in range(17)) + """
</tr></table></div>
<table style="display:block;overflow-x:auto;max-width:360px"><tr>""" + "".join(f"<td>uncued {i}</td>"
                                                                            for i in range(17)) + """
</tr></table>
<table style="display:block;overflow-x:auto;max-width:360px"><tr>""" + "".join(f"<td>cued {i}</td>"
                                                                            for i in range(17)) + """
</tr></table><div class="course-scroll-hint">Scroll sideways</div>
<div class="course-vega" aria-label="a chart with tiny labels"><svg width="300" height="100" viewBox="0 0 600 200">
<text x="10" y="50" style="font-size:11px">halved to 5.5 px</text>
<text x="10" y="150" style="font-size:24px">12 px, legible</text></svg></div>
<div class="exercise"><span class="caption-number">Exercise 7.1 </span></div>
<details><summary>About these numbers</summary><p>Measured on an AMD EPYC with tools/bench.py</p></details>
</article></main></body></html>"""


def test_the_page_rules_catch_a_page_built_to_break_them_in_a_browser(browser):
    """VISIBLE and NARROW, on a page that breaks each rule once (and keeps provenance in its dropdown)."""
    from page_rules import Visible, page_findings

    context = Offline(browser, width=390, height=844)
    try:
        page = context.context.new_page()
        page.set_content(BROKEN_PAGE)
        found = page_findings(Visible(**page.evaluate(VISIBLE)))
        narrow = page.evaluate(NARROW)
    finally:
        context.close()
    assert set(found) == {"a number printed as a tuple", "NaN where a value does not exist",
                          "a float with more than 4 significant digits", "machine names, commands, paths or test talk",
                          "exercises without an 'Exercises' heading"}, found
    assert found["machine names, commands, paths or test talk"] == ["AMD EPYC, 1 thread(s), GPU: False"], found
    assert len(narrow["wide"]) == 1 and narrow["wide"][0].startswith("table"), narrow
    assert [s.split(" (")[0] for s in narrow["small"]] == ["halved to 5.5 px"], narrow
    assert len(narrow["uncued"]) == 1 and narrow["uncued"][0].startswith("table: uncued 0"), narrow
