"""``ac.viz.renderer``: an Altair renderer that works in the offline book, in JupyterLab, Colab and classic Jupyter.

``enable_renderer()`` registers an Altair renderer called ``course`` and enables it.  A chart then
displays as a MIME bundle with

* ``application/vnd.vegalite.v6+json``: the Vega-Lite spec, for front ends that render it natively;
* ``text/html``: a ``<div class="course-vega" role="img" aria-label="...">`` plus an inline script
  that draws the chart with ``vegaEmbed``.  In the book, vega, vega-lite and vega-embed are served
  from ``_static/vendor`` and already loaded (``window.vegaEmbed`` exists), so nothing leaves the
  machine.  Elsewhere (Colab, classic Notebook, JupyterLab) the script loads them from the jsDelivr
  CDN, through RequireJS when the page has it, else with ``<script>`` tags;
* ``text/plain``: a one-line description.

myst-nb picks ``text/html`` for the HTML build.  Altair is imported only inside the functions, so
``import attention_course`` stays cheap.
"""

from __future__ import annotations

import html
import json
import uuid
from typing import Any

__all__ = ["RENDERER_NAME", "CDN_VERSIONS", "enable_renderer", "render", "alt_text"]

RENDERER_NAME = "course"

#: Versions loaded from the CDN when the page has no ``window.vegaEmbed`` (outside the book).
#: vega-lite is filled in from Altair at render time so that it always matches the spec.
CDN_VERSIONS = {"vega": "6", "vega-embed": "7"}
CDN_ROOT = "https://cdn.jsdelivr.net/npm/"

DEFAULT_EMBED_OPTIONS: dict[str, Any] = {"actions": False, "renderer": "svg"}

_SCRIPT = """\
<script type="text/javascript">
(function () {
  "use strict";
  var el = document.getElementById(%(div_id)s);
  var spec = %(spec)s;
  var opts = %(opts)s;
  var cdn = %(cdn)s;
  var versions = %(versions)s;
  function fail(err) {
    var msg = "Could not draw the chart: " + ((err && err.message) || err);
    if (el) {
      el.classList.add("course-vega-error");
      el.textContent = msg;
    }
    console.error(msg, err);
  }
  function draw(vegaEmbed) {
    try {
      return Promise.resolve(vegaEmbed(el, spec, opts)).catch(fail);
    } catch (err) {
      fail(err);
    }
  }
  if (!el) {
    console.error("course-vega: element " + %(div_id)s + " not found");
    return;
  }
  if (typeof window.vegaEmbed === "function") {
    draw(window.vegaEmbed);
    return;
  }
  var names = ["vega", "vega-lite", "vega-embed"];
  if (typeof window.requirejs === "function") {
    var paths = {};
    names.forEach(function (n) { paths[n] = cdn + n + "@" + versions[n] + "?noext"; });
    window.requirejs.config({paths: paths});
    window.requirejs(["vega-embed"], draw, fail);
    return;
  }
  var loading = window.__courseVegaLoading;
  if (!loading) {
    loading = names.reduce(function (previous, n) {
      return previous.then(function () {
        return new Promise(function (resolve, reject) {
          var s = document.createElement("script");
          s.src = cdn + n + "@" + versions[n];
          s.async = false;
          s.onload = resolve;
          s.onerror = function () { reject(new Error("could not load " + s.src)); };
          document.head.appendChild(s);
        });
      });
    }, Promise.resolve());
    window.__courseVegaLoading = loading;
  }
  loading.then(function () {
    if (typeof window.vegaEmbed !== "function") { throw new Error("vegaEmbed is not defined"); }
    return draw(window.vegaEmbed);
  }).catch(function (err) {
    window.__courseVegaLoading = null;
    fail(err);
  });
})();
</script>"""


def _js_literal(value: Any) -> str:
    """JSON that is also safe inside an HTML ``<script>`` element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _title_text(title: Any) -> str:
    if isinstance(title, dict):
        parts = [_title_text(title.get("text")), _title_text(title.get("subtitle"))]
        return " — ".join(p for p in parts if p)
    if isinstance(title, (list, tuple)):
        return " ".join(_title_text(t) for t in title if t)
    if isinstance(title, str):
        return title.strip()
    return ""


def alt_text(spec: dict[str, Any]) -> str:
    """Alternative text for a chart: its ``description``, else its title, else a generic phrase."""
    description = spec.get("description")
    if isinstance(description, str) and description.strip():
        return description.strip()
    title = _title_text(spec.get("title"))
    if title:
        return title
    return "Interactive chart"


def _vegalite_version() -> str:
    import altair as alt

    return alt.VEGALITE_VERSION


def render(spec: dict[str, Any], embed_options: dict[str, Any] | None = None, **_: Any) -> dict[str, Any]:
    """The renderer: turn a Vega-Lite spec (a dict) into a MIME bundle."""
    vl_version = _vegalite_version()
    major = vl_version.split(".")[0]
    opts = dict(DEFAULT_EMBED_OPTIONS)
    usermeta = spec.get("usermeta")
    if isinstance(usermeta, dict) and isinstance(usermeta.get("embedOptions"), dict):
        opts.update(usermeta["embedOptions"])
    if embed_options:
        opts.update(embed_options)
    div_id = f"course-vega-{uuid.uuid4().hex}"
    label = alt_text(spec)
    versions = {**CDN_VERSIONS, "vega-lite": vl_version}
    script = _SCRIPT % {
        "div_id": _js_literal(div_id),
        "spec": _js_literal(spec),
        "opts": _js_literal(opts),
        "cdn": _js_literal(CDN_ROOT),
        "versions": _js_literal(versions),
    }
    div = (
        f'<div id="{div_id}" class="course-vega" role="img" '
        f'aria-label="{html.escape(label, quote=True)}"></div>'
    )
    return {
        f"application/vnd.vegalite.v{major}+json": spec,
        "text/html": div + "\n" + script,
        "text/plain": f"<Altair chart: {label}>",
    }


def import_altair():
    """``import altair``, with jsonschema (which Altair imports) loaded as if ``rfc3987_syntax`` were not installed.

    jsonschema checks strings of the "iri" format with that optional package when it is there, and builds its
    grammar as jsonschema is imported: about 1 s, a fifth of a notebook's set-up cell. Vega-Lite's schema, the one
    Altair checks charts against, has no "iri" string, so nothing the course validates changes. Where jsonschema
    is already imported nothing is done, and ``import rfc3987_syntax`` works as usual afterwards."""
    import sys

    if "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None                # None in sys.modules: that import raises ImportError
        try:
            import jsonschema  # noqa: F401
        finally:
            del sys.modules["rfc3987_syntax"]
    import altair

    return altair


def enable_renderer(name: str = RENDERER_NAME, **options: Any) -> None:
    """Register the course renderer with Altair (as ``name``) and enable it.

    Keyword options are passed to the renderer, e.g. ``embed_options={"renderer": "canvas"}``.
    """
    alt = import_altair()

    alt.renderers.register(name, render)
    alt.renderers.enable(name, **options)
