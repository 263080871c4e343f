"""Chapter 6, DRAW's glimpses: the cluttered canvases (one whole digit, clutter never on it, seeded), the
``GlimpseClassifier`` twins with shared weights (forward and one epoch of training), where a window reads
(``window_mass``) on hand-made windows with known answers, and the chart of glimpse paths."""

import base64
import io

import numpy as np
import pytest
import torch
from conftest import to_numpy
from PIL import Image

import attention_course as ac
from attention_course.ch06_image_captioning import experiment as c6
from attention_course.ch06_image_captioning import metrics as cm
from attention_course.ch06_image_captioning import scenes as sc
from attention_course.core.errors import ConfigError, InputError, ShapeError
from attention_course.core.parity import torch_to_keras

pytestmark = pytest.mark.chapter(6)   # Chapter 6: `make test CHAPTERS=...` picks by it

# ---- the cluttered canvases ------------------------------------------------------------------------------------


def test_each_canvas_holds_one_whole_digit_and_clutter_only_outside_its_box():
    data = sc.cluttered_digits(60, canvas=32, clutter=3, seed=2)
    assert data.images.shape == (60, 32, 32, 1) and len(data) == 60
    scans, labels = sc.digit_scans("train")
    large = {im.tobytes(): y for im, y in zip(np.kron(scans, np.ones((1, 2, 2), np.float32)), labels, strict=True)}
    for image, label, (top, left, bottom, right) in zip(data.images, data.labels, data.boxes, strict=True):
        assert (bottom - top, right - left) == (16, 16)
        inside = image[top:bottom, left:right, 0]
        assert large.get(inside.tobytes()) == label        # the box holds exactly a scan of that digit, doubled
        outside = image[..., 0].copy()
        outside[top:bottom, left:right] = 0
        assert outside.sum() > 3 * 4                         # three pieces with ink (at least 4 each) around it
    assert set(np.unique(data.labels)) <= set(range(10)) and len(np.unique(data.labels)) > 5


def test_cluttered_canvases_are_seeded_split_by_scan_and_check_their_arguments():
    a, b = sc.cluttered_digits(10, seed=5), sc.cluttered_digits(10, seed=5)
    assert np.array_equal(a.images, b.images) and np.array_equal(a.boxes, b.boxes)
    assert not np.array_equal(sc.cluttered_digits(10, seed=6).images, a.images)
    test = sc.cluttered_digits(40, split="test", seed=5)
    test_scans = {im.tobytes() for im in np.kron(sc.digit_scans("test")[0], np.ones((1, 2, 2), np.float32))}
    assert all(im[top:bottom, left:right, 0].tobytes() in test_scans
               for im, (top, left, bottom, right) in zip(test.images, test.boxes, strict=True))
    clean = sc.cluttered_digits(5, clutter=0, seed=1)
    for image, (top, left, bottom, right) in zip(clean.images, clean.boxes, strict=True):
        assert image.sum() == image[top:bottom, left:right].sum()
    with pytest.raises(ConfigError, match="canvas must be >= 32"):
        sc.cluttered_digits(5, canvas=24)
    with pytest.raises(ConfigError, match="clutter must be a whole number"):
        sc.cluttered_digits(5, clutter=2.5)
    train, test = c6.cluttered({**c6.GLIMPSES["quick"], "n_train": 12, "n_test": 4}, seed=3)
    assert (len(train), len(test), train.images.shape[1]) == (12, 4, c6.GLIMPSES["quick"]["canvas"])


# ---- the classifier --------------------------------------------------------------------------------------------

def _twins(glimpses=3, hidden=16, n=6):
    torch.manual_seed(0)
    tm = ac.torch.GlimpseClassifier(10, n=n, glimpses=glimpses, hidden=hidden)
    km = ac.keras.GlimpseClassifier(10, n=n, glimpses=glimpses, hidden=hidden)
    torch_to_keras(tm, km, (np.zeros((1, 32, 32, 1), np.float32),))
    return tm, km


def test_glimpse_classifier_agrees_across_frameworks_and_starts_in_the_same_place():
    data = sc.cluttered_digits(8, seed=4)
    tm, km = _twins()
    with torch.no_grad():
        logits_t, windows_t = tm(data.images)
    logits_k, windows_k = km(data.images)
    assert tuple(logits_t.shape) == (8, 10) and tuple(windows_t.shape) == (8, 3, 5)
    np.testing.assert_allclose(np.asarray(logits_k), to_numpy(logits_t), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(windows_k), to_numpy(windows_t), rtol=1e-4, atol=1e-5)
    first = to_numpy(windows_t)[:, 0]                     # h_0 = 0: the first window cannot depend on the image
    np.testing.assert_allclose(first, np.broadcast_to(first[0], first.shape), rtol=1e-6)
    later = to_numpy(windows_t)[:, 1]
    assert np.ptp(later[:, 0]) > 0                           # the second one does: it follows what was seen
    window = to_numpy(windows_t)[0, 0]                       # the windows are DrawRead's, from the LSTM state
    np.testing.assert_allclose(window, np.stack([to_numpy(v)[0] for v in tm.read.window(
        torch.zeros(1, 16), 32, 32)]), rtol=1e-5)


def test_training_takes_the_same_steps_in_both_frameworks():
    data = sc.cluttered_digits(64, seed=1)
    tm, km = _twins(glimpses=2)
    before = {"out": to_numpy(tm.out.weight).T.copy(), "read": to_numpy(tm.read.params.weight).T.copy()}
    h_t = ac.torch.train_glimpses(tm, data.images, data.labels, epochs=2, batch_size=32, seed=3)
    h_k = ac.keras.train_glimpses(km, data.images, data.labels, epochs=2, batch_size=32, seed=3)
    np.testing.assert_allclose(h_k["loss"], h_t["loss"], rtol=1e-3)     # epoch 2's loss follows two updates
    after_t = {"out": to_numpy(tm.out.weight).T, "read": to_numpy(tm.read.params.weight).T}
    after_k = {"out": km.out.get_weights()[0], "read": km.read.params.get_weights()[0]}
    moved_t, moved_k = ({k: after[k] - before[k] for k in before} for after in (after_t, after_k))
    for name in moved_t:        # four Adam steps of lr 2e-3 move a weight by up to 8e-3, the same way in both
        assert np.abs(moved_t[name]).max() > 4e-3                     # (the window's layer learns too)
        cosine = (moved_t[name] * moved_k[name]).sum() / np.linalg.norm(moved_t[name]) / np.linalg.norm(moved_k[name])
        assert cosine > 0.99, (name, cosine)   # (Adam divides by |g|: where g is near 0, float noise shows)


def test_glimpse_classifier_learns_to_beat_chance_quickly():
    data = sc.cluttered_digits(3000, seed=0)             # the chapter's model, 375 steps (the chapter: 1,125)
    torch.manual_seed(0)
    model = ac.torch.GlimpseClassifier(10)
    history = ac.torch.train_glimpses(model, data.images, data.labels, epochs=4, seed=0)
    assert history["loss"][-1] < history["loss"][0] - 0.1 and history["accuracy"][-1] > 0.2


def test_glimpse_classifier_names_bad_inputs(fw):
    model = fw.GlimpseClassifier(10, n=4, glimpses=2, hidden=8)
    with pytest.raises(ShapeError, match=r"images must be \(B, H, W, 1\).*\(2, 32, 32, 3\)"):
        model(np.zeros((2, 32, 32, 3), np.float32))
    with pytest.raises(InputError, match=r"images must hold numbers .* <U1 values of shape \(2, 32, 32, 1\)"):
        model(np.full((2, 32, 32, 1), "x"))                # (Keras would fail inside TensorFlow)
    with pytest.raises(ConfigError, match="glimpses must be"):
        fw.GlimpseClassifier(10, glimpses=0)
    images = np.zeros((4, 32, 32, 1), np.float32)
    with pytest.raises(InputError, match=r"targets must be class ids in \[0, 10\).*from 0 to 12"):
        fw.train_glimpses(model, images, np.array([0, 1, 2, 12]), epochs=1)
    with pytest.raises(ShapeError, match="same number of examples"):
        fw.train_glimpses(model, images, np.array([0, 1]), epochs=1)


@pytest.mark.parametrize("sigma2", [0.0, -1.0], ids=["zero", "negative"])
def test_filters_of_sigma2_zero_are_point_filters_not_nan(fw, sigma2):
    """σ² = 0 (what exp(log σ²) underflows to; a tensor's, which read does not look at) used to give NaN (0/0 for a
    filter centred on a pixel), a negative one garbage. Either reads as the floor SIGMA2_MIN, the limit of a narrowing
    Gaussian: a filter centred on a pixel reads that pixel alone, one centred between pixels reads nothing (a row of
    zeros, as for a filter off the image)."""
    from keras import ops

    x = lambda *v: torch.tensor(v) if fw is ac.torch else ops.convert_to_tensor(np.array(v, np.float32))  # tensors
    f_y, f_x = (to_numpy(f) for f in fw.DrawRead(2, 4).filters(x(5.5), x(5.25), x(sigma2), x(1.0), 9, 10))
    np.testing.assert_allclose(f_x[0], np.eye(10)[[5, 6]], atol=1e-7)  # centres 5.0 and 6.0: pixels 5 and 6
    np.testing.assert_array_equal(f_y[0], np.zeros((2, 9)))            # centres 4.75 and 5.75: between pixels
    np.testing.assert_allclose(cm.draw_filterbank(5.5, sigma2, 1.0, 2, 10), np.eye(10)[[5, 6]], atol=1e-7)
    images = np.random.default_rng(0).uniform(size=(1, 9, 10, 1)).astype(np.float32)
    glimpse = to_numpy(fw.DrawRead(2, 4).read(images, x(5.5), x(4.5), x(sigma2), x(1.0), x(1.0)))   # tensors
    np.testing.assert_allclose(glimpse[0, :, :, 0], images[0, 4:6, 5:7, 0], rtol=1e-6)


def test_a_window_whose_sigma2_underflows_has_finite_gradients():
    reader = ac.torch.DrawRead(3, 4)
    log_sigma2 = torch.tensor([-200.0], requires_grad=True)            # exp(-200) = 0 in float32
    gx = torch.tensor([5.0], requires_grad=True)
    glimpse = reader.read(torch.rand(1, 9, 10, 1), gx, torch.tensor([4.5]), log_sigma2.exp(), torch.tensor([1.3]),
                          torch.tensor([1.0]))
    glimpse.sum().backward()
    assert torch.isfinite(glimpse).all() and torch.isfinite(gx.grad).all() and torch.isfinite(log_sigma2.grad).all()


# ---- where a window reads --------------------------------------------------------------------------------------

def test_window_mass_is_the_mean_of_the_filters_outer_products():
    rng = np.random.default_rng(0)
    h = torch.as_tensor(rng.normal(size=(3, 8)), dtype=torch.float32)
    reader = ac.torch.DrawRead(5, 8)
    window = [to_numpy(v) for v in reader.window(h, 30, 40)]
    f_y, f_x = (to_numpy(f) for f in reader.filters(*(torch.as_tensor(v) for v in window[:4]), 30, 40))
    for b in range(3):
        expected = np.einsum("ia,jb->ab", f_y[b], f_x[b]) / 25
        mass = c6.window_mass([v[b] for v in window], (30, 40), 5)
        assert mass.shape == (30, 40) and mass.sum() == pytest.approx(1.0)
        np.testing.assert_allclose(mass, expected / expected.sum(), rtol=1e-4, atol=1e-7)


def test_glimpse_correctness_on_hand_made_windows():
    data = sc.Cluttered(np.zeros((2, 32, 32, 1), np.float32), np.array([3, 4]),
                        np.array([[0, 0, 16, 16], [16, 16, 32, 32]]))
    on_box = (7.5, 7.5, 0.5, 1.0, 1.0)                 # 4 × 4 filters around pixel (7.5, 7.5), inside box 0
    whole = (15.5, 15.5, 16.0, 31 / 3, 1.0)            # wide and blurred over the whole canvas
    windows = np.array([[on_box, whole], [on_box, whole]])
    found = c6.glimpse_correctness(windows, data, 4)
    assert found["chance"] == pytest.approx(0.25) and found["n"] == 2
    first, second = found["share"]
    assert first == pytest.approx(0.5, abs=1e-3)           # all of it in canvas 0's box, none in canvas 1's
    assert second == pytest.approx(0.25, abs=0.03)         # the whole canvas: about the box's share
    assert cm.attention_correctness(c6.window_mass(on_box, (32, 32), 4), (0, 0, 16, 16), (32, 32)) > 0.999
    with pytest.raises(ShapeError, match=r"windows must be \(n, T, 5\).*\(2, 5\)"):
        c6.glimpse_correctness(windows[0], data, 4)
    with pytest.raises(InputError, match="sigma2 .* must be finite and > 0; got \\[0.0\\]"):
        c6.window_mass((8.0, 8.0, 0.0, 1.0), (32, 32), 4)
    off = c6.window_mass((500.0, -300.0, 1.0, 1.0), (32, 32), 4)      # its filters miss the canvas: it reads nothing
    assert not off.any() and cm.attention_correctness(off, (0, 0, 16, 16), (32, 32)) == 0.0


def test_classify_returns_classes_and_windows_for_every_image(fw):
    model = fw.GlimpseClassifier(10, n=4, glimpses=2, hidden=8)
    images = sc.cluttered_digits(7, seed=0).images
    classes, windows = c6.classify(fw, model, images, batch_size=3)
    assert classes.shape == (7,) and windows.shape == (7, 2, 5) and set(classes) <= set(range(10))


# ---- the chart -------------------------------------------------------------------------------------------------

def test_glimpse_paths_draws_one_numbered_square_per_glimpse():
    data = sc.cluttered_digits(2, seed=0)
    windows = np.array([[[16, 16, 4.0, 4.0, 1.0], [10, 12, 1.0, 2.0, 1.0]]] * 2)
    spec = ac.viz.glimpse_paths(data.images, windows, n=8, names=["a", "b"], title="t", description="d").to_dict()
    assert len(spec["hconcat"]) == 2
    squares = spec["hconcat"][0]["layer"][1]["data"]["values"]
    assert [s["number"] for s in squares] == ["1", "2"]
    assert squares[0]["x"] == pytest.approx(16 - 8 * 4 / 2) and squares[1]["x2"] == pytest.approx(10 + 8 * 2 / 2)
    (picture,) = spec["hconcat"][0]["layer"][0]["data"]["values"]                  # the image as one PNG
    png = base64.b64decode(picture["url"].removeprefix("data:image/png;base64,"))
    shown = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    assert shown.max() > 0 and (shown == shown[..., :1]).all()                            # grey stays grey
    with pytest.raises(ValueError, match="2 images, windows of shape"):
        ac.viz.glimpse_paths(data.images, windows[:1], n=8, names=["a", "b"], title="t", description="d")


# ---- the exercise's checker ------------------------------------------------------------------------------------

def _filters(gx, gy, sigma2, delta, n, height, width, offset=0.5, norm=True, two=2.0, swap=False):
    def bank(g, size):
        f = np.exp(-(np.arange(size)[None] - (g + (np.arange(1, n + 1) - n / 2 - offset) * delta)[:, None]) ** 2
                   / (two * sigma2))
        return f / f.sum(-1, keepdims=True) if norm else f
    return (bank(gx, height), bank(gy, width)) if swap else (bank(gy, height), bank(gx, width))


def test_draw_filters_checker_passes_the_package_filters_and_names_each_mistake(capsys):
    def package(gx, gy, sigma2, delta, n, height, width):       # DrawRead's own filters are a right answer
        f_y, f_x = ac.torch.DrawRead(n, 4).filters(*(torch.tensor([v], dtype=torch.float64)
                                                     for v in (gx, gy, sigma2, delta)), height, width)
        return to_numpy(f_y)[0], to_numpy(f_x)[0]

    ac.exercises.draw_filters(package, seed=0)
    for seed in range(40):      # the chapter's answer (no epsilon) passes whatever seed the session has
        ac.exercises.draw_filters(_filters, seed=seed)
    assert "DRAW's filterbank: correct on 20" in capsys.readouterr().out
    mistakes = {"sum to 1": {"norm": False}, "−0.5 is missing": {"offset": 0.0}, "the 2 is missing": {"two": 1.0},
                "swapped": {"swap": True}}
    for needle, change in mistakes.items():
        with pytest.raises(ac.exercises.ExerciseError, match=needle):
            ac.exercises.draw_filters(lambda *a, change=change: _filters(*a, **change), seed=0)
    with pytest.raises(ac.exercises.ExerciseError, match=r"return a pair \(F_Y, F_X\)"):
        ac.exercises.draw_filters(lambda *a: _filters(*a)[0], seed=0)
