"""Chapter 3: feature- and timestep-wise attention, attention pooling, the attention GRU, the recurrent-dropout
LSTM, the NER and sentiment models (parity of the twins, properties, errors), the NER preprocessing and reports,
the exercise checkers and the token-highlight chart."""

import inspect
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import as_input, to_numpy

import attention_course as ac
from attention_course import exercises
from attention_course.ch03_timestep_feature_attention import torch as trec
from attention_course.core import metrics
from attention_course.core.errors import ConfigError, InputError, ShapeError
from attention_course.core.parity import torch_to_keras

RTOL, ATOL = 1e-5, 1e-6
NAMES = ["VariationalLSTM", "FeatureAttention", "TimestepAttention", "RepeatVectorAttention", "AttentionPooling",
         "AttentionGRU", "NERTagger", "SentimentClassifier", "BagOfWords"]


def _np(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def _t(a):
    return torch.as_tensor(a) if isinstance(a, np.ndarray) else a


def _left_mask(rng, b, t):
    lengths = rng.integers(1, t + 1, size=b)
    lengths[0] = t - 2
    return np.arange(t)[None, :] >= (t - lengths)[:, None]          # pads on the left, True on real tokens


# ---- the twins have the same names and signatures -----------------------------------------------------------

def test_recurrent_names_are_exported_by_both():
    assert set(NAMES) <= set(ac.torch.__all__) and set(NAMES) <= set(ac.keras.__all__)
    from attention_course.ch03_timestep_feature_attention import keras as ch03_keras
    assert trec.__all__ == ch03_keras.__all__


@pytest.mark.parametrize("name", NAMES)
def test_same_signatures(name):
    t, k = getattr(ac.torch, name), getattr(ac.keras, name)

    def params(f):     # `training`: how Keras tells a layer it trains (PyTorch: `module.train()`)
        return [(p.name, p.default) for p in inspect.signature(f).parameters.values()
                if p.name not in {"self", "kwargs", "training"}]

    assert params(t.__init__) == params(k.__init__)
    assert params(t.forward) == params(k.call)


# ---- parity: the same weights give the same outputs (float32, rtol 1e-5) ---------------------------------------

def _parity(build, inputs, kwargs=None):
    torch.manual_seed(0)
    tm, km = build(ac.torch).eval(), build(ac.keras)
    kwargs = kwargs or {}
    km(*inputs, **kwargs)
    torch_to_keras(tm, km)
    with torch.no_grad():
        expected = tm(*[_t(a) for a in inputs], **kwargs)
    got = km(*inputs, **kwargs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(expected) == len(got)
    for e, g in zip(expected, got, strict=True):
        if e is None:
            assert g is None
            continue
        assert _np(e).shape == _np(g).shape
        np.testing.assert_allclose(_np(g), _np(e), rtol=RTOL, atol=ATOL)


RNG = np.random.default_rng(0)
X3 = RNG.normal(size=(3, 6, 5)).astype("float32")
X_SQUARE = RNG.normal(size=(3, 6, 6)).astype("float32")              # T = d, as the talk's model 1 needs
MASK = _left_mask(RNG, 3, 6)
IDS = RNG.integers(1, 30, size=(3, 6))
IDS[MASK == 0] = 0
LAYER_CASES = {
    "feature softmax": (lambda m: m.FeatureAttention(5), (X3,), {"return_weights": True}),
    "feature linear": (lambda m: m.FeatureAttention(5, "linear"), (X3,), {"return_weights": True}),
    "feature single": (lambda m: m.FeatureAttention(5, single=True), (X3,), {"return_weights": True}),
    "feature single masked": (lambda m: m.FeatureAttention(5, single=True), (X3, MASK), {"return_weights": True}),
    "timestep softmax": (lambda m: m.TimestepAttention(6), (X3,), {"return_weights": True}),
    "timestep masked": (lambda m: m.TimestepAttention(6), (X3, MASK), {"return_weights": True}),
    "timestep linear": (lambda m: m.TimestepAttention(6, "linear"), (X3,), {"return_weights": True}),
    "repeat vector softmax": (lambda m: m.RepeatVectorAttention(6), (X_SQUARE,), {"return_weights": True}),
    "repeat vector linear": (lambda m: m.RepeatVectorAttention(6, "linear"), (X_SQUARE,), {"return_weights": True}),
    "pooling": (lambda m: m.AttentionPooling(5), (X3, MASK), {"return_weights": True}),
    "pooling no mask": (lambda m: m.AttentionPooling(5), (X3,), {}),
    "attention GRU": (lambda m: m.AttentionGRU(5, 4), (X3, (MASK / MASK.sum(1, keepdims=True)).astype("float32")),
                      {}),
    "LSTM": (lambda m: m.VariationalLSTM(5, 4), (X3,), {}),
    "BiLSTM": (lambda m: m.VariationalLSTM(5, 4, bidirectional=True, recurrent_dropout=0.3), (X3,), {}),
}
MODEL_CASES = {
    "tagger baseline": (lambda m: m.NERTagger(30, 7, embed=5, hidden=4), (IDS,), {}),
    "tagger feature": (lambda m: m.NERTagger(30, 7, embed=5, hidden=4, attention="feature"), (IDS,),
                       {"return_weights": True}),
    "tagger feature single linear": (lambda m: m.NERTagger(30, 7, 5, 4, "feature_single", "linear"), (IDS,),
                                     {"return_weights": True}),
    "tagger timestep": (lambda m: m.NERTagger(30, 7, 5, 4, "timestep", max_len=6), (IDS,),
                        {"return_weights": True}),
    "tagger talk's model 1": (lambda m: m.NERTagger(30, 7, embed=6, hidden=4, attention="repeat_vector", max_len=6),
                              (IDS,), {"return_weights": True}),
    "tagger talk's model 1 linear": (lambda m: m.NERTagger(30, 7, 6, 4, "repeat_vector", "linear", max_len=6),
                                     (IDS,), {"return_weights": True}),
    "tagger feature after the BiLSTM": (lambda m: m.NERTagger(30, 7, 5, 4, "feature", place="after"), (IDS,),
                                        {"return_weights": True}),
    "tagger timestep after the BiLSTM": (lambda m: m.NERTagger(30, 7, 5, 4, "timestep", max_len=6, place="after"),
                                         (IDS,), {"return_weights": True}),
    "tagger talk's model 1 after the BiLSTM": (lambda m: m.NERTagger(30, 7, 5, 3, "repeat_vector", max_len=6,
                                                                     place="after"), (IDS,), {"return_weights": True}),
    "bag of words": (lambda m: m.BagOfWords(30, embed=5), (IDS, MASK), {"return_weights": True}),
    "bag of words, pads counted": (lambda m: m.BagOfWords(30, embed=5), (IDS,), {}),
    "sentiment last": (lambda m: m.SentimentClassifier(30, embed=5, hidden=4), (IDS, MASK),
                       {"return_weights": True}),
    "sentiment attention": (lambda m: m.SentimentClassifier(30, 5, 4, "attention"), (IDS, MASK),
                            {"return_weights": True}),
    "sentiment attention no mask": (lambda m: m.SentimentClassifier(30, 5, 4, "attention"), (IDS,), {}),
    "sentiment attention GRU": (lambda m: m.SentimentClassifier(30, 5, 4, "attention_gru"), (IDS, MASK),
                                {"return_weights": True}),
}


@pytest.mark.parametrize("case", list(LAYER_CASES) + list(MODEL_CASES))
def test_twins_agree_with_shared_weights(case):
    build, inputs, kwargs = {**LAYER_CASES, **MODEL_CASES}[case]
    _parity(build, inputs, kwargs)


def test_attention_gru_output_is_not_trivial():
    # gates of 1 make the attention GRU a plain (update-free) recurrence: the state must change
    gru = ac.torch.AttentionGRU(5, 4)
    h = gru(torch.as_tensor(X3), torch.ones(3, 6))
    assert h.abs().min() > 0 and not torch.allclose(h[0], h[1])
    assert torch.equal(gru(torch.as_tensor(X3), torch.zeros(3, 6)), torch.zeros(3, 4)), "gates 0: nothing written"


def test_lstm_conversion_rejects_stacked_lstms():
    from attention_course.core.parity import CONVERSIONS

    stacked = {k: v.detach().numpy() for k, v in torch.nn.LSTM(3, 4, num_layers=2).state_dict().items()}
    with pytest.raises(ValueError, match="single-layer"):
        CONVERSIONS["LSTM"](stacked)


# ---- the PyTorch LSTM with Keras' recurrent dropout -----------------------------------------------------------

def test_loop_matches_the_fused_lstm_without_dropout(monkeypatch):
    lstm = ac.torch.VariationalLSTM(5, 4, bidirectional=True, dropout=0.2, recurrent_dropout=0.3)
    x = torch.as_tensor(X3)
    fused = lstm.eval()(x)
    monkeypatch.setattr(lstm, "_mask", lambda like, p: torch.ones_like(like))   # dropout that keeps everything
    looped = lstm.train()(x)
    torch.testing.assert_close(looped, fused, rtol=1e-5, atol=1e-6)


def test_recurrent_dropout_draws_one_mask_per_sequence(monkeypatch):
    lstm = ac.torch.VariationalLSTM(5, 4, bidirectional=True, dropout=0.2, recurrent_dropout=0.3).train()
    shapes = []
    original = lstm._mask
    monkeypatch.setattr(lstm, "_mask", lambda like, p: shapes.append((tuple(like.shape), p)) or original(like, p))
    a, b = lstm(torch.as_tensor(X3)), lstm(torch.as_tensor(X3))
    # per call and direction: one (B, 1, d) input mask and one (B, H) state mask, not one per timestep
    assert shapes[:4] == [((3, 1, 5), 0.2), ((3, 4), 0.3), ((3, 1, 5), 0.2), ((3, 4), 0.3)] and len(shapes) == 8
    assert not torch.allclose(a, b), "training runs drop at random"
    lstm.eval()
    torch.testing.assert_close(lstm(torch.as_tensor(X3)), lstm(torch.as_tensor(X3)))


def test_keras_lstm_has_the_dropouts():
    lstm = ac.keras.VariationalLSTM(5, 4, bidirectional=True, dropout=0.2, recurrent_dropout=0.1)
    inner = lstm.lstm.forward_layer
    assert inner.dropout == 0.2 and inner.recurrent_dropout == 0.1 and inner.return_sequences


@pytest.mark.parametrize("bidirectional", [True, False])
def test_keras_training_loop_computes_what_keras_lstm_computes(bidirectional):
    """While training with recurrent dropout the Keras twin runs its own loop over the LSTM's weights: it draws the
    masks Keras' LSTM would draw (the same seeds) and gives the same states and the same gradients."""
    import tensorflow as tf

    lstm = ac.keras.VariationalLSTM(5, 4, bidirectional=bidirectional, dropout=0.2, recurrent_dropout=0.3)
    x = tf.constant(X3)
    evaluated = lstm(x)
    inner = [lstm.lstm.forward_layer, lstm.lstm.backward_layer] if bidirectional else [lstm.lstm]
    seeds = [layer.cell.seed_generator.state.numpy() for layer in inner]

    def run(layer):
        with tf.GradientTape() as tape:
            states = layer(x, training=True)
            loss = tf.reduce_sum(states * tf.range(1.0, 1.0 + states.shape[-1]))
        return states.numpy(), [g.numpy() for g in tape.gradient(loss, lstm.trainable_variables)]

    keras_own, keras_grads = run(lstm.lstm)
    for layer, seed in zip(inner, seeds, strict=True):
        layer.cell.seed_generator.state.assign(seed)                  # the same masks again
    ours, our_grads = run(lstm)
    np.testing.assert_allclose(ours, keras_own, rtol=RTOL, atol=ATOL)
    for a, b in zip(our_grads, keras_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert not np.allclose(ours, evaluated), "training drops units"
    assert ours.shape == (*X3.shape[:2], 8 if bidirectional else 4)


# ---- properties --------------------------------------------------------------------------------------------------

def test_weights_sum_to_one_over_the_right_axis(fw):


    x = as_input(fw, X3)
    _, w = fw.FeatureAttention(5)(x, return_weights=True)
    np.testing.assert_allclose(to_numpy(w).sum(-1), 1, rtol=1e-5)                       # over the features
    _, w = fw.FeatureAttention(5, single=True)(x, return_weights=True)
    w = to_numpy(w)
    np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-5)
    np.testing.assert_allclose(w, np.broadcast_to(w[:, :1], w.shape), rtol=1e-6)        # one vector for all steps
    _, w = fw.TimestepAttention(6)(x, return_weights=True)
    assert to_numpy(w).shape == (3, 6)
    np.testing.assert_allclose(to_numpy(w).sum(-1), 1, rtol=1e-5)                       # over time
    _, w = fw.AttentionPooling(5)(x, return_weights=True)
    np.testing.assert_allclose(to_numpy(w).sum(-1), 1, rtol=1e-5)


def test_masked_pads_get_zero_weight(fw):


    x, mask = as_input(fw, X3), as_input(fw, MASK)
    for layer in (fw.TimestepAttention(6), fw.AttentionPooling(5)):
        _, w = layer(x, mask, return_weights=True)
        w = to_numpy(w)
        assert (w[~MASK] == 0).all()
        np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-5)
    # the one-vector feature weights average over the real steps only: the pads cannot change them
    x2 = X3.copy()
    x2[~MASK] = 100.0
    layer = fw.FeatureAttention(5, single=True)
    _, w1 = layer(x, mask, return_weights=True)
    _, w2 = layer(as_input(fw, x2), mask, return_weights=True)
    np.testing.assert_allclose(to_numpy(w1), to_numpy(w2), rtol=1e-5)


def test_feature_attention_works_at_any_length_timestep_does_not(fw):
    layer = fw.FeatureAttention(5)
    for t in (2, 6, 11):
        assert tuple(layer(as_input(fw, np.ones((2, t, 5), "float32"))).shape) == (2, t, 5)
    step = fw.TimestepAttention(6)
    step(as_input(fw, X3))
    with pytest.raises(ShapeError, match="exactly T=6"):
        step(as_input(fw, np.ones((2, 7, 5), "float32")))


def test_mask_and_gate_shape_errors_name_the_shapes(fw):
    x = as_input(fw, np.ones((2, 5, 4), "float32"))
    bad_mask = as_input(fw, np.ones((2, 6), bool))
    with pytest.raises(ShapeError, match=r"mask must be \(batch, T\) = \(2, 5\).*got mask \(2, 6\)"):
        fw.AttentionPooling(4)(x, bad_mask)
    with pytest.raises(ShapeError, match=r"mask must be .*\(2, 5\)"):
        fw.FeatureAttention(4, single=True)(x, bad_mask)
    with pytest.raises(ShapeError, match=r"gates must be \(batch, T\) = \(2, 5\).*got gates \(2, 4\)"):
        fw.AttentionGRU(4, 3)(x, as_input(fw, np.ones((2, 4), "float32")))
    with pytest.raises(ShapeError, match=r"built for d=3 features.*\(2, 5, 4\)"):
        fw.AttentionPooling(3)(x)


def test_repeat_vector_attention_computes_the_talks_model_1(fw):
    """Dense + softmax over the features, mean over time, RepeatVector(d), Permute((2, 1)), multiply: timestep t is
    scaled by the time-averaged weight of feature t, and other lengths than d do not run."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 5, 5)).astype("float32")
    layer = fw.RepeatVectorAttention(5)
    layer(as_input(fw, x))
    if fw is ac.keras:
        kernel, bias = (np.asarray(w) for w in layer.score.weights)
    else:
        kernel, bias = layer.score.weight.detach().numpy().T, layer.score.bias.detach().numpy()
    scores = x @ kernel + bias
    a = np.exp(scores - scores.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)                                     # (B, T, d), over the features
    m = a.mean(axis=1)                                                # (B, d)
    repeated = np.repeat(m[:, None, :], 5, axis=1)                    # RepeatVector(d): (B, d, d)
    weight = repeated.transpose(0, 2, 1)                              # Permute((2, 1))
    out, w = layer(as_input(fw, x), return_weights=True)
    np.testing.assert_allclose(to_numpy(w), weight, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(to_numpy(out), x * m[:, :, None], rtol=RTOL, atol=ATOL)   # row t times m_t
    with pytest.raises(ShapeError, match="exactly T=5"):
        layer(as_input(fw, rng.normal(size=(2, 7, 5)).astype("float32")))


def test_bag_of_words_ignores_the_order_and_the_masked_pads(fw):
    rng = np.random.default_rng(4)
    x = rng.integers(1, 30, size=(3, 6))
    mask = _left_mask(rng, 3, 6)
    model = fw.BagOfWords(30, embed=4)
    shuffled = x[:, rng.permutation(6)]
    mask_shuffled = np.ones_like(mask)
    got = to_numpy(model(x, np.ones_like(mask)))
    np.testing.assert_allclose(to_numpy(model(shuffled, mask_shuffled)), got, rtol=RTOL, atol=ATOL)
    other_pads = np.where(mask, x, (x + 7) % 30)                      # change only the masked positions
    np.testing.assert_allclose(to_numpy(model(other_pads, mask)), to_numpy(model(x, mask)), rtol=RTOL, atol=ATOL)


def test_configuration_errors(fw):
    with pytest.raises(ConfigError, match="needs max_len"):
        fw.NERTagger(10, 3, attention="timestep")
    with pytest.raises(ConfigError, match="needs max_len equal to the 50 features"):
        fw.NERTagger(10, 3, attention="repeat_vector", max_len=30)
    with pytest.raises(ConfigError, match="unknown place 'middle'"):
        fw.NERTagger(10, 3, attention="feature", place="middle")
    with pytest.raises(ConfigError, match="unknown activation 'relu'"):
        fw.FeatureAttention(4, activation="relu")
    with pytest.raises(ConfigError, match="unknown attention 'global'"):
        fw.NERTagger(10, 3, attention="global")
    with pytest.raises(ConfigError, match="unknown pooling"):
        fw.SentimentClassifier(10, pooling="max")


def test_models_train_a_little(fw):
    rng = np.random.default_rng(1)
    x = rng.integers(1, 20, size=(64, 8))
    y_tags = (x % 3) + 1
    tagger = fw.NERTagger(20, 4, embed=8, hidden=8, attention="timestep", max_len=8)
    hist = fw.fit(tagger, (x,), y_tags, epochs=3, lr=1e-2, ignore_index=0, seed=0)
    assert hist["loss"][-1] < hist["loss"][0]
    clf = fw.SentimentClassifier(20, embed=8, hidden=8, pooling="attention_gru")
    hist = fw.fit(clf, (x, x > 0), (x[:, -1] > 10).astype("int64"), epochs=3, lr=1e-2, seed=0)
    assert np.isfinite(hist["loss"]).all()


def test_embedding_initialisation_defaults_differ_and_embed_init_aligns_them():
    """The frameworks' default embeddings differ 20-fold in scale (Chapter 3 measures what that does);
    ``embed_init`` draws both from the same uniform range."""
    x = np.ones((1, 4), "int64")
    km = ac.keras.SentimentClassifier(500)
    km(x)
    k_default = np.asarray(km.embed.embeddings)
    t_default = trec.SentimentClassifier(500).embed.weight.detach().numpy()
    assert np.abs(k_default).max() <= 0.05 and 0.9 < t_default.std() < 1.1
    km = ac.keras.SentimentClassifier(500, embed_init=0.2)
    km(x)
    for w in (np.asarray(km.embed.embeddings), trec.SentimentClassifier(500, embed_init=0.2).embed.weight.detach()):
        w = np.asarray(w)
        assert np.abs(w).max() <= 0.2 and np.abs(w).max() > 0.19 and abs(w.std() - 0.2 / np.sqrt(3)) < 0.01


# ---- preprocessing and reports --------------------------------------------------------------------------------

def test_merge_entity_tag():
    assert [metrics.merge_entity_tag(t) for t in ("B-geo", "I-geo", "O", "I-per")] == ["geo", "geo", "O", "per"]
    with pytest.raises(ValueError, match="not a BIO tag"):
        metrics.merge_entity_tag("X-geo")


def test_token_report_merges_types_and_counts():
    true = ["B-geo", "I-geo", "O", "B-per", "O", "O"]
    pred = ["B-geo", "B-geo", "O", "O", "B-per", "O"]
    rep = metrics.token_report(true, pred)
    assert rep.loc["geo", "support"] == 2 and rep.loc["geo", "f1"] == 1.0      # B/I confusion is invisible here
    assert rep.loc["per", "precision"] == 0 and rep.loc["per", "support"] == 1
    assert rep.loc["O", "support"] == 3 and rep.loc["O", "recall"] == pytest.approx(2 / 3)
    assert rep.loc["micro avg", "f1"] == pytest.approx(4 / 6)                    # = token accuracy after merging
    assert rep.loc["entity micro avg", "support"] == 3
    assert rep.loc["entity micro avg", "recall"] == pytest.approx(2 / 3)


def test_entity_report_is_stricter_than_tokens():
    true = [["B-geo", "I-geo", "O"], ["B-per", "O"]]
    pred = [["B-geo", "B-geo", "O"], ["B-per", "O"]]                            # geo split into two entities
    rep = metrics.entity_report(true, pred)
    assert rep.loc["geo", "f1"] == 0 and rep.loc["per", "f1"] == 1 and rep.loc["geo", "support"] == 1
    assert metrics.token_report(sum(true, []), sum(pred, [])).loc["geo", "f1"] == 1


def test_padding_inflation_counts():
    out = metrics.padding_inflation([3, 5, 2], n_o=6, max_len=5)
    assert out == {"sentences": 3, "tokens": 10, "real_O": 6, "pads": 5, "positions": 15, "O_with_pads": 11}
    with pytest.raises(ValueError, match="does not fit"):
        metrics.padding_inflation([6], n_o=1, max_len=5)


def test_focus_ratio():
    ids = np.array([[0, 7, 3, 9], [0, 0, 7, 4]])
    w = np.array([[0.0, 0.5, 0.25, 0.25], [0.0, 0.0, 0.8, 0.2]])
    mask = ids != 0
    assert metrics.focus_ratio(w, ids, mask, [7]) == pytest.approx(0.65 / np.mean([0.25, 0.25, 0.2]))
    assert metrics.focus_ratio(w, ids, mask, [3, 9, 4]) < 1
    with pytest.raises(ValueError, match="one shape"):
        metrics.focus_ratio(w, ids[:, :3], mask, [7])


def test_pad_mass():
    w = np.array([[0.2, 0.3, 0.5], [0.0, 0.5, 0.5]])
    np.testing.assert_allclose(metrics.pad_mass(w, np.array([[False, True, True], [False, True, True]])), [0.2, 0])
    with pytest.raises(ValueError, match="same shape"):
        metrics.pad_mass(w, np.ones((2, 2), bool))


def _script():
    from attention_course.ch03_timestep_feature_attention import experiment as chapter3

    return chapter3


def test_the_chapter3_experiment_loads_no_framework_and_its_command_is_thin():
    code = ("import sys; from attention_course.ch03_timestep_feature_attention.experiment import NER_MODELS, "
            "SENTIMENT_MODELS; "
            "heavy = [m for m in ('torch', 'tensorflow', 'keras') if m in sys.modules]; assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True)
    tool = Path(ac.__path__[0]).parent / "tools" / "chapter3_full.py"
    out = subprocess.run([sys.executable, str(tool), "--help"], capture_output=True, text=True, check=True)
    assert "--skip-sentiment" in out.stdout
    assert "def " not in tool.read_text().replace("def main()", "")       # the logic lives in the package


RESULTS = Path(ac.__path__[0]).parent / "book" / "03-timestep-feature-attention" / "results"


RUNS = ["", "keras-ner", "keras-sentiment", "pytorch-embed-init-0.05", "keras-embed-init-1.732",
        "pytorch-bag-of-words", "keras-bag-of-words"]


@pytest.mark.parametrize("run", RUNS, ids=["pytorch", *RUNS[1:]])
def test_committed_results_table_is_the_scripts_rendering_of_the_json(run):
    """Each results.md is what tools/chapter3_full.py writes from the results.json beside it."""
    folder = RESULTS / run
    res = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert _script().markdown(res) == (folder / "results.md").read_text(encoding="utf-8")
    assert res["profile"] == "full" and len(res["config"]["seeds"]) >= 5
    assert "ner" in res or "sentiment" in res
    # the first runs recorded no model list: they trained the four recurrent models (the bag of words came later)
    models = res["config"].get("sentiment_models", [m for m in _script().SENTIMENT_MODELS if m != "bag of words"])
    for seed in res["config"]["seeds"] if "sentiment" in res else []:
        assert sorted(r["model"] for r in res["sentiment"]["runs"] if r["seed"] == seed) == sorted(models)
    if "ner" in res:
        assert res["ner"]["padding"]["sentences"] == 47959 // 5
        if "ner_models" in res["config"]:                            # a run of some taggers (--ner-models)
            assert list(res["ner"]["models"]) == res["config"]["ner_models"]
        else:                                                        # the six taggers of the first full runs
            assert list(res["ner"]["models"]) == list(_script().NER_MODELS)[:6]


def test_the_talks_five_reports_are_transcribed_consistently():
    """The talk's reports as committed: every class's support adds up to the total the talk printed, the four
    attention reports count the same test positions (and another split than the vanilla one), the two linear
    reports are the same table, and each F1 is the harmonic mean of its precision and recall, to rounding."""
    talk = json.loads((RESULTS / "talk_reports.json").read_text(encoding="utf-8"))["reports"]
    assert list(talk) == ["vanilla", "model 1 · softmax", "model 2 · softmax", "model 1 · linear", "model 2 · linear"]
    classes = ["O", *metrics.ENTITY_TYPES]
    for name, report in talk.items():
        rows = report["rows"]
        extra = [] if name == "vanilla" else ["prev-prev-lemma"]
        assert list(rows) == [*classes, *extra, "avg / total"], name
        total = rows["avg / total"]
        assert sum(r["support"] for k, r in rows.items() if k != "avg / total") == total["support"] == 1_027_180
        assert total["precision"] == total["recall"] == total["f1"] == 0.99 and rows["O"]["f1"] == 1.0
        for k, r in rows.items():
            p, rc = r["precision"], r["recall"]
            f1 = 0.0 if p + rc == 0 else 2 * p * rc / (p + rc)
            assert abs(f1 - r["f1"]) <= 0.011, (name, k, r)
    supports = {name: {k: r["support"] for k, r in report["rows"].items()} for name, report in talk.items()}
    assert all(supports[name] == supports["model 1 · softmax"] for name in list(talk)[1:])
    assert supports["vanilla"]["O"] == 995_317 and supports["model 1 · softmax"]["O"] == 994_779
    assert supports["vanilla"]["geo"] == 9_014 and supports["model 1 · softmax"]["geo"] == 9_071
    assert talk["model 1 · linear"]["rows"] == talk["model 2 · linear"]["rows"]
    assert talk["model 1 · softmax"]["rows"]["prev-prev-lemma"]["support"] == 1


def test_the_script_parses_tagger_names():
    parse = _script().parse_ner_models
    assert parse("baseline,feature · softmax, after the BiLSTM") == ["baseline", "feature · softmax, after the BiLSTM"]
    assert parse(",".join(_script().NER_MODELS)) == list(_script().NER_MODELS)
    with pytest.raises(ValueError, match="unknown NER models"):
        parse("baseline,attention")
    assert _script().tagger_arguments("talk's model 1 · linear", 30) == {
        "max_len": 30, "attention": "repeat_vector", "activation": "linear", "embed": 30}


def test_the_script_parses_model_names_with_commas():
    parse = _script().parse_models
    assert parse("last state,attention") == ["last state", "attention"]
    assert parse(",".join(_script().SENTIMENT_MODELS)) == list(_script().SENTIMENT_MODELS)   # the default
    with pytest.raises(ValueError, match="unknown sentiment models"):
        parse("last state, attention")


def test_sentiment_split_pads_on_the_left_with_a_train_only_vocabulary():
    data = ac.data.prepare_sentiment(seed=3)
    assert data["X"].shape == (2000, 32) and len(data["val"]) == 400 and len(data["train"]) == 1600
    assert not set(data["val"]) & set(data["train"])
    assert data["mask"][:, -1].all()                               # the last position is always a real token
    lengths = data["mask"].sum(1)
    assert (data["mask"] == (np.arange(32)[None, :] >= 32 - lengths[:, None])).all()   # pads only on the left
    train_words = {w for i in data["train"] for w in data["tokens"][i]}
    assert set(data["vocab"].tokens) - train_words <= set(data["vocab"].tokens[:4])    # only special tokens
    words = ac.data.sentiment_words(data)
    assert len(words) == 40 and {"great", "bad"} & set(words)


def test_sentiment_data_can_be_prepared_as_the_article_did():
    data = ac.data.prepare_sentiment(seed=3, padding="post", tokenizer="keras", split="last")
    assert (data["val"] == np.arange(1600, 2000)).all() and (data["train"] == np.arange(1600)).all()
    assert data["mask"][:, 0].all()                                # pads after the words: the first is real
    lengths = data["mask"].sum(1)
    assert (data["mask"] == (np.arange(32)[None, :] < lengths[:, None])).all()
    assert not {",", ".", "!"} & {w for t in data["tokens"] for w in t}    # Keras' Tokenizer drops punctuation
    assert np.mean(np.minimum(lengths, 32)) == pytest.approx(10.6, abs=0.05)   # the article's 10.6 words
    from attention_course.ch03_timestep_feature_attention import data as ch03_data
    assert ch03_data.keras_words("Don't panic, Arthur!") == ["don't", "panic", "arthur"]
    with pytest.raises(ConfigError, match="unknown padding 'left'"):
        ac.data.prepare_sentiment(seed=3, padding="left")


def test_the_article_comparison_switches_one_choice_at_a_time():
    from attention_course.ch03_timestep_feature_attention import article

    base = article.CONFIGS["article"]
    for name, config in article.CONFIGS.items():
        changed = {k for k in base if config[k] != base[k]}
        if name == "article":
            assert not changed
        elif name == "course":
            assert changed == set(base)
        else:
            assert len(changed - {"epochs"}) == 1, (name, changed)
    rows = [{"config": c, "model": m, "seed": s, "framework": "keras", "val_accuracy": 0.5 + 0.1 * s}
            for c in ("course", "article") for m in article.MODELS for s in range(3)]
    table = article.summary(rows)
    assert list(table.index) == ["article", "course"]
    assert table.loc["article", ("mean", "attention")] == pytest.approx(0.6)
    assert table.loc["course", ("count", "last state")] == 3


@pytest.mark.slow
def test_padding_inflates_the_o_support_of_the_real_split():
    """A 20 % test split of the NER corpus padded to the longest sentence: the pads, labelled O, outnumber the
    real O tokens more than four to one."""
    data = ac.data.prepare_ner(104)
    Y = data["Y_test"]
    o_id = data["tags"].index("O")
    lengths = (Y != 0).sum(1)
    real_o = int((Y == o_id).sum())
    out = metrics.padding_inflation(lengths, real_o, 104)
    assert out["sentences"] == 47959 // 5 and out["positions"] == out["sentences"] * 104
    assert out["pads"] + out["tokens"] == out["positions"]
    assert 150_000 < real_o < 200_000 and out["O_with_pads"] > 4 * real_o
    padded_labels = np.where(Y == 0, o_id, Y)                                   # pads labelled O
    assert int((padded_labels == o_id).sum()) == out["O_with_pads"]


# ---- exercise checkers ------------------------------------------------------------------------------------------

def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_checkers_accept_the_references():
    exercises.attention_pooling(lambda s, w, b, m: exercises.reference_attention_pooling(s, w, b, m), seed=0)
    exercises.timestep_attention(exercises.reference_timestep_attention, seed=0)
    exercises.feature_attention(exercises.reference_feature_attention, seed=0)
    exercises.paired_comparison(exercises.reference_paired_comparison, seed=0)


def test_the_feature_attention_reference_is_the_layer():
    x = RNG.normal(size=(2, 5, 4)).astype("float32")
    for single in (False, True):
        layer = ac.torch.FeatureAttention(4, single=single)
        with torch.no_grad():
            out, weights = layer(torch.as_tensor(x), return_weights=True)
        W, b = layer.score.weight.detach().numpy().T, layer.score.bias.detach().numpy()     # (in, out), as Keras
        ref_out, ref_weights = exercises.reference_feature_attention(x, W, b, single)
        np.testing.assert_allclose(weights.numpy(), ref_weights, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-5, atol=1e-6)


def test_the_paired_comparison_reference_is_scipy_s_paired_t_test():
    import scipy.stats

    a, b = np.array([0.80, 0.78, 0.83, 0.79, 0.81]), np.array([0.77, 0.78, 0.80, 0.76, 0.80])
    mean, se, t = exercises.reference_paired_comparison(a, b)
    assert mean == pytest.approx(0.02) and t == pytest.approx(scipy.stats.ttest_rel(a, b).statistic)
    assert se == pytest.approx(np.std(a - b, ddof=1) / np.sqrt(5))


def _feature_over_time(x, W, b, single):
    w = _softmax(x @ W + b, axis=1)
    return x * w, w


def _feature_single_ignored(x, W, b, single):
    w = _softmax(x @ W + b)
    return x * w, w


def _feature_not_applied(x, W, b, single):
    return x, exercises.reference_feature_attention(x, W, b, single)[1]


@pytest.mark.parametrize("wrong, needle", [
    (_feature_over_time, "runs over time"),
    (_feature_single_ignored, "single=True was ignored"),
    (_feature_not_applied, "not multiplied into the inputs"),
    (lambda x, W, b, single: exercises.reference_feature_attention(x, W, b, single)[0], "return a pair"),
])
def test_feature_attention_checker_names_mistakes(wrong, needle):
    with pytest.raises(exercises.ExerciseError, match=needle):
        exercises.feature_attention(wrong, seed=0)


def _unpaired(a, b):
    se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    return (a - b).mean(), se, (a - b).mean() / se


def _spread_not_error(a, b):
    d = a - b
    return d.mean(), d.std(ddof=1), d.mean() / d.std(ddof=1)


@pytest.mark.parametrize("wrong, needle", [
    (_unpaired, "two independent samples"),
    (_spread_not_error, "standard deviation of the differences"),
    (lambda a, b: exercises.reference_paired_comparison(b, a), "the mean of b − a"),
    (lambda a, b: exercises.reference_paired_comparison(a, b)[:2], "return three numbers"),
])
def test_paired_comparison_checker_names_mistakes(wrong, needle):
    with pytest.raises(exercises.ExerciseError, match=needle):
        exercises.paired_comparison(wrong, seed=0)


def _pool_no_mask(s, w, b, m):
    a = _softmax(np.tanh(s @ w + b))
    return (a[..., None] * s).sum(1), a


def _pool_no_tanh(s, w, b, m):
    e = np.where(m, s @ w + b, -np.inf)
    a = _softmax(e)
    return (a[..., None] * s).sum(1), a


def _pool_mean(s, w, b, m):
    c, a = exercises.reference_attention_pooling(s, w, b, m)
    return (a[..., None] * s).mean(1), a


@pytest.mark.parametrize("wrong, needle", [
    (_pool_no_mask, "mask is not applied"),
    (_pool_no_tanh, "tanh is missing"),
    (_pool_mean, "weighted MEAN"),
    (lambda s, w, b, m: exercises.reference_attention_pooling(s, w, b, ~m), "mask is inverted"),
    (lambda s, w, b, m: exercises.reference_attention_pooling(s, w, b, m)[0], "return a pair"),
    (lambda s, w, b, m: (s.sum(1), exercises.reference_attention_pooling(s, w, b, m)[1]), "ignores the weights"),
    (lambda s, w, b, m: 1 / 0, "ZeroDivisionError"),
])
def test_attention_pooling_checker_names_mistakes(wrong, needle):
    with pytest.raises(exercises.ExerciseError, match=needle):
        exercises.attention_pooling(wrong, seed=0)


def _ts_feature_softmax(x, W, b):
    a = _softmax(x.transpose(0, 2, 1) @ W + b, axis=1).mean(1)
    return x * a[..., None], a


def _ts_transposed(x, W, b):
    a = _softmax(x.transpose(0, 2, 1) @ W.T + b).mean(1)
    return x * a[..., None], a


def _ts_mean_over_time(x, W, b):
    a = _softmax(x.transpose(0, 2, 1) @ W + b).mean(2)
    return x, a


def _ts_not_multiplied(x, W, b):
    return x, exercises.reference_timestep_attention(x, W, b)[1]


def _ts_softmax_after_mean(x, W, b):
    a = _softmax((x.transpose(0, 2, 1) @ W + b).mean(1))
    return x * a[..., None], a


def _ts_no_permute(x, W, b):
    a = _softmax(x @ W + b).mean(1)
    return x * a[..., None], a


@pytest.mark.parametrize("wrong, needle", [
    (_ts_feature_softmax, "softmax runs over the features"),
    (_ts_transposed, "kernel is used transposed"),
    (_ts_mean_over_time, "averaged over time instead of over the features|same axis"),
    (_ts_not_multiplied, "not multiplied"),
    (_ts_softmax_after_mean, "after averaging"),
    (_ts_no_permute, "without permuting|raised ValueError"),
])
def test_timestep_checker_names_mistakes(wrong, needle):
    with pytest.raises(exercises.ExerciseError, match=needle):
        exercises.timestep_attention(wrong, seed=0)


# ---- charts ---------------------------------------------------------------------------------------------------------

def test_token_layout_wraps_lines():
    rows = ac.viz.token_layout(["word"] * 40, width=200)
    assert rows[0]["x"] == 0 and max(r["line"] for r in rows) > 3
    assert all(r["x2"] <= 200 or r["x"] == 0 for r in rows)


def test_token_highlight_has_dropdowns_and_alt_text():
    import pandas as pd

    df = pd.DataFrame([{"sentence": s, "model": m, "position": i, "token": t, "weight": float(i + 1)}
                       for s in ("one", "two") for m in ("a", "b") for i, t in enumerate(["x", "yy", "zzz"])])
    spec = ac.viz.token_highlight(df, title="t", description="alt text here").to_dict()
    assert spec["description"] == "alt text here"
    names = {p["name"] for p in spec["params"]}
    assert {"sentence_pick", "model_pick"} <= names
    with pytest.raises(ValueError, match="missing"):
        ac.viz.token_highlight(df.drop(columns="token"), title="t", description="d")


def test_score_dots_and_seed_spread_carry_alt_text():
    import pandas as pd

    dots = pd.DataFrame({"type": ["geo", "per", "geo", "per"], "f1": [0.8, 0.7, 0.85, 0.86],
                         "source": ["ours", "ours", "talk", "talk"]})
    spec = ac.viz.score_dots(dots, x="f1", y="type", color="source", title="t", description="dots").to_dict()
    assert spec["description"] == "dots"
    runs = pd.DataFrame({"model": ["a", "a", "b", "b"], "acc": [0.7, 0.72, 0.75, 0.8]})
    ref = pd.DataFrame({"model": ["a"], "acc": [0.77], "label": ["reference"]})
    spec = ac.viz.seed_spread(runs, x="acc", y="model", reference=ref, title="Accuracy over seeds",
                              x_title="validation accuracy", description="seeds").to_dict()
    assert spec["description"] == "seeds" and len(spec["layer"]) == 4
    assert spec["title"] == "Accuracy over seeds"                   # the chart's title, not the axis title
    assert spec["layer"][1]["encoding"]["x"]["title"] == "validation accuracy"


@pytest.mark.parametrize("gate", [1.5, -0.1, np.nan])
def test_attention_gru_refuses_gates_that_are_not_weights(fw, gate):
    """A gate outside [0, 1] would extrapolate the state (h = g·h̃ + (1 − g)·h), NaN would spread: both refused."""
    gates = np.full((2, 3), 0.5, np.float32)
    gates[1, 2] = gate
    with pytest.raises(InputError, match=r"gates must hold weights in \[0, 1\].*got values from"):
        fw.AttentionGRU(4, 8)(np.zeros((2, 3, 4), np.float32), gates)


@pytest.mark.parametrize("make, name, pad_ok", [
    (lambda fw: fw.FeatureAttention(4), "x", True),
    (lambda fw: fw.FeatureAttention(4, single=True), "x", True),
    (lambda fw: fw.TimestepAttention(3), "x", False),             # its T × T Dense reads the pads too
    (lambda fw: fw.AttentionPooling(4), "states", True),
], ids=["feature", "feature-single", "timestep", "pooling"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_nan_or_inf_in_a_real_step_is_refused_by_name(fw, make, name, pad_ok, bad):
    """A NaN or inf in what the layer reads would give NaN outputs without a word; behind the mask it may stay
    (FeatureAttention, AttentionPooling), or not, where the layer reads the pads too (TimestepAttention)."""
    mask = np.array([[True, True, False], [True, True, True]])
    layer = make(fw)
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    x[1, 1, 2] = bad
    with pytest.raises(InputError, match=rf"{name} must hold finite numbers.*the first at index \(1, 1, 2\)"):
        layer(as_input(fw, x), as_input(fw, mask))
    x[1, 1, 2] = 0.0
    x[0, 2, 0] = bad                                                   # behind the mask
    if pad_ok:
        weights = to_numpy(layer(as_input(fw, x), as_input(fw, mask), return_weights=True)[1])
        assert np.isfinite(weights[mask]).all()                        # the weights of the real steps
    else:
        with pytest.raises(InputError, match=rf"{name} must hold finite numbers.*the first at index \(0, 2, 0\)"):
            layer(as_input(fw, x), as_input(fw, mask))


def test_repeat_vector_attention_and_the_attention_gru_refuse_nan_and_inf_by_name(fw):
    x = np.zeros((2, 4, 4), np.float32)
    x[0, 3, 1] = np.inf
    with pytest.raises(InputError, match=r"x must hold finite numbers.*the first at index \(0, 3, 1\)"):
        fw.RepeatVectorAttention(4)(as_input(fw, x))
    x[0, 3, 1] = np.nan
    with pytest.raises(InputError, match=r"facts must hold finite numbers.*the first at index \(0, 3, 1\)"):
        fw.AttentionGRU(4, 8)(as_input(fw, x), np.full((2, 4), 0.5, np.float32))
