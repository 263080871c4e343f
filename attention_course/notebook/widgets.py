"""ipywidgets playgrounds for a live kernel (Colab, Binder, JupyterLab). In the static book they show
their controls but cannot recompute: run the notebook to play."""

from __future__ import annotations

import numpy as np


def _bars(tokens, weights) -> str:
    cells = "".join(
        f'<div style="display:inline-block;width:3.2em;text-align:center;font-family:monospace">'
        f'<div style="height:80px;position:relative"><div style="position:absolute;bottom:0;width:100%;'
        f'height:{80 * w:.0f}px;background:#3b7dd8"></div></div>{t}<br><small>{w:.2f}</small></div>'
        for t, w in zip(tokens, weights, strict=True)
    )
    return f'<div role="img" aria-label="attention weights over the keys">{cells}</div>'


def attention_playground(keys: np.ndarray | None = None, tokens=None):
    """Sliders for a 2-D query and a temperature; bars show softmax(keys·query / temperature).

    keys (T, 2); tokens: T labels. Returns the widget (display it, or let it be the cell's value).
    """
    import ipywidgets as w

    keys = np.asarray(keys if keys is not None else [[1, 0], [0.7, 0.7], [0, 1], [-0.7, 0.7], [-1, 0]], float)
    tokens = list(tokens) if tokens is not None else [f"k{i}" for i in range(len(keys))]
    qx = w.FloatSlider(value=1.0, min=-2, max=2, step=0.1, description="query x")
    qy = w.FloatSlider(value=0.0, min=-2, max=2, step=0.1, description="query y")
    temp = w.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.1, description="temperature")
    out = w.HTML()

    def redraw(*_):
        scores = keys @ np.array([qx.value, qy.value]) / temp.value
        e = np.exp(scores - scores.max())
        out.value = _bars(tokens, e / e.sum())

    for s in (qx, qy, temp):
        s.observe(redraw, names="value")
    redraw()
    return w.VBox([w.HBox([qx, qy, temp]), out])
