"""Chapter 6: the digit scenes (captions match the boxes, seeded, split by scan), attention correctness on
hand-made maps with known answers, BLEU with several references, the captioners' Keras and PyTorch twins with
shared weights, the step interface against teacher forcing, training, the checkers and bad inputs."""

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

RTOL, ATOL = 1e-5, 1e-5
KINDS = ("none", "mean", "soft", "hard")
SMALL = {"n_train": 64, "n_test": 24, "canvas": 48, "embed": 8, "hidden": 16, "dim": 12, "units": 10,
         "epochs": 2, "batch_size": 16, "lr": 3e-3}


# ---- the scenes ------------------------------------------------------------------------------------------------

def test_scenes_are_seeded_and_the_splits_use_different_scans():
    a, b = sc.digit_scenes(20, seed=3), sc.digit_scenes(20, seed=3)
    assert a.captions == b.captions and np.array_equal(a.images, b.images)
    assert sc.digit_scenes(20, seed=4).captions != a.captions
    train, test = sc.digit_scans("train"), sc.digit_scans("test")
    assert (len(train[0]), len(test[0])) == (1437, 360)
    flat = {im.tobytes() for im in train[0]}
    assert sum(im.tobytes() in flat for im in test[0]) < 5          # (load_digits holds a few duplicate scans)


def test_every_caption_word_names_the_digit_the_generator_placed():
    scenes = sc.digit_scenes(300, seed=1)
    for image, objects, caption, names, refs in zip(scenes.images, scenes.objects, scenes.captions,
                                                    scenes.word_objects, scenes.references, strict=True):
        words = caption.split()
        assert len(words) == len(names) and caption == refs[0]
        for obj in objects:                                          # ink inside every box, digits apart
            top, left, bottom, right = obj.box
            assert image[top:bottom, left:right].max() > 0.3
            assert (bottom - top) == (8 if obj.small else 16)
        ink = image.max(-1) > 0
        covered = np.zeros_like(ink)
        for obj in objects:
            covered[obj.box[0]:obj.box[2], obj.box[1]:obj.box[3]] = True
        assert not (ink & ~covered).any()                            # no ink outside the boxes
        for k, obj in enumerate(objects):                            # each noun phrase describes its digit
            phrase = [w for w, n in zip(words, names, strict=True) if n == k]
            assert phrase == obj.words()
            if obj.colour:
                r, g, b = np.asarray(sc.COLOURS[obj.colour])
                patch = image[obj.box[0]:obj.box[2], obj.box[1]:obj.box[3]].reshape(-1, 3)
                brightest = patch[patch.sum(1).argmax()]
                np.testing.assert_allclose(brightest / brightest.max(), np.array([r, g, b]) / max(r, g, b), atol=1e-5)
        if len(objects) == 2:                                        # the relation matches the centres
            first, second = objects[names[1]], objects[names[-1]]   # "a <first> … a <second>"
            (y0, x0), (y1, x1) = first.centre, second.centre
            if "left" in words:
                assert x0 <= x1 and abs(x1 - x0) >= abs(y1 - y0)
            else:
                assert "above" in words and y0 < y1 and abs(y1 - y0) > abs(x1 - x0)
        else:                                                        # three digits: left to right
            order = [names[i] for i, w in enumerate(words) if w in sc.DIGIT_WORDS and names[i] >= 0]
            xs = [objects[k].centre[1] for k in order]
            assert words[:3] == ["three", "digits", ":"] and xs == sorted(xs)


def test_scene_arguments_are_checked():
    with pytest.raises(ConfigError, match="2 and/or 3 digits"):
        sc.digit_scenes(3, counts=(4,))
    with pytest.raises(ConfigError, match="probability"):
        sc.digit_scenes(3, small=1.5)
    with pytest.raises(ConfigError, match="unknown split"):
        sc.digit_scenes(3, split="val")
    with pytest.raises(ConfigError, match="canvas must be >= 34"):
        sc.digit_scenes(3, canvas=20)


# ---- attention correctness and BLEU ----------------------------------------------------------------------------

def test_attention_correctness_on_maps_with_known_answers():
    canvas, box = (48, 48), (8, 16, 24, 32)                          # exactly cells (1..2, 2..3) of a 6 × 6 grid
    one_cell = np.zeros((6, 6))
    one_cell[1, 2] = 1.0
    assert cm.attention_correctness(one_cell, box, canvas) == 1.0
    outside = np.zeros((6, 6))
    outside[5, 5] = 1.0
    assert cm.attention_correctness(outside, box, canvas) == 0.0
    uniform = np.full((6, 6), 1 / 36)
    assert np.isclose(cm.attention_correctness(uniform, box, canvas), cm.box_share(box, canvas))
    assert np.isclose(cm.box_share(box, canvas), 256 / 2304)
    half = (8, 20, 16, 24)                                           # the right half of cell (1, 2)
    assert np.isclose(cm.attention_correctness(one_cell, half, canvas), 0.5)
    with pytest.raises(ShapeError, match="whole cells"):
        cm.cell_overlap(box, (48, 48), (5, 5))
    with pytest.raises(ConfigError, match="not inside the canvas"):
        cm.cell_overlap((0, 0, 60, 8), (48, 48), (6, 6))


def test_bleu_counts_every_reference():
    refs = [["a red three above a seven", "a seven below a red three"], ["a two left of a nine"]]
    assert cm.caption_bleu(["a seven below a red three", "a two left of a nine"], refs) == pytest.approx(100)
    assert cm.caption_bleu(["a two", "a nine"], refs, 1) < cm.caption_bleu(["a red three", "a two left"], refs, 1)
    with pytest.raises(ConfigError, match="one list per image"):
        cm.caption_bleu(["a"], refs)
    with pytest.raises(ConfigError, match="BLEU-1"):
        cm.caption_bleu(["a", "b"], refs, 5)


# ---- the captioners --------------------------------------------------------------------------------------------

def inputs(seed=0, b=3, t=5, vocab=20):
    rng = np.random.default_rng(seed)
    return (rng.random((b, 48, 48, 3)).astype(np.float32), rng.integers(4, vocab, (b, t)),
            rng.gumbel(size=(b, t, 36)).astype(np.float32), np.array([True, False, False][:b]))


def twins(kind, gate=True, seed=0):
    torch.manual_seed(seed)
    tm = ac.torch.Captioner(20, kind, gate=gate, embed=8, hidden=16, dim=12, units=10).eval()
    km = ac.keras.Captioner(20, kind, gate=gate, embed=8, hidden=16, dim=12, units=10)
    images, tokens, _, _ = inputs()
    torch_to_keras(tm, km, (images[:1], tokens[:1]))
    return tm, km


@pytest.mark.parametrize("kind", KINDS)
def test_captioners_agree_with_shared_weights(kind):
    tm, km = twins(kind)
    images, tokens, noise, expect = inputs(1)
    got_t = [to_numpy(x) for x in tm(images, tokens, noise=noise, expect=expect)]
    got_k = [np.asarray(x) for x in km(images, tokens, noise=noise, expect=expect)]
    for a, b in zip(got_t, got_k, strict=True):
        np.testing.assert_allclose(b, a, rtol=RTOL, atol=ATOL)
    alpha = got_t[1]
    if kind == "none":
        assert not alpha.any()
    else:
        np.testing.assert_allclose(alpha.sum(-1), 1, rtol=1e-5)      # a distribution over the 36 locations
    if kind != "hard":
        assert not got_t[2].any()                                    # no samples, no log-probabilities


def test_hard_attention_reads_the_sampled_location():
    torch.manual_seed(0)
    model = ac.torch.Captioner(20, "hard", gate=False, embed=8, hidden=16, dim=12, units=10).eval()
    images, tokens, noise, _ = inputs(2)
    state, memory = model.start(images)
    with torch.no_grad():
        _, _, alpha, log_pi = model.decode_step(torch.as_tensor(tokens[:, 0]), state, memory,
                                                torch.as_tensor(noise[:, 0]))
    pick = (np.log(to_numpy(alpha) + 1e-12) + noise[:, 0]).argmax(-1)  # Gumbel-max: the sampled location
    np.testing.assert_allclose(to_numpy(log_pi), np.log(to_numpy(alpha)[np.arange(3), pick]), rtol=1e-5)
    # the LSTM read a_s: the same step with the expectation (expect=True) gives another state
    with torch.no_grad():
        sampled = model.decode_step(torch.as_tensor(tokens[:, 0]), state, memory, torch.as_tensor(noise[:, 0]))[1]
        expected = model.decode_step(torch.as_tensor(tokens[:, 0]), state, memory, torch.as_tensor(noise[:, 0]),
                                     expect=torch.ones(3, dtype=torch.bool))[1]
    assert not np.allclose(to_numpy(sampled[0]), to_numpy(expected[0]))


def test_the_gate_scales_the_context_and_can_be_turned_off():
    assert hasattr(ac.torch.Captioner(20, "soft"), "f_beta")
    assert not hasattr(ac.torch.Captioner(20, "soft", gate=False), "f_beta")
    assert not hasattr(ac.torch.Captioner(20, "none"), "f_beta")     # nothing to gate
    tm, km = twins("soft", gate=False)
    images, tokens, _, _ = inputs(3)
    np.testing.assert_allclose(np.asarray(km(images, tokens)[0]), to_numpy(tm(images, tokens)[0]),
                               rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("kind", ("none", "soft"))
def test_one_step_at_a_time_equals_teacher_forcing(fw, kind):
    torch.manual_seed(0)
    model = fw.Captioner(20, kind, embed=8, hidden=16, dim=12, units=10)
    if hasattr(model, "eval"):
        model.eval()
    images, tokens, _, _ = inputs(4)
    logits, alpha, _ = model(images, tokens)
    state = model.start(images)
    for t in range(tokens.shape[1]):
        log_probs, state, a = model.step(tokens[:, t], state)
        want = to_numpy(logits)[:, t]
        np.testing.assert_allclose(log_probs, want - np.log(np.exp(want).sum(-1, keepdims=True)), rtol=1e-4,
                                   atol=1e-5)
        np.testing.assert_allclose(a, to_numpy(alpha)[:, t], rtol=1e-4, atol=1e-6)


# ---- the captioners on a pretrained CNN's grids (Captioner(features=D)) -------------------------------------------

def grids(seed=0, b=3, locations=9, d=24):
    """Annotation grids (B, L, D) as the feature cache stores them (float16)."""
    return np.random.default_rng(seed).normal(size=(b, locations, d)).astype(np.float16)


def feature_twins(kind, seed=0):
    torch.manual_seed(seed)
    tm = ac.torch.Captioner(20, kind, embed=8, hidden=16, dim=12, units=10, features=24).eval()
    km = ac.keras.Captioner(20, kind, embed=8, hidden=16, dim=12, units=10, features=24)
    torch_to_keras(tm, km, (grids()[:1], inputs()[1][:1]))
    return tm, km


@pytest.mark.parametrize("kind", ("soft", "hard"))
def test_feature_captioners_agree_with_shared_weights(kind):
    tm, km = feature_twins(kind)
    assert isinstance(tm.encoder, torch.nn.Linear) and tm.features == km.features == 24
    x, (_, tokens, _, expect) = grids(1), inputs(1)
    noise = np.random.default_rng(1).gumbel(size=(3, 5, 9)).astype(np.float32)
    got_t = [to_numpy(v) for v in tm(x, tokens, noise=noise, expect=expect)]
    got_k = [np.asarray(v) for v in km(x, tokens, noise=noise, expect=expect)]
    for a, b in zip(got_t, got_k, strict=True):
        np.testing.assert_allclose(b, a, rtol=RTOL, atol=ATOL)
    assert got_t[1].shape == (3, 5, 9)                               # α over the grid's L = 9 locations
    np.testing.assert_allclose(got_t[1].sum(-1), 1, rtol=1e-5)
    assert (kind == "hard") == bool(got_t[2].any())


@pytest.mark.parametrize("kind", ("soft", "hard"))
def test_feature_captioner_steps_equal_teacher_forcing(fw, kind):
    torch.manual_seed(0)
    model = fw.Captioner(20, kind, embed=8, hidden=16, dim=12, units=10, features=24)
    if hasattr(model, "eval"):
        model.eval()
    x, tokens = grids(4), inputs(4)[1]
    logits, alpha, _ = model(x, tokens, greedy=True)
    state = model.start(x)
    for t in range(tokens.shape[1]):
        log_probs, state, a = model.step(tokens[:, t], state)
        want = to_numpy(logits)[:, t]
        np.testing.assert_allclose(log_probs, want - np.log(np.exp(want).sum(-1, keepdims=True)), rtol=1e-4,
                                   atol=1e-5)
        np.testing.assert_allclose(a, to_numpy(alpha)[:, t], rtol=1e-4, atol=1e-6)


def test_feature_captioner_names_the_shapes(fw):
    model = fw.Captioner(20, "hard", embed=8, hidden=16, dim=12, units=10, features=24)
    images, tokens, _, _ = inputs()
    with pytest.raises(ShapeError, match=r"images must be \(B, L, 24\).*features=24.*\(3, 48, 48, 3\)"):
        model(images, tokens)
    with pytest.raises(ShapeError, match=r"images must be \(B, L, 24\).*\(3, 9, 20\)"):
        model.start(grids(d=20))
    with pytest.raises(ShapeError, match=r"noise must be \(B, T, L\) = \(3, 5, 9\).*\(3, 5, 36\)"):
        model(grids(), tokens, noise=inputs()[2])
    with pytest.raises(ShapeError, match=r"images must be \(B, L, 24\).*\(4, 48, 48, 3\)"):
        fw.train_captioner(model, images[:1].repeat(4, 0), tokens[:1].repeat(4, 0), tokens[:1].repeat(4, 0),
                           epochs=1)
    with pytest.raises(ConfigError, match="features must be"):
        fw.Captioner(20, "soft", features=0)


def test_captions_and_attention_correctness_agree_across_frameworks():
    data = c6.corpus(SMALL, seed=0)
    torch.manual_seed(0)
    tm = ac.torch.Captioner(len(data.vocab), "soft", embed=8, hidden=16, dim=12, units=10).eval()
    km = ac.keras.Captioner(len(data.vocab), "soft", embed=8, hidden=16, dim=12, units=10)
    torch_to_keras(tm, km, (data.test.images[:1], data.test_in[:1]))
    (cap_t, maps_t), (cap_k, maps_k) = c6.caption(tm, data), c6.caption(km, data)
    assert cap_t == cap_k and len(cap_t) == len(data.test)
    for a, b in zip(maps_t, maps_k, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    beam_t, _ = c6.caption(tm, data, beam=3)
    assert beam_t == c6.caption(km, data, beam=3)[0]
    alpha_t = c6.teacher_forced_attention(ac.torch, tm, data)
    alpha_k = c6.teacher_forced_attention(ac.keras, km, data)
    assert alpha_t.shape == (len(data.test), data.test_in.shape[1], 6, 6)
    found_t, found_k = c6.correctness(alpha_t, data.test), c6.correctness(alpha_k, data.test)
    assert found_t["n"] == sum(w in sc.DIGIT_WORDS and k >= 0 for c, names in zip(data.test.captions,
                                                                                   data.test.word_objects, strict=True)
                               for w, k in zip(c.split(), names, strict=True)) > 0
    assert found_t["correctness"] == pytest.approx(found_k["correctness"], rel=1e-4)
    assert 0 < found_t["chance"] < 1


@pytest.mark.parametrize("kind", ("soft", "hard"))
def test_training_lowers_the_loss(fw, kind):
    data = c6.corpus(SMALL, seed=0)
    model = c6.build(fw, data, SMALL, attention=kind, seed=0)
    history = c6.train(fw, model, data, {**SMALL, "epochs": 3}, seed=0, doubly_stochastic=0.5,
                       entropy=0.01 if kind == "hard" else 0.0)
    assert len(history) == 3 and history["loss"][-1] < history["loss"][0]
    assert 0 <= history.last("accuracy") <= 1


def test_bad_inputs_name_the_shapes(fw):
    model = fw.Captioner(20, "hard", embed=8, hidden=16, dim=12, units=10)
    images, tokens, noise, _ = inputs()
    with pytest.raises(ShapeError, match=r"images must be \(B, H, W, 3\).*\(3, 48, 48\)"):
        model(images[..., 0], tokens)
    with pytest.raises(ShapeError, match=r"multiples of 8.*\(3, 44, 44, 3\)"):
        model(images[:, :44, :44], tokens)
    with pytest.raises(ShapeError, match=r"tokens must be \(B, T\) = \(3, T\).*\(2, 5\)"):
        model(images, tokens[:2])
    with pytest.raises(ShapeError, match=r"noise must be \(B, T, L\) = \(3, 5, 36\).*\(3, 5, 30\)"):
        model(images, tokens, noise=noise[..., :30])
    with pytest.raises(ConfigError, match="unknown attention 'local'"):
        fw.Captioner(20, "local")


def test_caption_attention_chart_checks_its_inputs():
    scenes = sc.digit_scenes(2, seed=0)
    maps = [np.full((3, 6, 6), 1 / 36)] * 2
    chart = ac.viz.caption_attention(list(scenes.images), [["a", "b", "c"]] * 2, maps, names=["x", "y"])
    spec = chart.to_dict()
    assert spec["description"] and len(spec["layer"]) == 3
    pictures = spec["layer"][0]
    assert pictures["mark"]["type"] == "image" and len(pictures["data"]["values"]) == 2   # one image mark a scene
    for row, image in zip(pictures["data"]["values"], scenes.images, strict=True):
        png = base64.b64decode(row["url"].removeprefix("data:image/png;base64,"))
        shown = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")) / 255
        np.testing.assert_allclose(shown, np.broadcast_to(image, shown.shape), atol=0.5 / 255 + 1e-6)
        assert (row["x2"], row["y2"]) == (image.shape[1], image.shape[0])
    with pytest.raises(ValueError, match="3 words need 3 attention maps"):
        ac.viz.caption_attention(list(scenes.images), [["a", "b", "c"]] * 2, [np.zeros((2, 6, 6))] * 2)


# ---- the exercise checkers -------------------------------------------------------------------------------------

def test_the_visual_attention_checker_passes_a_correct_step_and_names_mistakes(capsys):
    def right(h_prev, a, W, U, v, w_beta, b_beta):
        e = np.tanh((h_prev @ W)[:, None] + a @ U) @ v
        alpha = np.exp(e - e.max(-1, keepdims=True))
        alpha /= alpha.sum(-1, keepdims=True)
        beta = 1 / (1 + np.exp(-(h_prev @ w_beta + b_beta)))
        return beta[:, None] * (alpha[:, :, None] * a).sum(1), alpha

    def no_gate(h_prev, a, W, U, v, w_beta, b_beta):
        z, alpha = right(h_prev, a, W, U, v, w_beta, b_beta)
        return (alpha[:, :, None] * a).sum(1), alpha

    ac.exercises.visual_attention(right, seed=0)
    assert "✓" in capsys.readouterr().out
    with pytest.raises(ac.exercises.ExerciseError, match="the gate is missing"):
        ac.exercises.visual_attention(no_gate, seed=0)


def test_the_correctness_checker_passes_a_correct_answer_and_names_mistakes(capsys):
    ac.exercises.correctness(cm.attention_correctness, seed=0)
    assert "✓" in capsys.readouterr().out

    def chance(alpha, box, canvas):
        return cm.box_share(box, canvas)

    with pytest.raises(ac.exercises.ExerciseError, match="chance"):
        ac.exercises.correctness(chance, seed=0)


# ---- DRAW's reading window -------------------------------------------------------------------------------------

def test_draw_read_agrees_across_frameworks_and_follows_the_paper():
    rng = np.random.default_rng(0)
    images = rng.random((3, 48, 40, 3)).astype(np.float32)
    h = rng.normal(size=(3, 16)).astype(np.float32)
    tm, km = ac.torch.DrawRead(5, 16), ac.keras.DrawRead(5, 16)
    km(images, h)
    torch_to_keras(tm, km)
    (g_t, w_t), (g_k, w_k) = tm(images, h), km(images, h)
    np.testing.assert_allclose(np.asarray(g_k), to_numpy(g_t), rtol=1e-5, atol=1e-6)
    for a, b in zip(w_t, w_k, strict=True):
        np.testing.assert_allclose(np.asarray(b), to_numpy(a), rtol=1e-5)
    raw = to_numpy(tm.params(torch.as_tensor(h)))                    # the paper's eq. 21-24
    gx, gy, sigma2, delta, gamma = (to_numpy(v) for v in w_t)
    np.testing.assert_allclose(gx, (40 + 1) / 2 * (raw[:, 0] + 1), rtol=1e-5)
    np.testing.assert_allclose(gy, (48 + 1) / 2 * (raw[:, 1] + 1), rtol=1e-5)
    np.testing.assert_allclose(sigma2, np.exp(raw[:, 2]), rtol=1e-5)
    np.testing.assert_allclose(delta, (48 - 1) / (5 - 1) * np.exp(raw[:, 3]), rtol=1e-5)
    np.testing.assert_allclose(gamma, np.exp(raw[:, 4]), rtol=1e-5)
    f_y, f_x = tm.filters(*(torch.as_tensor(v) for v in (gx, gy, sigma2, delta)), 48, 40)
    mu_x = gx[:, None] + (np.arange(1, 6) - 5 / 2 - 0.5) * delta[:, None]            # (3, 5) filter centres
    sums = to_numpy(f_x).sum(-1)
    inside = (mu_x >= 0) & (mu_x <= 39)                               # a filter on the image sums to one
    np.testing.assert_allclose(sums[inside], 1, rtol=1e-4)
    assert inside.any() and (sums <= 1 + 1e-5).all()
    assert tuple(f_y.shape) == (3, 5, 48) and tuple(f_x.shape) == (3, 5, 40)


def test_a_narrow_window_with_unit_stride_copies_the_pixels(fw):
    images = np.random.default_rng(1).random((2, 32, 32, 3)).astype(np.float32)
    reader = fw.DrawRead(4, 8)
    glimpse = to_numpy(reader.read(images, 12.5, 20.5, 0.01, 1.0, 2.0))  # centres 11..14 and 19..22, γ = 2
    np.testing.assert_allclose(glimpse, 2 * images[:, 19:23, 11:15], rtol=1e-5, atol=1e-6)
    whole = to_numpy(reader.read(images, 15.5, 15.5, 1.0, 31 / 3, 1.0))    # 4 × 4 samples over the canvas
    assert whole.shape == (2, 4, 4, 3) and abs(whole.mean() - images.mean()) < 0.1


def test_draw_read_names_bad_shapes(fw):
    reader = fw.DrawRead(4, 8)
    images = np.zeros((2, 16, 16, 3), np.float32)
    with pytest.raises(ShapeError, match=r"h must be \(B, hidden\) = \(2, 8\).*\(2, 6\)"):
        reader(images, np.zeros((2, 6), np.float32))
    with pytest.raises(ShapeError, match=r"images must be \(B, H, W, C\).*\(16, 16, 3\)"):
        reader(images[0], np.zeros((2, 8), np.float32))
    with pytest.raises(ConfigError):
        fw.DrawRead(0, 8)


def test_draw_window_and_image_row_charts():
    scene = sc.digit_scenes(1, seed=0).images[0]
    spec = ac.viz.draw_window(scene, n=6).to_dict()
    assert {p["name"] for p in spec["params"]} >= {"g_x", "g_y", "delta", "sigma"}
    assert ac.viz.image_row([scene, scene[:8, :8]], ["a", "b"], title="t", description="d").to_dict()["hconcat"]
    with pytest.raises(ValueError, match="2 images and 1 names"):
        ac.viz.image_row([scene, scene], ["a"], title="t", description="d")


def test_attention_gradients_agree_across_frameworks_and_behave_as_estimators():
    data = c6.corpus(SMALL, seed=0)
    torch.manual_seed(0)
    tm = ac.torch.Captioner(len(data.vocab), "hard", gate=False, embed=8, hidden=16, dim=12, units=10)
    km = ac.keras.Captioner(len(data.vocab), "hard", gate=False, embed=8, hidden=16, dim=12, units=10)
    torch_to_keras(tm.eval(), km, (data.train.images[:1], data.train_in[:1]))
    got_t = c6.attention_gradients(ac.torch, tm, data, draws=4, batch_size=8, seed=1)
    got_k = c6.attention_gradients(ac.keras, km, data, draws=4, batch_size=8, seed=1)
    n_weights = sum(p.numel() for p in tm.attend.parameters())
    for name in c6.ESTIMATORS:  # same batches, noise and weights: the same gradients, flattened in each framework's
        assert got_t[name].shape == got_k[name].shape == (4, n_weights)       # layout (Dense kernels are transposed)
        np.testing.assert_allclose(np.linalg.norm(got_k[name], axis=1), np.linalg.norm(got_t[name], axis=1),
                                   rtol=1e-3)
        np.testing.assert_allclose(np.sort(got_k[name], axis=1), np.sort(got_t[name], axis=1), rtol=1e-3,
                                   atol=1e-3 * np.abs(got_t[name]).max())
        assert c6.relative_variance(got_k[name]) == pytest.approx(c6.relative_variance(got_t[name]), rel=1e-2)
    assert not np.allclose(got_t["sample"], got_t["sample, baseline"])     # the baseline changes each draw
    # the baseline is the draws' mean reward: subtracting it removes that part of every draw, not the whole draw
    assert np.abs(got_t["sample, baseline"]).sum() > 0
    with pytest.raises(ConfigError, match="attention='hard'"):
        c6.attention_gradients(ac.torch, ac.torch.Captioner(len(data.vocab), "soft", embed=8, hidden=16, dim=12,
                                                           units=10), data, draws=2)


def test_relative_variance_is_noise_over_signal():
    g = np.array([[1.0, 0.0], [3.0, 0.0]])               # mean (2, 0), deviations ±1: E|g - mean|^2 = 1
    assert c6.relative_variance(g) == pytest.approx(1 / 4)
    assert c6.relative_variance(np.ones((5, 3))) == 0.0


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_captioner_refuses_an_image_with_a_nan_or_infinite_pixel(fw, bad):
    """Keras' max pooling drops a NaN (the logits came out near 1e37); both frameworks now name the pixel instead,
    in the model and in its training loop."""
    model = fw.Captioner(20, "soft", embed=8, hidden=16, dim=12, units=10)
    images = np.random.default_rng(0).random((2, 48, 48, 3)).astype(np.float32)
    images[1, 5, 6, 2] = bad
    tokens = np.array([[1, 3, 4], [1, 5, 6]])
    with pytest.raises(InputError, match=r"images must hold finite numbers.*1 \(the first at index \(1, 5, 6, 2\)\)"):
        model(images, tokens)
    with pytest.raises(InputError, match="images must hold finite numbers"):
        fw.train_captioner(model, images, tokens, tokens, epochs=1, batch_size=2)
