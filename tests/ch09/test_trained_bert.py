"""Chapter 9's pretrained small BERT (book/09-bert/checkpoints/small-bert-full): its files are the recorded ones,
both frameworks load it and fill in the blanks alike, and its guesses are those its record holds."""

import pytest

import attention_course as ac
from attention_course.ch09_bert import pretrained
from attention_course.ch09_bert import pretraining as c9

pytestmark = pytest.mark.chapter(9)
NAME = "09-bert/checkpoints/small-bert-full"


def test_both_frameworks_fill_in_the_recorded_guesses():
    record = ac.results.load(NAME + ".json")
    folder = ac.trained.folder(NAME)
    weights, tokenizer = pretrained.read_bert(folder), pretrained.tokenizer(folder)
    sentences = [row["sentence"] for row in record["fill_in"]]
    for fw in (ac.torch, ac.keras):
        guesses = c9.fill_in(fw, fw.load_pretrained(weights, masked_lm=True), tokenizer, sentences)
        for got, want in zip(guesses, record["fill_in"], strict=True):
            assert [w for w, _ in got["guesses"]] == [w for w, _ in want["guesses"]], (fw.__name__, got, want)
            assert [p for _, p in got["guesses"]] == pytest.approx([p for _, p in want["guesses"]], abs=1e-3)
