"""Keras and PyTorch twins: same public names and signatures, and with the same weights the same outputs
(float32, rtol 1e-5)."""

import inspect

import numpy as np
import pytest
import torch

import attention_course as ac
from attention_course.core.parity import torch_to_keras
from attention_course.data import synthetic

RTOL, ATOL = 1e-5, 1e-6


def test_same_public_names():
    assert sorted(ac.torch.__all__) == sorted(ac.keras.__all__)



def test_neutral_choices_are_stated_once():
    from attention_course.core import choices, text

    for name in ("SCORES", "ACTIVATIONS", "NER_ATTENTION", "POOLING"):
        assert getattr(ac.torch, name) is getattr(ac.keras, name) is getattr(choices, name), name
    assert ac.torch.PointerModel.VARIANTS is ac.keras.PointerModel.VARIANTS is choices.POINTER_ATTENTION
    from attention_course.ch01_sequence_models import keras as ch01_keras
    from attention_course.ch01_sequence_models import torch as ch01_torch
    from attention_course.ch04_score_functions import keras as ch04_keras
    from attention_course.ch04_score_functions import torch as ch04_torch
    assert ch01_torch.BOS == ch01_keras.BOS == text.BOS == synthetic.BOS
    for score in choices.SCORES:
        name, sizes = choices.score_layer(score, d_query=4)
        t, k = ch04_torch.make_score(score, d_query=4), ch04_keras.make_score(score, d_query=4)
        assert type(t).__name__ == type(k).__name__ == name and len(sizes) in (0, 2, 3)
    with pytest.raises(ac.errors.ConfigError, match="unknown score 'cosine': choose one of dot, scaled_dot"):
        choices.score_layer("cosine")
    with pytest.raises(ac.errors.ConfigError, match="the 'general' score is learned"):
        ch04_keras.make_score("general")


def test_keras_layers_share_one_base_for_explicit_masks():
    from attention_course.core.keras import base

    layers = [ac.keras.DotProductAttention(), ac.keras.HardAttention(), ac.keras.GumbelSoftmaxAttention(),
              ac.keras.LocalAttention(), ac.keras.ScoredAttention("dot"), ac.keras.DotScore(),
              ac.keras.FeatureAttention(4), ac.keras.AttentionPooling(4)]
    for layer in layers:
        assert isinstance(layer, base.Layer) and layer.supports_masking, layer
        assert layer.compute_mask(np.ones((1, 2, 4), "float32"), np.ones((1, 2), bool)) is None
    assert isinstance(ac.keras.Seq2Seq(vocab=5), base.Model)


def test_accuracy_is_the_neutral_argmax_accuracy():
    x = np.array([0, 1, 2, 3])
    for fw in (ac.torch, ac.keras):
        model = fw.OneToOne(n_in=4, n_out=4)
        pred = fw.predict(model, (x,)).argmax(-1)
        assert fw.accuracy(model, (x,), pred) == 1.0
        assert fw.accuracy(model, (x,), np.where(x == 0, (pred + 1) % 4, pred), ignore_index=None) == 0.75

@pytest.mark.parametrize("name", ["DotProductAttention", "OneToOne", "OneToMany", "ManyToOne", "ManyToMany", "Seq2Seq"])
def test_same_signatures(name):
    t, k = getattr(ac.torch, name), getattr(ac.keras, name)
    drop = {"self", "kwargs"}

    def params(f):
        return [p for p in inspect.signature(f).parameters.values() if p.name not in drop]

    assert params(t.__init__) == params(k.__init__)
    assert params(t.forward) == params(k.call)
    if hasattr(t, "generate"):
        assert params(t.generate) == params(k.generate)


@pytest.mark.parametrize("name", ["fit", "predict", "accuracy", "masked_softmax"])
def test_same_function_signatures(name):
    t, k = inspect.signature(getattr(ac.torch, name)), inspect.signature(getattr(ac.keras, name))
    assert [(p.name, p.default, p.kind) for p in t.parameters.values()] == \
        [(p.name, p.default, p.kind) for p in k.parameters.values()]


def _compare(torch_model, keras_model, inputs):
    torch_model.eval()
    keras_model(*inputs)
    torch_to_keras(torch_model, keras_model)
    with torch.no_grad():
        expected = torch_model(*[torch.as_tensor(a) for a in inputs]).numpy()
    got = np.asarray(keras_model(*inputs))
    assert expected.shape == got.shape
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


def _task():
    return synthetic.sequence_task(16, min_len=2, max_len=9, seed=3)


CASES = {
    "OneToOne": (lambda m: m.OneToOne(10, 7, hidden=12), lambda: (synthetic.one_to_one_task(16)[0],)),
    "OneToMany": (lambda m: m.OneToMany(10, 14, embed=8, hidden=12),
                  lambda: synthetic.one_to_many_task(16, steps=5)[:2]),
    "ManyToOne": (lambda m: m.ManyToOne(14, 10, embed=8, hidden=12), lambda: (synthetic.many_to_one_task(16)[0],)),
    "ManyToMany": (lambda m: m.ManyToMany(14, 10, embed=8, hidden=12),
                   lambda: (synthetic.many_to_many_task(16)[0],)),
    "Seq2Seq": (lambda m: m.Seq2Seq(14, embed=8, hidden=12), lambda: (_task().src, _task().tgt_in, _task().src_mask)),
    "Seq2Seq+attention": (lambda m: m.Seq2Seq(14, embed=8, hidden=12, attention=True),
                          lambda: (_task().src, _task().tgt_in, _task().src_mask)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_models_agree_with_shared_weights(case):
    build, data = CASES[case]
    torch.manual_seed(0)
    _compare(build(ac.torch), build(ac.keras), data())


def test_attention_layer_agrees():
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=s).astype("float32") for s in [(3, 4, 8), (3, 6, 8), (3, 6, 5)])
    mask = rng.random((3, 6)) > 0.3
    for scale in (False, True):
        tc, tw = ac.torch.DotProductAttention(scale)(*map(torch.as_tensor, (q, k, v)), mask=torch.as_tensor(mask),
                                                     return_weights=True)
        kc, kw = ac.keras.DotProductAttention(scale)(q, k, v, mask=mask, return_weights=True)
        np.testing.assert_allclose(np.asarray(kw), tw.numpy(), rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(np.asarray(kc), tc.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("attention", [False, True])
def test_greedy_decoding_agrees(attention):
    task = _task()
    torch.manual_seed(1)
    tm, km = ac.torch.Seq2Seq(14, embed=8, hidden=12, attention=attention), ac.keras.Seq2Seq(14, 8, 12, attention)
    km(task.src, task.tgt_in, task.src_mask)
    torch_to_keras(tm, km)
    t_tokens, t_w = tm.generate(torch.as_tensor(task.src), 10, torch.as_tensor(task.src_mask))
    k_tokens, k_w = km.generate(task.src, 10, task.src_mask)
    np.testing.assert_array_equal(np.asarray(k_tokens), t_tokens.numpy())
    np.testing.assert_allclose(np.asarray(k_w), t_w.numpy(), rtol=RTOL, atol=ATOL)


def test_one_to_many_generation_agrees():
    x = synthetic.one_to_many_task(8)[0]
    torch.manual_seed(2)
    tm, km = ac.torch.OneToMany(10, 14, 8, 12), ac.keras.OneToMany(10, 14, 8, 12)
    km(x, np.zeros((8, 3), "int64"))
    torch_to_keras(tm, km)
    np.testing.assert_array_equal(np.asarray(km.generate(x, 6)), tm.generate(torch.as_tensor(x), 6).numpy())


def test_conversion_rejects_mismatched_models():
    km = ac.keras.ManyToOne(14, 10, embed=8, hidden=12)
    km(np.zeros((2, 3), "int64"))
    with pytest.raises(ValueError, match="Keras expects weight shapes"):
        torch_to_keras(ac.torch.ManyToOne(14, 10, embed=8, hidden=16), km)


def _translator_twins():
    torch.manual_seed(0)
    tm = ac.torch.Translator(40, 30, "bahdanau", embed=8, hidden=12, units=10).eval()
    rng = np.random.default_rng(0)
    src, tgt_in = rng.integers(1, 40, (3, 7)), rng.integers(1, 30, (3, 6))
    mask = np.ones((3, 7), bool)
    mask[0, 5:] = False
    return tm, (src, mask, tgt_in)


def test_a_trained_model_loads_into_keras_without_pytorch(tmp_path):
    """``ac.keras.load_trained`` takes a PyTorch model's arrays (as ``ac.trained.load`` gives them) in a kernel where
    PyTorch cannot be imported, and the Keras model computes what the PyTorch one does."""
    import subprocess
    import sys
    import textwrap

    tm, example = _translator_twins()
    arrays = {k: v.detach().numpy().astype(np.float16) for k, v in tm.state_dict().items()}   # as the files hold them
    np.savez(tmp_path / "arrays.npz", **arrays)
    np.savez(tmp_path / "example.npz", *example)
    script = textwrap.dedent(f"""
        import importlib.abc
        import sys

        class NoTorch(importlib.abc.MetaPathFinder):        # import torch fails here
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] == "torch":
                    raise ImportError("PyTorch is not installed here")

        sys.meta_path.insert(0, NoTorch())
        import numpy as np
        import attention_course as ac
        arrays = dict(np.load({str(tmp_path / "arrays.npz")!r}))
        example = tuple(np.load({str(tmp_path / "example.npz")!r}).values())
        model = ac.keras.load_trained(lambda fw: fw.Translator(40, 30, "bahdanau", embed=8, hidden=12, units=10),
                                      arrays, example)
        np.save({str(tmp_path / "logits.npy")!r}, np.asarray(model(*example)))
        print("torch" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("False"), "loading the arrays imported PyTorch"
    for name, value in arrays.items():                   # the PyTorch model holds the same (float16) numbers
        tm.state_dict()[name].copy_(torch.as_tensor(value.astype(np.float32)))
    with torch.no_grad():
        expected = tm(*[torch.as_tensor(x) for x in example]).numpy()
    np.testing.assert_allclose(np.load(tmp_path / "logits.npy"), expected, rtol=RTOL, atol=ATOL)


def test_arrays_that_do_not_fit_the_keras_model_are_named():
    from attention_course.core.parity import arrays_to_keras

    tm, example = _translator_twins()
    arrays = {k: v.detach().numpy() for k, v in tm.state_dict().items()}
    km = ac.keras.Translator(40, 30, "bahdanau", embed=8, hidden=12, units=10)
    missing = {k: v for k, v in arrays.items() if not k.startswith("decoder.out.")}
    with pytest.raises(ValueError, match=r"nothing for 2 Keras weight\(s\) of Translator, in decoder\.out;"):
        arrays_to_keras(missing, km, example)
    wider = ac.keras.Translator(40, 30, "bahdanau", embed=9, hidden=12, units=10)
    with pytest.raises(ValueError, match=r"Keras expects weight shapes \[\(40, 9\)\], PyTorch gives \[\(40, 8\)\]"):
        arrays_to_keras(arrays, wider, example)
