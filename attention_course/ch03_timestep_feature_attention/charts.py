"""Charts of Chapter 3: attention over the tokens of sentences (token highlight), per-class scores next to a
reference, results over seeds.

Every chart takes a ``description``: it becomes the chart's alt text (``aria-label``) in the book.
"""

from __future__ import annotations

from typing import Any, cast

from attention_course.viz.charts import tooltips

__all__ = ["token_layout", "token_highlight", "score_dots", "seed_spread"]

CHAR_PX, GAP_PX, LINE_PX = 7.2, 8.0, 26   # a rough width of one character at font size 12, word gap, line height


def token_layout(tokens, width: int = 640) -> list[dict]:
    """Place ``tokens`` like words of a paragraph ``width`` pixels wide: one dict per token with its
    ``position``, ``x`` and ``x2`` (pixels) and ``line`` (0, 1, …)."""
    out, x, line = [], 0.0, 0
    for i, tok in enumerate(tokens):
        w = max(len(str(tok)), 1) * CHAR_PX + 6
        if x > 0 and x + w > width:
            x, line = 0.0, line + 1
        out.append({"position": i, "x": x, "x2": x + w, "line": line})
        x += w + GAP_PX
    return out


def token_highlight(data, *, title: str, description: str, value: str = "weight", width: int = 640,
                    normalize: bool = True, sentence: str = "sentence", model: str | None = "model",
                    extra_tooltip=(), scheme: str = "oranges"):
    """Tokens drawn as text on boxes whose colour is their attention ``value``, like a highlighter.

    ``data``: a DataFrame with one row per token and columns ``sentence`` (a name), ``token``, ``position``
    and ``value``; with ``model`` (a column name, or None) a second dropdown picks the model. With
    ``normalize`` the colour is the value divided by the largest value of that sentence and model (the
    tooltip shows both). ``extra_tooltip``: more columns for the tooltip (e.g. the gold tag).
    """
    import altair as alt
    import pandas as pd

    df = pd.DataFrame(data).copy()
    need = {sentence, "token", "position", value} | ({model} if model else set())
    missing = need - set(df.columns)
    if missing:
        raise ValueError(f"token_highlight needs the columns {sorted(need)}; missing {sorted(missing)}")
    layout = []
    for name, group in df.drop_duplicates([sentence, "position"]).groupby(sentence, sort=False):
        for row in token_layout(group.sort_values("position")["token"].tolist(), width):
            layout.append({sentence: name, **row})
    df = df.merge(pd.DataFrame(layout), on=[sentence, "position"])
    keys = [sentence, model] if model else [sentence]
    peak = df.groupby(keys)[value].transform(lambda v: v.abs().max())
    df["shade"] = (df[value].abs() / peak.where(peak > 0, 1.0)) if normalize else df[value]
    df["mid"] = (df["x"] + df["x2"]) / 2
    lines = int(df["line"].max()) + 1
    x = alt.X("x:Q", scale=alt.Scale(domain=[0, width]), axis=None)
    y = alt.Y("line:O", axis=None)
    tooltip = ["token", alt.Tooltip(f"{value}:Q", format=".4f"), *extra_tooltip] + ([model] if model else [])
    shade_title = "relative weight" if normalize else value
    names = list(dict.fromkeys(df[sentence]))
    params = [alt.param(name="sentence_pick", value=names[0],
                        bind=alt.binding_select(options=names, name="sentence "))]
    base = alt.Chart(df).transform_filter(alt.datum[sentence] == params[0])
    if model:
        models = list(dict.fromkeys(df[model]))
        params.append(alt.param(name="model_pick", value=models[0],
                                bind=alt.binding_select(options=models, name="model ")))
        base = base.transform_filter(alt.datum[model] == params[1])
    boxes = base.mark_rect(cornerRadius=3, height=LINE_PX - 6).encode(
        x=x, x2="x2:Q", y=y,
        color=alt.Color("shade:Q", scale=alt.Scale(scheme=cast(Any, scheme),   # any Vega scheme name
                                                   domain=[0, 1] if normalize else alt.Undefined),
                        title=shade_title),
        tooltip=tooltip)
    words = base.mark_text(fontSize=12, baseline="middle").encode(
        x=alt.X("mid:Q", scale=alt.Scale(domain=[0, width]), axis=None), y=y, text="token:N", tooltip=tooltip,
        color=alt.condition(alt.datum.shade > 0.6, alt.value("white"), alt.value("black")))
    chart = alt.layer(boxes, words).add_params(*params)
    return chart.properties(title=title, width=width, height=lines * LINE_PX, description=description)


def score_dots(data, *, x: str, y: str, color: str, title: str, description: str, x_title: str | None = None,
               domain=(0, 1), shape: str | None = None):
    """A dot plot: one row per category ``y`` (e.g. entity type), a dot per ``color`` group (e.g. ours and
    the reference) at its score ``x``; tooltips and a clickable legend."""
    import altair as alt

    pick = alt.selection_point(fields=[color], bind="legend")
    enc = dict(
        x=alt.X(f"{x}:Q", title=x_title or x, scale=alt.Scale(domain=list(domain)) if domain else alt.Undefined),
        y=alt.Y(f"{y}:N", sort=None, title=None),
        color=alt.Color(f"{color}:N", title=color),
        opacity=alt.condition(pick, alt.value(0.95), alt.value(0.15)),
        tooltip=tooltips(data),
    )
    if shape:
        enc["shape"] = alt.Shape(f"{shape}:N", title=shape)
    return (alt.Chart(data).mark_point(size=90, filled=True).encode(**enc).add_params(pick)
            .properties(title=title, width=420, description=description))


def seed_spread(data, *, x: str, y: str, title: str, description: str, x_title: str | None = None,
                reference=None, color: str | None = None):
    """Results over seeds: one dot per run (``x`` the score, ``y`` the model), the mean ± one standard
    deviation as a bar, and optional ``reference`` marks (a DataFrame with ``y`` and ``x`` columns and a
    ``label``)."""
    import altair as alt

    base = alt.Chart(data)
    axis_title = x_title or x
    yy = alt.Y(f"{y}:N", title=None, sort=None)
    dots = base.mark_circle(size=60, opacity=0.75).encode(
        x=alt.X(f"{x}:Q", title=axis_title, scale=alt.Scale(zero=False), axis=alt.Axis(tickCount=8)), y=yy,
        color=alt.Color(f"{color or y}:N", legend=None), tooltip=tooltips(data))
    spread = base.mark_errorbar(extent="stdev", thickness=2, color="gray").encode(
        x=alt.X(f"{x}:Q", title=axis_title), y=yy)
    mean = base.mark_tick(thickness=3, size=22, color="black").encode(
        x=alt.X(f"mean({x}):Q", title=axis_title), y=yy,
        tooltip=[f"{y}:N", alt.Tooltip(f"mean({x}):Q", format=".4f", title="mean"),
                 alt.Tooltip(f"stdev({x}):Q", format=".4f", title="standard deviation")])
    layers = [spread, dots, mean]
    if reference is not None:
        layers.append(alt.Chart(reference).mark_point(shape="diamond", size=140, color="crimson", filled=True)
                      .encode(x=alt.X(f"{x}:Q", title=axis_title), y=yy, tooltip=tooltips(reference)))
    return alt.layer(*layers).properties(title=title, width=420, description=description)
