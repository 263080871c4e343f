"""Charts of Chapter 2: how attention distributions change over training, where hard samples land, Gumbel-softmax
samples at several temperatures, local windows sliding along a sequence, and compute time against size.

Every chart takes long-format pandas DataFrames (one row per mark) and a ``description`` (its alt text).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["distribution_over_training", "gumbel_samples", "local_window", "timing"]


def _alt():
    import altair as alt

    return alt


def _check_columns(data, needed: Sequence[str], what: str) -> None:
    missing = [c for c in needed if c not in data.columns]
    if missing:
        raise ValueError(f"{what} needs the columns {list(needed)}; missing {missing}")


def distribution_over_training(dist, samples=None, *, title: str = "Attention over training",
                               description: str | None = None, width: int = 360, height: int = 220):
    """The attention distribution of one output step at each recorded training step (bars; the right position
    highlighted), and where samples drawn from each model's distribution land for every output step (points,
    with the diagonal of the right answers). A slider moves through the recorded steps (they need not be
    evenly spaced), a menu picks the variant.

    ``dist``: columns variant, step, position, weight, answer (bool: the right position).
    ``samples`` (optional): columns variant, step, output step, position, answer position.
    The data are stored with short column names so the chart stays small in the book.
    """
    alt = _alt()
    import pandas as pd

    _check_columns(dist, ["variant", "step", "position", "weight", "answer"], "dist")
    steps = sorted(int(s) for s in dist["step"].unique())
    frame_of = {s: i for i, s in enumerate(steps)}
    variants = list(dict.fromkeys(dist["variant"]))
    frame = alt.param(name="train_frame", value=len(steps) - 1,
                      bind=alt.binding_range(min=0, max=len(steps) - 1, step=1, name="training snapshot "))
    code_of = {v: i for i, v in enumerate(variants)}                 # variants are stored as small integers
    variant = alt.param(name="variant_pick", value=0,
                        bind=alt.binding_select(options=list(range(len(variants))), labels=variants, name="variant "))
    keep = (alt.datum.f == frame) & (alt.datum.v == variant)
    d = pd.DataFrame({"v": dist["variant"].map(code_of), "f": dist["step"].map(frame_of), "s": dist["position"],
                      "w": dist["weight"].round(4), "a": dist["answer"].astype(bool)})
    bars = alt.Chart(d).mark_bar().encode(
        x=alt.X("s:O", title="source position"),
        y=alt.Y("w:Q", title="attention weight", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("a:N", title="right position",
                        scale=alt.Scale(domain=[True, False], range=["#d62728", "#4c78a8"])),
        tooltip=[alt.Tooltip("s:O", title="position"), alt.Tooltip("w:Q", title="weight", format=".3f")],
    ).transform_filter(keep)
    label = alt.Chart(pd.DataFrame({"f": range(len(steps)), "text": [f"after {s} training steps" for s in steps]})
                      ).mark_text(align="right", baseline="top", x=width - 4, y=4, fontSize=12).encode(
        text="text:N").transform_filter(alt.datum.f == frame)
    left = (bars + label).add_params(frame, variant).properties(
        width=width, height=height, title="one output step: its attention distribution")
    if samples is None:
        return left.properties(title=title, description=description or title)
    _check_columns(samples, ["variant", "step", "output step", "position", "answer position"], "samples")
    p = pd.DataFrame({"v": samples["variant"].map(code_of), "f": samples["step"].map(frame_of),
                      "t": samples["output step"], "s": samples["position"]})
    diagonal = samples[["output step", "answer position"]].drop_duplicates().rename(
        columns={"output step": "t", "answer position": "s"})
    points = alt.Chart(p).mark_circle(size=28, opacity=0.5, color="#4c78a8").encode(
        x=alt.X("s:Q", title="sampled source position",
                scale=alt.Scale(domain=[0, int(dist["position"].max())], nice=False)),
        y=alt.Y("t:Q", title="output step", scale=alt.Scale(reverse=True)),
        tooltip=[alt.Tooltip("t:Q", title="output step"), alt.Tooltip("s:Q", title="sampled position")],
    ).transform_filter(keep)
    line = alt.Chart(diagonal).mark_line(color="#d62728", strokeDash=[4, 3]).encode(x="s:Q", y="t:Q")
    right = (line + points).properties(width=width, height=height, title="every output step: where samples land")
    return alt.hconcat(left, right).properties(
        title=title, description=description or f"{title}: attention weights and samples over training")


def gumbel_samples(data, *, title: str = "Gumbel-softmax samples", description: str | None = None):
    """A few Gumbel-softmax samples (rows) over K positions at several temperatures; a menu picks τ.

    ``data``: columns tau, row (a label: "softmax(logits)" or "sample 1", …), position, weight.
    """
    alt = _alt()
    _check_columns(data, ["tau", "row", "position", "weight"], "data")
    taus = sorted(float(t) for t in data["tau"].unique())
    pick = alt.param(name="tau_pick", value=1.0 if 1.0 in taus else taus[0],
                     bind=alt.binding_select(options=taus, name="temperature τ "))
    rows = list(dict.fromkeys(data["row"]))
    return (
        alt.Chart(data).mark_rect().encode(
            x=alt.X("position:O", title="position"),
            y=alt.Y("row:N", sort=rows, title=None),
            color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title="weight"),
            tooltip=["row", "position", alt.Tooltip("weight:Q", format=".3f"),
                     alt.Tooltip("tau:Q", format=".2~g", title="τ")],
        ).add_params(pick).transform_filter(alt.datum.tau == pick)
        .properties(title=title, width=alt.Step(40), height=alt.Step(22),
                    description=description or f"{title}: one row per sample, one column per position")
    )


def local_window(data, *, title: str = "A local window sliding along the source", description: str | None = None,
                 width: int = 520, height: int = 110):
    """Local attention weights of one output step t over the source (bars), its window (grey band), its centre
    p_t (dashed rule) and the right position (red rule), one panel per variant; a slider moves t.

    ``data``: columns variant, t, position, weight, lo, hi (the window's first and last position), centre,
    answer (the right position). Rows outside the window may be left out (their weight is zero), but each
    (variant, t) needs its row at position ``lo``.
    """
    alt = _alt()
    _check_columns(data, ["variant", "t", "position", "weight", "lo", "hi", "centre", "answer"], "data")
    ts = sorted(int(t) for t in data["t"].unique())
    pick = alt.param(name="t_pick", value=ts[len(ts) // 2],
                     bind=alt.binding_range(min=ts[0], max=ts[-1], step=1, name="output step t "))
    s_max = float(data["position"].max())
    x_scale = alt.Scale(domain=[-0.5, s_max + 0.5], nice=False)
    panels = []
    for i, variant in enumerate(dict.fromkeys(data["variant"])):
        base = alt.Chart(data).transform_filter((alt.datum.variant == variant) & (alt.datum.t == pick))
        one = base.transform_filter(alt.datum.position == alt.datum.lo)     # one row per (variant, t)
        band = one.mark_rect(color="#dddddd").transform_calculate(
            x0="datum.lo - 0.5", x1="datum.hi + 0.5").encode(
            x=alt.X("x0:Q", scale=x_scale, title="source position"), x2="x1:Q",
            tooltip=[alt.Tooltip("lo:Q", title="window from"), alt.Tooltip("hi:Q", title="window to")])
        bars = base.mark_rect(color="#4c78a8").transform_calculate(
            x0="datum.position - 0.4", x1="datum.position + 0.4").encode(
            x=alt.X("x0:Q", scale=x_scale), x2="x1:Q",
            y=alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1]), title="weight"), y2=alt.datum(0),
            tooltip=["t", "position", alt.Tooltip("weight:Q", format=".3f")])
        centre = one.mark_rule(color="black", strokeDash=[5, 3], size=2).encode(
            x=alt.X("centre:Q", scale=x_scale), tooltip=[alt.Tooltip("centre:Q", format=".2f", title="centre p_t")])
        answer = one.mark_rule(color="#d62728", size=2).encode(
            x=alt.X("answer:Q", scale=x_scale), tooltip=[alt.Tooltip("answer:Q", title="right position")])
        panel = (band + bars + centre + answer).properties(width=width, height=height, title=str(variant))
        panels.append(panel.add_params(pick) if i == 0 else panel)
    return alt.vconcat(*panels).properties(
        title=title, description=description or f"{title}: weights, window, centre and right position per step")


def timing(data, *, x: str, title: str, description: str | None = None, x_title: str | None = None):
    """Compute time against a size on log–log axes: ``data`` columns ``x``, milliseconds, attention,
    framework. Click a legend entry to highlight one attention."""
    alt = _alt()
    _check_columns(data, [x, "milliseconds", "attention", "framework"], "data")
    pick = alt.selection_point(fields=["attention"], bind="legend")
    return (
        alt.Chart(data).mark_line(point=True).encode(
            x=alt.X(f"{x}:Q", scale=alt.Scale(type="log", base=2), title=x_title or x),
            y=alt.Y("milliseconds:Q", scale=alt.Scale(type="log"), title="forward pass (ms, median of runs)"),
            color=alt.Color("attention:N"),
            strokeDash=alt.StrokeDash("framework:N"),
            opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
            tooltip=[x, "attention", "framework", alt.Tooltip("milliseconds:Q", format=".3f")],
        ).add_params(pick)
        .properties(title=title, width=420, height=260, description=description or title)
    )
