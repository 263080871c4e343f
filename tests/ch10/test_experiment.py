"""Chapter 10's trained comparison (experiment.py): the variants' key-value heads and cache sizes, the models they
build in both frameworks, and a tiny training run; and its results tool."""

import json

import numpy as np
import pytest

import attention_course as ac
from attention_course.ch08_transformer import experiment as c8
from attention_course.ch10_modern_attention import experiment as c10
from attention_course.core import checkpoint
from attention_course.core.errors import ConfigError
from attention_course.notebook import frameworks

pytestmark = pytest.mark.chapter(10)
TINY = {**c10.SIZES["quick"], "d_model": 16, "heads": 8, "layers": 1, "hidden": 24, "context": 16, "windows": 64,
        "epochs": 2, "val_windows": 16, "batch_size": 16}


def test_the_variants_share_keys_and_values_among_more_and_more_heads():
    assert [c10.kv_heads(v, 8) for v in c10.VARIANTS] == [8, 2, 1]
    assert [c10.kv_heads(v, 4) for v in c10.VARIANTS] == [4, 2, 1]
    # per token and layer: a key and a value for each key-value head, d_head numbers each
    assert [c10.cache_numbers(TINY, v) for v in c10.VARIANTS] == [2 * 8 * 2, 2 * 2 * 2, 2 * 1 * 2]
    assert c10.kv_heads(c10.LINEAR, 8) == 8 and c10.cache_numbers(TINY, c10.LINEAR) == 0   # a state, no cache
    assert c10.kv_heads(c10.DECAYED, 8) == 8 and c10.cache_numbers(TINY, c10.DECAYED) == 0
    assert c10.state_numbers(TINY) == 1 * 8 * (2 * 2 + 2)
    # latent attention: the latent and one rotary key of half a head (TINY's heads of 2 have no room for one)
    assert c10.kv_heads(c10.LATENT, 8) == 8 and c10.cache_numbers(TINY, c10.LATENT) == 1 * (TINY["latent"] + 0)
    assert c10.cache_numbers(c10.SIZES["quick"], c10.LATENT) == 2 * (32 + 8)
    with pytest.raises(ConfigError, match="variant must be one of MHA, GQA, MQA, MLA, linear, decayed; got 'SWA'"):
        c10.kv_heads("SWA", 8)


@pytest.mark.parametrize("fw", [ac.torch, ac.keras], ids=["pytorch", "keras"])
def test_each_variant_builds_a_llama_whose_key_value_projections_shrink(fw):
    sizes = {}
    for variant in c10.VARIANTS:
        model = c10.build(fw, 30, TINY, variant, seed=0)
        assert tuple(model(np.zeros((2, 5), dtype=np.int64)).shape) == (2, 5, 30)        # (B, T, vocab)
        attention = model.blocks[0].attention
        sizes[variant] = int(np.prod(np.shape(attention.W_k.weight if fw is ac.torch else attention.W_k.kernel)))
    d_head = TINY["d_model"] // TINY["heads"]
    assert sizes == {v: TINY["d_model"] * c10.kv_heads(v, TINY["heads"]) * d_head for v in c10.VARIANTS}


def test_a_tiny_run_learns_and_the_tool_writes_its_results(tmp_path, monkeypatch):
    chars = c8.characters(ac.data.load_tinyshakespeare()[:20_000])
    model = c10.build(ac.torch, len(chars.vocabulary), TINY, "GQA", seed=0)
    history = c10.train(ac.torch, model, chars, TINY, seed=0)
    assert len(history["val_loss"]) == 2 and history["val_loss"][-1] < np.log(len(chars.vocabulary))

    from tools import chapter10_full

    monkeypatch.setitem(c10.SIZES, "quick", TINY)
    monkeypatch.setattr(chapter10_full, "ROOT", tmp_path)
    try:
        assert chapter10_full.main(["--size", "quick", "--models", "MHA,MQA", "--out", str(tmp_path)]) == 0
        assert chapter10_full.main(["--size", "quick", "--models", "GQA", "--out", str(tmp_path / "one"),
                                    "--weights", str(tmp_path / "one" / "gqa.npz")]) == 0
    finally:
        frameworks.use(None)
    runs = json.loads((tmp_path / "quick-pytorch.json").read_text())["runs"]
    assert [(r["model"], r["kv_heads"], r["cache_numbers_per_token"]) for r in runs] == [("MHA", 8, 32), ("MQA", 1, 4)]
    assert all(len(r["history"]["val_loss"]) == 2 and r["best_val_loss"] > 0 for r in runs)
    # --weights: the trained model in float16, loadable into a model of the recorded sizes, named in the results
    one = json.loads((tmp_path / "one" / "quick-pytorch.json").read_text())
    (run,) = one["runs"]
    arrays, _ = checkpoint.load(tmp_path / "one" / "gqa.npz")
    assert run["weights"]["file"] == "gqa.npz" and all(a.dtype == np.float16 for a in arrays.values())
    vocab = one["characters"]["vocabulary"]
    model = ac.torch.load_trained(lambda fw: c10.build(fw, vocab, TINY, "GQA"), {k: v.astype(np.float32)
                                                                                for k, v in arrays.items()})
    assert sum(p.numel() for p in model.parameters()) == run["parameters"]


def test_start_windows_begin_with_the_start_token_and_predict_the_next_character():
    ids = np.arange(100) % 7
    x, y = c10.start_windows(ids, 6, 4, start=7, seed=3)
    assert x.shape == y.shape == (4, 6) and (x[:, 0] == 7).all() and (ids < 7).all()
    np.testing.assert_array_equal(x[:, 1:], y[:, :-1])               # the target of each input is the next one
    assert all((np.diff(row) % 7 == 1).all() for row in y)            # y continues the text x began after the start
    chars = c8.characters(ac.data.load_tinyshakespeare()[:20_000])
    model = c10.build(ac.torch, len(chars.vocabulary) + 1, TINY, "MHA", seed=0)
    history = c10.train_with_start(ac.torch, model, chars, TINY, seed=0)
    assert len(history.metrics["val_loss"]) == TINY["epochs"]


def test_recomputed_windows_reencode_the_last_tokens_before_each_position():
    x = np.arange(20).reshape(2, 10)
    texts = c10.recomputed_windows(x, 3, after=4)
    assert texts.shape == (2 * 6, 3)
    np.testing.assert_array_equal(texts[0], [2, 3, 4])                    # sequence 0, position 4
    np.testing.assert_array_equal(texts[5], [7, 8, 9])                    # sequence 0, position 9
    np.testing.assert_array_equal(texts[6], [12, 13, 14])                 # sequence 1, position 4
    fresh = c10.recomputed_windows(x, 3, after=4, start=99)
    assert (fresh[:, 0] == 99).all() and (fresh[:, 1:] == texts).all()
    # the last position of each text predicts what the full sequence predicts after the same token
    assert [row[-1] for row in texts] == [*range(4, 10), *range(14, 20)]


@pytest.mark.parametrize("x, window, after, message", [
    (np.zeros((2, 10), int), 3, 1, "window − 1 ≤ after < T"),
    (np.zeros((2, 10), int), 3, 10, r"got shape \(2, 10\)"),
    (np.zeros(10, int), 3, 4, "x must be \\(n, T\\)"),
    (np.zeros((2, 10), int), 0, 4, "window"),
])
def test_recomputed_windows_refuse_what_does_not_fit(x, window, after, message):
    with pytest.raises(ValueError, match=message):
        c10.recomputed_windows(x, window, after)
