"""Chapter 9: the course's BERT in both frameworks computes what ``transformers``' ``BertModel`` computes with the same
weights (a tiny random model saved as safetensors, and the real MiniLM when it is beside the repository), and the
loader's errors say what is wrong and where to put the files."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

import keras
import numpy as np
import pytest
import torch
from conftest import to_numpy

import attention_course as ac
from attention_course.ch09_bert import huggingface, pretrained
from attention_course.core.errors import ConfigError, ModelUnavailableError, ShapeError
from attention_course.data.download import ChecksumError

pytestmark = pytest.mark.chapter(7, 9)   # Chapters 7 and 9: `make test CHAPTERS=...` picks by it

transformers = pytest.importorskip("transformers")
RTOL, ATOL = 1e-4, 1e-5


def _hf_outputs(hf, ids, mask, segments=None):
    with torch.no_grad():
        out = hf(torch.as_tensor(ids), attention_mask=torch.as_tensor(mask.astype(np.int64)),
                 token_type_ids=None if segments is None else torch.as_tensor(segments),
                 output_hidden_states=True, output_attentions=True)
    return [h.numpy() for h in out.hidden_states], [a.numpy() for a in out.attentions]


def _ours(fw, model, ids, mask, segments=None):
    if fw is ac.torch:
        with torch.no_grad():
            _, extra = model(ids, mask, segments, return_weights=True)
    else:
        _, extra = model(ids, mask, segments, return_weights=True)
    return [to_numpy(h) for h in extra["hidden"]], [to_numpy(a) for a in extra["attention"]]


def _assert_same(fw, model, hf, ids, mask, segments=None):
    hidden, attention = _ours(fw, model, ids, mask, segments)
    want_hidden, want_attention = _hf_outputs(hf, ids, mask, segments)
    assert len(hidden) == len(want_hidden) and len(attention) == len(want_attention)
    for got, want in zip(hidden, want_hidden, strict=True):
        np.testing.assert_allclose(got[mask], want[mask], rtol=RTOL, atol=ATOL)       # pads: whatever they are
    for got, want in zip(attention, want_attention, strict=True):
        rows = np.moveaxis(got, 1, 2)[mask], np.moveaxis(want, 1, 2)[mask]               # (real queries, h, T)
        np.testing.assert_allclose(*rows, rtol=RTOL, atol=ATOL)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A randomly initialised 2-layer BertModel saved as transformers saves one (config.json, model.safetensors)."""
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=32, max_position_embeddings=24, type_vocab_size=2,
                                     attn_implementation="eager")
    hf = transformers.BertModel(config, add_pooling_layer=False).eval()
    folder = tmp_path_factory.mktemp("tiny-bert")
    hf.save_pretrained(folder, safe_serialization=True)
    return folder, hf


def _batch(vocab=50, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(3, 9))
    mask = np.ones((3, 9), bool)
    mask[1, 6:] = False
    ids[1, 6:] = 0
    segments = np.zeros((3, 9), np.int64)
    segments[:, 5:] = 1                                                               # sentence B from position 5
    return ids, mask, segments


@pytest.mark.parametrize("fw_name", ["torch", "keras"])
def test_the_course_bert_computes_what_transformers_computes(tiny_bert, fw_name):
    folder, hf = tiny_bert
    fw = ac.torch if fw_name == "torch" else ac.keras
    model = fw.load_pretrained(pretrained.read_bert(folder))
    ids, mask, segments = _batch()
    _assert_same(fw, model, hf, ids, mask, segments)
    _assert_same(fw, model, hf, ids, mask)                                            # segments default to 0


@pytest.mark.parametrize("fw_name", ["torch", "keras"])
def test_minilm_in_the_course_code_matches_transformers(fw_name):
    try:
        folder = pretrained.locate()
    except pretrained.ModelUnavailableError as error:
        if os.environ.get("CI"):
            raise                                                                      # CI has ../shared/models
        pytest.skip(str(error))
    fw = ac.torch if fw_name == "torch" else ac.keras
    model = fw.load_pretrained(pretrained.read_bert(folder))
    hf = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    tok = pretrained.tokenizer(folder)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    encoded = tok.encode_batch(["The animal didn't cross the street because it was too tired.",
                                "The FBI is chasing a criminal on the run."])
    assert encoded[1].tokens[:3] == ["[CLS]", "the", "fbi"]
    assert "[SEP]" in encoded[1].tokens and encoded[1].tokens[-1] == "[PAD]"
    ids = np.array([e.ids for e in encoded])
    mask = np.array([e.attention_mask for e in encoded], bool)
    assert not mask.all()                                                             # a padded sentence
    _assert_same(fw, model, hf, ids, mask)


def test_the_reference_runs_in_a_process_of_its_own_and_computes_what_transformers_computes(tiny_bert):
    folder, hf = tiny_bert
    ids, mask, _ = _batch()
    got = huggingface.outputs(folder, ids, mask)
    want_hidden, want_attention = _hf_outputs(hf, ids, mask)
    assert len(got.hidden_states) == 3 and len(got.attentions) == 2
    for a, b in zip(got.hidden_states + got.attentions, want_hidden + want_attention, strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    # a fresh Python that asks for the reference imports neither PyTorch nor transformers itself
    code = ("import sys; import numpy as np; from attention_course.ch09_bert import huggingface; "
            f"out = huggingface.outputs({str(folder)!r}, np.array({ids.tolist()}), np.array({mask.tolist()})); "
            "print(len(out.attentions), 'torch' in sys.modules, 'transformers' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["2", "False", "False"]


def test_the_reference_says_what_is_wrong_and_leaves_nothing_behind(tiny_bert, tmp_path, monkeypatch):
    folder, _ = tiny_bert
    ids, mask, _ = _batch()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.raises(ShapeError, match=r"ids \(3, 9\) and mask \(3, 8\)"):
        huggingface.outputs(folder, ids, mask[:, :8])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelUnavailableError, match=f"could not run on {empty}"):
        huggingface.outputs(empty, ids, mask)
    assert list(scratch.iterdir()) == [], "the inputs and outputs' folder is removed, whatever happened"
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None if name == "transformers"
                        else find_spec(name, *args))
    assert huggingface.missing() == "transformers"
    with pytest.raises(ModelUnavailableError, match="needs transformers"):
        huggingface.outputs(folder, ids, mask)


def test_the_twins_agree_with_the_same_weights(tiny_bert):
    folder, _ = tiny_bert
    weights = pretrained.read_bert(folder)
    ids, mask, segments = _batch(seed=1)
    a = _ours(ac.torch, ac.torch.load_pretrained(weights), ids, mask, segments)
    b = _ours(ac.keras, ac.keras.load_pretrained(weights), ids, mask, segments)
    for x, y in zip(a[0] + a[1], b[0] + b[1], strict=True):
        np.testing.assert_allclose(x, y, rtol=RTOL, atol=ATOL)


def test_a_gelu_encoder_layer_is_torch_transformer_encoder_layer_with_gelu():
    torch.manual_seed(0)
    ours = ac.torch.EncoderLayer(16, 4, 32, dropout=0.0, activation="gelu", eps=1e-12).eval()
    theirs = ac.torch.framework_encoder_layer(ours).eval()
    x, mask = torch.randn(2, 5, 16), torch.ones(2, 5, dtype=torch.bool)
    with torch.no_grad():
        np.testing.assert_allclose(ours(x, mask).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-5)
    keras.utils.set_random_seed(0)
    k = ac.keras.EncoderLayer(16, 4, 32, dropout=0.0, activation="gelu", eps=1e-12)
    xk, mk = x.numpy(), mask.numpy()
    np.testing.assert_allclose(to_numpy(k(xk, mk)), to_numpy(ac.keras.framework_encoder_layer(k)([xk, mk])),
                               rtol=1e-5, atol=1e-5)


def test_bad_inputs_and_settings_are_named(fw):
    model = fw.Bert(vocab=50, d_model=16, heads=4, layers=1, d_ff=32, max_len=8)
    ids = np.ones((2, 6), np.int64)
    with pytest.raises(ShapeError, match="segments"):
        model(ids, segments=np.zeros((2, 5), np.int64))
    with pytest.raises(ShapeError, match="8 positions"):
        model(np.ones((2, 9), np.int64))
    with pytest.raises(ConfigError, match="activation"):
        fw.FeedForward(16, 32, activation="swish")


def test_a_folder_without_the_files_says_what_is_missing(tmp_path):
    with pytest.raises(pretrained.ModelUnavailableError, match="model.safetensors"):
        pretrained.read_bert(tmp_path)


def test_a_changed_minilm_file_is_refused_with_both_hashes(tmp_path, tiny_bert):
    folder, _ = tiny_bert
    shutil.copy(folder / "model.safetensors", tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "_name_or_path": "nreimers/MiniLM-L6-H384-uncased"}))
    with pytest.raises(ChecksumError, match=r"config.json: sha256 [0-9a-f]{64}, expected 953f9c0d"):
        pretrained.read_bert(tmp_path)
    assert pretrained.read_bert(tmp_path, verify=False).sizes["layers"] == 2


def test_locate_says_where_to_put_the_model(tmp_path, monkeypatch):
    import huggingface_hub

    def offline(*args, **kwargs):
        raise OSError("no network")

    monkeypatch.setenv(pretrained.MODEL_DIR_VAR, str(tmp_path))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(pretrained.ModelUnavailableError, match=r"\$COURSE_MODEL_DIR/all-MiniLM-L6-v2") as error:
        pretrained.locate()
    assert str(tmp_path) in str(error.value) and "config.json" in str(error.value)


# ---- the exercises' checkers -----------------------------------------------------------------------------------

def test_attention_entropy_checker_passes_the_answer_and_names_mistakes(capsys):
    from attention_course.exercises import ExerciseError, attention_entropy, reference_attention_entropy

    attention_entropy(reference_attention_entropy, seed=0)
    assert "✓ attention entropy" in capsys.readouterr().out
    mistakes = {
        "natural log": lambda w, m: reference_attention_entropy(w, m, log=np.log2),
        "real query tokens": lambda w, m: reference_attention_entropy(w, m, real_rows=False),
        "minus sign": lambda w, m: -reference_attention_entropy(w, m),
        "0 · log 0": lambda w, m: -(w * np.log(w)).sum(-1).mean((0, 2)),
    }
    for message, fn in mistakes.items():
        with np.errstate(divide="ignore", invalid="ignore"), pytest.raises(ExerciseError, match=message):
            attention_entropy(fn, seed=0)


def test_mlm_mask_checker_passes_the_answer_and_names_mistakes(capsys):
    from attention_course.exercises import ExerciseError, mlm_mask, reference_mlm_mask

    mlm_mask(reference_mlm_mask, seed=0)
    assert "✓ masked-LM rule" in capsys.readouterr().out

    def one_array(ids, special, mask_id, vocab, rng):
        return reference_mlm_mask(ids, special, mask_id, vocab, rng)[0]

    def specials_too(ids, special, mask_id, vocab, rng):
        return reference_mlm_mask(ids, np.zeros_like(special), mask_id, vocab, rng)

    def every_label(ids, special, mask_id, vocab, rng):
        inputs, labels = reference_mlm_mask(ids, special, mask_id, vocab, rng)
        return inputs, np.where(special, -100, ids)

    def only_mask(ids, special, mask_id, vocab, rng):
        chosen = (rng.random(ids.shape) < 0.15) & ~special
        return np.where(chosen, mask_id, ids), np.where(chosen, ids, -100)

    def wrong_split(ids, special, mask_id, vocab, rng):
        chosen = (rng.random(ids.shape) < 0.15) & ~special
        fate = rng.random(ids.shape)
        inputs = np.where(chosen & (fate < 0.5), mask_id, ids)
        random = chosen & (fate >= 0.5) & (fate < 0.9)
        inputs[random] = rng.integers(0, vocab, size=int(random.sum()))
        return inputs, np.where(chosen, ids, -100)

    def drawing(draw):
        def fn(ids, special, mask_id, vocab, rng):
            chosen = (rng.random(ids.shape) < 0.15) & ~special
            fate = rng.random(ids.shape)
            inputs = np.where(chosen & (fate < 0.8), mask_id, ids)
            random = chosen & (fate >= 0.8) & (fate < 0.9)
            inputs[random] = draw(rng, vocab, int(random.sum()))
            return inputs, np.where(chosen, ids, -100)
        return fn

    one_id = drawing(lambda rng, vocab, n: np.full(n, 7))
    small_ids = drawing(lambda rng, vocab, n: rng.integers(0, 5, size=n))
    a_part = drawing(lambda rng, vocab, n: rng.integers(0, vocab // 5, size=n))
    outside = drawing(lambda rng, vocab, n: rng.integers(0, 2 * vocab, size=n))
    for fn, message in ((specials_too, "special tokens"), (every_label, "carry a label"), (only_mask, "became"),
                        (wrong_split, "80 %"), (one_array, "two arrays"), (one_id, "only 1 different ids"),
                        (small_ids, "only 4 different ids|only 5 different ids"),
                        (a_part, "draw from the whole vocabulary, not a part"), (outside, r"an id in \[0, vocab\)")):
        with pytest.raises(ExerciseError, match=message):
            mlm_mask(fn, seed=0)


# ---- the head views ----------------------------------------------------------------------------------------------

def test_head_view_draws_the_strongest_lines_of_every_head():
    rng = np.random.default_rng(0)
    attention = rng.dirichlet(np.ones(5) * 0.3, size=(2, 3, 5))                      # (layers, heads, T, T)
    chart = ac.viz.head_view(attention, ["[CLS]", "a", "b", "c", "[SEP]"], title="t", description="d", top=2)
    spec = chart.to_dict()
    lines = next(iter(spec["datasets"].values()))
    kept = [(r["layer"], r["head"], r["query"]) for r in lines]
    assert max(kept.count(k) for k in set(kept)) <= 2                                 # at most `top` per token
    assert all(r["weight"] >= 0.05 for r in lines)
    assert {p["name"] for p in spec["params"]} == {"head_view_layer", "head_view_head"}
    with pytest.raises(ValueError, match=r"not \(layers, heads, 4, 4\)"):
        ac.viz.head_view(attention, ["a", "b", "c", "d"], title="t", description="d")
    with pytest.raises(ValueError, match="more than a chart holds"):
        ac.viz.head_view(np.full((12, 12, 40, 40), 1 / 40), list("x" * 40), title="t", description="d",
                         min_weight=0.0)


def test_head_statistics_measure_what_they_say():
    from attention_course.ch09_bert import experiment as chapter9

    tokens = ["[CLS]", "a", "b", ",", "[SEP]"]
    previous = np.eye(5, k=-1)
    previous[0, 0] = 1.0                                                              # [CLS] attends to itself
    uniform = np.full((5, 5), 0.2)
    attention = np.stack([previous, uniform])[None]                                   # (1 layer, 2 heads, 5, 5)
    stats = chapter9.head_statistics([attention], [tokens]).set_index(["head", "statistic"])["value"]
    assert stats[1, "previous token"] == pytest.approx(4 / 5) and stats[1, "entropy"] == pytest.approx(0)
    assert stats[2, "entropy"] == pytest.approx(np.log(5)) and stats[2, "punctuation"] == pytest.approx(0.2)
    assert stats[1, "[CLS]"] == pytest.approx(2 / 5)                                  # [CLS] itself and "a"
    chart = ac.viz.head_grid(stats.reset_index().assign(layer=1), statistic="statistic", value="value",
                             title="t", description="d")
    assert chart.to_dict()["params"][0]["bind"]["options"] == chapter9.STATISTICS


def test_export_and_the_explanation_checks_accept_a_chapter_cells_own_classes():
    """The chapter's cells define their own ``MaskedLM`` (the same code as the package's, another class object):
    Keras' ``export_bert`` and the argument checks recognise it by name, not by ``isinstance``."""
    import inspect
    import sys

    from attention_course.ch09_bert import validate

    cell = dict(vars(sys.modules[ac.keras.MaskedLM.__module__]))      # the class run again, as a chapter cell does
    exec(inspect.getsource(ac.keras.MaskedLM), cell)
    assert not issubclass(cell["MaskedLM"], ac.keras.MaskedLM)
    model = cell["MaskedLM"](30, 8, 2, 1, 16, max_len=6)
    assert "cls.predictions.bias" in ac.keras.export_bert(model).weights, "exported with its masked-LM head"
    validate.wraps("a test", model, ac.keras.MaskedLM, "")
    with pytest.raises(ConfigError):
        validate.wraps("a test", model, ac.keras.Bert, "")
