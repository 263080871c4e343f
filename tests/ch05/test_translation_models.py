"""Chapter 5's translators: Keras and PyTorch twins agree with shared weights (outputs, attention, decoding),
the decoders reuse Chapter 4's scores, the step interface agrees with teacher forcing, training resumes from a
checkpoint, bad inputs name the shapes."""

import numpy as np
import pytest
import torch

import attention_course as ac
from attention_course.ch05_neural_machine_translation import experiment as c5
from attention_course.core import decode
from attention_course.core.errors import ConfigError, ShapeError
from attention_course.core.parity import torch_to_keras

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


def slides_twins(seed=0):
    torch.manual_seed(seed)
    tm = ac.torch.SlidesTranslator(40, 30, embed=8, latent_dim=6, latent_dim_decoder=10)
    km = ac.keras.SlidesTranslator(40, 30, embed=8, latent_dim=6, latent_dim_decoder=10)
    torch_to_keras(tm, km, batch())
    return tm.eval(), km


def test_slides_translator_agrees_with_shared_weights():
    tm, km = slides_twins()
    src, mask, tgt_in = batch(2)
    t_logits, t_weights = tm(src, mask, tgt_in, return_weights=True)
    k_logits, k_weights = km(src, mask, tgt_in, return_weights=True)
    np.testing.assert_allclose(np.asarray(k_logits), t_logits.detach().numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(np.asarray(k_weights), t_weights.detach().numpy(), rtol=RTOL, atol=ATOL)
    w = t_weights.detach().numpy()
    np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-5)                     # softmax over time: one per step
    assert not w[~np.broadcast_to(mask[:, None], w.shape)].any()


def test_slides_translator_layers_are_the_slides():
    """The slides' sub-layers by their names: Dense(10, tanh) then Dense(1) in the attention, a bidirectional LSTM
    encoder with dropout 0.5 on its inputs, an LSTM decoder fed [context; previous word]."""
    tm, km = slides_twins()
    assert (tm.attention.attn_dense1.out_features, tm.attention.attn_dense2.out_features) == (10, 1)
    assert (km.attention.attn_dense1.units, km.attention.attn_dense2.units) == (10, 1)
    assert km.attention.attn_dense1.activation.__name__ == "tanh"
    assert tm.encoder.bidirectional and km.encoder.forward_layer.dropout == 0.5 == tm.dropout
    assert tm.decoder_lstm.input_size == 2 * 6 + 8                          # context (2 latent_dim) + embedding


def _slides_output(model, training, src, mask, tgt_in):
    if isinstance(model, torch.nn.Module):
        return model.train(training)(src, mask, tgt_in).detach().numpy()
    return np.asarray(model(src, mask, tgt_in, training=training))


def test_slides_translator_drops_encoder_inputs_only_when_training():
    src, mask, tgt_in = batch(4)
    for fw in (ac.torch, ac.keras):
        torch.manual_seed(0)
        model = fw.SlidesTranslator(40, 30, embed=8, latent_dim=6, latent_dim_decoder=10)
        inference = _slides_output(model, False, src, mask, tgt_in)
        np.testing.assert_array_equal(inference, _slides_output(model, False, src, mask, tgt_in))   # no dropout
        assert not np.allclose(_slides_output(model, True, src, mask, tgt_in), inference)           # dropout


def test_the_selector_reads_its_step_when_it_runs():
    """The slides' Lambda(lambda x: x[:, t:t+1]) looks t up when it runs; the course's selector takes t."""
    x = np.arange(4)[None]
    late = [lambda x: x[:, t:t + 1] for t in range(4)]                      # noqa: B023, as on the slides
    assert [int(f(x)[0, 0]) for f in late] == [3, 3, 3, 3]
    from attention_course.ch05_neural_machine_translation import keras as ch05_keras
    from attention_course.ch05_neural_machine_translation import torch as ch05_torch
    for fw in (ch05_torch, ch05_keras):
        assert [int(fw.selector(x, t)[0, 0]) for t in range(4)] == [0, 1, 2, 3]


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
    ac.exercises.bahdanau_attention(_attention_step, seed=0)
    assert "✓ Bahdanau attention step" in capsys.readouterr().out
    wrong = {
        "the mask is not applied": lambda *a: _attention_step(*a, use_mask=False),
        "tanh is missing": lambda *a: _attention_step(*a, tanh=False),
        "without the weights": lambda *a: (a[1].sum(1), _attention_step(*a)[1]),
        "plain mean": lambda *a: (a[1].mean(1), _attention_step(*a)[1]),
    }
    for needle, fn in wrong.items():
        with pytest.raises(ac.exercises.ExerciseError, match=needle):
            ac.exercises.bahdanau_attention(fn, seed=0)


def test_keras_decoders_skip_keras_shape_inference(monkeypatch):
    """Keras 3.10 (Colab's) infers the shapes of every argument of a layer that is not built yet, and fails on a None
    inside a nested argument: a decoder's memory whose keys are None. The course's layers made of sub-layers have
    nothing to build from shapes and must not go through that inference (Chapter 5 failed on Colab's versions)."""
    from keras.src.layers import layer as keras_layer

    from attention_course.ch05_neural_machine_translation.keras import PlainDecoder

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


# ---- Cohn et al.'s training terms on the attention matrix ---------------------------------------------------------

def test_coverage_penalty_and_agreement_by_hand_in_both_frameworks():
    a = np.array([[[0.9, 0.1, 0.0], [0.2, 0.8, 0.0], [0.5, 0.5, 0.0]]], np.float32)    # (1, T=3, S=3), pad at S=2
    src_mask, tgt_mask = np.array([[True, True, False]]), np.array([[True, True, False]])
    r = np.array([[[0.7, 0.3, 0.0], [0.4, 0.6, 0.0], [0.5, 0.5, 0.0]]], np.float32)    # (1, S=3, T=3), Y→X
    # received: source 0 gets 0.9 + 0.2, source 1 gets 0.1 + 0.8 (the third output step is a pad)
    want_coverage = ((1 - 1.1) ** 2 + (1 - 0.9) ** 2) / 2
    want_agreement = (0.9 * 0.7 + 0.1 * 0.4 + 0.2 * 0.3 + 0.8 * 0.6) / 2               # Σ A[t,i] R[i,t] / 2 steps
    from attention_course.ch05_neural_machine_translation import keras as ch05_keras
    k = ch05_keras
    for got, want in [(ac.torch.coverage_penalty(torch.tensor(a), torch.tensor(src_mask), torch.tensor(tgt_mask)),
                       want_coverage), (k.coverage_penalty(a, src_mask, tgt_mask), want_coverage),
                      (ac.torch.agreement(torch.tensor(a), torch.tensor(r), torch.tensor(tgt_mask)), want_agreement),
                      (k.agreement(a, r, tgt_mask), want_agreement)]:
        np.testing.assert_allclose(float(got), want, rtol=1e-6)
    # the trace form of the notes: Tr(A_{X→Y} A_{Y→X}ᵀ), A_{Y→X} written target word × source word
    yx_as_xy = r[0].T                                                        # (T, S)
    np.testing.assert_allclose(np.trace(a[0] @ yx_as_xy.T), want_agreement * 2, rtol=1e-6)


def _pairs(n=48, seed=0):
    task = c5.alignment_task(n, 8, seed=seed)
    return task, c5.reversed_arrays(task.train)


def test_reversed_arrays_line_up_with_the_forward_pairs():
    task, rev = _pairs()
    tr = task.train
    np.testing.assert_array_equal(rev.src, tr.tgt_out)                      # Y with its end token
    np.testing.assert_array_equal(rev.tgt_out, tr.src)                      # X with its end token
    assert (rev.tgt_in[:, 0] == ac.text.BOS).all()
    words = rev.tgt_out[:, :-1] > ac.text.EOS
    np.testing.assert_array_equal(rev.tgt_in[:, 1:][words], rev.tgt_out[:, :-1][words])   # shifted by one step
    assert not (rev.tgt_in == ac.text.EOS).any()
    twice = c5.reversed_arrays(rev)
    np.testing.assert_array_equal(twice.src, tr.src)
    np.testing.assert_array_equal(twice.tgt_in, tr.tgt_in)


@pytest.mark.parametrize("fw_name", ["torch", "keras"])
def test_fit_attention_terms_without_terms_is_fit(fw_name):
    """Zero weights: the same training as ``fit`` (same initial weights, shuffles and steps)."""
    fw = getattr(ac, fw_name)
    task, _ = _pairs()
    tr = task.train
    models = []
    for _ in range(2):
        ac.session.seed_everything(3)
        models.append(fw.Translator(len(task.src_vocab), len(task.tgt_vocab), "bahdanau", embed=8, hidden=12))
    fw.fit(models[0], (tr.src, tr.src_mask, tr.tgt_in), tr.tgt_out, epochs=2, lr=5e-3, ignore_index=0, clip_norm=1.0,
           seed=1, batch_size=16)
    fw.fit_attention_terms(models[1], tr, epochs=2, lr=5e-3, seed=1, batch_size=16)
    out = [m(task.test.src, task.test.src_mask, task.test.tgt_in) for m in models]
    out = [o.detach().numpy() if fw_name == "torch" else np.asarray(o) for o in out]
    np.testing.assert_allclose(out[1], out[0], rtol=1e-4, atol=1e-5)


def test_the_training_terms_name_what_does_not_fit(fw):
    task, rev = _pairs()
    model = fw.Translator(len(task.src_vocab), len(task.tgt_vocab), "bahdanau", embed=4, hidden=4)
    with pytest.raises(ConfigError, match="agreement_weight=1.0 needs the Y→X model"):
        fw.fit_attention_terms(model, task.train, agreement_weight=1.0, epochs=1, lr=1e-2)
    with pytest.raises(ConfigError, match="go together"):
        fw.fit_attention_terms(model, task.train, reverse_data=rev, epochs=1, lr=1e-2)
    alphas = np.full((2, 3, 4), 0.25, np.float32)
    with pytest.raises(ShapeError, match=r"need a source mask \(B, S\).*got src_mask \(2, 5\)"):
        fw.coverage_penalty(alphas, np.ones((2, 5), bool), np.ones((2, 3), bool))
    with pytest.raises(ShapeError, match=r"need Y→X weights \(B, S, T\)"):
        fw.agreement(alphas, alphas, np.ones((2, 3), bool))
