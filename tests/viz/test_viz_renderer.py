"""The course's Altair renderer (ac.viz.renderer): MIME bundle keys, embedded spec, alt text, script safety."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys

import pytest

alt = pytest.importorskip("altair")
pd = pytest.importorskip("pandas")

from attention_course.viz import renderer  # noqa: E402

VL_MIME = f"application/vnd.vegalite.v{alt.VEGALITE_VERSION.split('.')[0]}+json"


@pytest.fixture
def course_renderer():
    previous = alt.renderers.active
    renderer.enable_renderer()
    yield
    alt.renderers.enable(previous)


def _chart(**kwargs):
    df = pd.DataFrame({"token": list("abc"), "weight": [0.2, 0.5, 0.3]})
    return alt.Chart(df, **kwargs).mark_bar().encode(x="token", y="weight")


def _embedded_spec(bundle: dict) -> dict:
    match = re.search(r"var spec = (.*?);\n", bundle["text/html"])
    assert match, "the inline script must assign the spec"
    return json.loads(match.group(1))  # the \u003c escapes are valid JSON


def test_importing_the_package_does_not_import_altair():
    code = (
        "import sys, attention_course, attention_course.viz.renderer; "
        "print('altair' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_altair_is_imported_without_jsonschemas_iri_parser_and_still_checks_charts():
    pytest.importorskip("rfc3987_syntax")                     # installed with jsonschema's format extras
    code = """
import sys
from attention_course.viz import renderer
renderer.enable_renderer()
import altair
print("jsonschema" in sys.modules, "rfc3987_syntax" in sys.modules)
try:
    altair.Chart(altair.Data(values=[{"x": 1}])).mark_point().encode(x="x:Q").properties(width="wide").to_dict()
except Exception as error:
    print(type(error).__module__)
import rfc3987_syntax
print("afterwards", "rfc3987_syntax" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[:2] == ["True", "False"], f"jsonschema without the parser: {out}"
    assert out[2].startswith("jsonschema"), f"Altair still checks a chart against Vega-Lite's schema: {out}"
    assert out[3:] == ["afterwards", "True"], f"the package itself still imports: {out}"


def test_vega_lite_has_no_iri_strings_for_jsonschema_to_check():
    import importlib.resources

    major = alt.VEGALITE_VERSION.split(".")[0]                # the schema of the Altair installed (v6; Colab's: v5)
    folder = importlib.resources.files(f"altair.vegalite.v{major}.schema")
    schema = folder.joinpath("vega-lite-schema.json").read_text(encoding="utf-8")
    assert '"format": "uri"' in schema and '"format": "iri' not in schema


def test_renderer_is_registered_and_enabled(course_renderer):
    assert alt.renderers.active == renderer.RENDERER_NAME
    assert renderer.RENDERER_NAME in alt.renderers.names()


def test_bundle_has_vegalite_html_and_text(course_renderer):
    bundle = _chart(title="Weights", description="Bar chart of three attention weights")._repr_mimebundle_()
    if isinstance(bundle, tuple):  # (data, metadata)
        bundle = bundle[0]
    assert set(bundle) == {VL_MIME, "text/html", "text/plain"}
    spec = bundle[VL_MIME]
    assert spec["$schema"].endswith(f"v{alt.VEGALITE_VERSION}.json")
    assert _embedded_spec(bundle) == json.loads(json.dumps(spec))


def test_html_div_is_accessible_and_unique(course_renderer):
    b1 = _chart(description="Bar chart of three attention weights")._repr_mimebundle_()
    b2 = _chart(description="Bar chart of three attention weights")._repr_mimebundle_()
    div = re.search(r"<div ([^>]*)></div>", b1["text/html"]).group(1)
    assert 'class="course-vega"' in div
    assert 'role="img"' in div
    assert 'aria-label="Bar chart of three attention weights"' in div
    id1 = re.search(r'id="([^"]+)"', b1["text/html"]).group(1)
    id2 = re.search(r'id="([^"]+)"', b2["text/html"]).group(1)
    assert id1 != id2
    assert json.dumps(id1) in b1["text/html"]  # the script looks the div up by this id


def test_alt_text_falls_back_to_title_then_generic():
    assert renderer.alt_text({"title": "Attention weights"}) == "Attention weights"
    assert renderer.alt_text({"title": {"text": "Scores", "subtitle": "per head"}}) == "Scores — per head"
    assert renderer.alt_text({"title": ["Line one", "line two"]}) == "Line one line two"
    assert renderer.alt_text({"description": "  ", "title": "T"}) == "T"
    assert renderer.alt_text({}) == "Interactive chart"


def test_label_and_data_are_escaped(course_renderer):
    nasty = 'a "quoted" <b>title</b> & </script><script>alert(1)</script>'
    df = pd.DataFrame({"token": [nasty, "b"], "weight": [1, 2]})
    bundle = alt.Chart(df, title=nasty).mark_bar().encode(x="token", y="weight")._repr_mimebundle_()
    text = bundle["text/html"]
    assert text.count("</script>") == 1  # only the closing tag of our own script
    label = re.search(r'aria-label="([^"]*)"', text).group(1)
    assert html.unescape(label) == nasty
    assert _embedded_spec(bundle)["title"] == nasty


def test_script_uses_vega_embed_then_falls_back_to_cdn(course_renderer):
    text = _chart()._repr_mimebundle_()["text/html"]
    assert "window.vegaEmbed" in text
    assert '"actions":false' in text and '"renderer":"svg"' in text
    assert "window.requirejs" in text  # classic Notebook
    assert "https://cdn.jsdelivr.net/npm/" in text  # Colab / JupyterLab
    assert f'"vega-lite":"{alt.VEGALITE_VERSION}"' in text
    assert "console.error" in text and "course-vega-error" in text


def test_interactive_params_survive(course_renderer):
    df = pd.DataFrame({"x": [1, 2, 3], "y": [3, 1, 2], "head": ["h1", "h2", "h3"]})
    choice = alt.param(name="head_choice", value="h1", bind=alt.binding_select(options=["h1", "h2", "h3"]))
    sel = alt.selection_point(fields=["head"])
    chart = (
        alt.Chart(df)
        .mark_point()
        .encode(x="x", y="y", opacity=alt.condition(alt.datum.head == choice, alt.value(1), alt.value(0.2)))
        .add_params(choice, sel)
    )
    spec = _embedded_spec(chart._repr_mimebundle_())
    names = {p["name"] for p in spec["params"]}
    assert "head_choice" in names and len(names) == 2
    bound = next(p for p in spec["params"] if p["name"] == "head_choice")
    assert bound["bind"]["input"] == "select"


def test_embed_options_override(course_renderer):
    renderer.enable_renderer(embed_options={"renderer": "canvas"})
    text = _chart()._repr_mimebundle_()["text/html"]
    assert '"renderer":"canvas"' in text


def test_line_chart_draws_one_line_per_run_with_detail():
    from attention_course.viz import lines

    runs = pd.DataFrame({"epoch": [1, 2, 1, 2], "loss": [3.0, 2.0, 3.5, 2.5], "model": "pre-LN", "seed": [0, 0, 1, 1],
                         "framework": "keras"})
    encoding = lines(runs, x="epoch", y="loss", color="model", dash="framework", detail="seed",
                     title="t").to_dict()["encoding"]
    assert encoding["detail"]["field"] == "seed" and encoding["strokeDash"]["field"] == "framework"
    assert "detail" not in lines(runs, x="epoch", y="loss", color="model", title="t").to_dict()["encoding"]
