"""The twins start alike: every parameter of a Keras model starts from the distribution of the same parameter of its
PyTorch twin (matched as ``core.parity`` matches them), for Chapter 7's and Chapter 8's models: PyTorch's nn.Linear,
nn.Conv1d and nn.GRU draw weights and biases from U(±1/√fan_in), where Keras' defaults are Glorot-uniform kernels,
zero biases and orthogonal recurrent kernels. Also the shared initializers of ``core/keras/init.py``."""

import keras
import numpy as np
import pytest
import torch

import attention_course as ac
from attention_course.core.keras import init
from attention_course.core.parity import arrays_to_keras

pytestmark = pytest.mark.chapter(7, 8)

D, V, B, T = 64, 64, 2, 8     # every parameter holds at least 64 numbers: enough to compare two samples


def _ids(seed=0, vocab=V, b=B, t=T):
    return np.random.default_rng(seed).integers(1, vocab, size=(b, t))


def initial_pairs(torch_model, keras_model, example_inputs):
    """(name, PyTorch's initial values, Keras' initial values) of every parameter of the PyTorch twin. Each PyTorch
    array is replaced by its number, loaded into Keras as ``core.parity`` loads weights (transposed, gates
    reordered), and Keras' own initial values are read where that number landed."""
    keras_model(*example_inputs)
    weights = keras_model.trainable_weights
    initial = [np.asarray(w.numpy()).copy() for w in weights]
    state = {k: v.detach().numpy().copy() for k, v in torch_model.state_dict().items()}
    arrays_to_keras({k: np.full(v.shape, i + 1, np.float32) for i, (k, v) in enumerate(state.items())}, keras_model)
    marks = [np.asarray(w.numpy()).copy() for w in weights]
    for w, x in zip(weights, initial, strict=True):
        w.assign(x)
    pairs = []
    for i, (name, values) in enumerate(state.items()):
        ours = np.concatenate([x[m == i + 1] for x, m in zip(initial, marks, strict=True)])
        assert ours.size == values.size, f"{name}: {ours.size} Keras numbers for {values.size} PyTorch ones"
        pairs.append((name, values.ravel(), ours))
    return pairs


def _ks(a, b) -> float:
    """The two-sample Kolmogorov–Smirnov statistic: the largest gap between the two empirical CDFs."""
    grid = np.concatenate([a, b])
    gap = np.searchsorted(np.sort(a), grid, side="right") / a.size - np.searchsorted(np.sort(b), grid,
                                                                                      side="right") / b.size
    return float(np.abs(gap).max())


def assert_same_start(pairs):
    """Each parameter: constant in both (LayerNorm's ones and zeros) with the same constant, or the same spread
    (std and largest |w| within 20 %) and the same distribution (two-sample KS test at about 1e-4)."""
    wrong = []
    for name, theirs, ours in pairs:
        if theirs.std() == 0:
            if not np.all(ours == theirs[0]):
                wrong.append(f"{name}: PyTorch starts at {theirs[0]}, Keras from {ours.min():.3g} to {ours.max():.3g}")
            continue
        n, m = theirs.size, ours.size
        std, bound = ours.std() / theirs.std(), np.abs(ours).max() / np.abs(theirs).max()
        ks, limit = _ks(theirs, ours), 2.3 * np.sqrt((n + m) / (n * m))
        if not (0.8 < std < 1.25 and 0.8 < bound < 1.25 and ks < limit):
            wrong.append(f"{name}: std {ours.std():.4f} (PyTorch {theirs.std():.4f}), largest |w| "
                         f"{np.abs(ours).max():.4f} (PyTorch {np.abs(theirs).max():.4f}), KS {ks:.3f} > {limit:.3f}"
                         if ks >= limit else
                         f"{name}: std {ours.std():.4f} (PyTorch {theirs.std():.4f}), largest |w| "
                         f"{np.abs(ours).max():.4f} (PyTorch {np.abs(theirs).max():.4f})")
    assert not wrong, "the Keras twin starts elsewhere:\n" + "\n".join(wrong)


def _twins(make, seed=0):
    torch.manual_seed(seed)
    keras.utils.set_random_seed(seed)
    return make(ac.torch), make(ac.keras)


CHAPTER_7 = {
    "SelfAttention": (lambda fw: fw.SelfAttention(D, D), lambda: (np.ones((B, T, D), np.float32),)),
    "MultiHeadAttention": (lambda fw: fw.MultiHeadAttention(D, 4), lambda: (np.ones((B, T, D), np.float32),)),
    **{f"RecallNet({mixer})": (lambda fw, mixer=mixer: fw.RecallNet(mixer, V, V, d_model=D), lambda: (_ids(),))
       for mixer in ("attention", "gru", "conv")},
    **{f"LookbackNet({positions})": (lambda fw, positions=positions: fw.LookbackNet(positions, V, V, d_model=D,
                                                                                    max_len=V), lambda: (_ids(),))
       for positions in ("none", "learned")},
}

CHAPTER_8 = {
    "FeedForward": (lambda fw: fw.FeedForward(D, 2 * D), lambda: (np.ones((B, T, D), np.float32),)),
    "Transformer": (lambda fw: fw.Transformer(V, V, d_model=D, heads=4, layers=1, d_ff=2 * D, dropout=0.0),
                    lambda: (_ids(), np.ones((B, T), bool), _ids(1))),
    "Transformer(pre-LN)": (lambda fw: fw.Transformer(V, V, d_model=D, heads=4, layers=1, d_ff=2 * D, dropout=0.0,
                                                      norm_first=True),
                            lambda: (_ids(), np.ones((B, T), bool), _ids(1))),
    "LanguageModel": (lambda fw: fw.LanguageModel(V, d_model=D, heads=4, layers=1, d_ff=2 * D, dropout=0.0,
                                                  context=V), lambda: (_ids(),)),
}


@pytest.mark.parametrize("name", [*CHAPTER_7, *CHAPTER_8])
def test_the_keras_twin_starts_from_pytorchs_distributions(name):
    make, example = {**CHAPTER_7, **CHAPTER_8}[name]
    t, k = _twins(make)
    assert_same_start(initial_pairs(t, k, example()))


def test_the_comparison_sees_keras_defaults():
    # the test above would catch Keras' own initialisation: a Glorot kernel and a zero bias
    torch.manual_seed(0)
    keras.utils.set_random_seed(0)
    linear, dense = torch.nn.Linear(D, V), keras.layers.Dense(V)
    dense(np.ones((1, D), np.float32))
    theirs = {k: v.detach().numpy() for k, v in linear.state_dict().items()}
    ours = {"weight": dense.kernel.numpy().T, "bias": dense.bias.numpy()}
    with pytest.raises(AssertionError, match="(?s)weight: std.*bias: PyTorch|weight: std.*bias: std"):
        assert_same_start([(n, theirs[n].ravel(), ours[n].ravel()) for n in ("weight", "bias")])


@pytest.mark.parametrize("fan_in", [3, 64, 1000])
def test_torch_dense_draws_what_nn_linear_draws(fan_in):
    torch.manual_seed(1)
    keras.utils.set_random_seed(1)
    linear = torch.nn.Linear(fan_in, 256)
    for dense in (init.torch_dense(256), init.torch_dense(256, fan_in=fan_in)):   # fan_in read at build, or given
        dense(np.ones((1, fan_in), np.float32))
        theirs = {k: v.detach().numpy() for k, v in linear.state_dict().items()}
        for w in (dense.kernel, dense.bias):
            assert np.abs(w.numpy()).max() <= fan_in ** -0.5
        assert_same_start([("weight", theirs["weight"].ravel(), dense.kernel.numpy().ravel()),
                           ("bias", theirs["bias"].ravel(), dense.bias.numpy().ravel())])
    assert not init.torch_dense(4, use_bias=False).use_bias


def test_the_initializers_are_fresh_and_checked():
    # an initializer shared by two layers would give them the same numbers: each call makes a new one
    assert init.torch_kernel() is not init.torch_kernel()
    a, b = init.torch_dense(32), init.torch_dense(32)
    for layer in (a, b):
        layer(np.ones((1, 32), np.float32))
    assert not np.allclose(a.kernel.numpy(), b.kernel.numpy()) and not np.allclose(a.bias.numpy(), b.bias.numpy())
    table = keras.layers.Embedding(500, 64, embeddings_initializer=init.torch_embedding())
    table(np.zeros((1, 1), "int32"))
    assert 0.97 < table.embeddings.numpy().std() < 1.03
    for bad in (0, -3, 2.5, True, None):
        with pytest.raises(ValueError, match="fan_in must be a positive int"):
            init.torch_bias(bad)
    with pytest.raises(TypeError, match="sets its own kernel_initializer"):
        init.torch_dense(4, kernel_initializer="zeros")
