"""Tokenizer, vocabulary and padding."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from attention_course.core import text
from attention_course.core.errors import ConfigError, CourseError, InputError
from attention_course.core.text import BOS, EOS, PAD, SPECIALS, UNK, Padded, Vocab, pad_batch, tokenize

CORPUS = [
    "The cat sat on the mat.",
    "The dog sat on the log!",
    "A cat and a dog.",
]


@pytest.fixture
def vocab() -> Vocab:
    return Vocab.build(tokenize(s) for s in CORPUS)


def test_special_ids():
    assert (PAD, UNK, BOS, EOS) == (0, 1, 2, 3)
    assert SPECIALS == ("<pad>", "<unk>", "<bos>", "<eos>")
    v = Vocab()
    assert len(v) == 4 and v.tokens == list(SPECIALS)
    assert [v[t] for t in SPECIALS] == [0, 1, 2, 3]


def test_tokenize():
    assert tokenize("Don't panic, Arthur!") == ["don't", "panic", ",", "arthur", "!"]
    assert tokenize("  ¿Dónde está?  ") == ["¿", "dónde", "está", "?"]
    assert tokenize("") == []
    assert tokenize("x2 = 3.5") == ["x2", "=", "3", ".", "5"]


def test_build_order_is_frequency_then_alphabetical(vocab):
    # the: 4, .: 2, a: 2, cat: 2, dog: 2, on: 2, sat: 2, then the 1-count tokens alphabetically
    assert vocab.tokens[4:] == ["the", ".", "a", "cat", "dog", "on", "sat", "!", "and", "log", "mat"]
    assert len(vocab) == 15


def test_build_is_deterministic():
    sents = [tokenize(s) for s in CORPUS]
    a = Vocab.build(sents)
    b = Vocab.build(list(reversed(sents)))
    assert a == b and a.tokens == b.tokens


def test_min_freq_and_max_size():
    sents = [tokenize(s) for s in CORPUS]
    assert Vocab.build(sents, min_freq=2).tokens[4:] == ["the", ".", "a", "cat", "dog", "on", "sat"]
    small = Vocab.build(sents, max_size=6)
    assert len(small) == 6 and small.tokens[4:] == ["the", "."]
    assert small["cat"] == UNK
    with pytest.raises(ConfigError):
        Vocab.build(sents, max_size=3)
    with pytest.raises(ConfigError):
        Vocab.build(sents, min_freq=0)
    with pytest.raises(ConfigError, match="token lists"):
        Vocab.build(CORPUS)


def test_specials_in_data_are_not_duplicated():
    v = Vocab.build([["<pad>", "<eos>", "x"]])
    assert v.tokens == [*SPECIALS, "x"]


def test_encode_decode_round_trip(vocab):
    tokens = tokenize("The dog sat on the mat.")
    ids = vocab.encode(tokens)
    assert len(ids) == len(tokens) and UNK not in ids
    assert vocab.decode(ids) == tokens
    with_specials = vocab.encode(tokens, add_bos=True, add_eos=True)
    assert with_specials[0] == BOS and with_specials[-1] == EOS and with_specials[1:-1] == ids
    assert vocab.decode(with_specials) == tokens
    assert vocab.decode(with_specials, strip_special=False) == ["<bos>", *tokens, "<eos>"]
    assert vocab.decode(np.array(with_specials + [PAD, PAD])) == tokens


def test_unknown_tokens(vocab):
    ids = vocab.encode(["the", "zebra"])
    assert ids == [vocab["the"], UNK]
    assert vocab.decode(ids) == ["the", "<unk>"]  # <unk> is kept: it stands for a real token
    assert "zebra" not in vocab and "the" in vocab
    with pytest.raises(ConfigError, match="tokenize"):
        vocab.encode("the cat")


def test_lookup(vocab):
    assert vocab.lookup(vocab["cat"]) == "cat"
    assert vocab.lookup(np.int64(PAD)) == "<pad>"
    with pytest.raises(IndexError, match="outside"):
        vocab.lookup(len(vocab))
    with pytest.raises(IndexError):
        vocab.decode([999])


def test_vocab_is_indexed_by_tokens_only(vocab):
    """vocab[5] used to give UNK (no token is the int 5): read as an id, it silently became another id."""
    assert vocab["zebra"] == UNK and vocab[np.str_("cat")] == vocab["cat"] > 3
    for id_ in (5, np.int64(5)):
        with pytest.raises(InputError, match=r"vocab\[...\] takes a token \(a string\) and gives its id; got "
                                             r"int(64)? 5; the token of id 5 is vocab.lookup\(5\)"):
            vocab[id_]
    with pytest.raises(InputError, match=r"takes a token \(a string\).*got NoneType None$"):
        vocab[None]


@pytest.mark.parametrize("index, found", [(2.7, "2.7 (float)"), (True, "True (bool)"), ("cat", "'cat' (str)"),
                                          (np.float32(1.5), "np.float32(1.5) (float32)")])
def test_lookup_takes_whole_ids_only(vocab, index, found):
    """lookup(2.7) used to give the token of id 2: a float id was cut to a whole one."""
    with pytest.raises(InputError, match=re.escape(f"Vocab.lookup(index) must hold integer ids; found {found}")):
        vocab.lookup(index)


def test_lookup_takes_numbers_arrays_and_tensors_of_one_whole_id(vocab):
    import torch

    assert [vocab.lookup(i) for i in (2, 2.0, np.int32(2), np.array(2), torch.tensor(2))] == ["<bos>"] * 5


def test_an_id_outside_the_vocabulary_is_the_courses_error_and_an_index_error(vocab):
    for call in (lambda: vocab.lookup(len(vocab)), lambda: vocab.lookup(-1), lambda: vocab.decode([3, 999])):
        with pytest.raises(InputError, match=r"id -?\d+ is outside the vocabulary \(ids 0..14\)") as caught:
            call()
        assert isinstance(caught.value, IndexError)


@pytest.mark.parametrize("pad, needle", [
    (1.5, "pad must be a whole number, the id that pads the rows (PAD = 0); got 1.5 (float)"),
    (True, "pad must be a whole number, the id that pads the rows (PAD = 0); got True (bool)"),
    ("0", "pad must be a whole number, the id that pads the rows (PAD = 0); got '0' (str)"),
])
def test_pad_batch_refuses_a_pad_that_is_not_a_whole_number(pad, needle):
    """pad=1.5 used to pad with 1: the float cut to an id without a word."""
    with pytest.raises(ConfigError, match=re.escape(needle)):
        pad_batch([[5, 6], [7]], pad=pad)


@pytest.mark.parametrize("seqs, pad, where", [
    ([[5, 6, 7], [8, 6]], 6, "sequence 0 holds it at position 1"),
    ([[5, 6], [8, 0, 0]], PAD, "sequence 1 holds it at position 1"),      # a row padded before
])
def test_pad_batch_refuses_a_pad_that_is_also_a_real_id(seqs, pad, where):
    """A pad that is also an id of the sequences: the padded ids could not tell it from a pad (ids != pad would hide
    the token), and a row padded before would count its pads as tokens."""
    with pytest.raises(InputError, match=re.escape(f"pad={pad} is also an id of the sequences ({where})")):
        pad_batch(seqs, pad=pad)


def test_pad_batch_takes_numpy_pads_and_refuses_max_len_that_is_not_whole():
    assert pad_batch([[5, 6], [7]], pad=np.int64(-1)).ids.tolist() == [[5, 6], [7, -1]]
    for max_len in (2.5, True, "3"):
        with pytest.raises(ConfigError, match=r"max_len must be a whole number >= 0 \(or None: the longest\)"):
            pad_batch([[5, 6], [7]], max_len=max_len)


def test_to_dict_from_dict(vocab):
    d = json.loads(json.dumps(vocab.to_dict()))
    again = Vocab.from_dict(d)
    assert again == vocab and again.tokens == vocab.tokens
    with pytest.raises(ConfigError):
        Vocab.from_dict({"specials": ["<s>", "</s>"], "tokens": []})
    assert "size=15" in repr(vocab)


def test_pad_batch_shapes_and_lengths():
    seqs = [[5, 6, 7], [8], [], [9, 10]]
    out = pad_batch(seqs)
    assert isinstance(out, Padded)
    ids, lengths = out
    assert ids.shape == (4, 3) and ids.dtype == np.int64 and lengths.dtype == np.int64
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0], [0, 0, 0], [9, 10, 0]]
    assert lengths.tolist() == [3, 1, 0, 2]
    assert ((ids != PAD) == (np.arange(3)[None, :] < lengths[:, None])).all()


def test_pad_batch_max_len_and_truncate():
    seqs = [np.array([1, 2, 3, 4, 5]), [6, 7]]
    post = pad_batch(seqs, max_len=3)
    assert post.ids.tolist() == [[1, 2, 3], [6, 7, 0]] and post.lengths.tolist() == [3, 2]
    pre = pad_batch(seqs, max_len=3, truncate="pre")
    assert pre.ids.tolist() == [[3, 4, 5], [6, 7, 0]]
    wide = pad_batch(seqs, max_len=7, pad=-1)
    assert wide.ids.shape == (2, 7) and wide.ids[1].tolist() == [6, 7, -1, -1, -1, -1, -1]
    with pytest.raises(ConfigError):
        pad_batch(seqs, truncate="middle")


def test_pad_batch_on_the_left_keeps_the_last_ids():
    seqs = [[1, 2, 3, 4, 5], [6, 7], []]
    left = pad_batch(seqs, max_len=3, truncate="pre", padding="pre")
    assert left.ids.tolist() == [[3, 4, 5], [0, 6, 7], [0, 0, 0]] and left.lengths.tolist() == [3, 2, 0]
    assert (left.ids[:2, -1] != PAD).all()                     # the last position is a real id
    with pytest.raises(ConfigError, match="padding must be"):
        pad_batch(seqs, padding="left")


def test_pad_batch_empty():
    ids, lengths = pad_batch([])
    assert ids.shape == (0, 0) and lengths.shape == (0,)
    assert pad_batch([], max_len=4).ids.shape == (0, 4)


def test_end_to_end(vocab):
    batch = [vocab.encode(tokenize(s), add_bos=True, add_eos=True) for s in CORPUS]
    ids, lengths = pad_batch(batch)
    assert ids.shape == (3, max(len(b) for b in batch))
    for row, n, sentence in zip(ids, lengths, CORPUS, strict=True):
        assert vocab.decode(row[:n]) == tokenize(sentence)


@pytest.mark.parametrize("call, message", [
    (lambda v: text.tokenize(None), "tokenize expects a string; got NoneType"),
    (lambda v: text.tokenize(3), "tokenize expects a string; got int"),
    (lambda v: text.Vocab.build([None]), "each token list of Vocab.build must be a list of string tokens"),
    (lambda v: text.Vocab.build([["a", 1]]), "must hold strings; found 1"),
    (lambda v: text.Vocab([1, 2]), r"Vocab\(tokens\) must hold strings"),
    (lambda v: v.encode([1, 2]), r"Vocab.encode\(tokens\) must hold strings; found 1"),
    (lambda v: v.encode(None), r"Vocab.encode\(tokens\) must be a list of string tokens"),
    (lambda v: v.decode(None), r"Vocab.decode\(ids\) must be a sequence of integer ids"),
    (lambda v: v.decode(["a"]), r"must hold integer ids; found 'a'"),
    (lambda v: v.decode([1.5]), r"must hold integer ids; found 1.5"),
    (lambda v: text.pad_batch([[1, 2], None]), "sequence 1 of pad_batch must be a sequence of integer ids"),
    (lambda v: text.pad_batch([["a"]]), "sequence 0 of pad_batch must hold integer ids"),
    (lambda v: text.Vocab.from_dict({}), "not a saved vocabulary"),
])
def test_bad_text_input_is_named_in_the_courses_words(call, message):
    vocab = text.Vocab.build([["a", "b"]])
    with pytest.raises(CourseError, match=message):
        call(vocab)
