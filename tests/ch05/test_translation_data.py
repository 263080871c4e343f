"""Chapter 5 data: translation splits, the subword tokenizer and its cache, padded arrays, length buckets.

The real-data tests need ``COURSE_DATA_DIR`` to point at the course files and are skipped otherwise. They read
them through a symlink farm in a temporary folder, and every tokenizer cache goes to ``tmp_path``: nothing is
ever written next to the real files.
"""

import os
from pathlib import Path

import numpy as np
import pytest

from attention_course import data
from attention_course.core.errors import ConfigError, InputError
from attention_course.core.text import BOS, EOS, PAD, SPECIALS, UNK
from attention_course.data import (
    ParallelArrays,
    SubwordTokenizer,
    TranslationData,
    encode_pairs,
    translation_pairs,
)

pytestmark = pytest.mark.chapter(5, 8)   # Chapters 5 and 8: `make test CHAPTERS=...` picks by it

NEEDED = [("spa-eng", "spa.txt")] + [
    ("multi30k", f"{stem}.{lang}.gz") for stem in ("train", "val", "test_2016_flickr") for lang in ("de", "en")
]
VOCAB = 500


# --------------------------------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    """COURSE_DATA_DIR as a temporary folder of symlinks to the real files (skip when they are missing)."""
    env = os.environ.get("COURSE_DATA_DIR")
    if not env:
        pytest.skip("set COURSE_DATA_DIR to a folder with the course data to run the real-data tests")
    farm = tmp_path_factory.mktemp("data")
    for name, filename in NEEDED:
        real = Path(env) / data.get(name).folder / filename
        if not real.is_file():
            pytest.skip(f"data file missing: {real}")
        link = farm / data.get(name).folder / filename
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(real)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COURSE_DATA_DIR", str(farm))
        yield farm


@pytest.fixture(scope="module")
def spa(data_root) -> TranslationData:
    return translation_pairs("spa-eng", n_train=3000)


@pytest.fixture(scope="module")
def spa_full(data_root) -> TranslationData:
    return translation_pairs("spa-eng")


@pytest.fixture(scope="module")
def m30k(data_root) -> TranslationData:
    return translation_pairs("multi30k")


@pytest.fixture(scope="module")
def toks(spa, m30k) -> dict[str, SubwordTokenizer]:
    """Small tokenizers: English and Spanish of 3,000 spa-eng pairs, German of 3,000 Multi30k pairs."""
    return {
        "en": SubwordTokenizer.train([s for s, _ in spa.train], VOCAB),
        "es": SubwordTokenizer.train([t for _, t in spa.train], VOCAB),
        "de": SubwordTokenizer.train([s for s, _ in m30k.train[:3000]], VOCAB),
    }


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty cache of derived files in COURSE_CACHE_DIR (tokenizers are cached under it)."""
    root = tmp_path / "cache"
    root.mkdir()
    monkeypatch.setenv("COURSE_CACHE_DIR", str(root))
    return root


@pytest.fixture
def trainings(monkeypatch) -> list[int]:
    """Count the calls of SubwordTokenizer.train (one entry per training)."""
    calls: list[int] = []
    original = SubwordTokenizer.train.__func__

    def counting(cls, texts, vocab_size, **kwargs):
        calls.append(vocab_size)
        return original(cls, texts, vocab_size, **kwargs)

    monkeypatch.setattr(SubwordTokenizer, "train", classmethod(counting))
    return calls


def _sources(pairs):
    return {s for s, _ in pairs}


# --------------------------------------------------------------------------------------------------
# translation_pairs
# --------------------------------------------------------------------------------------------------
def test_spa_eng_split_sizes(spa, spa_full):
    assert (spa.name, spa.src_lang, spa.tgt_lang) == ("spa-eng", "en", "es")
    assert (len(spa.train), len(spa.val), len(spa.test)) == (3000, 1000, 1000)
    assert len(spa_full.val) == len(spa_full.test) == 1000
    total = len(spa_full.train) + len(spa_full.val) + len(spa_full.test)
    assert 118_964 - 20 <= total <= 118_964  # only the extra translations of the 2 cut groups are dropped
    assert spa.train == spa_full.train[:3000] and spa.test == spa_full.test
    assert all(isinstance(s, str) and isinstance(t, str) for s, t in spa.train[:10])
    assert "train=3,000" in repr(spa) and len(repr(spa_full)) < 120


def test_spa_eng_splits_share_no_english_sentence(spa_full):
    train, val, test = (_sources(p) for p in (spa_full.train, spa_full.val, spa_full.test))
    assert not train & test and not train & val and not val & test
    assert len(test) < 1000, "some test sources have several translations, all of them in test"


def test_spa_eng_test_covers_all_lengths(spa_full):
    test_words = np.array([len(s.split()) for s, _ in spa_full.test])
    train_words = np.array([len(s.split()) for s, _ in spa_full.train])
    assert test_words.min() <= 3 and test_words.max() >= 15
    assert abs(test_words.mean() - train_words.mean()) < 0.5  # a uniform sample, not the shortest sentences


def test_split_is_deterministic_given_seed(spa, data_root):
    again = translation_pairs("spa-eng", n_train=3000, seed=0)
    assert again == spa
    other = translation_pairs("spa-eng", n_train=3000, seed=1)
    assert other.test != spa.test and other.train != spa.train
    assert not _sources(other.train) & _sources(other.test)


def test_max_words_is_respected(data_root):
    short = translation_pairs("spa-eng", max_words=5, n_train=2000, n_val=300, n_test=300)
    assert (len(short.train), len(short.val), len(short.test)) == (2000, 300, 300)
    for split in (short.train, short.val, short.test):
        assert max(len(s.split()) for s, _ in split) <= 5
    m = translation_pairs("multi30k", max_words=8)
    assert 0 < len(m.train) < 29_000 and 0 < len(m.test) < 1000
    for split in (m.train, m.val, m.test):
        assert max(len(s.split()) for s, _ in split) <= 8


def test_multi30k_sizes_and_order(m30k, data_root):
    assert (m30k.name, m30k.src_lang, m30k.tgt_lang) == ("multi30k", "de", "en")
    assert (len(m30k.train), len(m30k.val), len(m30k.test)) == (29_000, 1014, 1000)
    assert m30k.val == data.load_multi30k("val") and m30k.test == data.load_multi30k("test2016")
    assert sorted(m30k.train) == sorted(data.load_multi30k("train"))  # shuffled, nothing lost
    capped = translation_pairs("multi30k", n_train=100, n_val=10, n_test=20)
    assert capped.train == m30k.train[:100] and capped.val == m30k.val[:10] and capped.test == m30k.test[:20]
    assert translation_pairs("multi30k", n_train=100, seed=1).train != capped.train


def test_translation_pairs_errors(data_root):
    with pytest.raises(ConfigError, match="spa-eng.*multi30k"):
        translation_pairs("eng-fra")
    for bad in ({"max_words": 0}, {"n_train": -1}, {"n_test": 1.5}, {"n_val": True}, {"seed": "0"}):
        with pytest.raises(ConfigError):
            translation_pairs("spa-eng", **bad)
    with pytest.raises(ConfigError, match="max_words=1.*train"):
        translation_pairs("spa-eng", max_words=1)  # 48 pairs: none left for train after val and test


# --------------------------------------------------------------------------------------------------
# SubwordTokenizer
# --------------------------------------------------------------------------------------------------
def test_special_ids_are_fixed(toks):
    for tok in toks.values():
        assert (tok.pad, tok.unk, tok.bos, tok.eos) == (PAD, UNK, BOS, EOS) == (0, 1, 2, 3)
        assert [tok.backend.id_to_token(i) for i in range(4)] == list(SPECIALS)
        assert len(tok) == VOCAB
    ids = toks["en"].encode("say <eos> and <pad> please")
    assert not {PAD, BOS, EOS} & set(ids), "encode never produces special ids, even for their text"


@pytest.mark.parametrize("lang", ["en", "es", "de"])
def test_round_trip_on_real_sentences(toks, spa, m30k, lang):
    tok = toks[lang]
    texts = {"en": [s for s, _ in spa.train], "es": [t for _, t in spa.train], "de": [s for s, _ in m30k.train[:3000]]}
    texts = texts[lang]
    special = {"es": "¿¡áéíóúñ", "de": "äöüß", "en": "'?!,"}[lang]
    assert all(any(c in t.lower() for t in texts) for c in special), "the sample has the characters to check"
    decoded = [tok.decode(ids) for ids in tok.encode_batch(texts)]
    assert decoded == [tok.normalize(t) for t in texts]
    assert decoded[0] == texts[0].lower().strip() or " " in texts[0]


def test_normalisation_and_pieces(toks):
    es = toks["es"]
    s = "  ¿Dónde   está\tel NIÑO?  ¡Qué bien! "
    assert es.normalize(s) == "¿dónde está el niño? ¡qué bien!"
    assert es.decode(es.encode(s)) == es.normalize(s)
    assert es.normalize("ﬁn") == "fin"  # NFKC
    pieces = es.tokens("¿Dónde está?")
    assert pieces[0].startswith("▁") and "".join(pieces).replace("▁", " ").strip() == "¿dónde está?"
    assert es.encode_batch(["hola", "adiós"]) == [es.encode("hola"), es.encode("adiós")]


def test_decode_stops_at_eos_and_drops_pad_bos(toks):
    en = toks["en"]
    ids = en.encode("i am happy .")
    assert en.decode([BOS, *ids, EOS, *ids, PAD]) == "i am happy ."
    assert en.decode(np.array([BOS, *ids, PAD, PAD])) == "i am happy ."
    assert en.decode([EOS, *ids]) == ""
    assert "<unk>" in en.decode([*ids, UNK])
    assert en.decode_batch(np.array([[BOS, *ids, EOS], [*ids, EOS, PAD]])) == ["i am happy ."] * 2
    with pytest.raises(InputError, match="outside the vocabulary"):
        en.decode([len(en)])
    with pytest.raises(InputError):
        en.encode(["not", "a", "string"])
    with pytest.raises(InputError):
        en.encode_batch("one string")


def test_tokenizer_config_errors():
    with pytest.raises(ConfigError, match="vocab_size"):
        SubwordTokenizer.train(["a b c"], 4)
    with pytest.raises(ConfigError, match="empty"):
        SubwordTokenizer.train([], 100)
    with pytest.raises(ConfigError, match="empty"):
        SubwordTokenizer.train(["", "  "], 100)
    with pytest.raises(ConfigError, match="one string"):
        SubwordTokenizer.train("a sentence", 100)
    with pytest.raises(ConfigError, match="min_frequency"):
        SubwordTokenizer.train(["a b"], 100, min_frequency=0)
    with pytest.raises(ConfigError, match="key"):
        SubwordTokenizer.cache_path("../escape", ["a b"], 100)


def test_save_and_load(toks, tmp_path):
    es = toks["es"]
    path = es.save(tmp_path / "sub" / "es.json")
    assert path.is_file() and es.path == path and os.listdir(path.parent) == ["es.json"]
    back = SubwordTokenizer.load(path)
    text = "¿Dónde está el baño?"
    assert back.encode(text) == es.encode(text) and len(back) == len(es) and back.path == path
    with pytest.raises(FileNotFoundError):
        SubwordTokenizer.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not a tokenizer"):
        SubwordTokenizer.load(tmp_path / "bad.json")


def test_save_is_atomic(toks, tmp_path, monkeypatch):
    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        toks["en"].save(tmp_path / "en.json")
    assert os.listdir(tmp_path) == [], "no half-written or temporary file is left"


def test_cached_trains_once_then_loads(spa, cache, trainings):
    texts = [s for s, _ in spa.train[:2000]]
    first = SubwordTokenizer.cached("spa-en", texts, VOCAB)
    path = SubwordTokenizer.cache_path("spa-en", texts, VOCAB)
    assert path.parent == cache / "tokenizers" and path.name.startswith(f"spa-en-{VOCAB}-")
    assert len(path.stem.rsplit("-", 1)[1]) == 12 and first.path == path and trainings == [VOCAB]
    mtime = path.stat().st_mtime_ns
    second = SubwordTokenizer.cached("spa-en", texts, VOCAB)
    assert trainings == [VOCAB], "the second call loads the file"
    assert path.stat().st_mtime_ns == mtime and second.path == path
    assert second.encode(texts[5]) == first.encode(texts[5])
    other = SubwordTokenizer.cached("spa-en", texts[:1500], VOCAB)  # another subset: another file
    assert other.path != path and len(trainings) == 2
    assert sorted(p.name for p in (cache / "tokenizers").iterdir()) == sorted([path.name, other.path.name])


def test_cached_retrains_a_corrupt_file(spa, cache, trainings):
    texts = [s for s, _ in spa.train[:500]]
    path = SubwordTokenizer.cache_path("k", texts, 100)
    path.parent.mkdir()
    path.write_text("garbage")
    with pytest.warns(UserWarning, match="training again"):
        tok = SubwordTokenizer.cached("k", texts, 100)
    assert trainings == [100] and SubwordTokenizer.load(path).encode(texts[0]) == tok.encode(texts[0])


def test_cached_falls_back_when_the_cache_is_read_only(spa, cache, monkeypatch):
    import tempfile

    def read_only(*args, **kwargs):  # what mkstemp does in a read-only folder (root ignores chmod)
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    texts = [t for _, t in spa.train[:500]]
    with pytest.warns(UserWarning, match="could not cache"):
        tok = SubwordTokenizer.cached("spa-es", texts, 100)
    assert tok.path is None and tok.decode(tok.encode(texts[0])) == tok.normalize(texts[0])
    assert not any(p.is_file() for p in cache.rglob("*"))


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can write to read-only folders")
def test_cached_in_a_read_only_folder(spa, cache):
    cache.chmod(0o555)
    try:
        with pytest.warns(UserWarning, match="could not cache"):
            tok = SubwordTokenizer.cached("spa-es", [t for _, t in spa.train[:500]], 100)
    finally:
        cache.chmod(0o755)
    assert tok.path is None and list(cache.iterdir()) == []


def test_cached_when_the_cache_folder_is_blocked(spa, cache):
    (cache / "tokenizers").write_text("a file where the folder should be")
    with pytest.warns(UserWarning, match="could not cache"):
        tok = SubwordTokenizer.cached("x", [s for s, _ in spa.train[:300]], 100)
    assert tok.path is None and len(tok) > 4


# --------------------------------------------------------------------------------------------------
# encode_pairs
# --------------------------------------------------------------------------------------------------
def test_encode_pairs_layout(spa, toks):
    en, es = toks["en"], toks["es"]
    pairs = spa.test[:200]
    arrays, kept = encode_pairs(pairs, en, es, max_src=16, max_tgt=20)
    assert isinstance(arrays, ParallelArrays) and arrays.n == len(kept) > 150
    assert arrays.src.shape == arrays.src_mask.shape == (arrays.n, 16)
    assert arrays.tgt_in.shape == arrays.tgt_out.shape == (arrays.n, 20) and arrays.src_lengths.shape == (arrays.n,)
    assert arrays.src.dtype == arrays.tgt_in.dtype == arrays.tgt_out.dtype == np.int64
    assert arrays.src_mask.dtype == bool and arrays.src_lengths.dtype == np.int64
    for row, i in enumerate(kept):
        s, t = en.encode(pairs[i][0]), es.encode(pairs[i][1])
        assert arrays.src[row].tolist() == [*s, EOS] + [PAD] * (16 - len(s) - 1)
        assert arrays.tgt_in[row].tolist() == [BOS, *t] + [PAD] * (20 - len(t) - 1)
        assert arrays.tgt_out[row].tolist() == [*t, EOS] + [PAD] * (20 - len(t) - 1)
        assert arrays.src_lengths[row] == len(s) + 1
    np.testing.assert_array_equal(arrays.src_mask, arrays.src != PAD)
    np.testing.assert_array_equal(arrays.src_mask.sum(1), arrays.src_lengths)
    np.testing.assert_array_equal(arrays.tgt_in != PAD, arrays.tgt_out != PAD)  # the same length L + 1


def test_encode_pairs_drops_too_long_pairs(toks):
    en, es = toks["en"], toks["es"]
    fits = ("i am happy .", "estoy feliz .")
    n_src, n_tgt = len(en.encode(fits[0])) + 1, len(es.encode(fits[1])) + 1
    pairs = [fits, (fits[0] + " " + fits[0], fits[1]), (fits[0], fits[1] + " " + fits[1]), ("", "")]
    arrays, kept = encode_pairs(pairs, en, es, max_src=n_src, max_tgt=n_tgt)
    assert kept == [0, 3] and arrays.src.shape == (2, n_src) and arrays.tgt_out.shape == (2, n_tgt)
    assert arrays.src[1].tolist() == [EOS] + [PAD] * (n_src - 1) and arrays.tgt_in[1, 0] == BOS
    assert arrays.src_mask[0].all(), "a pair that exactly fits is kept whole"
    _, kept = encode_pairs(pairs, en, es, max_src=n_src - 1, max_tgt=n_tgt)
    assert kept == [3]
    empty, kept = encode_pairs([], en, es, max_src=8, max_tgt=9)
    assert kept == [] and empty.src.shape == (0, 8) and empty.tgt_in.shape == (0, 9)
    for bad in ({"max_src": 0, "max_tgt": 5}, {"max_src": 5, "max_tgt": 2.0}):
        with pytest.raises(ConfigError):
            encode_pairs(pairs, en, es, **bad)


def test_parallel_arrays_subset(spa, toks):
    arrays, _ = encode_pairs(spa.test[:50], toks["en"], toks["es"], max_src=30, max_tgt=40)
    part = arrays.subset([3, 1])
    assert isinstance(part, ParallelArrays) and part.n == 2
    np.testing.assert_array_equal(part.src, arrays.src[[3, 1]])
    np.testing.assert_array_equal(part.tgt_out[1], arrays.tgt_out[1])
    assert arrays.subset(slice(0, 10)).n == 10 and arrays.subset(arrays.src_lengths > 5).n > 0
    assert arrays.subset(4).src.shape == (1, 30)
