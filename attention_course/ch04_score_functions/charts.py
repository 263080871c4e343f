"""Charts of Chapter 4: score statistics (variance, entropy, gradients) and costs.

Every chart takes a ``description``: it becomes the chart's alt text (``aria-label``) in the book.
"""

from __future__ import annotations

from attention_course.viz.charts import tooltips

__all__ = ["scaling_chart", "cost_chart", "score_comparison"]


def _alt():
    import altair as alt

    return alt


def scaling_chart(data, *, title: str, description: str, x: str = "d", quantity: str = "quantity",
                  value: str = "value", series: str = "scores", log_quantities=(), columns: int = 2):
    """Small panels, one per ``quantity`` (in order of appearance, ``columns`` to a row), of ``value`` against
    ``x`` (log scale) for each ``series``; ``log_quantities`` get a log y axis. Click a legend entry to
    highlight a series in every panel; hover a point for its numbers."""
    alt = _alt()
    pick = alt.selection_point(fields=[series], bind="legend")
    panels = []
    for i, name in enumerate(dict.fromkeys(data[quantity])):
        part = data[data[quantity] == name]
        y_scale = alt.Scale(type="log") if name in log_quantities else alt.Scale(zero=False)
        panels.append(
            alt.Chart(part, title=name).mark_line(point=True).encode(
                x=alt.X(f"{x}:Q", scale=alt.Scale(type="log", base=2), title=x),
                y=alt.Y(f"{value}:Q", scale=y_scale, title=name),
                color=alt.Color(f"{series}:N", title=series),
                opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
                tooltip=[alt.Tooltip(f"{series}:N"), alt.Tooltip(f"{x}:Q"),
                         alt.Tooltip(f"{value}:Q", format=".4g", title=name)],
            ).properties(width=230, height=170)
        )
        if i == 0:                     # defined once, used by every panel (the legend is shared)
            panels[0] = panels[0].add_params(pick)
    rows = [alt.hconcat(*panels[i:i + columns]) for i in range(0, len(panels), columns)]
    return alt.vconcat(*rows).properties(title=title, description=description)


def cost_chart(data, *, title: str, description: str, x: str = "length", y: str = "ratio",
               color: str = "size", dash: str = "framework"):
    """``y`` (a time ratio) against ``x`` on log axes, a line per ``color`` × ``dash``, and a rule at 1
    (equal cost). Click a legend entry to highlight it; hover for the numbers."""
    alt = _alt()
    import pandas as pd

    pick = alt.selection_point(fields=[color], bind="legend")
    lines = alt.Chart(data).mark_line(point=True).encode(
        x=alt.X(f"{x}:Q", scale=alt.Scale(type="log", base=2), title=x),
        y=alt.Y(f"{y}:Q", scale=alt.Scale(type="log"), title=y),
        color=alt.Color(f"{color}:N", title=color),
        strokeDash=alt.StrokeDash(f"{dash}:N", title=dash),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        tooltip=tooltips(data),
    ).add_params(pick)
    rule = alt.Chart(pd.DataFrame({y: [1.0]})).mark_rule(strokeDash=[4, 4], color="gray").encode(y=f"{y}:Q")
    return (lines + rule).properties(title=title, width=420, height=260, description=description)


def score_comparison(data, *, title: str, description: str, x: str = "score", y: str = "mean",
                     spread: str = "std", color: str = "framework", baseline: str | None = None,
                     y_title: str | None = None, order=None):
    """Mean ± spread per ``x`` as points with error bars, side by side per ``color``; rows whose ``x`` equals
    ``baseline`` are drawn as a dashed horizontal rule per ``color`` instead. ``order`` lists the ``x`` values
    from left to right (default: order of appearance). Hover for the numbers."""
    alt = _alt()

    data = data.assign(low=data[y] - data[spread], high=data[y] + data[spread])
    models = data if baseline is None else data[data[x] != baseline]
    order = [o for o in (order or dict.fromkeys(models[x])) if o != baseline]
    base = alt.Chart(models).encode(
        x=alt.X(f"{x}:N", sort=order, title=x, axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset(f"{color}:N"),
        color=alt.Color(f"{color}:N", title=color),
        tooltip=tooltips(data, [c for c in data.columns if c not in ("low", "high")]),
    )
    layers = [base.mark_rule().encode(y=alt.Y("low:Q", title=y_title or y), y2="high:Q"),
              base.mark_point(filled=True, size=70).encode(y=f"{y}:Q")]
    if baseline is not None:
        layers.append(alt.Chart(data[data[x] == baseline]).mark_rule(strokeDash=[6, 4]).encode(
            y=f"{y}:Q", color=alt.Color(f"{color}:N"),
            tooltip=[alt.Tooltip(f"{color}:N"), alt.Tooltip(f"{y}:Q", format=".3f", title=f"{baseline}")]))
    return alt.layer(*layers).properties(title=title, width=420, height=260, description=description)
