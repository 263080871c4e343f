"""Chapter 6's charts: an image with the attention map of each word of its caption, interactive in the static book
(a menu picks the image, a slider the word; hover a cell for its weight); DRAW's window and the paths of its
glimpses. Images are (H, W, 3) colour or (H, W, 1) grey."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["caption_attention", "image_row", "draw_window", "glimpse_paths"]


def _alt():
    import altair as alt

    return alt


def caption_attention(images, words: Sequence[Sequence[str]], maps, *, names: Sequence[str] | None = None,
                      title: str = "Where each word looks", description: str | None = None, size: int = 240):
    """Each image (H, W, 3) of ``images`` under the attention map (T_i, gh, gw) of each of its caption ``words``
    (T_i words, ``maps[i][t]`` the map of word t). A menu picks the image, a slider the word; the chosen word
    and its caption are written above the image, and each cell's weight shows on hover."""
    alt = _alt()
    import pandas as pd

    images = [np.asarray(im, dtype=np.float32) for im in images]
    names = list(names) if names is not None else [f"image {i}" for i in range(len(images))]
    if not (len(images) == len(words) == len(maps) == len(names)):
        raise ValueError(f"got {len(images)} images, {len(words)} captions, {len(maps)} attention lists and "
                         f"{len(names)} names: they must match")
    pixels, cells, labels = {}, [], []
    for name, im, ws, ms in zip(names, images, words, maps, strict=True):
        ms = np.asarray(ms, dtype=np.float64)
        if ms.ndim != 3 or len(ms) != len(ws):
            raise ValueError(f"{name}: {len(ws)} words need {len(ws)} attention maps (T, gh, gw); got {ms.shape}")
        h, w = im.shape[:2]
        ch, cw = h // ms.shape[1], w // ms.shape[2]              # the pixels of one attention cell
        pixels[name] = im
        for t, word in enumerate(ws):
            r, c = np.mgrid[0:ms.shape[1], 0:ms.shape[2]]
            cells.append(pd.DataFrame({"image": name, "step": t, "word": word, "x": (c * cw).ravel(),
                                       "y": (r * ch).ravel(), "weight": ms[t].ravel()}))
            labels.append({"image": name, "step": t, "label": f"word {t + 1}: “{word}” · {' '.join(ws)}"})
    cell_data, label_data = pd.concat(cells), pd.DataFrame(labels)
    cell_data = cell_data.assign(x2=cell_data.x + cw, y2=cell_data.y + ch)
    longest = max(len(ws) for ws in words)
    pick = alt.param(name="image_pick", value=names[0], bind=alt.binding_select(options=names, name="image "))
    step = alt.param(name="word_step", value=0, bind=alt.binding_range(min=0, max=longest - 1, step=1,
                                                                        name="word (0 = first) "))
    x = alt.X("x:Q", scale=alt.Scale(domain=[0, w], nice=False), axis=None)
    y = alt.Y("y:Q", scale=alt.Scale(domain=[0, h], nice=False, reverse=True), axis=None)
    inline = lambda frame: alt.Data(values=frame.to_dict("records"))   # (inline values: no row limit)
    image = _picture(pixels, x, y).transform_filter(alt.datum.image == pick)
    attention = alt.Chart(inline(cell_data)).mark_rect(color="#ff8c00", stroke="#ff8c00", strokeOpacity=0.3).encode(
        x=x, x2="x2:Q", y=y, y2="y2:Q",
        opacity=alt.Opacity("weight:Q", scale=alt.Scale(domain=[0, 0.5], range=[0, 0.9], clamp=True),
                            legend=None),                     # a weight of 0.5 or more: fully lit
        tooltip=["word:N", alt.Tooltip("weight:Q", format=".3f")],
    ).transform_filter((alt.datum.image == pick) & (alt.datum.step == step))
    label = alt.Chart(inline(label_data)).mark_text(align="left", baseline="bottom", fontSize=12, dy=-4).encode(
        x=alt.value(0), y=alt.value(0), text="label:N",
    ).transform_filter((alt.datum.image == pick) & (alt.datum.step == step))
    return alt.layer(image, attention, label).add_params(pick, step).configure_view(fill="black").properties(
        title=title, width=size, height=size,
        description=description or f"{title}: an image with the attention map of one caption word over it",
    )


def _png(image: np.ndarray) -> str:
    """(H, W, 3) or (H, W, 1) floats in [0, 1] → a PNG as a data URL (a few kB, where one row per pixel took
    hundreds)."""
    import base64
    import io

    from PIL import Image

    image = np.asarray(image, dtype=np.float32)
    if image.shape[-1] == 1:                                         # grey: the same intensity in each channel
        image = np.repeat(image, 3, -1)
    buffer = io.BytesIO()
    Image.fromarray(np.clip(np.round(image * 255), 0, 255).astype(np.uint8)).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _picture(images: dict[str, np.ndarray], x, y):
    """A layer drawing each image of ``images`` (name → (H, W, C)) over the whole view, one image mark per name
    (shown sharp, pixel for pixel: course.css sets image-rendering on chart images)."""
    alt = _alt()
    rows = [{"image": name, "url": _png(im), "x": 0, "y": 0, "x2": im.shape[1], "y2": im.shape[0]}
            for name, im in images.items()]
    return alt.Chart(alt.Data(values=rows)).mark_image(aspect=False).encode(x=x, x2="x2:Q", y=y, y2="y2:Q",
                                                                            url="url:N")


def image_row(images, names: Sequence[str], *, title: str, description: str, size: int = 120):
    """Small images (H, W, 3) side by side, each under its name (glimpses, crops)."""
    alt = _alt()
    if len(images) != len(names):
        raise ValueError(f"got {len(images)} images and {len(names)} names: they must match")
    charts = []
    for im, name in zip(images, names, strict=True):
        im = np.asarray(im, dtype=np.float32)
        h, w = im.shape[:2]
        charts.append(_picture({name: im}, alt.X("x:Q", scale=alt.Scale(domain=[0, w], nice=False), axis=None),
                               alt.Y("y:Q", scale=alt.Scale(domain=[0, h], nice=False, reverse=True), axis=None),
                               ).properties(title=name, width=size, height=size))
    return alt.hconcat(*charts).configure_view(fill="black").properties(title=title, description=description)


def draw_window(image, *, n: int, title: str = "DRAW's reading window", description: str | None = None,
                size: int = 320):
    """An image with DRAW's N × N grid of Gaussian filters over it; sliders move the centre (g_x, g_y), the
    stride δ and the width σ. The filter centres μ_i = g + (i − N/2 − 0.5) δ are computed in the browser, each
    drawn as a circle of radius σ, so the chart stays interactive in the static book."""
    alt = _alt()
    import pandas as pd

    image = np.asarray(image, dtype=np.float32)
    h, w = image.shape[:2]
    gx = alt.param(name="g_x", value=w / 2, bind=alt.binding_range(min=0, max=w, step=0.5, name="centre g_x "))
    gy = alt.param(name="g_y", value=h / 2, bind=alt.binding_range(min=0, max=h, step=0.5, name="centre g_y "))
    delta = alt.param(name="delta", value=2.0, bind=alt.binding_range(min=0.25, max=(max(h, w) - 1) / (n - 1),
                                                                      step=0.25, name="stride δ "))
    sigma = alt.param(name="sigma", value=1.0, bind=alt.binding_range(min=0.25, max=6, step=0.25, name="width σ "))
    i, j = np.mgrid[1:n + 1, 1:n + 1]
    grid = pd.DataFrame({"i": i.ravel() - n / 2 - 0.5, "j": j.ravel() - n / 2 - 0.5})
    x = alt.X("x:Q", scale=alt.Scale(domain=[0, w], nice=False), axis=None)
    y = alt.Y("y:Q", scale=alt.Scale(domain=[0, h], nice=False, reverse=True), axis=None)
    picture = _picture({"image": image}, x, y)
    px = size / w                                                   # screen pixels per image pixel
    filters = alt.Chart(alt.Data(values=grid.to_dict("records"))).transform_calculate(
        x="g_x + datum.j * delta", y="g_y + datum.i * delta", r=f"sigma * {px}",
    ).mark_point(color="#ff8c00", filled=False, opacity=0.9).encode(
        x=x, y=y, size=alt.Size("r2:Q", scale=None, legend=None),
        tooltip=[alt.Tooltip("x:Q", format=".1f"), alt.Tooltip("y:Q", format=".1f")],
    ).transform_calculate(r2="PI * datum.r * datum.r")
    return alt.layer(picture, filters).add_params(gx, gy, delta, sigma).configure_view(fill="black").properties(
        title=title, width=size, height=size,
        description=description or f"{title}: an image with an {n} by {n} grid of Gaussian filter centres",
    )


def glimpse_paths(images, windows, *, n: int, names: Sequence[str], title: str, description: str, size: int = 150):
    """Where a DRAW model looked: each image with the extent of each of its glimpses, the square that the N × N
    filter centres span plus half a stride on every side (g ± N δ / 2), numbered and coloured by step.
    ``windows[i]`` (T, 5): g_x, g_y, σ², δ, γ of image i's glimpses, as ``GlimpseClassifier`` returns them."""
    alt = _alt()
    import pandas as pd

    windows = np.asarray(windows, dtype=np.float64)
    if not (len(images) == len(windows) == len(names)) or windows.ndim != 3 or windows.shape[2] < 4:
        raise ValueError(f"got {len(images)} images, windows of shape {windows.shape} and {len(names)} names: "
                         f"one (T, 5) row of windows and one name per image")
    steps = [f"glimpse {t + 1}" for t in range(windows.shape[1])]
    scale = alt.Scale(domain=steps, scheme="oranges")
    charts = []
    for im, rows, name in zip(images, windows, names, strict=True):
        im = np.asarray(im, dtype=np.float32)
        h, w = im.shape[:2]
        half = n * rows[:, 3] / 2                                   # half the side of each glimpse's square
        boxes = pd.DataFrame({"step": steps, "number": [str(t + 1) for t in range(len(rows))],
                              "x": rows[:, 0] - half, "x2": rows[:, 0] + half,
                              "y": rows[:, 1] - half, "y2": rows[:, 1] + half,
                              "stride": rows[:, 3], "sigma": np.sqrt(rows[:, 2])})
        x = alt.X("x:Q", scale=alt.Scale(domain=[0, w], nice=False, clamp=True), axis=None)
        y = alt.Y("y:Q", scale=alt.Scale(domain=[0, h], nice=False, reverse=True, clamp=True), axis=None)
        picture = _picture({name: im}, x, y)
        squares = alt.Chart(alt.Data(values=boxes.to_dict("records"))).mark_rect(filled=False, strokeWidth=2).encode(
            x=x, x2="x2:Q", y=y, y2="y2:Q", stroke=alt.Stroke("step:N", scale=scale, legend=alt.Legend(title=None)),
            tooltip=["step:N", alt.Tooltip("stride:Q", format=".2f"), alt.Tooltip("sigma:Q", format=".2f")])
        numbers = alt.Chart(alt.Data(values=boxes.to_dict("records"))).mark_text(
            align="left", baseline="top", dx=2, dy=2, fontSize=11, fontWeight="bold").encode(
            x=x, y=y, text="number:N", color=alt.Color("step:N", scale=scale, legend=None))
        charts.append(alt.layer(picture, squares, numbers).properties(title=name, width=size, height=size))
    return alt.hconcat(*charts).configure_view(fill="black").properties(title=title, description=description)
