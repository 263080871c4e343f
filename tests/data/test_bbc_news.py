"""BBC News (Chapter 11): the structure check finds a changed, missing or extra article; the split keeps one copy of
each text and puts no text in two parts; sentences and words as the chapter reads them. The tests on the real
articles need ``COURSE_DATA_DIR`` (skipped otherwise)."""

import os
import shutil
from pathlib import Path

import pytest

from attention_course import data
from attention_course.core.errors import ConfigError, StructureError
from attention_course.data import bbc_news


@pytest.fixture(scope="module")
def folder() -> Path:
    root = os.environ.get("COURSE_DATA_DIR")
    path = Path(root or ".") / "bbc-news" / "bbc"
    if not root or not path.is_dir():
        pytest.skip("set COURSE_DATA_DIR to a folder with the course data (bbc-news/bbc) to run this test")
    return path


def test_the_real_copy_passes_and_loads(folder):
    assert data.get("bbc-news").structure is bbc_news.check_bbc_news
    assert bbc_news.check_bbc_news({"bbc": folder}) == folder
    items = bbc_news.articles(folder)
    assert len(items) == 2225 and [sum(a.label == i for a in items) for i in range(5)] == list(bbc_news.COUNTS.values())
    first = items[0]
    assert first.file == "business/001.txt" and first.title == "Ad sales boost Time Warner profit"
    assert first.body.startswith("Quarterly profits at US media giant TimeWarner jumped 76%")
    assert "£" in next(a.body for a in items if a.file == "sport/199.txt")         # its one Latin-1 byte


def test_the_split_has_each_text_once_and_in_one_part(folder):
    items = bbc_news.articles(folder)
    train, val, test = bbc_news.split(items, seed=0)
    texts = [{(a.title, a.body) for a in part} for part in (train, val, test)]
    assert sum(map(len, texts)) == len(train) + len(val) + len(test) == 2127       # 98 exact repeats dropped
    assert not (texts[0] & texts[1] or texts[0] & texts[2] or texts[1] & texts[2])
    assert {a.label for a in test} == set(range(5)) and 200 <= len(test) <= 225
    assert [a.file for a in bbc_news.split(items, seed=0)[2]] == [a.file for a in test]      # seeded
    assert [a.file for a in bbc_news.split(items, seed=1)[2]] != [a.file for a in test]
    with pytest.raises(ConfigError, match="shares"):
        bbc_news.split(items, (0.6, 0.5))


def test_a_changed_missing_or_extra_article_is_named(folder, tmp_path):
    copy = tmp_path / "bbc"
    shutil.copytree(folder, copy)
    (copy / "tech" / "001.txt").write_text("Something else\n\nentirely.\n")
    with pytest.raises(StructureError, match="not the right contents"):
        bbc_news.check_bbc_news({"bbc": copy})
    (copy / "tech" / "001.txt").unlink()
    with pytest.raises(StructureError, match="tech: 400 articles, expected 401"):
        bbc_news.check_bbc_news({"bbc": copy})
    shutil.copy(folder / "tech" / "001.txt", copy / "tech" / "001.txt")
    (copy / "weather").mkdir()
    (copy / "weather" / "001.txt").write_text("Rain\n\nToday.\n")
    with pytest.raises(StructureError, match="unknown folders weather"):
        bbc_news.check_bbc_news({"bbc": copy})
    with pytest.raises(StructureError, match="is not a folder"):
        bbc_news.check_bbc_news({"bbc": tmp_path / "nowhere"})


def test_sentences_and_words():
    text = 'Mr Smith said: "It rose 2.5%." Then it fell! Was it 3? yes\nA new line. 2004 was good.'
    assert bbc_news.sentences(text) == ['Mr Smith said: "It rose 2.5%."', "Then it fell!", "Was it 3? yes",
                                        "A new line.", "2004 was good."]
    assert bbc_news.words("Profits at TimeWarner's firm rose 76% to $1.13bn (£600m).") == [
        "profits", "at", "timewarner's", "firm", "rose", "76", "%", "to", "$", "1", "13bn", "£", "600m"]
