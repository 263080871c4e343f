"""Small Sphinx additions for the course book (loaded through ``sphinx: local_extensions`` in _config.yml).

1. Sphinx 7.4 writes every inline script that an extension adds after the builder started (e.g.
   sphinx-thebe's ``const THEBE_JS_URL = ...`` and sphinx-togglebutton's selector) twice into each
   page: once as added (file name ``None``) and once more from the registry (file name ``''``) in
   ``prepare_writing``.  The second ``const`` declaration is a SyntaxError in the browser
   ("Identifier 'THEBE_JS_URL' has already been declared").  Such duplicates are dropped from every
   page's script list.
2. The pages load MathJax, Vega and the ipywidgets manager from ``_static/vendor``, which
   ``tools/vendor_static.py`` fills from npm and git does not track.  When a script named in the
   configuration is missing from the static folders, the build warns (an error under ``-W``)
   instead of producing a book whose formulas, charts and widgets silently do not render.
3. The notebooks' execution cache is the folder that ``tools/notebook_cache.py`` fills while nbval runs the
   notebooks in ``make test`` (one per profile and settings; each page keyed on what it reads), so the book reuses
   that run. An
   instructor's edition (``course-assign``) carries this file without ``notebook_cache.py`` and keeps
   jupyter-book's own cache.
4. Exercises are numbered per chapter, "Exercise 2.3" (chapter 2, third exercise), not 1 … 16 across the book;
   the chapter number is the one in the chapter's folder name (``book/02-…``), so an edition with some of the
   chapters keeps their numbers. A chapter of several pages counts on from one page to the next (page 3.2's first
   exercise is 3.4 when page 3 has three), so that no number is used twice in the book.
5. Code cells that start with ``%%keras`` or ``%%pytorch`` are highlighted as Python (IPython's lexer shows the
   body of an unknown cell magic as plain text).
6. An exercise's solution is shown without its grading markers (``### BEGIN SOLUTION`` / ``### END SOLUTION``):
   they are for the student export (``course-assign``), not for the reader.
7. A page loads what it uses: Vega, Vega-Lite and vega-embed only on pages with a chart, MathJax only on pages with
   a formula, and never the theme's ``fontawesome.js`` (1.5 MB that turns the icons into SVG; the theme's
   stylesheet already draws the same icons with Font Awesome's web fonts).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sphinx.util import logging

logger = logging.getLogger(__name__)


def _dedupe_scripts(app, pagename: str, templatename: str, context: dict[str, Any], doctree) -> None:
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen: set[tuple] = set()
    unique = []
    for script in scripts:
        filename = getattr(script, "filename", script) or ""
        attributes = getattr(script, "attributes", {}) or {}
        key = (filename, getattr(script, "priority", None), tuple(sorted(attributes.items())))
        if key in seen:
            continue
        seen.add(key)
        unique.append(script)
    # the list is the builder's own (restored after each page); edit it in place
    scripts[:] = unique


# a library → what in a page's body needs it (Sphinx writes a formula as an element of class "math")
_NEEDED_BY = ((re.compile(r"vendor/vega[\w.-]*\.js$"), "course-vega"),
              (re.compile(r"mathjax|window\.MathJax", re.IGNORECASE), 'class="math'))


def _libraries_only_where_used(app, pagename: str, templatename: str, context: dict[str, Any], doctree) -> None:
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    body = str(context.get("body", ""))
    unused = [library for library, marker in _NEEDED_BY if marker not in body]

    def wanted(script) -> bool:
        name = str(getattr(script, "filename", script) or "") + str(getattr(script, "attributes", {}).get("body", ""))
        return not any(library.search(name) for library in unused)

    scripts[:] = [script for script in scripts if wanted(script)]


_FONTAWESOME_JS = re.compile(r"[ \t]*<script[^>]*src=\"[^\"]*scripts/fontawesome\.js[^\"]*\"[^>]*></script>\n?")


def _no_fontawesome_js(app, exception) -> None:
    if exception is not None or app.builder is None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        lean = _FONTAWESOME_JS.sub("", html)
        if lean != html:                                  # written aside, then moved: never a half-written page
            partial = page.with_name(page.name + ".partial")
            partial.write_text(lean, encoding="utf-8")
            partial.replace(page)


def _configured_static_files(config) -> list[str]:
    names = [config.mathjax_path or ""]
    for entry in config.html_js_files:
        names.append(entry if isinstance(entry, str) else entry[0])
    names += list(getattr(config, "nb_ipywidgets_js", {}) or {})
    names += [entry if isinstance(entry, str) else entry[0] for entry in config.html_css_files]
    return [n for n in names if n and "://" not in n and not n.startswith("/")]


def _check_static_files(app) -> None:
    if app.builder is None or app.builder.format != "html":
        return
    roots = [Path(app.confdir, p) for p in app.config.html_static_path]
    missing = [
        name for name in _configured_static_files(app.config)
        if not any((root / name.split("?")[0]).is_file() for root in roots)
    ]
    if missing:
        book_roots = [r for r in roots if r.resolve().is_relative_to(Path(app.confdir).resolve())]
        logger.warning(
            "static files named in _config.yml are missing from %s: %s. Run "
            "`python tools/vendor_static.py` (part of `make book`) to install the pinned JavaScript.",
            ", ".join(str(r) for r in book_roots or roots), ", ".join(missing),
            type="course", subtype="vendor",
        )


def _use_notebook_cache(app, config) -> None:
    try:
        from notebook_cache import cache_dir  # tools/ is on sys.path as the folder of local extensions
    except ImportError:   # an instructor's edition (course-assign): no test run to share, the book runs its notebooks
        return
    config.nb_execution_cache_path = str(cache_dir())


def _toc_order(env) -> dict[str, int]:
    """Each document's place in the book, as a reader meets it: the table of contents walked from the root."""
    order: dict[str, int] = {}

    def walk(docname: str) -> None:
        if docname in order:
            return
        order[docname] = len(order)
        for child in env.toctree_includes.get(docname, []):
            walk(child)

    walk(env.config.root_doc)
    return order


def _number_exercises_per_chapter(app, env) -> list[str]:
    """Exercise N.i: N the chapter of the page's folder, i counted over the chapter's pages in the order of the table
    of contents, so that a chapter of several pages (3 and 3.2) numbers its exercises 3.1 … 3.6, not 3.1 … 3.3
    twice."""
    changed = []
    place = _toc_order(env)
    pages = [(docname, numbers) for docname, numbers in env.toc_fignumbers.items() if numbers.get("exercise")]
    pages.sort(key=lambda page: place.get(page[0], len(place)))     # a stable sort: Sphinx's order among the rest
    counted: dict[str, int] = {}                                     # chapter folder → exercises numbered so far
    for docname, numbers in pages:
        exercises = numbers["exercise"]
        folder = docname.split("/")[-2] if "/" in docname else ""
        if not folder[:2].isdigit():
            continue
        chapter = int(folder[:2])
        ordered = sorted(exercises, key=lambda node_id: exercises[node_id])
        start = counted.get(folder, 0)
        renumbered = {node_id: (chapter, start + i) for i, node_id in enumerate(ordered, start=1)}
        counted[folder] = start + len(ordered)
        if renumbered != exercises:
            numbers["exercise"] = renumbered
            changed.append(docname)
    return changed


def _framework_cell_lexer():
    from IPython.lib.lexers import IPython3Lexer
    from pygments.lexer import bygroups, inherit, using
    from pygments.token import Keyword, Operator, Text

    class FrameworkCellLexer(IPython3Lexer):
        """IPython 3, with the body of a ``%%keras`` / ``%%pytorch`` cell lexed as IPython code."""

        name = "IPython3 with the course's framework cells"
        tokens = {"root": [(r"(?s)(\s*)(%%)(keras|pytorch|needs)([^\n]*\n)(.*)",
                            bygroups(Text, Operator, Keyword, Text, using(IPython3Lexer))), inherit]}

    return FrameworkCellLexer


_MARKER_LINE = re.compile(r"^[ \t]*#+[ \t]*(BEGIN|END)[ \t]*SOLUTION\b[^\n]*\n?", re.IGNORECASE | re.MULTILINE)


def _hide_solution_markers(app, doctree) -> None:
    from docutils import nodes

    for block in list(doctree.findall(nodes.literal_block)):
        text = block.astext()
        if not _MARKER_LINE.search(text):
            continue
        shown = _MARKER_LINE.sub("", text)
        block.children = [nodes.Text(shown)]
        block.rawsource = shown


def setup(app) -> dict[str, Any]:
    app.connect("doctree-read", _hide_solution_markers)
    app.add_lexer("ipython3", _framework_cell_lexer())
    app.connect("env-get-updated", _number_exercises_per_chapter, priority=900)  # after Sphinx numbers them
    app.connect("config-inited", _use_notebook_cache)
    app.connect("builder-inited", _check_static_files)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("html-page-context", _libraries_only_where_used, priority=900)
    app.connect("build-finished", _no_fontawesome_js)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
