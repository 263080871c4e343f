"""Chapter 9's small BERT: the masked-LM head computes what ``transformers``' ``BertForMaskedLM`` computes with the
same weights; saving and loading go through the format ``transformers`` reads, in both frameworks; the WordPiece
vocabulary, the masking and the fixed number of predictions per sequence follow BERT's rules; the fine-tuning
table is the mean and spread of the seeds' runs."""

import json

import numpy as np
import pytest
import torch
from conftest import to_numpy

import attention_course as ac
from attention_course.ch09_bert import experiment as c9
from attention_course.ch09_bert import pretrained
from attention_course.core.errors import InputError, ShapeError

pytestmark = pytest.mark.chapter(9)   # Chapter 9: `make test CHAPTERS=...` picks by it

SIZES = {"vocab": 50, "d_model": 16, "heads": 4, "layers": 2, "d_ff": 32, "max_len": 12}


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, SIZES["vocab"], size=(3, 10))
    mask = np.ones((3, 10), bool)
    mask[1, 7:], ids[1, 7:] = False, 0
    return ids, mask, rng.integers(0, 7, size=(3, 4))


@pytest.fixture(scope="module")
def trained_like():
    """A PyTorch MaskedLM with every weight moved off its initial value (a LayerNorm's γ of exactly 1 would hide a
    swapped γ and β), exported."""
    torch.manual_seed(0)
    model = ac.torch.MaskedLM(**SIZES).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model, ac.torch.export_bert(model)


def test_the_masked_lm_head_is_transformers_bert_for_masked_lm(tmp_path, trained_like):
    transformers = pytest.importorskip("transformers")
    model, weights = trained_like
    folder = pretrained.write_bert(tmp_path / "small", weights)
    assert json.loads((folder / "config.json").read_text())["architectures"] == ["BertForMaskedLM"]
    hf = transformers.BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    ids, mask, positions = _batch()
    with torch.no_grad():
        want = hf(torch.as_tensor(ids), attention_mask=torch.as_tensor(mask.astype(np.int64))).logits.numpy()
        got = model(ids, mask, positions).numpy()
    np.testing.assert_allclose(got, np.take_along_axis(want, positions[..., None], 1), rtol=1e-4, atol=1e-5)


def test_a_saved_small_bert_loads_into_both_frameworks_and_they_agree(tmp_path, trained_like):
    model, weights = trained_like
    folder = pretrained.write_bert(tmp_path / "small", weights)
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]
    assert not list(tmp_path.glob("*.part-*"))                                       # nothing half-written left
    read = pretrained.read_bert(folder)
    ids, mask, positions = _batch(1)
    with torch.no_grad():
        want = model(ids, mask, positions).numpy()
    for fw in (ac.torch, ac.keras):
        loaded = fw.load_pretrained(read, masked_lm=True)
        np.testing.assert_allclose(to_numpy(fw.predict(loaded, (ids, mask, positions))), want, rtol=1e-4, atol=1e-5)
        again = fw.export_bert(loaded)                                                # and back, unchanged
        assert again.weights.keys() == weights.weights.keys() and again.config == weights.config
        for name, array in weights.weights.items():
            np.testing.assert_allclose(again.weights[name], array, rtol=1e-6, atol=1e-7, err_msg=name)


def test_the_classifier_twins_agree_and_read_the_cls_state(trained_like):
    _, weights = trained_like
    ids, mask, _ = _batch(2)
    torch.manual_seed(0)
    torch_model = ac.torch.SentenceClassifier(ac.torch.load_pretrained(weights), classes=3).eval()
    keras_model = ac.keras.SentenceClassifier(ac.keras.load_pretrained(weights), classes=3)
    keras_model(ids, mask)
    for ours, theirs in ((keras_model.pooler, torch_model.pooler), (keras_model.out, torch_model.out)):
        ours.set_weights([theirs.weight.detach().numpy().T, theirs.bias.detach().numpy()])
    with torch.no_grad():
        want, attention = torch_model(ids, mask, return_weights=True)
    assert want.shape == (3, 3) and len(attention) == SIZES["layers"]
    np.testing.assert_allclose(to_numpy(keras_model(ids, mask)), want.numpy(), rtol=1e-4, atol=1e-5)
    changed = ids.copy()
    changed[:, 1:] = (changed[:, 1:] % 40) + 5                                      # [CLS] kept, the words changed
    with torch.no_grad():
        assert not np.allclose(torch_model(changed, mask).numpy(), want.numpy())    # [CLS] read the sentence
    segments = (np.arange(ids.shape[1]) >= 4).astype(np.int64)[None].repeat(3, 0)     # a pair: B from position 4
    with torch.no_grad():
        pair = torch_model(ids, mask, segments).numpy()
    assert not np.allclose(pair, want.numpy())                                      # the segments are read
    np.testing.assert_allclose(to_numpy(keras_model(ids, mask, segments)), pair, rtol=1e-4, atol=1e-5)


def test_loading_a_head_that_is_not_there_and_bad_positions_are_named(fw, trained_like):
    _, weights = trained_like
    no_head = pretrained.PretrainedBert(None, weights.config,
                                        {k: v for k, v in weights.weights.items() if not k.startswith("cls.")})
    with pytest.raises(pretrained.ModelUnavailableError, match="no masked-LM head"):
        fw.load_pretrained(no_head, masked_lm=True)
    model = fw.load_pretrained(weights, masked_lm=True)
    ids, mask, positions = _batch()
    with pytest.raises(InputError, match=r"positions .* in \[0, 10\) of ids \(3, 10\); got indices from"):
        model(ids, mask, positions + 10)
    with pytest.raises(InputError, match=r"positions .*shape \(2, 4\)"):
        model(ids, mask, positions[:2])


# ---- the data and the masking --------------------------------------------------------------------------------

TEXTS = ["The quick brown fox jumps over the lazy dog.", "A king rode to the castle, and the queen followed.",
         "Dogs and foxes are animals; castles are buildings."] * 30


def test_the_wordpiece_vocabulary_starts_with_the_specials_and_wraps_each_text():
    tokenizer = c9.wordpiece(TEXTS, 120)
    assert [tokenizer.id_to_token(i) for i in range(5)] == c9.SPECIALS
    assert tokenizer.get_vocab_size() <= 120
    encoded = tokenizer.encode("The king jumps over the castle!")
    assert encoded.tokens[0] == "[CLS]" and encoded.tokens[-1] == "[SEP]"
    assert "the" in encoded.tokens and any(t.startswith("##") for t in tokenizer.encode("foxes kingly").tokens)


def test_pretraining_sequences_are_cls_text_sep_with_the_end_held_out():
    sizes = {**c9.PRETRAIN_SIZES["quick"], "vocab": 120, "length": 12}
    data = c9.pretraining_data(sizes, TEXTS)
    assert data.train.shape[1] == data.val.shape[1] == 12
    assert (data.train[:, 0] == c9.CLS).all() and (data.train[:, -1] == c9.SEP).all()
    assert not np.isin(data.train[:, 1:-1], [c9.CLS, c9.SEP, c9.PAD]).any()
    total = len(data.train) + len(data.val)
    assert len(data.val) == total - int(total * 0.95) > 0


def test_masked_examples_gather_the_chosen_positions_as_bert_does():
    rng = np.random.default_rng(0)
    ids = np.concatenate([np.full((400, 1), c9.CLS), rng.integers(5, 1000, size=(400, 30)),
                          np.full((400, 1), c9.SEP)], axis=1)
    inputs, mask, positions, labels = c9.masked_examples(ids, 1000, predictions=3, rng=rng)
    assert mask.all() and positions.shape == labels.shape == (400, 3)
    real = labels != c9.IGNORE
    assert (np.take_along_axis(ids, positions, 1)[real] == labels[real]).all()        # the original piece
    assert (positions[~real] == 0).all()                                             # padding points at [CLS]
    changed = inputs != ids
    assert not changed[:, [0, -1]].any()                                             # [CLS] and [SEP] never chosen
    rows, cols = np.nonzero(changed)
    chosen = {(r, int(p)) for r, row in enumerate(positions) for p, ok in zip(row, real[r], strict=True) if ok}
    assert all((r, c) in chosen for r, c in zip(rows, cols, strict=True))           # only chosen pieces change
    assert real.sum(1).max() == 3 and (real.sum(1) == 3).mean() > 0.5               # 15 % of 30 is 4.5: many capped
    assert (inputs[real.sum(1) == 3] != ids[real.sum(1) == 3]).sum(1).max() <= 3    # the extra ones put back


def test_the_checker_accepts_the_chapter_masking_rule(capsys):
    ac.exercises.mlm_mask(c9.mlm_mask, seed=1)
    assert "✓ masked-LM rule" in capsys.readouterr().out


def test_the_unigram_baseline_is_the_frequencies_entropy():
    data = c9.Pretraining(None, np.array([[c9.CLS, 5, 5, 5, 6, c9.SEP]]), np.zeros((0, 6), np.int64))
    data.tokenizer = type("T", (), {"get_vocab_size": staticmethod(lambda: 8)})()
    labels = np.array([[5, 6, c9.IGNORE]])
    baseline = c9.unigram_baseline(data, labels)
    p = (np.array([3, 1]) + 1) / (4 + 8)                                             # add-one smoothing over 8
    assert baseline["loss"] == pytest.approx(-np.log(p).mean())
    assert baseline["accuracy"] == 0.5                                               # always 5


def test_bert_schedule_rises_then_falls_to_zero():
    rate = c9.linear_schedule(1e-3, warmup=10, steps=110)
    assert rate(1) == pytest.approx(1e-4) and rate(10) == pytest.approx(1e-3)
    assert rate(60) == pytest.approx(5e-4) and rate(110) == 0 and rate(200) == 0


def test_the_finetuning_table_gives_mean_spread_and_seeds():
    runs = [{"model": "small BERT, pretrained", "seed": s, "val_accuracy": a, "parameters": 10}
            for s, a in enumerate([0.8, 0.82, 0.84])]
    chapter3 = [{"model": "attention", "seed": s, "val_accuracy": 0.7 + s / 100} for s in range(3)]
    chapter3 += [{"model": "attention GRU", "seed": 0, "val_accuracy": 0.9}]                # not compared
    table = c9.finetune_table(runs, chapter3)
    assert list(table.index) == ["small BERT, pretrained", "Chapter 3: attention"]
    row = table.loc["small BERT, pretrained"]
    assert row["accuracy"] == pytest.approx(0.82) and row["sd"] == pytest.approx(0.02)
    assert (row["seeds"], row["lowest"], row["highest"]) == (3, 0.8, 0.84)


# ---- is attention an explanation? --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def classifiers(trained_like):
    """The same fine-tuned-like SentenceClassifier in both frameworks (the pooler and output layer copied)."""
    _, weights = trained_like
    torch.manual_seed(1)
    torch_model = ac.torch.SentenceClassifier(ac.torch.load_pretrained(weights)).eval()
    keras_model = ac.keras.SentenceClassifier(ac.keras.load_pretrained(weights))
    ids, mask, _ = _batch()
    keras_model(ids, mask)
    for ours, theirs in ((keras_model.pooler, torch_model.pooler), (keras_model.out, torch_model.out)):
        ours.set_weights([theirs.weight.detach().numpy().T, theirs.bias.detach().numpy()])
    return {"pytorch": (ac.torch, torch_model), "keras": (ac.keras, keras_model)}


@pytest.mark.parametrize("name", ["pytorch", "keras"])
def test_the_cls_row_recomputed_with_its_own_weights_is_the_model(classifiers, name):
    fw, model = classifiers[name]
    ids, mask, _ = _batch(3)
    probs, own = c9.classify(fw, model, ids, mask)
    assert own.shape == (3, SIZES["heads"], 10)
    np.testing.assert_allclose(own.sum(-1), 1, atol=1e-5)
    np.testing.assert_allclose(c9.softmax(fw.logits_with_cls_attention(model, ids, mask, own)), probs, atol=1e-5)
    uniform = np.where(mask[:, None, :], 1.0, 0.0) / mask.sum(1)[:, None, None] * np.ones_like(own)
    assert not np.allclose(fw.logits_with_cls_attention(model, ids, mask, uniform),
                           fw.logits_with_cls_attention(model, ids, mask, own))
    with pytest.raises(ShapeError, match=r"attention .*\(3, 4, 10\)"):
        fw.logits_with_cls_attention(model, ids, mask, own[:, :2])


def test_the_probes_agree_across_frameworks(classifiers):
    ids, mask, _ = _batch(4)
    (tf_, k), (pt, t) = classifiers["keras"], classifiers["pytorch"]
    np.testing.assert_allclose(k_grad := tf_.token_gradients(k, ids, mask), pt.token_gradients(t, ids, mask),
                               rtol=1e-3, atol=1e-6)
    assert k_grad.shape == ids.shape and (k_grad[mask] > 0).all() and (k_grad[~mask] == 0).all()   # pads: unread
    shuffles = {name: c9.permutation_test(fw, model, ids, mask, permutations=5, seed=0)
                for name, (fw, model) in classifiers.items()}
    np.testing.assert_allclose(shuffles["keras"].to_numpy(), shuffles["pytorch"].to_numpy(), atol=1e-4)
    s = shuffles["pytorch"]
    assert list(s["tokens"]) == [10, 7, 10] and (s >= 0).all().all()
    assert (s[["median distance", "largest distance", "flips", "largest weight"]] <= 1).all().all()
    taus = c9.attention_and_gradients(pt, t, ids, mask)
    assert list(taus["pieces"]) == [8, 5, 8] and taus["tau"].between(-1, 1).all()


def test_total_variation_is_half_the_l1_distance():
    assert c9.total_variation([1.0, 0.0], [0.0, 1.0]) == 1
    assert c9.total_variation([0.5, 0.5], [0.7, 0.3]) == pytest.approx(0.2)


# ---- next-sentence prediction --------------------------------------------------------------------------------

def test_texts_are_cut_into_sentences_without_the_speaker():
    assert c9.sentences("ANTONIO: Noble Sebastian, thou sleep'st. Wake! Is it H. americanus? Yes.") == \
        ["Noble Sebastian, thou sleep'st.", "Wake!", "Is it H. americanus?", "Yes."]
    assert c9.sentences("It rose 3.5 m. Then it fell.") == ["It rose 3.5 m.", "Then it fell."]


DOCUMENTS = [" ".join(f"Alpha {d} beta {i} gamma." for i in range(6)) for d in range(40)]


def _pair_of(text: str) -> tuple[int, int]:
    words = text.split()
    return int(words[1]), int(words[3])                                              # (document, sentence)


def test_next_sentence_pairs_are_successors_random_sentences_or_swapped():
    tokenizer = c9.wordpiece(DOCUMENTS, 120)
    sizes = {**c9.NSP, "train": 120, "test": 20, "max_len": 24}
    pairs = c9.next_sentence_data(tokenizer, sizes, DOCUMENTS, seed=3)
    train, test, swapped = pairs["train"], pairs["test"], pairs["swapped"]
    assert len(train.y) == 120 and len(test.y) == len(swapped.y) == 20
    assert train.y.mean() == test.y.mean() == 0.5                                    # half real, half random
    for p in (train, test):
        for a, b, real in zip(p.first, p.second, p.y, strict=True):
            (da, ia), (db, ib) = _pair_of(a), _pair_of(b)
            assert ((da, ia + 1) == (db, ib)) == bool(real), (a, b, real)             # real: the next sentence
    assert not {_pair_of(a)[0] for a in train.first} & {_pair_of(a)[0] for a in test.first}   # documents held out
    np.testing.assert_array_equal(swapped.y, test.y)
    for k, real in enumerate(test.y):
        a, b = (swapped.first[k], swapped.second[k])
        assert (_pair_of(a)[1] + 1 == _pair_of(b)[1]) == bool(real)                   # negatives: the wrong order
        assert _pair_of(a)[0] == _pair_of(b)[0]                                       # from the same document
    for row in range(len(train.y)):                                                  # [CLS] A [SEP] | B [SEP]
        n = int(train.mask[row].sum())
        tokens = [tokenizer.id_to_token(int(t)) for t in train.ids[row, :n]]
        seps = [i for i, t in enumerate(tokens) if t == "[SEP]"]
        assert tokens[0] == "[CLS]" and len(seps) == 2 and seps[1] == n - 1
        np.testing.assert_array_equal(train.segments[row, :n], np.arange(n) > seps[0])
    with pytest.raises(ValueError, match=r"asked for 9,999 sentence pairs, but the documents hold \d+"):
        c9.next_sentence_data(tokenizer, {**sizes, "train": 9999}, DOCUMENTS)


def test_the_word_overlap_baseline_is_blind_to_order():
    tokenizer = c9.wordpiece(DOCUMENTS, 120)
    pairs = c9.next_sentence_data(tokenizer, {**c9.NSP, "train": 120, "test": 20, "max_len": 24}, DOCUMENTS)
    test = pairs["test"]
    reversed_ = c9.SentencePairs(test.ids, test.mask, test.segments, test.y, test.second, test.first)
    scores = c9.overlap_baseline({**pairs, "reversed": reversed_})
    assert scores["reversed"] == scores["test"]
    assert scores["train"] > 0.9            # here a real successor shares its document's number, a random one not


def test_writing_a_model_over_someone_elses_files_loses_none_of_them(tmp_path, trained_like, monkeypatch, capsys):
    _, weights = trained_like
    folder = tmp_path / "small"
    folder.mkdir()
    (folder / "notes.md").write_text("my notes")
    (folder / "train.py").write_text("print('my script')")
    pretrained.write_bert(folder, weights)
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("small.replaced-")]
    assert len(aside) == 1 and str(aside[0]) in capsys.readouterr().out
    assert (aside[0] / "notes.md").read_text() == "my notes"
    assert (aside[0] / "train.py").read_text() == "print('my script')"
    monkeypatch.chdir(folder)
    before = sorted(p.name for p in folder.iterdir())
    for where in (".", ".."):
        with pytest.raises(InputError, match="current folder or holds it"):
            pretrained.write_bert(where, weights)
    assert sorted(p.name for p in folder.iterdir()) == before


@pytest.mark.parametrize("damage, message", [
    (lambda f: (f / "model.safetensors").write_bytes((f / "model.safetensors").read_bytes()[:100]),
     r"model\.safetensors cannot be read as safetensors.*damaged or incomplete"),
    (lambda f: (f / "config.json").write_text("{ not json"), r"config\.json is not valid JSON"),
    (lambda f: (f / "config.json").write_text("[1, 2]"), r"config\.json holds a list"),
    (lambda f: (f / "config.json").write_text('{"model_type": "bert"}'), r"lacks num_hidden_layers"),
])
def test_a_damaged_model_folder_is_named(tmp_path, trained_like, damage, message):
    folder = pretrained.write_bert(tmp_path / "small", trained_like[1])
    damage(folder)
    with pytest.raises(pretrained.ModelUnavailableError, match=message):
        pretrained.read_bert(folder)


def test_a_damaged_or_missing_tokenizer_is_named(tmp_path):
    with pytest.raises(pretrained.ModelUnavailableError, match=r"tokenizer\.json is missing"):
        pretrained.tokenizer(tmp_path)
    (tmp_path / "tokenizer.json").write_text('{"version": "1.0", "truncated')
    with pytest.raises(pretrained.ModelUnavailableError, match=r"tokenizer\.json cannot be read as a tokenizer"):
        pretrained.tokenizer(tmp_path)
