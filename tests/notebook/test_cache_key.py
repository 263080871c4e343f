"""`make test` and `make book` share one execution cache: the settings that only choose tests leave its key alone."""

from tools import notebook_cache


def test_the_chapters_make_test_selects_do_not_change_the_cache_key(monkeypatch):
    monkeypatch.delenv("COURSE_TEST_CHAPTERS", raising=False)
    book = notebook_cache.cache_key()
    monkeypatch.setenv("COURSE_TEST_CHAPTERS", "")            # what `make test` exports without CHAPTERS
    assert notebook_cache.cache_key() == book
    monkeypatch.setenv("COURSE_MODEL_DIR", "/elsewhere/models")   # the checksummed models, copied elsewhere
    monkeypatch.setenv("COURSE_DATA_DIR", "/elsewhere/data")
    assert notebook_cache.cache_key() == book
    monkeypatch.setenv("COURSE_PROFILE", "full")              # a setting that changes the outputs does
    assert notebook_cache.cache_key() != book
