"""General Altair charts: attention heatmaps and line charts.

Every chart takes a ``description``: it becomes the chart's alt text (``aria-label``) in the book.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _alt():
    import altair as alt

    return alt


def tooltips(data, columns: Sequence[str] | None = None) -> list:
    """Tooltip entries for ``columns`` of ``data`` (every column by default), as a reader wants them: a column of
    fractions with three significant digits ("0.990", not "0.989565217391"; whole numbers from 1,000 up, "12,346"),
    whole numbers and text as they are."""
    alt = _alt()
    import pandas as pd

    out = []
    for column in data.columns if columns is None else columns:
        values = pd.to_numeric(data[column], errors="coerce") if data[column].dtype == object else data[column]
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        finite = values[np.isfinite(values)] if numeric else values.iloc[:0]
        if numeric and data[column].dtype != object and len(finite) and not (finite % 1 == 0).all():
            big = float(np.abs(finite).max()) >= 1000
            out.append(alt.Tooltip(f"{column}:Q", format=",.0f" if big else ".3~g"))
        else:
            out.append(column)
    return out


def _labels(tokens: Sequence) -> list[str]:
    # unique, ordered labels: position and token ("03 · 7")
    return [f"{i:02d} · {t}" for i, t in enumerate(tokens)]


def attention_heatmap(weights, key_tokens, query_tokens, *, names: Sequence[str] | None = None,
                      title: str = "Attention weights", description: str | None = None,
                      query_title: str = "output step (query)", key_title: str = "input position (key)"):
    """Heatmap of attention weights, query × key, with tooltips.

    ``weights`` is one (T_q, T_k) array, or a list of them (one per example, sizes may differ) with
    ``key_tokens``/``query_tokens`` lists to match; then a dropdown picks the example shown.
    """
    alt = _alt()
    import pandas as pd

    many = isinstance(weights, (list, tuple))
    ws = list(weights) if many else [weights]
    keys = list(key_tokens) if many else [key_tokens]
    queries = list(query_tokens) if many else [query_tokens]
    names = list(names) if names is not None else [f"example {i}" for i in range(len(ws))]
    if not (len(ws) == len(keys) == len(queries) == len(names)):
        raise ValueError(f"got {len(ws)} weight matrices, {len(keys)} key and {len(queries)} query token lists, "
                         f"{len(names)} names: they must match")
    rows = []
    for name, w, ks, qs in zip(names, ws, keys, queries, strict=True):
        w = np.asarray(w)
        if w.shape != (len(qs), len(ks)):
            raise ValueError(f"{name}: weights of shape {w.shape} do not match {len(qs)} queries × {len(ks)} keys")
        klab, qlab = _labels(ks), _labels(qs)
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                rows.append({"example": name, "query": qlab[i], "key": klab[j], "qpos": i, "kpos": j,
                             "query token": str(qs[i]), "key token": str(ks[j]), "weight": float(w[i, j])})
    data = pd.DataFrame(rows)
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("key:O", sort=alt.EncodingSortField("kpos"), title=key_title),
        y=alt.Y("query:O", sort=alt.EncodingSortField("qpos"), title=query_title),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title="weight"),
        tooltip=["example", "query token", "key token", alt.Tooltip("weight:Q", format=".3f")],
    )
    if many:
        pick = alt.param(name="example_pick", value=names[0],
                         bind=alt.binding_select(options=names, name="example "))
        chart = chart.add_params(pick).transform_filter(alt.datum.example == pick)
    return chart.properties(
        title=title, width=alt.Step(18), height=alt.Step(18),
        description=description or f"{title}: a query-by-key heatmap of attention weights",
    )


def lines(data, *, x: str, y: str, color: str, title: str, description: str | None = None,
          x_title: str | None = None, y_title: str | None = None, y_domain=(0, 1), dash: str | None = None,
          detail: str | None = None):
    """A line chart with points, tooltips, and a legend you can click to highlight one series. ``dash`` names a
    column drawn as the line's dash pattern; ``detail`` a column that splits a colour into one line per value
    (one per seed, say) without a legend of its own."""
    alt = _alt()
    pick = alt.selection_point(fields=[color], bind="legend")
    enc = dict(
        x=alt.X(f"{x}:Q", title=x_title or x),
        y=alt.Y(f"{y}:Q", title=y_title or y,
                scale=alt.Scale(domain=list(y_domain)) if y_domain else alt.Undefined),
        color=alt.Color(f"{color}:N", title=color),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=tooltips(data),
    )
    if dash:
        enc["strokeDash"] = alt.StrokeDash(f"{dash}:N", title=dash)
    if detail:
        enc["detail"] = alt.Detail(f"{detail}:N")
    return (
        alt.Chart(data).mark_line(point=True).encode(**enc).add_params(pick)
        .properties(title=title, width=420, height=260,
                    description=description or f"{title}: {y} against {x} by {color}")
    )
