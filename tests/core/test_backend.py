"""The backend seam: the one place where the course tells PyTorch from Keras."""

import numpy as np
import pytest
import torch

import attention_course as ac
from attention_course.core.backend import Backend, backend, no_grad
from attention_course.core.errors import ConfigError


def test_a_name_a_course_module_a_model_or_a_tensor_names_its_framework():
    from attention_course.ch07_self_attention import keras as ch07_keras
    from attention_course.ch07_self_attention import torch as ch07_torch

    assert backend("pytorch") == backend(ac.torch) == backend(ch07_torch) == Backend("pytorch")
    assert backend("keras") == backend(ac.keras) == backend(ch07_keras) == Backend("keras")
    assert backend(ac.torch.Seq2Seq(5)).is_torch and backend(torch.zeros(2)).is_torch
    assert not backend(ac.keras.Seq2Seq(5)).is_torch
    assert backend(backend("keras")) == Backend("keras")


@pytest.mark.parametrize("bad, message", [("jax", "unknown framework 'jax'; choose one of: pytorch, keras"),
                                          (np, "numpy is not one of the course's framework modules"),
                                          (np.zeros(2), "cannot tell the framework of a numpy.ndarray")])
def test_anything_else_is_refused_by_name(bad, message):
    with pytest.raises(ConfigError, match=message):
        backend(bad)


@pytest.mark.parametrize("name", ["pytorch", "keras"])
def test_the_seam_seeds_counts_and_runs_in_inference_mode(name):
    fw = backend(name)
    module = ac.torch if fw.is_torch else ac.keras
    x = np.arange(6).reshape(2, 3) % 5
    runs = []
    for _ in range(2):
        fw.seed(3)
        model = module.Seq2Seq(5, embed=4, hidden=6, attention=True)
        runs.append(fw.run(model, x, x))
    np.testing.assert_array_equal(runs[0], runs[1])                # seeded alike, run alike
    assert runs[0].shape == (2, 3, 5) and isinstance(runs[0], np.ndarray)
    # embed 5·4, two GRUs of 3·(4·6 + 6·6 + 2·6) (PyTorch's two biases; Keras' reset_after has the same), combine
    # (12·6 + 6) and out (6·5 + 5)
    assert fw.parameters(model) == 5 * 4 + 2 * 3 * (4 * 6 + 6 * 6 + 2 * 6) + (12 * 6 + 6) + (6 * 5 + 5)
    assert fw.version() and all(isinstance(v, str) for v in fw.version().values())


def test_no_grad_only_touches_a_pytorch_model():
    model = ac.torch.Seq2Seq(5)
    with no_grad(model):
        assert not torch.is_grad_enabled()
    with no_grad(object()):                                         # anything else: nothing happens
        assert torch.is_grad_enabled()


def test_run_puts_the_inputs_on_the_models_device():
    """A model trained on a GPU is run on the GPU: ``run`` sends the NumPy inputs where the weights are (here the
    ``meta`` device, which a CPU has too)."""
    import torch

    class Where(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.empty(2, device="meta"))

        def forward(self, x):
            return torch.tensor([x.device == self.w.device, x.device.type == "meta"])

    assert backend("pytorch").run(Where(), np.zeros((3, 2), np.float32)).tolist() == [True, True]
    assert backend("pytorch").as_input(np.zeros(2)).device.type == "cpu"      # no model: where torch puts it


@pytest.mark.parametrize("name", ["pytorch", "keras"])
def test_a_runner_runs_as_run_does_at_every_batch_size_and_length(name):
    """Greedy decoding calls the model once per step with a longer prefix: the runner gives what ``run`` gives, and
    in Keras its compiled graph is traced once, for any batch size and length, not once per length."""
    fw = backend(name)
    fw.seed(0)
    model = (ac.torch if fw.is_torch else ac.keras).Seq2Seq(7, embed=4, hidden=6, attention=True)
    rng = np.random.default_rng(0)
    fw.run(model, *[rng.integers(1, 7, (2, 3))] * 2)               # built, as a trained model is
    runner = fw.runner(model)
    for length in range(1, 9):
        x = rng.integers(1, 7, (2, length))
        np.testing.assert_allclose(runner(x, x), fw.run(model, x, x), rtol=1e-5, atol=1e-6)
    x = rng.integers(1, 7, (5, 3))                                  # another batch size
    np.testing.assert_allclose(runner(x, x), fw.run(model, x, x), rtol=1e-5, atol=1e-6)
    if not fw.is_torch:
        assert runner.compiled.experimental_get_tracing_count() == 1


def test_a_keras_runner_runs_a_model_that_needs_a_known_length():
    """A model whose Python code loops over the sequence's length cannot be traced for any length: the runner then
    traces it for the shapes it is called with, and still gives what ``run`` gives."""
    import keras

    class StepByStep(keras.Model):
        def call(self, ids, training=False):
            return keras.ops.stack([ids[:, t] * (t + 1) for t in range(ids.shape[1])], axis=1)   # a known length

    fw, model = backend("keras"), StepByStep()
    runner = fw.runner(model)
    ids = np.arange(6).reshape(2, 3)
    for _ in range(3):                                                        # called again: no new trace
        np.testing.assert_array_equal(runner(ids), ids * np.arange(1, 4))
    assert runner.compiled.experimental_get_tracing_count() == 1


def test_a_keras_model_keeps_its_runners():
    """Decoding the next test set (or drawing a chart) asks for the model's runner again: it gets the one it traced,
    whose graphs still read the model's current weights; other keyword arguments get a runner of their own."""
    fw = backend("keras")
    fw.seed(0)
    model = ac.keras.MultiSourceTranslator(7, 7, sources=2, embed=4, hidden=6)
    rng = np.random.default_rng(0)
    sources, tgt_in = rng.integers(1, 7, (2, 2, 4)), rng.integers(1, 7, (2, 3))
    runner = fw.runner(model)
    before, traced = runner(sources, tgt_in), runner.compiled.experimental_get_tracing_count()
    variables = [w.path for w in model.weights]
    assert fw.runner(model) is runner
    fw.runner(model)(sources, tgt_in)
    assert runner.compiled.experimental_get_tracing_count() == traced                    # no new trace
    model.set_weights([w + 0.1 for w in model.get_weights()])                            # trained further
    np.testing.assert_allclose(fw.runner(model)(sources, tgt_in), fw.run(model, sources, tgt_in), rtol=1e-5,
                               atol=1e-6)
    assert not np.allclose(fw.runner(model)(sources, tgt_in), before)
    weighted = fw.runner(model, return_weights=True)
    assert weighted is not runner and len(weighted(sources, tgt_in)) == 2
    assert fw.runner(model, return_weights=True) is weighted
    assert [w.path for w in model.weights] == variables                                # nothing added to the model
