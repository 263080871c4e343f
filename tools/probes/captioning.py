"""Bad input to Chapter 6's public API: the digit scenes (``attention_course.ch06_image_captioning.scenes``), the
captioners (``Captioner``, ``SceneEncoder``, ``VisualAttention``, ``train_captioner``), DRAW's reading window
(``DrawRead``), the glimpse classifier (``cluttered_digits``, ``GlimpseClassifier``, ``train_glimpses``,
``chapter6.window_mass`` and ``glimpse_correctness``) and the captioning metrics (BLEU with several references,
attention correctness).

Counts and sizes that are not whole numbers or cannot fit, images of the wrong shape or dtype, caption ids outside
the vocabulary, noise and ``expect`` of the wrong shape, training captions with no words (a NaN loss), window
parameters that divide by zero, boxes outside the canvas, attention maps that are not distributions, a single
caption where a list of references belongs.
"""

from __future__ import annotations

import numpy as np

from . import Probe, to_input, to_numpy
from .layers import bad, call, is_torch

B, T, V, HW = 2, 4, 12, 16          # batch, caption steps, vocabulary, a 16 × 16 canvas: L = 2 × 2 locations
L = (HW // 8) ** 2


def images(b=B, hw=HW, seed=0, dtype="float32"):
    return np.random.default_rng(seed).random((b, hw, hw, 3)).astype(dtype)


def tokens(b=B, t=T, seed=0):
    return np.random.default_rng(seed).integers(4, V, size=(b, t))


def captioner(fw, attention="hard", **kwargs):
    return fw.Captioner(V, attention, **{"embed": 8, "hidden": 16, "dim": 12, "units": 10, **kwargs})


def run_captioner(attention="hard", x=None, y=None, **extra):
    """Call a captioner with the images or tokens replaced (functions of the good ones) and extra arguments
    (functions of (images, tokens))."""
    def run(fw):
        xs, ys = images(), tokens()
        xs, ys = (f(v) if f is not None else v for f, v in ((x, xs), (y, ys)))
        kwargs = {k: to_input(fw, f(xs, ys)) for k, f in extra.items()}
        return call(fw, captioner(fw, attention), to_input(fw, xs), to_input(fw, ys), **kwargs)
    return run


def captioner_numpy_inputs(fw):
    """NumPy inputs give the framework tensors' result; α of soft attention is a distribution over L."""
    xs, ys = images(), tokens()
    model = captioner(fw, "soft")
    logits, alpha, log_pi = (to_numpy(v) for v in call(fw, model, xs, ys))
    ref = to_numpy(call(fw, model, to_input(fw, xs), to_input(fw, ys))[0])
    assert logits.shape == (B, T, V) and alpha.shape == (B, T, L) and log_pi.shape == (B, T), logits.shape
    np.testing.assert_allclose(logits, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(alpha.sum(-1), 1.0, rtol=1e-5)


def step_with(tokens_=None, index=None):
    def run(fw):
        model = captioner(fw, "soft")
        state = model.start(to_input(fw, images()))
        if tokens_ is not None:
            return model.step(tokens_(np.full(B, 2)), state)
        return model.reorder(state, index(np.arange(B)))
    return run


def visual_attention(fw, h_shape=(B, 16), keys_shape=(B, L, 10)):
    layer = fw.VisualAttention(16, 12, 10)
    rng = np.random.default_rng(0)
    h = to_input(fw, rng.normal(size=h_shape).astype("float32"))
    keys = to_input(fw, rng.normal(size=keys_shape).astype("float32"))
    return call(fw, layer, h, keys)


def visual_attention_works(fw):
    alpha = to_numpy(visual_attention(fw))
    assert alpha.shape == (B, L), alpha.shape
    np.testing.assert_allclose(alpha.sum(-1), 1.0, rtol=1e-5)


def train_with(attention="soft", x=None, y_in=None, y_out=None, **kwargs):
    def run(fw):
        xs, ys = images(4), tokens(4, T + 1)
        t_in, t_out = ys[:, :-1], ys[:, 1:]
        xs, t_in, t_out = (f(v) if f is not None else v for f, v in ((x, xs), (y_in, t_in), (y_out, t_out)))
        model = captioner(fw, attention)
        history = fw.train_captioner(model, xs, t_in, t_out, **{"epochs": 1, "batch_size": 2, **kwargs})
        loss = history["loss"]
        assert np.isfinite(loss).all(), f"the loss is not finite: {loss}"
        return history
    return run


def all_pad_caption(t):
    t = t.copy()
    t[1] = 0
    return t


def draw_read(images_=None, **params):
    """DrawRead(4, 8).read on (2, 16, 16, 3) images with the given window parameters (defaults: a good one)."""
    def run(fw):
        reader = fw.DrawRead(4, 8)
        xs = images() if images_ is None else images_
        window = {"gx": 8.0, "gy": 8.0, "sigma2": 1.0, "delta": 2.0, "gamma": 1.0, **params}
        return to_numpy(reader.read(to_input(fw, xs), *window.values()))
    return run


def draw_read_one_filter(fw):
    """n=1: one filter at the centre of the window; a narrow one copies the pixel under it."""
    xs = images()
    glimpse = to_numpy(fw.DrawRead(1, 8).read(to_input(fw, xs), 5.0, 9.0, 0.01, 1.0, 1.0))
    np.testing.assert_allclose(glimpse[:, 0, 0], xs[:, 9, 5], rtol=1e-5, atol=1e-6)


def framework_tensor(fw, array):
    """A float32 tensor of the framework (a NumPy window parameter is checked on the host; a tensor is not)."""
    if is_torch(fw):
        return to_input(fw, np.asarray(array, "float32"))
    from keras import ops

    return ops.convert_to_tensor(np.asarray(array, "float32"))


def draw_filters_sigma2(sigma2):
    """DrawRead.filters of σ² = 0 (what exp(log σ²) underflows to) or less: point filters, never NaN (0/0): a
    filter centred on a pixel reads that pixel alone, one centred between pixels nothing."""
    def run(fw):
        t = lambda v: framework_tensor(fw, [v])
        f_y, f_x = (to_numpy(f) for f in fw.DrawRead(2, 8).filters(t(5.5), t(5.25), t(sigma2), t(1.0), 9, 10))
        assert np.isfinite(f_y).all() and np.isfinite(f_x).all(), f"σ² = {sigma2}: F_X {f_x}"
        np.testing.assert_allclose(f_x[0], np.eye(10)[[5, 6]], atol=1e-6, err_msg="centres 5 and 6: pixels 5, 6")
        np.testing.assert_array_equal(f_y[0], 0.0, err_msg="centres 4.75 and 5.75 fall between pixels")
    return run


def draw_read_tensor_sigma2_zero(fw):
    """DrawRead.read of σ² = 0 given as a tensor (read checks the values of numbers and NumPy arrays only): the
    glimpse of point filters, finite."""
    xs = images()
    t = lambda v: framework_tensor(fw, [v])
    glimpse = to_numpy(fw.DrawRead(2, 8).read(to_input(fw, xs), t(5.5), t(4.5), t(0.0), t(1.0), t(1.0)))
    np.testing.assert_allclose(glimpse, xs[:, 4:6, 5:7], rtol=1e-5, atol=1e-6)


def filterbank_sigma2_zero(fw):
    from attention_course.ch06_image_captioning.metrics import draw_filterbank

    f = draw_filterbank(5.5, 0.0, 1.0, 2, 10)                          # centres 5.0 and 6.0
    np.testing.assert_allclose(f, np.eye(10)[[5, 6]], atol=1e-6, err_msg="draw_filterbank at σ² = 0")


def draw_read_per_image_params(fw):
    """Window parameters of shape (B,): each image gets its own window."""
    xs = images()
    reader = fw.DrawRead(2, 8)
    both = to_numpy(reader.read(to_input(fw, xs), np.array([4.5, 10.5]), 8.5, 0.01, 1.0, 1.0))
    for i, gx in enumerate((4.5, 10.5)):
        one = to_numpy(reader.read(to_input(fw, xs[i:i + 1]), gx, 8.5, 0.01, 1.0, 1.0))
        np.testing.assert_allclose(both[i:i + 1], one, rtol=1e-5, atol=1e-6)


def draw_read_column_params(fw):
    """A (B, 1) column of window parameters (one per image, e.g. a slice h[:, :1]) reads as the (B,) row."""
    xs = images()
    reader = fw.DrawRead(2, 8)
    column = to_numpy(reader.read(to_input(fw, xs), np.array([[4.5], [10.5]]), 8.5, 0.01, 1.0, 1.0))
    row = to_numpy(reader.read(to_input(fw, xs), np.array([4.5, 10.5]), 8.5, 0.01, 1.0, 1.0))
    np.testing.assert_allclose(column, row, rtol=1e-6)


def draw_int_images(fw):
    """A read is linear: integer pixels (0-255) give 255 times the glimpse of the same image in [0, 1]."""
    pixels = np.random.default_rng(2).integers(0, 256, size=(B, HW, HW, 3))
    reader = fw.DrawRead(4, 8)
    h = to_input(fw, np.random.default_rng(3).normal(size=(B, 8)).astype("float32"))
    got, window = call(fw, reader, to_input(fw, pixels), h)
    ref, _ = call(fw, reader, to_input(fw, (pixels / 255).astype("float32")), h)
    np.testing.assert_allclose(to_numpy(got), 255 * to_numpy(ref), rtol=1e-4, atol=1e-3)


def draw_forward(h_shape=(B, 8), images_=None):
    def run(fw):
        xs = images() if images_ is None else images_
        h = np.zeros(h_shape, "float32")
        return call(fw, fw.DrawRead(4, 8), to_input(fw, xs), to_input(fw, h))
    return run


# ---- scenes ------------------------------------------------------------------------------------------------------

def scenes(*args, **kwargs):
    def run(fw):
        from attention_course.ch06_image_captioning import scenes as sc

        return sc.digit_scenes(*args, **kwargs)
    return run


def scenes_three_large_on_the_smallest_canvas(fw):
    """Three large digits on the smallest canvas allowed fit (in a corner each): found, not an endless search."""
    from attention_course.ch06_image_captioning import scenes as sc

    found = sc.digit_scenes(3, canvas=34, counts=(3,), small=0.0, seed=1)
    assert all(len(o) == 3 for o in found.objects) and found.images.shape == (3, 34, 34, 3)


def scenes_numpy_counts(fw):
    from attention_course.ch06_image_captioning import scenes as sc

    got = sc.digit_scenes(np.int64(2), canvas=np.int64(48), counts=[2], small=np.float32(0.5), seed=np.int64(3))
    ref = sc.digit_scenes(2, canvas=48, counts=(2,), small=0.5, seed=3)
    assert got.captions == ref.captions and np.array_equal(got.images, ref.images)


def scene_caption_one(fw):
    from attention_course.ch06_image_captioning import scenes as sc

    sc.scene_caption([sc.DigitObject(3, None, True, (0, 0, 8, 8))])


# ---- metrics -------------------------------------------------------------------------------------------------------

def metric(name, *args, **kwargs):
    def run(fw):
        from attention_course.ch06_image_captioning import metrics as cm

        return getattr(cm, name)(*args, **kwargs)
    return run


ONE_CELL = np.zeros((6, 6))
ONE_CELL[1, 2] = 1.0
BOX, CANVAS = (8, 16, 24, 32), (48, 48)
REFS = [["a red three above a seven", "a seven below a red three"], ["a two left of a nine"]]


def correctness_works(fw):
    from attention_course.ch06_image_captioning import metrics as cm

    assert cm.attention_correctness(ONE_CELL, BOX, CANVAS) == 1.0
    assert cm.attention_correctness(np.zeros((6, 6)), BOX, CANVAS) == 0.0          # no attention (Show and Tell)
    f32 = np.full((6, 6), 1 / 36, np.float32)                                       # float32 rounding is fine
    assert abs(cm.attention_correctness(f32, BOX, CANVAS) - cm.box_share(BOX, CANVAS)) < 1e-6


def caption_bleu_works(fw):
    from attention_course.ch06_image_captioning import metrics as cm

    assert abs(cm.caption_bleu(["a seven below a red three", "a two left of a nine"], REFS) - 100) < 1e-9


def canvases(n=4, seed=0):
    from attention_course.ch06_image_captioning.scenes import cluttered_digits

    return cluttered_digits(n, seed=seed)


def cluttered_with(**kwargs):
    def run(fw):
        from attention_course.ch06_image_captioning.scenes import cluttered_digits

        return cluttered_digits(**kwargs)
    return run


def glimpser(fw, **kwargs):
    return fw.GlimpseClassifier(10, **{"n": 4, "glimpses": 2, "hidden": 8, **kwargs})


def train_glimpses_with(images_=None, labels=None, **kwargs):
    """train_glimpses on 4 cluttered canvases with the images, labels or arguments replaced."""
    def run(fw):
        data = canvases()
        xs = data.images if images_ is None else images_
        ys = data.labels if labels is None else labels
        return fw.train_glimpses(glimpser(fw), xs, ys, **{"epochs": 1, "batch_size": 2, **kwargs})
    return run


def glimpses_of_numpy_and_tensors(fw):
    """NumPy canvases and the framework's tensors give the same logits and windows: (B, 10) and (B, T, 5)."""
    xs = canvases().images
    model = glimpser(fw)
    logits, windows = (to_numpy(v) for v in call(fw, model, xs))
    ref = to_numpy(call(fw, model, to_input(fw, xs))[0])
    assert logits.shape == (4, 10) and windows.shape == (4, 2, 5), (logits.shape, windows.shape)
    np.testing.assert_allclose(logits, ref, rtol=1e-5, atol=1e-6)


def window_mass_of(window, n=4, shape=(16, 16)):
    def run(fw):
        from attention_course.ch06_image_captioning import experiment as c6

        return c6.window_mass(window, shape, n)
    return run


def window_mass_works(fw):
    """A window far off the canvas reads nothing (DrawRead's glimpse is zeros): a map of zeros, none of it in any
    box; one half off the canvas spreads its weight over the pixels its filters still reach."""
    from attention_course.ch06_image_captioning import experiment as c6
    from attention_course.ch06_image_captioning import metrics as cm

    off = c6.window_mass((500.0, -300.0, 1.0, 1.0), (16, 16), 4)
    assert not off.any() and cm.attention_correctness(off, (0, 0, 16, 16), (16, 16)) == 0.0
    edge = c6.window_mass((0.0, 8.0, 1.0, 2.0), (16, 16), 4)
    assert abs(edge.sum() - 1) < 1e-9 and edge[:, :7].sum() > 0.99, edge[:, :7].sum()


def glimpse_correctness_of(windows):
    def run(fw):
        from attention_course.ch06_image_captioning import experiment as c6

        return c6.glimpse_correctness(windows, canvases(), 4)
    return run


PROBES = [
    # scenes
    bad("scenes", "digit_scenes n=0", scenes(0), False),
    bad("scenes", "digit_scenes n=-3", scenes(-3), False),
    bad("scenes", "digit_scenes n=2.5", scenes(2.5), False),
    bad("scenes", "digit_scenes canvas=20 (a large digit cannot fit)", scenes(2, canvas=20), False),
    bad("scenes", "digit_scenes canvas=40.0", scenes(2, canvas=40.0), False),
    bad("scenes", "digit_scenes counts=3 (not a tuple)", scenes(2, counts=3), False),
    bad("scenes", "digit_scenes counts=(1,)", scenes(2, counts=(1,)), False),
    bad("scenes", "digit_scenes counts=()", scenes(2, counts=()), False),
    bad("scenes", "digit_scenes small=nan", scenes(2, small=float("nan")), False),
    bad("scenes", "digit_scenes tinted=None", scenes(2, tinted=None), False),
    bad("scenes", "digit_scenes tinted=-0.1", scenes(2, tinted=-0.1), False),
    bad("scenes", "digit_scenes split='val'", scenes(2, split="val"), False),
    bad("scenes", "digit_scenes seed=-1", scenes(2, seed=-1), False),
    bad("scenes", "scene_caption of one digit", scene_caption_one, False),
    Probe("scenes", "digit_scenes three large digits, canvas=34", scenes_three_large_on_the_smallest_canvas, False),
    Probe("scenes", "digit_scenes NumPy numbers", scenes_numpy_counts, False),
    # Captioner
    bad("captioner", "Captioner token id = vocab", run_captioner(y=lambda t: t * 0 + V)),
    bad("captioner", "Captioner token id -1", run_captioner(y=lambda t: t - 10)),
    bad("captioner", "Captioner float tokens", run_captioner(y=lambda t: t + 0.5)),
    bad("captioner", "Captioner no caption steps", run_captioner(y=lambda t: t[:, :0])),
    bad("captioner", "Captioner tokens for fewer images", run_captioner(y=lambda t: t[:1])),
    bad("captioner", "Captioner images (B, H, W)", run_captioner(x=lambda x: x[..., 0])),
    bad("captioner", "Captioner images 12 × 12", run_captioner(x=lambda x: x[:, :12, :12])),
    bad("captioner", "Captioner uint8 images (0-255)", run_captioner(x=lambda x: (x * 255).astype("uint8"))),
    bad("captioner", "Captioner noise (B, T, L+1)",
        run_captioner(noise=lambda x, y: np.zeros((B, T, L + 1), "float32"))),
    bad("captioner", "Captioner expect of the wrong length", run_captioner(expect=lambda x, y: np.ones(B + 1, bool))),
    bad("captioner", "Captioner expect of 0.5", run_captioner(expect=lambda x, y: np.full(B, 0.5, "float32"))),
    Probe("captioner", "Captioner NumPy inputs", captioner_numpy_inputs),
    bad("captioner", "Captioner attention='local'", lambda fw: captioner(fw, "local")),
    bad("captioner", "Captioner units=0", lambda fw: captioner(fw, units=0)),
    bad("captioner", "SceneEncoder dim=0", lambda fw: fw.SceneEncoder(0)),
    bad("captioner", "SceneEncoder channels=2.5", lambda fw: fw.SceneEncoder(8, channels=2.5)),
    bad("captioner", "VisualAttention units=0", lambda fw: fw.VisualAttention(16, 12, 0)),
    bad("captioner", "VisualAttention h_prev of the wrong size", lambda fw: visual_attention(fw, h_shape=(B, 15))),
    bad("captioner", "VisualAttention keys of the wrong size",
        lambda fw: visual_attention(fw, keys_shape=(B, L, 9))),
    bad("captioner", "VisualAttention batch sizes differ", lambda fw: visual_attention(fw, h_shape=(B + 1, 16))),
    Probe("captioner", "VisualAttention a distribution over L", visual_attention_works),
    bad("captioner", "Captioner.step token id = vocab", step_with(tokens_=lambda t: t * 0 + V)),
    bad("captioner", "Captioner.step more tokens than images", step_with(tokens_=lambda t: np.append(t, 2))),
    bad("captioner", "Captioner.reorder index out of range", step_with(index=lambda i: i + 1)),
    # train_captioner
    bad("train", "train_captioner target id = vocab", train_with(y_out=lambda t: t * 0 + V)),
    bad("train", "train_captioner tokens_in id -1", train_with(y_in=lambda t: t - 10)),
    bad("train", "train_captioner tokens_in and tokens_out widths differ", train_with(y_out=lambda t: t[:, :-1])),
    bad("train", "train_captioner a caption of pads only (hard)", train_with("hard", y_out=all_pad_caption)),
    bad("train", "train_captioner every caption pads only", train_with(y_out=lambda t: t * 0)),
    bad("train", "train_captioner doubly_stochastic=nan", train_with(doubly_stochastic=float("nan"))),
    bad("train", "train_captioner doubly_stochastic=-1", train_with(doubly_stochastic=-1.0)),
    bad("train", "train_captioner entropy=nan", train_with("hard", entropy=float("nan"))),
    bad("train", "train_captioner expect_share=1.5", train_with("hard", expect_share=1.5)),
    bad("train", "train_captioner epochs=0", train_with(epochs=0)),
    bad("train", "train_captioner images 12 × 12", train_with(x=lambda x: x[:, :12, :12])),
    bad("train", "train_captioner fewer images than captions", train_with(x=lambda x: x[:3])),
    # DrawRead
    bad("draw", "DrawRead.read sigma2=0", draw_read(sigma2=0.0)),
    bad("draw", "DrawRead.read sigma2=-1", draw_read(sigma2=-1.0)),
    bad("draw", "DrawRead.read delta=nan", draw_read(delta=float("nan"))),
    bad("draw", "DrawRead.read gamma=inf", draw_read(gamma=float("inf"))),
    bad("draw", "DrawRead.read gx of the wrong length", draw_read(gx=np.array([1.0, 2.0, 3.0]))),
    bad("draw", "DrawRead.read gx (2, 2) for 2 images", draw_read(gx=np.ones((2, 2)))),
    Probe("draw", "DrawRead.read gx (B, 1)", draw_read_column_params),
    bad("draw", "DrawRead.read image of 0 × 0 pixels", draw_read(images_=np.zeros((B, 0, 0, 3), "float32"))),
    bad("draw", "DrawRead.read (H, W, C) image", draw_read(images_=images()[0])),
    Probe("draw", "DrawRead.read one filter (n=1)", draw_read_one_filter),
    Probe("draw", "DrawRead.filters sigma2=0 (point filters)", draw_filters_sigma2(0.0)),
    Probe("draw", "DrawRead.filters sigma2=-1 (a tensor: the floor)", draw_filters_sigma2(-1.0)),
    Probe("draw", "DrawRead.read sigma2=0 as a tensor", draw_read_tensor_sigma2_zero),
    Probe("draw", "draw_filterbank sigma2=0 (point filters)", filterbank_sigma2_zero, False),
    Probe("draw", "DrawRead.read a window per image", draw_read_per_image_params),
    bad("draw", "DrawRead h of the wrong size", draw_forward(h_shape=(B, 7))),
    bad("draw", "DrawRead h for more images", draw_forward(h_shape=(B + 1, 8))),
    Probe("draw", "DrawRead int images (0-255)", draw_int_images),
    bad("draw", "DrawRead.read string images (NumPy)",
        lambda fw: fw.DrawRead(4, 8).read(np.full((B, HW, HW, 3), "x"), 8.0, 8.0, 1.0, 2.0, 1.0)),
    bad("draw", "DrawRead n=2.5", lambda fw: fw.DrawRead(2.5, 8)),
    # metrics
    bad("metrics", "attention_correctness box below the canvas", metric("attention_correctness", ONE_CELL,
                                                                         (40, 0, 56, 16), CANVAS), False),
    bad("metrics", "attention_correctness box of negative size", metric("attention_correctness", ONE_CELL,
                                                                         (24, 16, 8, 32), CANVAS), False),
    bad("metrics", "attention_correctness box of 3 numbers", metric("attention_correctness", ONE_CELL,
                                                                     (8, 16, 24), CANVAS), False),
    bad("metrics", "attention_correctness weights summing to 2", metric("attention_correctness", 2 * ONE_CELL,
                                                                         BOX, CANVAS), False),
    bad("metrics", "attention_correctness negative weights", metric("attention_correctness", ONE_CELL - 1 / 36,
                                                                     BOX, CANVAS), False),
    bad("metrics", "attention_correctness NaN weights", metric("attention_correctness", ONE_CELL * np.nan, BOX,
                                                                CANVAS), False),
    bad("metrics", "attention_correctness flat (L,) map", metric("attention_correctness", ONE_CELL.ravel(), BOX,
                                                                  CANVAS), False),
    bad("metrics", "attention_correctness grid 5 × 5 on 48 × 48", metric("attention_correctness",
                                                                          np.full((5, 5), 0.04), BOX, CANVAS), False),
    bad("metrics", "attention_correctness canvas of 3 sizes", metric("attention_correctness", ONE_CELL, BOX,
                                                                      (48, 48, 3)), False),
    Probe("metrics", "attention_correctness of known cases", correctness_works, False),
    bad("metrics", "cell_overlap grid (0, 6)", metric("cell_overlap", BOX, CANVAS, (0, 6)), False),
    bad("metrics", "box_share box outside the canvas", metric("box_share", (40, 40, 60, 60), CANVAS), False),
    bad("metrics", "caption_bleu lists differ", metric("caption_bleu", ["a two"], REFS), False),
    bad("metrics", "caption_bleu references as strings", metric("caption_bleu", ["a seven", "a two"],
                                                                 ["a seven", "a two"]), False),
    bad("metrics", "caption_bleu one string", metric("caption_bleu", "a two", [["a two"]] * 5), False),
    bad("metrics", "caption_bleu an image without references", metric("caption_bleu", ["a", "b"],
                                                                        [["a"], []]), False),
    bad("metrics", "caption_bleu max_order=5", metric("caption_bleu", ["a", "b"], [["a"], ["b"]], 5), False),
    Probe("metrics", "caption_bleu of a known case", caption_bleu_works, False),
    # the glimpse classifier
    bad("glimpses", "cluttered_digits canvas=24", cluttered_with(n=2, canvas=24), False),
    bad("glimpses", "cluttered_digits n=0", cluttered_with(n=0), False),
    bad("glimpses", "cluttered_digits clutter=-1", cluttered_with(n=2, clutter=-1), False),
    bad("glimpses", "cluttered_digits split='valid'", cluttered_with(n=2, split="valid"), False),
    Probe("glimpses", "GlimpseClassifier NumPy inputs", glimpses_of_numpy_and_tensors),
    bad("glimpses", "GlimpseClassifier colour images for channels=1",
        lambda fw: call(fw, glimpser(fw), to_input(fw, images(hw=32)))),
    bad("glimpses", "GlimpseClassifier (H, W, 1) image",
        lambda fw: call(fw, glimpser(fw), to_input(fw, canvases().images[0]))),
    bad("glimpses", "GlimpseClassifier string images (NumPy)",
        lambda fw: call(fw, glimpser(fw), np.full((2, 32, 32, 1), "x"))),
    bad("glimpses", "GlimpseClassifier glimpses=0", lambda fw: glimpser(fw, glimpses=0)),
    bad("glimpses", "GlimpseClassifier classes=2.5", lambda fw: fw.GlimpseClassifier(2.5)),
    bad("glimpses", "train_glimpses labels of 10", train_glimpses_with(labels=np.array([0, 1, 2, 10]))),
    bad("glimpses", "train_glimpses float labels", train_glimpses_with(labels=np.array([0.0, 1.0, 2.0, 3.0]))),
    bad("glimpses", "train_glimpses fewer labels", train_glimpses_with(labels=np.array([0, 1]))),
    bad("glimpses", "train_glimpses one label per pixel", train_glimpses_with(labels=np.zeros((4, 32), int))),
    bad("glimpses", "train_glimpses no canvases", train_glimpses_with(images_=np.zeros((0, 32, 32, 1), "float32"),
                                                                      labels=np.zeros(0, int))),
    bad("glimpses", "train_glimpses epochs=0", train_glimpses_with(epochs=0)),
    bad("glimpses", "train_glimpses lr=0", train_glimpses_with(lr=0.0)),
    bad("glimpses", "train_glimpses colour images", train_glimpses_with(images_=images(b=4, hw=32))),
    bad("glimpses", "window_mass sigma2=0", window_mass_of((8.0, 8.0, 0.0, 1.0))),
    bad("glimpses", "window_mass delta=nan", window_mass_of((8.0, 8.0, 1.0, float("nan")))),
    bad("glimpses", "window_mass of three numbers", window_mass_of((8.0, 8.0, 1.0))),
    bad("glimpses", "window_mass n=0", window_mass_of((8.0, 8.0, 1.0, 1.0), n=0)),
    Probe("glimpses", "window_mass of windows off and at the edge of the canvas", window_mass_works, False),
    bad("glimpses", "glimpse_correctness (n, 5) windows", glimpse_correctness_of(np.ones((4, 5)))),
    bad("glimpses", "glimpse_correctness windows for 3 canvases", glimpse_correctness_of(np.ones((3, 2, 5)))),
]
