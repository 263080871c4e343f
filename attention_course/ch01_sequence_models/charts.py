"""Chapter 1's playground: a softmax over keys that a reader drives with sliders, in the static book too.

The scores, the softmax and the bars are computed by Vega expressions in the browser (Altair parameters), so
the sliders work without a kernel; ``ac.widgets.attention_playground`` is the ipywidgets version for a live one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["attention_playground"]

KEYS = ((1.0, 0.0), (0.7, 0.7), (0.0, 1.0), (-0.7, 0.7), (-1.0, 0.0))


def attention_playground(keys=None, tokens: Sequence[str] | None = None, *, title: str = "Softmax attention",
                         description: str | None = None):
    """Bars of softmax(keys · query / temperature) over 2-D keys, with sliders for the query's x and y and for
    the temperature. keys (T, 2); tokens: T labels (default k0 … k{T-1})."""
    import altair as alt
    import pandas as pd

    keys = np.asarray(KEYS if keys is None else keys, dtype=float)
    if keys.ndim != 2 or keys.shape[1] != 2:
        raise ValueError(f"keys must be (T, 2) points in the plane; got shape {keys.shape}")
    tokens = [f"k{i}" for i in range(len(keys))] if tokens is None else [str(t) for t in tokens]
    if len(tokens) != len(keys):
        raise ValueError(f"{len(tokens)} tokens for {len(keys)} keys")
    data = pd.DataFrame({"key": tokens, "kx": keys[:, 0], "ky": keys[:, 1], "order": range(len(keys))})
    qx = alt.param(name="query_x", value=1.0, bind=alt.binding_range(min=-2, max=2, step=0.1, name="query x "))
    qy = alt.param(name="query_y", value=0.0, bind=alt.binding_range(min=-2, max=2, step=0.1, name="query y "))
    temp = alt.param(name="temperature", value=1.0,
                     bind=alt.binding_range(min=0.1, max=10, step=0.1, name="temperature "))
    return (
        alt.Chart(data).mark_bar()
        .add_params(qx, qy, temp)
        .transform_calculate(score="(datum.kx * query_x + datum.ky * query_y) / temperature")
        .transform_joinaggregate(top="max(score)")
        .transform_calculate(e="exp(datum.score - datum.top)")     # shifted by the largest score: no overflow
        .transform_joinaggregate(total="sum(e)")
        .transform_calculate(weight="datum.e / datum.total")
        .encode(
            x=alt.X("key:N", sort=alt.EncodingSortField("order"), title="key"),
            y=alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1]), title="attention weight"),
            tooltip=["key", alt.Tooltip("kx:Q", title="key x", format=".2f"),
                     alt.Tooltip("ky:Q", title="key y", format=".2f"),
                     alt.Tooltip("score:Q", format=".2f"), alt.Tooltip("weight:Q", format=".3f")],
        )
        .properties(title=title, width=300, height=200,
                    description=description or f"{title}: bars of the softmax weights of {len(keys)} keys for a "
                                               "query and a temperature set with sliders")
    )
