"""Chapter 9's views of a Transformer's heads: the head view (tokens on both sides, a line from each token to the
tokens it attends to, as thick and dark as the weight, after bertviz) and a layer × head heatmap of statistics.

Every chart takes a ``description``: it becomes the chart's alt text (``aria-label``) in the book.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["head_view", "head_grid"]

MAX_ROWS = 5000   # Altair's limit on a chart's data


def _alt():
    import altair as alt

    return alt


def head_view(attention, tokens: Sequence[str], *, title: str, description: str, min_weight: float = 0.05,
              top: int = 3):
    """Head view of one sentence's attention (L, h, T, T) over its ``tokens``: menus pick the layer and the head.
    Each token's ``top`` strongest lines of at least ``min_weight`` are drawn (weaker ones would be all but
    invisible), which keeps the chart's data under Altair's 5,000 rows."""
    alt = _alt()
    import pandas as pd

    a = np.asarray(attention)
    toks = [str(t) for t in tokens]
    if a.ndim != 4 or a.shape[2:] != (len(toks), len(toks)):
        raise ValueError(f"attention of shape {a.shape} is not (layers, heads, {len(toks)}, {len(toks)}) for its "
                         f"{len(toks)} tokens")
    strongest = np.argsort(-a, axis=-1)[..., :top]                                       # (L, h, T, top)
    lines = []
    for layer in range(a.shape[0]):
        for head in range(a.shape[1]):
            for q in range(a.shape[2]):
                for k in strongest[layer, head, q]:
                    w = float(a[layer, head, q, k])
                    if w >= min_weight:
                        lines.append({"layer": layer + 1, "head": head + 1, "query": q, "key": int(k),
                                      "from": toks[q], "to": toks[k], "weight": w})
    if len(lines) > MAX_ROWS:
        raise ValueError(f"{len(lines):,} lines are more than a chart holds ({MAX_ROWS:,}): give a shorter sentence, "
                         f"a smaller top or a larger min_weight")
    words = pd.DataFrame({"position": range(len(toks)), "token": toks})
    layer = alt.param(name="head_view_layer", value=1,
                      bind=alt.binding_select(options=list(range(1, a.shape[0] + 1)), name="layer "))
    head = alt.param(name="head_view_head", value=1,
                     bind=alt.binding_select(options=list(range(1, a.shape[1] + 1)), name="head "))
    y = alt.Scale(reverse=True, nice=False, domain=[-0.5, len(toks) - 0.5])
    x = alt.Scale(domain=[-0.8, 1.8])
    edges = alt.Chart(pd.DataFrame(lines)).transform_filter(
        (alt.datum.layer == layer) & (alt.datum.head == head)
    ).transform_calculate(left="0", right="1").mark_rule().encode(
        x=alt.X("left:Q", axis=None, scale=x), x2="right:Q",
        y=alt.Y("query:Q", axis=None, scale=y), y2="key:Q",
        opacity=alt.Opacity("weight:Q", scale=alt.Scale(domain=[0, 1], range=[0.15, 1]), legend=None),
        strokeWidth=alt.StrokeWidth("weight:Q", scale=alt.Scale(domain=[0, 1], range=[0.5, 4]), legend=None),
        tooltip=["from", "to", alt.Tooltip("weight:Q", format=".3f")],
    )
    text = alt.Chart(words).encode(y=alt.Y("position:Q", axis=None, scale=y), text="token:N")
    left = text.transform_calculate(side="0").mark_text(align="right", dx=-6).encode(
        x=alt.X("side:Q", axis=None, scale=x))
    right = text.transform_calculate(side="1").mark_text(align="left", dx=6).encode(
        x=alt.X("side:Q", axis=None, scale=x))
    return alt.layer(edges, left, right).add_params(layer, head).properties(
        title=title, width=320, height=20 * len(toks), description=description)


def head_grid(data, *, statistic: str, value: str, title: str, description: str):
    """Layer × head heatmap of one statistic per head, a menu picking the statistic: ``data`` has columns
    ``layer``, ``head``, ``statistic`` (the name) and ``value``, one row per (layer, head, statistic)."""
    alt = _alt()
    names = list(dict.fromkeys(data[statistic]))
    pick = alt.param(name="head_grid_statistic", value=names[0],
                     bind=alt.binding_select(options=names, name="statistic "))
    return alt.Chart(data).transform_filter(alt.datum[statistic] == pick).mark_rect().encode(
        x=alt.X("head:O", title="head"), y=alt.Y("layer:O", title="layer"),
        color=alt.Color(f"{value}:Q", scale=alt.Scale(scheme="blues"), title=value),
        tooltip=["layer", "head", statistic, alt.Tooltip(f"{value}:Q", format=".3f")],
    ).add_params(pick).properties(title=title, width=alt.Step(26), height=alt.Step(26), description=description)
