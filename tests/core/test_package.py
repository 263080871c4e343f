"""The helper package: light import, profiles, frameworks and magics, set-up, metrics, synthetic data,
exercise checkers, training."""

import subprocess
import sys

import numpy as np
import pytest

import attention_course as ac
from attention_course import exercises
from attention_course.core import metrics
from attention_course.core.errors import ConfigError, InputError
from attention_course.data import synthetic
from attention_course.notebook import frameworks, profile


def test_import_loads_no_framework():
    code = ("import sys, attention_course as ac; ac.profile.current(); ac.frameworks.enabled(); ac.data.names(); "
            "heavy = [m for m in ('torch', 'tensorflow', 'keras', 'altair', 'pandas') if m in sys.modules]; "
            "print(heavy); assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True)



def test_errors_holds_exceptions_and_validate_the_argument_rules():
    """No module is named "check": the exercise checkers grade (ac.exercises), validate holds the rules."""
    import inspect

    from attention_course.core import errors, validate

    own = [v for v in vars(errors).values() if getattr(v, "__module__", None) == errors.__name__]
    assert own and all(inspect.isclass(v) and issubclass(v, Exception) for v in own), own
    rules = [n for n, v in vars(validate).items() if inspect.isfunction(v) and v.__module__ == validate.__name__]
    assert {"shape_of", "attention_shapes", "sequence_shapes", "choice", "sizes"} <= set(rules)
    assert not [n for n in rules if n.startswith("check")], rules
    with pytest.raises(ConfigError, match="unknown pooling 'max'; choose one of: last, attention"):
        validate.choice("pooling", "max", ("last", "attention"))

def test_profiles(monkeypatch):
    monkeypatch.setenv("COURSE_PROFILE", "full")
    assert profile.current() == "full" and profile.pick(quick=1, full=2) == 2
    monkeypatch.setenv("COURSE_PROFILE", "quick")
    assert profile.pick(quick=1, full=2) == 1
    monkeypatch.setenv("COURSE_PROFILE", "huge")
    with pytest.raises(ConfigError, match="unknown profile 'huge'.*quick, full"):
        profile.current()
    with pytest.raises(ConfigError, match="unknown profile 'fast'"):
        profile.use("fast")
    monkeypatch.setenv("COURSE_PROFILE", "quick")
    assert profile.use(None) == "quick"


def test_quick_is_the_default_even_with_a_gpu(monkeypatch):
    # Colab's "Run all" must finish in minutes: a visible GPU no longer selects the full profile
    monkeypatch.delenv("COURSE_PROFILE", raising=False)
    from attention_course.core import machine

    monkeypatch.setattr(machine, "gpu_visible", lambda: True)
    assert profile.current() == "quick"


def test_course_seed_overrides_the_notebook_seed(monkeypatch):
    from attention_course.core.errors import EnvError
    from attention_course.notebook.session import seed_from_env

    monkeypatch.delenv("COURSE_SEED", raising=False)
    assert seed_from_env(0) == 0
    monkeypatch.setenv("COURSE_SEED", "3")
    assert seed_from_env(0) == 3
    for bad in ("-1", "abc", "1.5"):
        monkeypatch.setenv("COURSE_SEED", bad)
        with pytest.raises(EnvError, match="COURSE_SEED must be a non-negative integer"):
            seed_from_env(0)


def test_framework_choice(monkeypatch):
    assert frameworks.parse("both") == ("keras", "pytorch")
    assert frameworks.parse("torch") == ("pytorch",)
    assert frameworks.parse("pytorch,keras") == ("keras", "pytorch")
    monkeypatch.delenv("COURSE_FRAMEWORKS", raising=False)
    assert frameworks.enabled() == ("pytorch",), "a live kernel runs one framework, PyTorch unless told otherwise"
    monkeypatch.setenv("COURSE_FRAMEWORKS", "keras")
    assert frameworks.enabled() == ("keras",) and not frameworks.is_enabled("pytorch")
    with pytest.raises(ConfigError, match="unknown framework 'jax'"):
        frameworks.parse("jax")
    monkeypatch.setenv("COURSE_FRAMEWORKS", "mxnet")
    with pytest.raises(ConfigError, match="unknown framework 'mxnet'"):
        frameworks.enabled()


def test_unknown_dataset_is_a_clear_error():
    with pytest.raises(ConfigError, match="imdb-full"):
        ac.data.get("imdb-full")


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    frameworks.register_magics(sh)
    yield sh
    frameworks.use(None)


def test_cell_magics_skip_and_run(shell, capsys):
    frameworks.use("pytorch")
    shell.run_cell("%%keras\nran_keras = True")
    shell.run_cell("%%pytorch\nran_torch = 41 + 1")
    assert "ran_keras" not in shell.user_ns and shell.user_ns["ran_torch"] == 42
    assert "keras cell skipped" in capsys.readouterr().out
    result = shell.run_cell("%%pytorch\nx = 1\nx + 1")
    assert result.result == 2, "the last expression of a magic cell is its value"


def test_cells_that_need_a_missing_resource_skip_with_a_message(shell, capsys, monkeypatch):
    monkeypatch.setenv("COURSE_SKIP_ECHO", "1")          # a live kernel; the book's build sets it to 0
    frameworks.use("both")
    shell.user_ns.update(model_folder=None, data_folder="/somewhere")
    shell.run_cell("%%pytorch needs model_folder\nneedy_torch = True")
    shell.run_cell("%%needs model_folder\nneedy_plain = True")
    assert "needy_torch" not in shell.user_ns and "needy_plain" not in shell.user_ns
    out = capsys.readouterr().out
    assert "[pytorch cell skipped: model_folder is not available" in out and "[cell skipped: model_folder" in out
    result = shell.run_cell("%%needs data_folder\nfound = data_folder + '/x'\nfound.upper()")
    assert shell.user_ns["found"] == "/somewhere/x" and result.result == "/SOMEWHERE/X"
    shell.run_cell("%%keras needs data_folder\nneedy_keras = 1")
    assert shell.user_ns["needy_keras"] == 1
    result = shell.run_cell("%%keras wants data_folder\nneedy_keras = 2")
    assert isinstance(result.error_in_exec, ValueError) and shell.user_ns["needy_keras"] == 1
    monkeypatch.setenv("COURSE_SKIP_ECHO", "0")          # the book: the prose says what the section needs
    capsys.readouterr()
    shell.run_cell("%%needs model_folder\nneedy_plain = True")
    assert "needy_plain" not in shell.user_ns and capsys.readouterr().out == ""


def test_cell_magic_errors_are_not_swallowed(shell):
    frameworks.use("both")
    result = shell.run_cell("%%keras\nraise ValueError('boom')")
    assert isinstance(result.error_in_exec, ValueError)


def test_each_framework_sees_its_own_classes(shell):
    frameworks.use("both")
    shell.run_cell("%%keras\nclass Layer:\n    kind = 'keras'\ndef make():\n    return Layer()")
    shell.run_cell("%%pytorch\nclass Layer:\n    kind = 'pytorch'\ndef make():\n    return Layer()")
    shell.run_cell("%%keras\nkeras_kind = make().kind")
    shell.run_cell("%%pytorch\ntorch_kind = make().kind")
    assert shell.user_ns["keras_kind"] == "keras" and shell.user_ns["torch_kind"] == "pytorch"
    assert "Layer" not in shell.user_ns, "a framework's classes stay out of the shared namespace"
    shell.run_cell("%%pytorch\nimport json as softmax")
    shell.run_cell("def softmax(x):\n    return 'numpy'")
    assert shell.user_ns["softmax"](1) == "numpy", "a framework's imports do not replace the notebook's names"
    # a redefinition reaches the functions defined before it, as in a notebook (rerun the cells below)
    shell.run_cell("%%keras\nclass Layer:\n    kind = 'edited'")
    shell.run_cell("%%keras\nkeras_kind = make().kind")
    assert shell.user_ns["keras_kind"] == "edited"
    # other names are shared both ways, deletions too
    shell.run_cell("shared_value = 5")
    shell.run_cell("%%pytorch\nfrom_torch = shared_value + 1\ndel shared_value")
    assert shell.user_ns["from_torch"] == 6 and "shared_value" not in shell.user_ns


def test_a_framework_namespace_lets_go_of_what_the_notebook_frees(shell):
    import gc
    import weakref

    class Big:
        pass

    frameworks.use("both")
    shell.user_ns["big"] = Big()
    alive = weakref.ref(shell.user_ns["big"])
    shell.run_cell("%%keras\ndef size():\n    return limit * 2\nlimit, sizer = 3, size")
    shell.run_cell("%%pytorch\nseen = big")
    shell.run_cell("big = seen = None\nlimit = 10")           # a plain cell frees the model and changes a value
    gc.collect()
    assert alive() is None, "no framework's namespace keeps what the notebook let go of"
    shell.run_cell("doubled = sizer()")
    assert shell.user_ns["doubled"] == 20, "a framework's function sees the notebook's current values"


def test_cell_magics_understand_ipython_syntax(shell, capsys):
    frameworks.use("pytorch")
    result = shell.run_cell("%%pytorch\n!echo from-the-shell\nx = 3\n%time y = x + 1")
    assert result.error_in_exec is None and result.error_before_exec is None
    assert shell.user_ns["y"] == 4 and "from-the-shell" in capsys.readouterr().out


def test_setup_banner_and_seeding(capsys):
    session = ac.setup(seed=3, profile="quick", frameworks="pytorch")
    out = capsys.readouterr().out
    assert "profile quick" in out and "pytorch" in out and "seed 3" in out and "keras" not in out
    a = np.random.rand()
    ac.setup(seed=3, profile="quick", frameworks="pytorch", banner=False)
    assert np.random.rand() == a and session.frameworks == ("pytorch",)
    profile.use(None)
    frameworks.use(None)


def test_metrics():
    target = np.array([[4, 5, 3, 0], [6, 3, 0, 0]])
    pred = np.array([[4, 7, 3, 9], [6, 3, 1, 1]])
    assert metrics.token_accuracy(pred, target) == pytest.approx(4 / 5)
    np.testing.assert_allclose(metrics.per_example_accuracy(pred, target), [2 / 3, 1.0])
    with pytest.raises(InputError, match=r"example\(s\) \[1\] have every target equal to the pad id 0"):
        metrics.per_example_accuracy(pred, np.array([[4, 5, 3, 0], [0, 0, 0, 0]]))
    assert metrics.mean_entropy(np.array([[0.5, 0.5], [1.0, 0.0]])) == pytest.approx(np.log(2) / 2)
    assert metrics.mean_entropy(np.array([[0.25, 0.25, 0.0]])) == pytest.approx(np.log(2))   # renormalised


def test_sequence_task_is_seeded_and_well_formed():
    a = synthetic.sequence_task(50, kind="reverse", min_len=2, max_len=7, seed=5)
    b = synthetic.sequence_task(50, kind="reverse", min_len=2, max_len=7, seed=5)
    np.testing.assert_array_equal(a.src, b.src)
    for i in range(50):
        n = a.lengths[i]
        src = a.src[i, -n:]
        assert (a.src[i, :-n] == 0).all() and a.src_mask[i].sum() == n
        np.testing.assert_array_equal(a.tgt_out[i, :n], src[::-1])
        assert a.tgt_out[i, n] == synthetic.EOS and a.tgt_in[i, 0] == synthetic.BOS
        np.testing.assert_array_equal(a.tgt_in[i, 1:n + 1], a.tgt_out[i, :n])
    copy = synthetic.sequence_task(5, kind="copy", seed=1)
    assert copy.target_tokens(0) == [int(t) for t in copy.src[0] if t]
    with pytest.raises(ConfigError, match="sort"):
        synthetic.sequence_task(5, kind="sort")


def test_small_tasks_labels():
    x, y = synthetic.many_to_one_task(20, seed=1)
    np.testing.assert_array_equal(y, (x - synthetic.FIRST_SYMBOL).max(1))
    x, y = synthetic.many_to_many_task(20, seed=1)
    np.testing.assert_array_equal(y[:, -1], (x - synthetic.FIRST_SYMBOL).max(1))
    x, tin, tout = synthetic.one_to_many_task(20, steps=4)
    np.testing.assert_array_equal(tin[:, 1:], tout[:, :-1])


# ---- exercise checkers: the reference passes, and each common mistake is named ---------------------------

def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def good_average(q, k, v):
    w = _softmax(q @ k.transpose(0, 2, 1))
    return w @ v, w


@pytest.mark.parametrize("wrong, needle", [
    (lambda q, k, v: (lambda w: (w @ v, w))(_softmax(q @ k.transpose(0, 2, 1), axis=1)), "wrong axis"),
    (lambda q, k, v: (lambda w: (w @ v, w))(_softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]))),
     "scaled by √d"),
    (lambda q, k, v: (lambda w: (w @ v, w))(q @ k.transpose(0, 2, 1)), "no softmax"),
    (lambda q, k, v: good_average(q, k, v)[1], "return a pair"),
])
def test_attention_average_checker_names_mistakes(wrong, needle):
    exercises.attention_average(good_average, seed=0)
    with pytest.raises(exercises.ExerciseError, match=needle):
        exercises.attention_average(wrong, seed=0)


def test_attention_checker_missing_scale():
    with pytest.raises(exercises.ExerciseError, match="missing scale"):
        exercises.attention_average(good_average, scale=True, seed=0)


def test_a_nan_without_a_mask_is_not_blamed_on_the_mask():
    """attention_average has no mask: a NaN there comes from an overflow or 0/0, and the checker says so."""
    def overflowing(q, k, v):
        s = q @ k.transpose(0, 2, 1) * 1e3                     # exp overflows: inf / inf = NaN
        w = np.exp(s) / np.exp(s).sum(-1, keepdims=True)
        return w @ v, w

    with np.errstate(all="ignore"), pytest.raises(exercises.ExerciseError, match="subtract each row's maximum") as err:
        exercises.attention_average(overflowing, seed=0)
    assert "mask" not in str(err.value)


def good_masked(scores, mask):
    return exercises.reference_masked_softmax(scores, mask)


@pytest.mark.parametrize("wrong, needle", [
    (lambda s, m: _softmax(s), "not applied"),
    (lambda s, m: _softmax(s) * m[:, None, :], "without renormalising"),
    (lambda s, m: _softmax(np.where(m[:, None, :], s, -1e9)), "uniform distribution"),
    (lambda s, m: (lambda f: np.exp(f - f.max(-1, keepdims=True)) /
                   np.exp(f - f.max(-1, keepdims=True)).sum(-1, keepdims=True))(np.where(m[:, None, :], s, -np.inf)),
     "NaN where every key is masked"),
    (lambda s, m: exercises.reference_masked_softmax(s, ~m), "inverted"),
])
def test_masked_softmax_checker_names_mistakes(wrong, needle):
    exercises.masked_softmax(good_masked, seed=0)
    with np.errstate(all="ignore"), pytest.raises(exercises.ExerciseError, match=needle):
        exercises.masked_softmax(wrong, seed=0)


@pytest.mark.parametrize("fw_name", ["keras", "pytorch"])
def test_training_learns_a_small_task(fw_name):
    fw = ac.keras if fw_name == "keras" else ac.torch
    x, y = synthetic.many_to_one_task(1500, length=6, seed=0)
    model = fw.ManyToOne(14, 10, embed=8, hidden=32)
    history = fw.fit(model, (x,), y, epochs=4, lr=1e-2)
    assert history["loss"][-1] < history["loss"][0]
    assert fw.accuracy(model, (x,), y) > 0.8
    assert len(history) == 4 and history.last("accuracy") == history["accuracy"][-1]


def test_keras_fit_updates_repeated_embedding_rows():
    """Adam moves a parameter by at most about lr per step; a row seen several times in a batch must move like
    the others (with sparse gradients Keras' Adam moved it too far) and like the PyTorch twin."""
    import torch

    x, y = synthetic.one_to_one_task(64, seed=0)
    x[:48] = 1                                          # one row repeated 48 times in the batch
    km, tm = ac.keras.OneToOne(10, 10, hidden=8), ac.torch.OneToOne(10, 10, hidden=8)
    km(x[:2])
    ac.parity.torch_to_keras(tm, km)
    before = km.embed.get_weights()[0].copy()
    ac.keras.fit(km, (x,), y, epochs=3, batch_size=64, lr=0.1)
    ac.torch.fit(tm, (x,), y, epochs=3, batch_size=64, lr=0.1)
    moved = np.abs(km.embed.get_weights()[0] - before)
    assert moved.max() <= 3 * 0.1 * 1.01, moved.max()
    # the repeated row has large gradients, so Adam's differing epsilon conventions do not matter for it
    np.testing.assert_allclose(km.embed.get_weights()[0][1], tm.embed.weight.detach().numpy()[1], atol=5e-3)
    del torch


@pytest.mark.parametrize("model", ["ch5-bahdanau", "ch6-soft", "ch8-transformer", "ch9-masked-lm"])
def test_the_timed_training_steps_train_the_chapters_models(model):
    from attention_course import bench

    for fw in (ac.torch, ac.keras):
        step = bench.training_pass(fw, model)
        losses = [step() for _ in range(6)]
        assert np.isfinite(losses).all() and losses[-1] < losses[0], (fw.__name__, losses)   # it learns the batch
    with pytest.raises(ConfigError, match="trained model"):
        bench.training_pass(ac.torch, "ch7-mha")


def test_benchmark_results_are_committed_and_complete():
    # the chapters quote these; every case of tools/bench.py is there, in both frameworks, with its spread
    from attention_course import bench

    for case in ("ch2-length", "ch2-window", "ch4-concat", "ch4-scores", "ch7-mha", "ch8-kvcache", "ch10-flash",
                 "train-step"):
        rows = bench.load(case)
        assert {r["framework"] for r in rows} == {"keras", "pytorch"}, case
        assert all(r["q1_ms"] <= r["median_ms"] <= r["q3_ms"] and r["runs"] >= 5 for r in rows), case  # not timed
    assert {(r["framework"], r["kind"]) for r in bench.load("train-step")} == {
        (fw, kind) for fw in ("keras", "pytorch") for kind in bench.TRAINED}
    memory = bench.load("ch7-memory")                    # every kind at every length of ch7-mha, in both
    assert {(r["framework"], r["kind"], r["length"]) for r in memory} == {
        (r["framework"], r["kind"], r["length"]) for r in bench.load("ch7-mha")}
    assert all(r["peak_mb"] >= 0 for r in memory)
    flash = bench.load("ch10-memory")                     # Chapter 10's: explicit, fused and tiled, in both
    assert {(r["framework"], r["kind"], r["length"]) for r in flash} == {
        (r["framework"], r["kind"], r["length"]) for r in bench.load("ch10-flash")}
    assert {r["kind"] for r in flash} == {"explicit", "fused", "tiled"} and all(r["peak_mb"] >= 0 for r in flash)
    with pytest.raises(ConfigError, match="no committed benchmark results for 'nope'.*make bench"):
        bench.load("nope")
    with pytest.raises(ConfigError, match="unknown attention kind"):
        bench.build_layer("sparse", None, window=2, dim=4)


def test_glue_prints_the_value_for_the_prose(capsys, monkeypatch):
    from attention_course.notebook import glue as book

    assert ac.glue is book.glue
    monkeypatch.setenv("COURSE_GLUE_ECHO", "1")
    ac.glue("ratio", np.float32(0.25), "{:.2f}")
    ac.glue("name", "dot")
    ac.glue("raw", 0.005800000000000027)
    assert capsys.readouterr().out.splitlines() == ["ratio = 0.25", "name = dot", "raw = 0.0058"]
    monkeypatch.setenv("COURSE_GLUE_ECHO", "0")
    ac.glue("quiet", 1.5, "{:.1f}")
    assert capsys.readouterr().out == ""


def test_glued_floats_show_their_format_in_the_prose():
    from myst_nb.core.variables import format_plain_text

    from attention_course.notebook.glue import _Integer, _Number

    number = _Number(0.005800000000000027, "0.0058")
    assert repr(number) == "0.0058" and float(number) == 0.005800000000000027
    assert format_plain_text(repr(number), "") == "0.0058"          # {glue:text}`name`
    assert format_plain_text(repr(number), ".1%") == "0.6%"          # {glue:text}`name:.1%`
    count = _Integer(893416, "893,416")                              # an int glued with "{:,}"
    assert format_plain_text(repr(count), "") == "893,416" and int(count) == 893416
    ratio = _Number(1666.4, "1,666")                                 # a float glued with "{:,.0f}": not (1, 666)
    assert format_plain_text(repr(ratio), "") == "1,666" and float(ratio) == 1666.4
    gain = _Number(1.5, "+1.5")                                      # "{:+.1f}" keeps its sign, "{:.2f}" its zero
    assert format_plain_text(repr(gain), "") == "+1.5" and format_plain_text(repr(gain), "+.2f") == "+1.50"
    assert format_plain_text(repr(_Number(0.5, "0.50")), "") == "0.50"
    assert format_plain_text(repr(_Number(0.5, "50%")), "") == "50%"


def test_the_version_is_written_once():
    from pathlib import Path

    text = (Path(ac.__path__[0]).parent / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in text and 'version = { attr = "attention_course.__version__" }' in text
    assert not [line for line in text.splitlines() if line.startswith('version = "')]   # no static version
    assert ac.__version__.count(".") == 2


def test_the_playground_chart_computes_the_softmax_in_the_browser():
    import math
    import re

    keys = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.5]])
    chart = ac.viz.attention_playground(keys=keys, tokens=["a", "b", "c"]).to_dict()
    params = {p["name"]: p for p in chart["params"]}
    assert all(params[n]["bind"]["input"] == "range" for n in ("query_x", "query_y", "temperature"))
    # run the chart's own transforms (Vega expressions) in Python, for a query and a temperature
    env = {"query_x": 0.5, "query_y": -1.5, "temperature": 0.7, "exp": math.exp}
    rows = [{"kx": x, "ky": y} for x, y in keys]
    for step in chart["transform"]:
        if "calculate" in step:
            expr = re.sub(r"datum\.(\w+)", r"row['\1']", step["calculate"])
            for row in rows:
                row[step["as"]] = eval(expr, {**env, "row": row})
        else:
            (agg,) = step["joinaggregate"]
            values = [row[agg["field"]] for row in rows]
            for row in rows:
                row[agg["as"]] = {"max": max, "sum": sum}[agg["op"]](values)
    scores = keys @ np.array([0.5, -1.5]) / 0.7
    expected = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    np.testing.assert_allclose([row["weight"] for row in rows], expected, rtol=1e-12)
    with pytest.raises(ValueError, match="must be \\(T, 2\\)"):
        ac.viz.attention_playground(keys=[[1, 0, 0]])


def test_arrays_bring_either_frameworks_outputs_to_numpy_without_autograd():
    import keras
    import tensorflow as tf
    import torch

    from attention_course.core.backend import no_grad, to_numpy

    layer = torch.nn.Linear(3, 2)
    x = torch.ones(4, 3)
    assert layer(x).requires_grad
    with no_grad(layer):
        assert not layer(x).requires_grad
    expected = x.numpy() @ layer.weight.detach().numpy().T + layer.bias.detach().numpy()
    np.testing.assert_allclose(to_numpy(layer(x)), expected, rtol=1e-6)   # a tensor that requires grad
    with no_grad(keras.layers.Dense(2)):               # a Keras layer: nothing to switch off
        out = to_numpy(tf.ones((4, 3)) * 2.0)
    assert isinstance(out, np.ndarray) and out.shape == (4, 3) and (out == 2).all()


def test_the_profiles_old_name_still_works_and_says_it_is_deprecated(monkeypatch):
    profile.use(None)
    monkeypatch.delenv("COURSE_PROFILE", raising=False)
    monkeypatch.setenv("COURSE_SCALE", "full")
    with pytest.warns(FutureWarning, match="COURSE_SCALE is deprecated: set COURSE_PROFILE"):
        assert profile.current() == "full"
    monkeypatch.setenv("COURSE_PROFILE", "quick")          # the new name wins, and says nothing
    assert profile.current() == "quick"
    assert ac.scale is ac.profile is profile
    try:
        with pytest.warns(FutureWarning, match=r"ac.setup\(scale=...\) is deprecated"):
            assert ac.setup(seed=1, scale="full", frameworks="pytorch", banner=False).profile == "full"
    finally:
        profile.use(None)
