"""Chapter 5's translators: Keras and PyTorch twins agree with shared weights (outputs, attention, decoding),
the decoders reuse Chapter 4's scores, the step interface agrees with teacher forcing, training resumes from a
checkpoint, bad inputs name the shapes."""

import numpy as np
import pytest
import torch

import attention_course as ac
from attention_course import decode
from attention_course.parity import torch_to_keras

pytestmark = pytest.mark.chapter(5, 8)   # Chapters 5 and 8: `make test CHAPTERS=...` picks by it

RTOL, ATOL = 1e-5, 1e-6
KINDS = ("none", "bahdanau", "luong")


def batch(seed=0, b=4, s=7, t=6, src_vocab=40, tgt_vocab=30):
    """Right-padded sources of different lengths (one of a single token), a teacher-forcing input."""
    rng = np.random.default_rng(seed)
    lengths = np.array([s, 4, 1, 5][:b])
    mask = np.arange(s)[None] < lengths[:, None]
    src = np.where(mask, rng.integers(4, src_vocab, (b, s)), 0)
    return src, mask, rng.integers(4, tgt_vocab, (b, t))


def twins(kind, seed=0):
    torch.manual_seed(seed)
    tm = ac.torch.Translator(40, 30, kind, embed=8, hidden=12, units=10)
    km = ac.keras.Translator(40, 30, kind, embed=8, hidden=12, units=10)
    torch_to_keras(tm, km, batch())
    return tm.eval(), km


@pytest.mark.parametrize("kind", KINDS)
def test_translators_agree_with_shared_weights(kind):
    tm, km = twins(kind)
    src, mask, tgt_in = batch(1)
    t_logits, t_weights = tm(src, mask, tgt_in, return_weights=True)
    k_logits, k_weights = km(src, mask, tgt_in, return_weights=True)
    np.testing.assert_allclose(np.asarray(k_logits), t_logits.detach().numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(np.asarray(k_weights), t_weights.detach().numpy(), rtol=RTOL, atol=ATOL)
    w = t_weights.detach().numpy()
    if kind == "none":
        assert not w.any()
    else:
        np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-5)                 # a distribution over the source
        assert not w[~np.broadcast_to(mask[:, None], w.shape)].any()       # exactly 0 on pads


def test_seed_translator_agrees_with_shared_weights():
    torch.manual_seed(0)
    tm = ac.torch.SeedTranslator(40, 30, embed=8, n_a=6, n_s=10)
    km = ac.keras.SeedTranslator(40, 30, embed=8, n_a=6, n_s=10)
    torch_to_keras(tm, km, batch())
    src, mask, tgt_in = batch(2)
    t_logits, t_weights = tm(src, mask, tgt_in, return_weights=True)
    k_logits, k_weights = km(src, mask, tgt_in, return_weights=True)
    np.testing.assert_allclose(np.asarray(k_logits), t_logits.detach().numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(np.asarray(k_weights), t_weights.detach().numpy(), rtol=RTOL, atol=ATOL)
    assert not t_weights.detach().numpy()[~np.broadcast_to(mask[:, None], t_weights.shape)].any()


@pytest.mark.parametrize("kind", ["bahdanau", "luong"])
def test_decoders_attend_as_chapter_4s_scored_attention(kind):
    """The step precomputes the keys (U_a h, W_a h) once; the weights are still Chapter 4's score's."""
    tm, _ = twins(kind)
    src, mask, tgt_in = batch(3)
    h, m, _, s0 = tm.encoder(src, mask)
    state, memory = (s0, torch.zeros_like(s0)), (h, m, None, tm.decoder.keys(h))
    _, (s1, _), alpha = tm.decoder(torch.as_tensor(tgt_in[:, 0]), state, memory)
    query = s0 if kind == "bahdanau" else s1                               # Bahdanau asks with s_{t-1}, Luong s_t
    scored = ac.torch.ScoredAttention("additive" if kind == "bahdanau" else "general", d_query=12, d_key=24,
                                      units=10)
    scored.score.load_state_dict(tm.decoder.score.state_dict())
    _, expected = scored(query[:, None], h, h, mask=mask, return_weights=True)
    torch.testing.assert_close(alpha, expected[:, 0])


@pytest.mark.parametrize("fw", ["torch", "keras"])
@pytest.mark.parametrize("kind", KINDS)
def test_one_step_at_a_time_equals_teacher_forcing(fw, kind):
    tm, km = twins(kind)
    model = tm if fw == "torch" else km
    src, mask, _ = batch(4)
    found = decode.greedy_search(model, src, mask, max_len=5)
    for i, tokens in enumerate(found.tokens):                       # feed the greedy output back in
        tgt_in = np.array([[ac.text.BOS, *tokens][:5] + [ac.text.PAD] * (5 - len(tokens[:4]) - 1)])
        logits = model(src[i:i + 1], mask[i:i + 1], tgt_in)
        logits = np.array(logits.detach() if fw == "torch" else logits)
        logits[..., [ac.text.PAD, ac.text.BOS]] = -np.inf
        predicted = list(logits[0].argmax(-1))
        expected = tokens + [ac.text.EOS] if len(tokens) < 5 else tokens
        assert predicted[:len(expected)] == expected[:5]


@pytest.mark.parametrize("kind", KINDS)
def test_greedy_and_beam_search_agree_across_frameworks(kind):
    tm, km = twins(kind, seed=5)
    src, mask, _ = batch(5)
    for search in (lambda m: decode.greedy_search(m, src, mask, max_len=6),
                   lambda m: decode.beam_search(m, src, mask, beam=3, max_len=6, alpha=0.6)):
        t, k = search(tm), search(km)
        assert t.tokens == k.tokens
        np.testing.assert_allclose(k.scores, t.scores, rtol=1e-4)
    assert decode.beam_search(tm, src, mask, beam=1, max_len=6).tokens == decode.greedy_search(
        tm, src, mask, max_len=6).tokens


@pytest.mark.parametrize("fw", ["torch", "keras"])
def test_training_resumes_from_its_checkpoint(fw, tmp_path):
    """Two epochs in one run, or one epoch, a stop, and a resumed run: the same weights and history."""
    module = getattr(ac, fw)
    src, mask, tgt_in = batch(6)
    src, mask, tgt_in = (np.repeat(a, 8, axis=0) for a in (src, mask, tgt_in))
    tgt_out = np.roll(tgt_in, -1, axis=1)

    def run(epochs, ckpt):
        ac.session.seed_everything(0)
        model = module.Translator(40, 30, "bahdanau", embed=8, hidden=12)
        history = module.fit(model, (src, mask, tgt_in), tgt_out, epochs=epochs, batch_size=8, clip_norm=1.0,
                             checkpoint=ckpt, validation=((src, mask, tgt_in), tgt_out))
        weights = ([p.detach().numpy().copy() for p in model.parameters()] if fw == "torch"
                   else model.get_weights())
        return history, weights

    whole, whole_w = run(2, None)
    run(1, tmp_path / "ckpt")
    assert (tmp_path / "ckpt").exists() and not list(tmp_path.glob("*.part"))
    resumed, resumed_w = run(2, tmp_path / "ckpt")
    np.testing.assert_allclose(resumed["loss"], whole["loss"], rtol=1e-5)
    assert resumed.best_epoch == whole.best_epoch
    for a, b in zip(whole_w, resumed_w, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("fw", ["torch", "keras"])
def test_bad_inputs_name_the_shapes(fw):
    module = getattr(ac, fw)
    model = module.Translator(40, 30, "luong", embed=8, hidden=12)
    src, mask, tgt_in = batch()
    with pytest.raises(ac.errors.ShapeError, match=r"src_mask must have the shape of src, \(4, 7\); got \(4, 6\)"):
        model(src, mask[:, :6], tgt_in)
    with pytest.raises(ac.errors.ConfigError, match="unknown attention 'global'"):
        module.Translator(40, 30, "global")


def _attention_step(s_prev, h, mask, W, U, v, *, use_mask=True, tanh=True, axis=-1):
    e = (np.tanh if tanh else (lambda x: x))((s_prev @ W)[:, None] + h @ U) @ v
    e = np.where(mask, e, -np.inf) if use_mask else e
    alpha = np.exp(e - e.max(axis, keepdims=True))
    alpha = alpha / alpha.sum(axis, keepdims=True)
    return (alpha[:, :, None] * h).sum(1), alpha


def test_the_bahdanau_step_checker_passes_a_correct_step_and_names_mistakes(capsys):
    ac.checks.bahdanau_attention(_attention_step, seed=0)
    assert "✓ Bahdanau attention step" in capsys.readouterr().out
    wrong = {
        "the mask is not applied": lambda *a: _attention_step(*a, use_mask=False),
        "tanh is missing": lambda *a: _attention_step(*a, tanh=False),
        "without the weights": lambda *a: (a[1].sum(1), _attention_step(*a)[1]),
        "plain mean": lambda *a: (a[1].mean(1), _attention_step(*a)[1]),
    }
    for needle, fn in wrong.items():
        with pytest.raises(ac.checks.ExerciseError, match=needle):
            ac.checks.bahdanau_attention(fn, seed=0)


def test_keras_decoders_skip_keras_shape_inference(monkeypatch):
    """Keras 3.10 (Colab's) infers the shapes of every argument of a layer that is not built yet, and fails on a None
    inside a nested argument: a decoder's memory whose keys are None. The course's layers made of sub-layers have
    nothing to build from shapes and must not go through that inference (Chapter 5 failed on Colab's versions)."""
    from keras.src.layers import layer as keras_layer

    from attention_course.keras.translation import PlainDecoder

    inferred = keras_layer.get_shapes_dict

    def as_keras_3_10(call_spec):
        for value in call_spec.tensor_arguments_dict.values():
            if isinstance(value, (tuple, list)) and any(v is None for v in value):
                raise AttributeError("'NoneType' object has no attribute 'shape'")
        return inferred(call_spec)

    monkeypatch.setattr(keras_layer, "get_shapes_dict", as_keras_3_10)
    decoder = PlainDecoder(vocab=11, embed=4, hidden=6)
    h, mask, c = np.zeros((2, 5, 8), "float32"), np.ones((2, 5), bool), np.zeros((2, 8), "float32")
    s = np.zeros((2, 6), "float32")
    logits, state, alpha = decoder(np.array([1, 2]), (s, s), (h, mask, c, decoder.keys(h)))
    assert tuple(logits.shape) == (2, 11) and alpha is None
