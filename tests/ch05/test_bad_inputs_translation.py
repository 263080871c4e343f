"""Bad input to Chapters 5 and 6, in both frameworks: source masks that are not right-padded (the PyTorch encoder
packs the first length tokens of each row) or left out, empty batches, one-step attention of the wrong sizes,
decoding steps and reorders with ids or rows out of range, masks and NaN in greedy and beam search, captions with
ids outside the vocabulary or of pads only, DRAW windows that divide by zero, and the metrics and data helpers
given one string for a list, a bare set for a list of alignments, or maps that are not distributions.
The full list of bad inputs tried is ``tools/probes/translation.py`` and ``tools/probes/captioning.py``
(``python tools/probe_inputs.py translation captioning``)."""

import re

import numpy as np
import pytest
from conftest import as_input, to_numpy

from attention_course.ch05_neural_machine_translation import data as td
from attention_course.ch05_neural_machine_translation import metrics as tm
from attention_course.ch06_image_captioning import metrics as cm
from attention_course.ch06_image_captioning import scenes
from attention_course.core import decode
from attention_course.core.backend import backend
from attention_course.core.errors import ConfigError, InputError, MissingFileError, ShapeError
from attention_course.data import synthetic

pytestmark = pytest.mark.chapter(5, 8)   # Chapters 5 and 8: `make test CHAPTERS=...` picks by it

B, S, T, V_SRC, V_TGT = 3, 6, 4, 20, 16
RIGHT = np.arange(S)[None, :] < np.array([S, S - 2, 1])[:, None]          # (B, S) right-padded, lengths 6, 4, 1


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    return np.where(RIGHT, rng.integers(4, V_SRC, size=(B, S)), 0), RIGHT.copy(), rng.integers(4, V_TGT, (B, T))


def _run(fw, model, *args, **kwargs):
    if backend(fw).is_torch:
        import torch

        model.eval()
        with torch.no_grad():
            return model(*args, **kwargs)
    return model(*args, **kwargs)


def _translator(fw, kind="bahdanau"):
    return fw.Translator(V_SRC, V_TGT, kind, embed=8, hidden=12)


def _slides_translator(fw):
    return fw.SlidesTranslator(V_SRC, V_TGT, embed=8, latent_dim=6, latent_dim_decoder=10)


# ---- source masks: right-padded, at least one real token per row, at least one row, not None ----------------------

@pytest.mark.parametrize("make", [_translator, _slides_translator], ids=["Translator", "SlidesTranslator"])
@pytest.mark.parametrize("change, error, needle", [
    (lambda m: m[:, ::-1], InputError, "src_mask must be right-padded: .* row 1 is 001111"),
    (lambda m: np.where(np.arange(B)[:, None] == 1, False, m), InputError, "src_mask row 1 has no real token"),
    (lambda m: None, InputError, r"src_mask is required: a \(B, S\) mask"),
])
def test_a_source_mask_must_be_right_padded_with_a_real_token_per_row(fw, make, change, error, needle):
    src, mask, tgt = _batch()
    bad = change(mask)
    with pytest.raises(error, match=needle):                          # None by position: Keras' own mask filling
        _run(fw, make(fw), as_input(fw, src), None if bad is None else as_input(fw, bad.copy()), as_input(fw, tgt))


@pytest.mark.parametrize("make", [_translator, _slides_translator], ids=["Translator", "SlidesTranslator"])
def test_an_empty_batch_and_batches_that_differ_are_refused(fw, make):
    src, mask, tgt = _batch()
    with pytest.raises(ShapeError, match=r"src holds no rows: shape \(0, 6\) has batch size 0"):
        _run(fw, make(fw), as_input(fw, src[:0]), as_input(fw, mask[:0]), as_input(fw, tgt[:0]))
    with pytest.raises(ShapeError, match=r"must share their batch size .* src \(3, 6\), tgt_in \(2, 4\)"):
        _run(fw, make(fw), as_input(fw, src), as_input(fw, mask), as_input(fw, tgt[:2]))
    with pytest.raises(ShapeError, match=r"src_mask must have the shape of src, \(3, 6\); got \(3, 5\)"):
        _run(fw, make(fw), as_input(fw, src), as_input(fw, mask[:, :5]), as_input(fw, tgt))


def test_right_padded_masks_still_work_as_0_1_numbers(fw):
    src, mask, tgt = _batch()
    model = _translator(fw)
    logits, w = _run(fw, model, src, mask.astype("int64"), tgt, return_weights=True)
    ref, ref_w = _run(fw, model, as_input(fw, src), as_input(fw, mask), as_input(fw, tgt), return_weights=True)
    np.testing.assert_allclose(to_numpy(logits), to_numpy(ref), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(w).sum(-1), 1.0, rtol=1e-5)
    assert (to_numpy(w)[~np.broadcast_to(mask[:, None], (B, T, S))] == 0).all()


def test_fit_finds_a_left_padded_row_past_the_first_batch(fw):
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(4, V_SRC, size=(12, S)), rng.integers(4, V_TGT, size=(12, T))
    mask = np.ones((12, S), bool)
    mask[-1, 0] = False                              # Keras meets it inside tf.function: a graph assertion
    with pytest.raises(InputError, match="src_mask must be right-padded"):
        fw.fit(_translator(fw), (src, mask, tgt), tgt, epochs=1, batch_size=4)


def test_a_mask_given_as_none_by_position_is_no_mask_in_both_frameworks(fw):
    """Keras fills an argument named mask or <x>_mask itself when it is None; a None given by position reached
    call twice ("got multiple values for argument 'mask'") before the course's layers passed it by name."""
    states = np.random.default_rng(0).normal(size=(2, 5, 4)).astype("float32")
    pool = fw.AttentionPooling(4)
    np.testing.assert_allclose(to_numpy(_run(fw, pool, as_input(fw, states), None)),
                               to_numpy(_run(fw, pool, as_input(fw, states))), rtol=1e-6)
    src, _, tgt = _batch()
    model = fw.Seq2Seq(V_SRC, embed=4, hidden=6, attention=True)
    np.testing.assert_allclose(to_numpy(_run(fw, model, as_input(fw, src), as_input(fw, src), None)),
                               to_numpy(_run(fw, model, as_input(fw, src), as_input(fw, src))), rtol=1e-6)


# ---- sizes and one-step attention --------------------------------------------------------------------------------

@pytest.mark.parametrize("make, needle", [
    (lambda fw: fw.Translator(V_SRC, V_TGT, "bahdanau", units=0), "units must be >= 1; got 0"),
    (lambda fw: fw.BahdanauDecoder(0, 8, 12), "vocab must be >= 1; got 0"),
    (lambda fw: fw.LuongDecoder(V_TGT, -1, 12), "embed must be >= 1; got -1"),
    (lambda fw: fw.PlainDecoder(V_TGT, 8, 1.5), r"hidden must be a whole number \(int\) >= 1; got 1.5"),
    (lambda fw: fw.Encoder(V_SRC, 8, 0), "hidden must be >= 1; got 0"),
    (lambda fw: fw.OneStepAttention(5, 8, units=0), "units must be >= 1; got 0"),
    (lambda fw: fw.SlidesTranslator(V_SRC, V_TGT, dropout=1), r"dropout \(a dropout rate\) must be a number in"),
    (lambda fw: fw.SceneEncoder(0), "dim must be >= 1; got 0"),
    (lambda fw: fw.VisualAttention(16, 12, 0), "units must be >= 1; got 0"),
])
def test_sizes_of_the_chapters_layers_are_checked(fw, make, needle):
    with pytest.raises(ConfigError, match=needle):
        make(fw)


@pytest.mark.parametrize("a_shape, s_shape, mask_len, needle", [
    ((B, S, 8), (B, 4), S, r"expects a \(batch, S, 8\) and s_prev \(batch, 5\) .* s_prev \(3, 4\)"),
    ((B, S, 7), (B, 5), S, r"got a \(3, 6, 7\), s_prev \(3, 5\)"),
    ((B, S, 8), (B + 1, 5), S, r"with the same batch; got a \(3, 6, 8\), s_prev \(4, 5\)"),
    ((B, S, 8), (B, 5), S - 1, r"the mask must be \(batch, S\) = \(3, 6\) to fit a \(3, 6, 8\); got mask \(3, 5\)"),
])
def test_one_step_attention_names_the_sizes_it_was_built_for(fw, a_shape, s_shape, mask_len, needle):
    rng = np.random.default_rng(0)
    a, s = (as_input(fw, rng.normal(size=x).astype("float32")) for x in (a_shape, s_shape))
    with pytest.raises(ShapeError, match=needle):
        _run(fw, fw.OneStepAttention(5, 8), a, s, as_input(fw, RIGHT[:, :mask_len].copy()))


@pytest.mark.parametrize("h_shape, keys_shape, needle", [
    ((2, 15), (2, 4, 10), r"expects keys \(batch, L, 10\) and h_prev \(batch, 16\) .* h_prev \(2, 15\)"),
    ((3, 16), (2, 4, 10), r"with the same batch; got keys \(2, 4, 10\), h_prev \(3, 16\)"),
])
def test_visual_attention_names_the_sizes_it_was_built_for(fw, h_shape, keys_shape, needle):
    rng = np.random.default_rng(0)
    h, keys = (as_input(fw, rng.normal(size=x).astype("float32")) for x in (h_shape, keys_shape))
    with pytest.raises(ShapeError, match=needle):
        _run(fw, fw.VisualAttention(16, 12, 10), h, keys)


# ---- start / step / reorder --------------------------------------------------------------------------------------

def _captioner(fw, kind="soft"):
    return fw.Captioner(12, kind, embed=8, hidden=16, dim=12, units=10)


def image_input(b=2, hw=16, seed=0):
    return np.random.default_rng(seed).random((b, hw, hw, 3)).astype("float32")


@pytest.mark.parametrize("model", ["Translator", "Captioner"])
def test_step_and_reorder_check_their_tokens_and_rows(fw, model):
    if model == "Translator":
        src, mask, _ = _batch()
        decoder, vocab, rows = _translator(fw), V_TGT, B
        state = decoder.start(as_input(fw, src), as_input(fw, mask))
    else:
        decoder, vocab, rows = _captioner(fw), 12, 2
        state = decoder.start(as_input(fw, image_input()))
    rule = re.escape(f"tokens must hold integer token ids in [0, {vocab})")
    with pytest.raises(InputError, match=rule + f".*got ids from {vocab} to {vocab}"):
        decoder.step(np.full(rows, vocab), state)
    with pytest.raises(InputError, match=rule + ".*got a float64"):
        decoder.step(np.full(rows, 2.5), state)
    with pytest.raises(ShapeError, match=rf"tokens must be \({rows},\): one previous token per row .* \({rows + 1},\)"):
        decoder.step(np.full(rows + 1, 2), state)
    with pytest.raises(InputError, match=rf"index must be a 1-D array of integer rows in \[0, {rows}\) .* to {rows}"):
        decoder.reorder(state, np.arange(rows) + 1)
    index = np.array([rows - 1, 0, 0])                                 # repeats and drops rows: still fine
    lp_all, _, a_all = decoder.step(np.full(rows, 2), state)
    lp, _, a = decoder.step(np.full(3, 2), decoder.reorder(state, index))
    np.testing.assert_allclose(lp, lp_all[index], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a, a_all[index], rtol=1e-5, atol=1e-6)


# ---- greedy and beam search --------------------------------------------------------------------------------------

@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_searches_refuse_numeric_masks_that_are_not_0_1_and_empty_batches(fw, search):
    src, mask, _ = _batch()
    run = (lambda s, m: decode.greedy_search(_translator(fw), s, m, max_len=4)) if search == "greedy" else \
        (lambda s, m: decode.beam_search(_translator(fw), s, m, beam=2, max_len=4))
    with pytest.raises(InputError, match=r"src_mask: a mask is True/1 .* got values -inf. An additive mask"):
        run(src, np.where(mask, 0.0, -np.inf))
    with pytest.raises(InputError, match="src_mask: a mask is True/1 .* got values 0.5"):
        run(src, mask * 0.5)
    with pytest.raises(ShapeError, match=r"src holds no rows: shape \(0, 6\)"):
        run(src[:0], mask[:0])
    with pytest.raises(InputError, match="src_mask must be right-padded"):
        run(src, mask[:, ::-1].copy())
    assert len(run(src, mask.astype("float32")).tokens) == B          # 0/1 floats are a mask


class _NaNDecoder:
    """Log-probs that turn NaN at the second step (a model that has diverged)."""

    def __init__(self):
        self.steps = 0

    def start(self, src, src_mask):
        return len(src)

    def step(self, tokens, state):
        self.steps += 1
        lp = np.log(np.full((state, 8), 1 / 8))
        lp[:, 5] = np.log(0.5)
        if self.steps > 1:
            lp[:, 6] = np.nan
        return lp, state, None

    def reorder(self, state, index):
        return len(index)


@pytest.mark.parametrize("search", [lambda d, s, m: decode.greedy_search(d, s, m, max_len=4),
                                    lambda d, s, m: decode.beam_search(d, s, m, beam=2, max_len=4)],
                         ids=["greedy", "beam"])
def test_searches_refuse_nan_log_probs(search):
    src, mask, _ = _batch()
    with pytest.raises(InputError, match=r"decoder.step returned NaN log-probs \(rows \[0, 1, 2"):
        search(_NaNDecoder(), src, mask)


@pytest.mark.parametrize("change, error, needle", [
    (dict(beam=0), ConfigError, "beam must be >= 1; got 0"),
    (dict(beam=11), ConfigError, r"beam=11 is more than the K·V = 2·5 = 10 candidates"),
    (dict(scores=np.zeros((2, 3))), ShapeError, r"scores must be \(B, K\) = \(2, 2\), .* got shape \(2, 3\)"),
    (dict(finished=np.zeros((1, 2), bool)), ShapeError, r"finished must be \(B, K\) = \(2, 2\)"),
    (dict(log_probs=np.zeros((2, 5))), ShapeError, r"log_probs must be \(B, K, V\).* got shape \(2, 5\)"),
])
def test_beam_step_checks_its_shapes_and_width(change, error, needle):
    args = {"log_probs": np.log(np.full((2, 2, 5), 0.2)), "scores": np.zeros((2, 2)),
            "finished": np.zeros((2, 2), bool), "beam": 2, **change}
    with pytest.raises(error, match=needle):
        decode.beam_step(**args)


# ---- the captioner and its training ------------------------------------------------------------------------------

@pytest.mark.parametrize("change, error, needle", [
    (dict(tokens=lambda t: t * 0 + 12), InputError, r"tokens must hold integer token ids in \[0, 12\).* 12 to 12"),
    (dict(tokens=lambda t: t - 10), InputError, r"tokens must hold integer token ids in \[0, 12\).* from -6"),
    (dict(tokens=lambda t: t + 0.5), InputError, r"tokens must hold integer token ids .* got a float(32|64)"),
    (dict(tokens=lambda t: t[:, :0]), ShapeError, r"tokens has no positions: shape \(2, 0\)"),
    (dict(images=lambda x: (x * 255).astype("uint8")), InputError,
     r"images must hold floats \(intensities in \[0, 1\]\); got uint8 .*divide 0-255 pixels by 255"),
    (dict(expect=np.ones(3, bool)), ShapeError, r"expect must be \(B,\) = \(2,\), one bool per caption; got \(3,\)"),
    (dict(expect=np.full(2, 0.5, "float32")), InputError, "expect: one bool .* per caption.* got values 0.5"),
])
def test_the_captioner_checks_its_tokens_images_and_expect(fw, change, error, needle):
    images, tokens = image_input(), np.random.default_rng(0).integers(4, 12, size=(2, 4))
    images = change.get("images", lambda x: x)(images)
    tokens = change.get("tokens", lambda t: t)(tokens)
    extra = {"expect": as_input(fw, change["expect"])} if "expect" in change else {}
    with pytest.raises(error, match=needle):
        _run(fw, _captioner(fw, "hard"), as_input(fw, images), as_input(fw, tokens), **extra)


def _pads_in_row_1(t):
    t = t.copy()
    t[1] = 0
    return t


@pytest.mark.parametrize("change, error, needle", [
    (dict(tokens_out=lambda t: t * 0 + 12), InputError, r"tokens_out must hold integer token ids in \[0, 12\)"),
    (dict(tokens_in=lambda t: t - 10), InputError, r"tokens_in must hold integer token ids in \[0, 12\)"),
    (dict(tokens_out=lambda t: t[:, :-1]), ShapeError, r"tokens_out must have the shape of tokens_in, \(4, 4\)"),
    (dict(tokens_out=_pads_in_row_1), InputError, r"tokens_out row 1 holds only pads \(0\)"),
    (dict(doubly_stochastic=float("nan")), ConfigError, "doubly_stochastic must be a finite number >= 0"),
    (dict(entropy=-0.1), ConfigError, "entropy must be a finite number >= 0"),
    (dict(expect_share=1.5), ConfigError, r"expect_share is a probability: a number in \[0, 1\]; got 1.5"),
])
def test_train_captioner_checks_its_captions_and_regularisers(fw, change, error, needle):
    tokens = np.random.default_rng(0).integers(4, 12, size=(4, 5))
    data = {"tokens_in": tokens[:, :-1], "tokens_out": tokens[:, 1:]}
    data = {k: change.get(k, lambda t: t)(v) for k, v in data.items()}
    options = {k: v for k, v in change.items() if k not in data}
    with pytest.raises(error, match=needle):
        fw.train_captioner(_captioner(fw, "hard"), image_input(4), data["tokens_in"], data["tokens_out"], epochs=1,
                           batch_size=2, **options)


# ---- DRAW's window -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("change, error, needle", [
    (dict(sigma2=0.0), InputError, r"sigma2 \(the filters' variance: 0 divides by zero\) must be finite and > 0"),
    (dict(delta=float("nan")), InputError, r"delta \(the stride between filters\) must be finite and >= 0"),
    (dict(gamma=-1.0), InputError, r"gamma \(the intensity\) must be finite and >= 0; got \[-1.0\]"),
    (dict(gx=np.ones(3)), ShapeError, r"gx must be a number or one per image, shape \(B,\) = \(2,\); got shape \(3,\)"),
    (dict(images=np.zeros((2, 0, 0, 3), "float32")), ShapeError, r"got \(2, 0, 0, 3\), images of no pixels"),
])
def test_draw_read_checks_its_window(fw, change, error, needle):
    window = {"gx": 8.0, "gy": 8.0, "sigma2": 1.0, "delta": 2.0, "gamma": 1.0}
    window.update({k: v for k, v in change.items() if k in window})
    with pytest.raises(error, match=needle):
        fw.DrawRead(4, 8).read(as_input(fw, change.get("images", image_input())), *window.values())


def test_draw_read_takes_integer_pixels_and_a_column_of_windows(fw):
    pixels = np.random.default_rng(2).integers(0, 256, size=(2, 16, 16, 3))
    reader = fw.DrawRead(2, 8)
    got = to_numpy(reader.read(as_input(fw, pixels), np.array([[4.5], [10.5]]), 8.5, 0.5, 1.0, 1.0))
    ref = to_numpy(reader.read(as_input(fw, (pixels / 255).astype("float32")), np.array([4.5, 10.5]), 8.5, 0.5, 1.0,
                               1.0))
    np.testing.assert_allclose(got, 255 * ref, rtol=1e-4, atol=1e-3)          # a read is linear


# ---- metrics -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, needle", [
    (lambda: tm.bleu("a cat", "a cat"), "hypotheses must be a list of sentences, one per pair; got one string"),
    (lambda: tm.missing_words(["a cat"], "a cat"), "references must be a list of sentences"),
    (lambda: tm.bleu_by_length(["a", "b"], ["a", "b"], [1, 2], [1, float("nan")]), "edges must be whole numbers"),
    (lambda: tm.bleu_by_length(["a", "b"], ["a", "b"], [1, 2], [1, 1.5]), r"edges must be whole numbers.*1\.5"),
    (lambda: tm.alignment_error_rate({(0, 1)}, {(1, 0)}), "predicted must be a list of alignments, one per sentence"),
    (lambda: tm.alignment_error_rate([[0, 1]], [{(0, 1)}]), r"predicted\[0\] must be a set of \(i, j\) links"),
    (lambda: tm.attention_alignment(np.eye(3), 2.5, 3), "src_len must be a whole number"),
    (lambda: tm.shifted({(0, 1)}, 0.5), "by must be a whole number"),
    (lambda: tm.coverage_counts(np.full((2, 3, 4), np.nan)), "attention matrix 0 holds NaN or inf"),
    (lambda: tm.attention_entropy(np.full((3, 4), np.inf)), "attention matrix 0 holds NaN or inf"),
])
def test_translation_metrics_refuse_what_they_would_misread(call, needle):
    with pytest.raises(InputError, match=needle):
        call()


def test_translation_metrics_still_read_their_inputs():
    assert tm.alignment_error_rate([[(0, 0), (1, 1)], {(0, 1)}], [{(0, 0), (1, 1)}, {(1, 0)}]) == \
        pytest.approx(1 - 2 * 2 / 6)
    assert tm.alignment_error_rate([np.array([[0, 0], [1, 1]])], [{(0, 0), (1, 1)}]) == 0.0
    assert list(tm.bleu_by_length(["a b", "c"], ["a b", "c"], [2, 1], np.array([1, 2])).n) == [1, 1]


BOX, CANVAS = (8, 16, 24, 32), (48, 48)


@pytest.mark.parametrize("call, error, needle", [
    (lambda: cm.attention_correctness(np.full((6, 6), 2 / 36), BOX, CANVAS), InputError, "summing to 2"),
    (lambda: cm.attention_correctness(np.full((6, 6), np.nan), BOX, CANVAS), InputError,
     "alpha must be a distribution over the grid"),
    (lambda: cm.attention_correctness(np.eye(6)[0:1].repeat(6, 0) / 6 - 1 / 36, BOX, CANVAS), InputError,
     "weights >= 0"),
    (lambda: cm.attention_correctness(np.full((6, 6), 1 / 36), (8, 16, 24), CANVAS), ConfigError,
     r"box must be four whole numbers \(top, left, bottom, right\)"),
    (lambda: cm.attention_correctness(np.full((6, 6), 1 / 36), BOX, (48, 48, 3)), ConfigError,
     r"canvas must be 2 whole numbers >= 1"),
    (lambda: cm.cell_overlap(BOX, CANVAS, (0, 6)), ConfigError, r"grid must be 2 whole numbers >= 1"),
    (lambda: cm.box_share((40, 40, 60, 60), CANVAS), ConfigError, "is not inside the canvas"),
    (lambda: cm.caption_bleu(["a seven", "a two"], ["a seven", "a two"]), ConfigError,
     r"references\[0\] must be a list of captions"),
    (lambda: cm.caption_bleu("a two", [["a two"]] * 5), ConfigError, "hypotheses must be a list of captions"),
])
def test_captioning_metrics_refuse_what_they_would_misread(call, error, needle):
    with pytest.raises(error, match=needle):
        call()


def test_attention_correctness_takes_float32_maps_and_no_attention():
    assert cm.attention_correctness(np.zeros((6, 6)), BOX, CANVAS) == 0.0                  # Show and Tell
    uniform = np.full((6, 6), 1 / 36, np.float32)
    assert cm.attention_correctness(uniform, BOX, CANVAS) == pytest.approx(cm.box_share(BOX, CANVAS), rel=1e-5)


# ---- data --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, needle", [
    (lambda: synthetic.aligned_pair_task(0), r"n \(the number of pairs\) must be >= 1; got 0"),
    (lambda: synthetic.aligned_pair_task(2.5), r"n \(the number of pairs\) must be a whole number"),
    (lambda: synthetic.aligned_pair_task(3, min_len=3.5), "min_len must be a whole number"),
    (lambda: synthetic.aligned_pair_task(3, seed=-1), "seed must be >= 0; got -1"),
    (lambda: td.translation_pairs(["spa-eng"]), r"unknown translation dataset \['spa-eng'\]"),
    (lambda: td.translation_pairs(seed=-1), "seed must be >= 0; got -1"),
    (lambda: scenes.digit_scenes(2, counts=3), "counts must be a tuple of 2 and/or 3 digits per scene; got 3"),
    (lambda: scenes.digit_scenes(2, tinted=None), r"tinted is a probability: a number in \[0, 1\]; got None"),
    (lambda: scenes.digit_scenes(2, seed=-1), "seed must be >= 0; got -1"),
    (lambda: scenes.digit_scenes(2, split=["train"]), r"unknown split \['train'\]"),
])
def test_data_arguments_are_checked(call, needle):
    with pytest.raises(ConfigError, match=needle):
        call()


@pytest.fixture(scope="module")
def tokenizer():
    return td.SubwordTokenizer.train(["the cat sat on the mat", "a dog runs", "el gato", "un perro"] * 5, 40)


@pytest.mark.parametrize("call, needle", [
    (lambda tok: td.encode_pairs([("the cat", None)], tok, tok, max_src=8, max_tgt=8),
     r"pairs must be \(source, target\) pairs of strings; pairs\[0\] is \('the cat', None\)"),
    (lambda tok: tok.encode_batch(["the cat", None]), "encode_batch expects a list of strings; item 1 is NoneType"),
    (lambda tok: tok.decode([5, 1.5]), "decode expects one sequence of integer ids .* it holds float 1.5"),
    (lambda tok: tok.decode("the cat"), "decode expects one sequence of integer ids .* got str"),
    (lambda tok: tok.decode(5), "decode expects one sequence of integer ids .* got int 5"),
    (lambda tok: tok.decode(np.array([[5, 6]])), r"a 2-D array\? use decode_batch"),
    (lambda tok: tok.decode_batch("the cat"), "decode_batch expects rows of integer ids"),
])
def test_the_tokenizer_and_encode_pairs_check_their_inputs(tokenizer, call, needle):
    with pytest.raises(InputError, match=needle):
        call(tokenizer)
    ids = tokenizer.encode("the cat")
    assert tokenizer.decode(np.array([2, *ids, 3, 9])) == "the cat"


def test_a_missing_tokenizer_file_is_the_course_error_and_a_file_not_found(tmp_path):
    with pytest.raises(MissingFileError, match="no tokenizer file at .*: save one with SubwordTokenizer.save") as err:
        td.SubwordTokenizer.load(tmp_path / "missing.json")
    assert isinstance(err.value, FileNotFoundError)
