"""Data registry, checked cache, downloads and loaders.

Nothing here touches the network: downloads either go to a local ``http.server`` on 127.0.0.1 or to a
monkeypatched downloader. The tests on real data need ``COURSE_DATA_DIR`` to point at a folder holding
the course files (e.g. ``COURSE_DATA_DIR=../shared/data``) and are skipped otherwise.
"""

from __future__ import annotations

import dataclasses
import io
import os
import sys
import threading
import time
import zipfile
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from attention_course import data
from attention_course.core.errors import ConfigError, CourseError, EnvError
from attention_course.data import download, registry

# the datasets pinned by sha256 (the offline copies hold them); Flickr8k, verified by structure: tests/test_flickr8k.py
PINNED = [n for n in data.names() if data.get(n).structure is None and data.get(n).kind == "data"]
MODELS = [n for n in data.names() if data.get(n).kind == "model"]    # under COURSE_MODEL_DIR: tests/ch10
ALL_FILES = [(n, f) for n in PINNED for f in data.get(n).files]


# --------------------------------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_root() -> Path:
    """The data root of the real files; skip when they are not there (never download)."""
    env = os.environ.get("COURSE_DATA_DIR")
    if not env:
        pytest.skip("set COURSE_DATA_DIR to a folder with the course data to run the real-data tests")
    missing = [c for n in PINNED for c in data.verify(n).checks if c.status == "missing"]
    if missing:
        pytest.skip(f"{len(missing)} data files missing under {env}, e.g. {missing[0].path}")
    return Path(env)


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch) -> Path:
    """An empty cache root in COURSE_DATA_DIR."""
    root = tmp_path / "cache"
    root.mkdir()
    monkeypatch.setenv("COURSE_DATA_DIR", str(root))
    return root


def _real_bytes(root: Path, name: str, filename: str) -> bytes:
    return (root / data.get(name).folder / filename).read_bytes()


def _files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _with_urls(monkeypatch, name: str, urls: tuple[str, ...], **changes) -> data.Dataset:
    """Re-register dataset ``name`` with every file downloading from ``urls`` (for this test only)."""
    ds = data.get(name)
    files = {fn: dataclasses.replace(rf, urls=urls, **changes) for fn, rf in ds.files.items()}
    new = dataclasses.replace(ds, files=files)
    monkeypatch.setitem(registry._REGISTRY, name, new)
    return new


class _Server(ThreadingHTTPServer):
    routes: dict[str, tuple[bytes, int]]
    hits: Counter


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        if self.path not in self.server.routes:
            self.send_error(404, "not found")
            return
        body, declared = self.server.routes[self.path]
        self.server.hits[self.path] += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(declared))
        self.end_headers()
        self.wfile.write(body)  # if declared > len(body), the connection then closes early
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args) -> None:
        pass


class _TrickleHandler(BaseHTTPRequestHandler):
    """Declares 1000 bytes, then sends one every 0.2 s, for 10 s at most (a server too slow to finish)."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        stop = time.monotonic() + 10
        try:
            while time.monotonic() < stop:
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:  # the client gave up
            pass
        self.close_connection = True

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def http_server(monkeypatch):
    """A local HTTP server; ``serve(path, body, declared_length=None)`` adds a route, returns its URL."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    server = _Server(("127.0.0.1", 0), _Handler)
    server.routes, server.hits = {}, Counter()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def serve(path: str, body: bytes, declared_length: int | None = None) -> str:
        server.routes[path] = (body, len(body) if declared_length is None else declared_length)
        return base + path

    serve.hits = server.hits  # type: ignore[attr-defined]
    serve.base = base  # type: ignore[attr-defined]
    try:
        yield serve
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# --------------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------------
def test_names_and_folders():
    expected = ["bbc-news", "flickr8k", "multi30k", "ner-gmb", "sentiment", "spa-eng", "stories260K", "tinyshakespeare",
                "wikitext2-subset"]
    assert data.names() == expected
    assert PINNED == [n for n in expected if n not in ("bbc-news", "flickr8k", "stories260K")]
    assert MODELS == ["stories260K"]
    folders = {n: data.get(n).folder for n in data.names()}
    assert folders["sentiment"] == "sentiment-labelled-sentences"
    assert folders["ner-gmb"] == "ner-gmb-kaggle"
    assert folders["multi30k"] == "multi30k-de-en"
    assert folders["wikitext2-subset"] == "wikitext-2-tokens-subset"
    assert len(ALL_FILES) == 17


@pytest.mark.parametrize("name", data.names())
def test_registry_entries_complete(name):
    ds = data.get(name)
    assert ds.license and ds.citation.startswith("@") and ds.description and ds.homepage.startswith("https://")
    for fn, rf in ds.files.items():
        assert fn == rf.filename
        if rf.verify == "sha256":
            assert rf.sha256 is not None and len(rf.sha256) == 64 and int(rf.sha256, 16) >= 0
        else:  # no sha256 known: the dataset's structure check verifies the files
            assert rf.verify == "structure" and rf.sha256 is None and ds.structure is not None
        assert all(u.startswith("https://") for u in rf.urls)
        if rf.archive_member:
            assert all(u.endswith(".zip") for u in rf.urls)


def test_archive_members():
    uci = data.get("sentiment").files
    assert uci["amazon_cells_labelled.txt"].archive_member == (
        "sentiment labelled sentences/amazon_cells_labelled.txt"
    )
    assert data.get("spa-eng").files["spa.txt"].archive_member == "spa-eng/spa.txt"
    assert not data.get("ner-gmb").files["ner_dataset.csv"].urls  # Kaggle: no pretend URL


def test_unknown_dataset_name():
    with pytest.raises(ConfigError) as info:
        data.get("imdb-full")
    msg = str(info.value)
    assert "'imdb-full'" in msg
    for name in data.names():
        assert name in msg
    with pytest.raises(ConfigError, match="imdb-full"):
        data.fetch("imdb-full")


def test_unknown_file_name():
    with pytest.raises(ConfigError, match=r"no file 'train\.txt'.*test\.txt"):
        data.fetch("wikitext2-subset", "train.txt")


def test_dataset_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.get("spa-eng").name = "x"  # type: ignore[misc]


def test_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path))
    assert data.cache_dir() == tmp_path
    assert data.file_path("spa-eng", "spa.txt") == tmp_path / "spa-eng" / "spa.txt"
    monkeypatch.delenv("COURSE_DATA_DIR")
    import pooch

    assert data.cache_dir() == Path(pooch.os_cache("attention-course"))


def test_errors_are_course_errors():
    assert issubclass(data.ChecksumError, CourseError)
    assert issubclass(data.DataUnavailableError, CourseError)


# --------------------------------------------------------------------------------------------------
# real files (COURSE_DATA_DIR)
# --------------------------------------------------------------------------------------------------
def test_verify_every_registered_file(real_root):
    checks = [c for n in PINNED for c in data.verify(n).checks]
    assert all(c.status == "ok" for c in checks), "\n".join(map(str, checks))
    assert len(checks) == 17
    assert "all files OK" in str(data.verify("spa-eng"))


@pytest.mark.parametrize("name", PINNED)
def test_fetch_real(real_root, name):
    paths = data.fetch(name, progressbar=False)
    assert set(paths) == set(data.get(name).files)
    for fn, p in paths.items():
        assert p == real_root / data.get(name).folder / fn and p.is_file()
    one = next(iter(paths))
    assert data.fetch(name, one) == paths[one]


@pytest.mark.parametrize("source", ["amazon", "imdb", "yelp"])
def test_load_sentiment_counts(real_root, source):
    df = data.load_sentiment(source)
    assert list(df.columns) == ["sentence", "label", "source"]
    assert len(df) == 1000
    assert df["label"].value_counts().to_dict() == {0: 500, 1: 500}
    assert str(df["label"].dtype) == "int64"
    assert set(df["source"]) == {source}
    assert df["sentence"].str.len().min() > 0
    assert not df["sentence"].str.contains("\t").any()


def test_load_sentiment_all_and_encoding(real_root):
    df = data.load_sentiment("all")
    assert len(df) == 3000
    assert df["source"].value_counts().to_dict() == {"amazon": 1000, "imdb": 1000, "yelp": 1000}
    text = "".join(df["sentence"])
    assert not any("\x80" <= ch <= "\x9f" for ch in text)  # C1 leftovers repaired
    assert "…" in text and "–" in text and "é" in text
    raw = data.load_sentiment("imdb", fix_c1=False)
    assert "\x85" in "".join(raw["sentence"])
    with pytest.raises(ConfigError, match="amazon"):
        data.load_sentiment("twitter")


def test_load_ner_counts(real_root):
    sents = data.load_ner()
    assert len(sents) == 47_959
    assert sum(len(s.words) for s in sents) == 1_048_575
    assert all(len(s.words) == len(s.pos) == len(s.tags) > 0 for s in sents)
    words, pos, tags = sents[0]
    assert words[:3] == ["Thousands", "of", "demonstrators"] and tags[6] == "B-geo"
    all_tags = {t for s in sents for t in s.tags}
    assert len(all_tags) == 17 and "O" in all_tags
    flat = [w for s in sents for w in s.words]
    assert all(isinstance(w, str) and w for w in flat)  # no NaN, no empty words
    assert "None" in flat
    assert "…" in flat  # cp1252 byte 0x85


def test_load_spa_eng(real_root):
    pairs = data.load_spa_eng()
    assert len(pairs) == 118_964
    assert pairs[0] == ("Go.", "Ve.")
    assert all(len(p) == 2 and p[0] and p[1] for p in pairs)


def test_load_multi30k(real_root):
    train = data.load_multi30k("train")
    assert len(train) == 29_000
    assert train[0][1] == "Two young, White males are outside near many bushes."
    assert len(data.load_multi30k("val")) == 1_014
    assert len(data.load_multi30k("test2016")) == 1_000
    with pytest.raises(ConfigError, match="test2016"):
        data.load_multi30k("test")


def test_load_text_corpora(real_root):
    text = data.load_tinyshakespeare()
    assert len(text) == 1_115_394 and text.startswith("First Citizen:")
    valid, test = data.load_wikitext2_subset("valid"), data.load_wikitext2_subset("test")
    assert (len(valid), len(test)) == (3_760, 4_358)
    assert valid[1] == " = Homarus gammarus = "
    assert not any("\n" in line for line in valid)


# --------------------------------------------------------------------------------------------------
# corrupt files
# --------------------------------------------------------------------------------------------------
def _corrupt_copy(root: Path, real: Path | None) -> Path:
    """Put a corrupted copy of the sentiment readme (1 KB) into the cache ``root``."""
    rf = data.get("sentiment").files["readme.txt"]
    body = (real / "sentiment-labelled-sentences" / "readme.txt").read_bytes() if real else b"x" * 1070
    target = root / "sentiment-labelled-sentences" / rf.filename
    target.parent.mkdir(parents=True)
    target.write_bytes(body[:-10] + b"corrupted!")
    return target


def test_wrong_checksum_moved_aside_not_deleted(real_root, tmp_cache, monkeypatch):
    target = _corrupt_copy(tmp_cache, real_root)
    body, actual = target.read_bytes(), download.sha256sum(target)
    expected = data.get("sentiment").files["readme.txt"].sha256
    assert data.verify("sentiment").checks[-1].status == "mismatch"  # verify only reports...
    assert target.exists()  # ...and does not delete
    monkeypatch.setattr(download, "_download", _must_not_download)
    with pytest.raises(data.ChecksumError) as info:
        data.fetch("sentiment", "readme.txt")
    msg = str(info.value)
    aside = target.with_name(f"readme.txt.mismatch-{actual[:12]}")
    assert str(target) in msg and expected in msg and actual in msg and str(aside) in msg
    assert "Nothing was deleted" in msg and "downloads a fresh copy" in msg
    assert not target.exists() and aside.read_bytes() == body  # moved aside, every byte kept
    assert data.download.mismatch_path(target, actual) == aside


def test_wrong_checksum_of_a_manual_file_is_kept(tmp_cache, monkeypatch):
    """The Kaggle NER csv cannot be downloaded again: a mismatch must not cost the learner the file."""
    target = tmp_cache / "ner-gmb-kaggle" / "ner_dataset.csv"
    target.parent.mkdir()
    target.write_bytes(b"Sentence #,Word,POS,Tag\r\nSentence: 1,Hi,UH,O\r\n")
    actual = download.sha256sum(target)
    monkeypatch.setattr(download, "_download", _must_not_download)
    with pytest.raises(data.ChecksumError) as info:
        data.load_ner()
    msg = str(info.value)
    aside = target.with_name(f"ner_dataset.csv.mismatch-{actual[:12]}")
    assert aside.is_file() and download.sha256sum(aside) == actual and not target.exists()
    assert actual in msg and data.get("ner-gmb").files["ner_dataset.csv"].sha256 in msg and str(aside) in msg
    assert "cannot be downloaded automatically" in msg and "kaggle.com" in msg
    assert "downloads a fresh copy" not in msg  # no false promise
    with pytest.raises(data.DataUnavailableError):  # the next call says where to put the right file
        data.load_ner()
    assert aside.is_file()


def test_wrong_checksum_read_only_folder(tmp_cache, monkeypatch):
    target = _corrupt_copy(tmp_cache, None)
    real_replace = os.replace

    def refuse(src, dst, *args, **kwargs):
        if Path(src) == target:
            raise PermissionError(13, "Permission denied", str(src))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(download.os, "replace", refuse)
    with pytest.raises(data.ChecksumError) as info:
        data.fetch("sentiment", "readme.txt")
    msg = str(info.value)
    assert "could not be moved aside" in msg and "read-only" in msg
    assert download.sha256sum(target) in msg
    assert target.exists()


def test_data_dir_that_is_a_file(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "data.txt"
    not_a_folder.write_text("oops")
    monkeypatch.setenv("COURSE_DATA_DIR", str(not_a_folder))
    for call in (data.cache_dir, lambda: data.fetch("tinyshakespeare"), data.verify):
        with pytest.raises(EnvError, match=r"COURSE_DATA_DIR must be a folder.*data\.txt.*which is a file"):
            call()
    assert issubclass(EnvError, ConfigError)


def test_data_dir_not_writable_names_the_variable(tmp_cache, monkeypatch):
    def refuse(folder, stem):
        raise PermissionError(13, "Permission denied", str(folder))

    monkeypatch.setattr(download, "_new_part", refuse)
    monkeypatch.setattr(download, "_download", _must_not_download)
    with pytest.raises(data.DataUnavailableError) as info:
        data.fetch("tinyshakespeare")
    msg = str(info.value)
    assert "COURSE_DATA_DIR must name a folder this user can write to" in msg and repr(str(tmp_cache)) in msg


# --------------------------------------------------------------------------------------------------
# missing files, no network
# --------------------------------------------------------------------------------------------------
def _must_not_download(url, dest, progressbar=False):
    raise AssertionError(f"unexpected download of {url}")


def _no_network(url, dest, progressbar=False):
    raise ConnectionError(f"Failed to resolve host for {url} (simulated: no network)")


def test_missing_file_without_network(tmp_cache, monkeypatch):
    monkeypatch.setattr(download, "_download", _no_network)
    with pytest.raises(data.DataUnavailableError) as info:
        data.fetch("tinyshakespeare", progressbar=False)
    msg = str(info.value)
    rf = data.get("tinyshakespeare").files["input.txt"]
    for url in rf.urls:
        assert url in msg
    assert str(tmp_cache / "tinyshakespeare" / "input.txt") in msg
    assert rf.sha256 in msg and "COURSE_DATA_DIR" in msg and "ConnectionError" in msg
    assert _files_under(tmp_cache) == []


def test_missing_archive_member_without_network(tmp_cache, monkeypatch):
    monkeypatch.setattr(download, "_download", _no_network)
    with pytest.raises(data.DataUnavailableError) as info:
        data.fetch("spa-eng", "spa.txt", progressbar=False)
    msg = str(info.value)
    assert "https://storage.googleapis.com/download.tensorflow.org/data/spa-eng.zip" in msg
    assert "'spa-eng/spa.txt'" in msg
    assert str(tmp_cache / "spa-eng" / "spa.txt") in msg
    assert _files_under(tmp_cache) == []


def test_ner_has_manual_instructions(tmp_cache, monkeypatch):
    monkeypatch.setattr(download, "_download", _must_not_download)
    with pytest.raises(data.DataUnavailableError) as info:
        data.load_ner()
    msg = str(info.value)
    assert "https://www.kaggle.com/datasets/abhinavwalia95/entity-annotated-corpus" in msg
    assert "ner_dataset.csv" in msg
    assert str(tmp_cache / "ner-gmb-kaggle" / "ner_dataset.csv") in msg
    assert data.get("ner-gmb").files["ner_dataset.csv"].sha256 in msg


def test_unwritable_cache_folder(tmp_cache, monkeypatch):
    def no_space(folder, stem):
        raise PermissionError(13, "Permission denied", str(folder))

    monkeypatch.setattr(download, "_new_part", no_space)
    monkeypatch.setattr(download, "_download", _must_not_download)
    with pytest.raises(data.DataUnavailableError, match="not writable") as info:
        data.fetch("tinyshakespeare")
    assert str(tmp_cache / "tinyshakespeare" / "input.txt") in str(info.value)


# --------------------------------------------------------------------------------------------------
# interrupted and successful downloads
# --------------------------------------------------------------------------------------------------
def test_interrupted_download_monkeypatched(tmp_cache, monkeypatch):
    def half_then_fail(url, dest, progressbar=False):
        Path(dest).write_bytes(b"First Citizen:\nBefore we proceed")
        raise ConnectionResetError("connection reset by peer (simulated)")

    monkeypatch.setattr(download, "_download", half_then_fail)
    with pytest.raises(data.DataUnavailableError, match="ConnectionResetError"):
        data.fetch("tinyshakespeare")
    assert _files_under(tmp_cache) == []


def test_keyboard_interrupt_leaves_nothing(tmp_cache, monkeypatch):
    def interrupted(url, dest, progressbar=False):
        Path(dest).write_bytes(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(download, "_download", interrupted)
    with pytest.raises(KeyboardInterrupt):
        data.fetch("spa-eng", progressbar=False)
    assert _files_under(tmp_cache) == []


def test_interrupted_http_download(tmp_cache, http_server, monkeypatch):
    body = b"First Citizen:\n" * 1000
    url = http_server("/input.txt", body[:5000], declared_length=len(body))  # server lies, then hangs up
    _with_urls(monkeypatch, "tinyshakespeare", (url,))
    with pytest.raises(data.DataUnavailableError) as info:
        data.fetch("tinyshakespeare", progressbar=False)
    msg = str(info.value)
    assert url in msg and str(tmp_cache / "tinyshakespeare" / "input.txt") in msg
    assert "IncompleteRead" in msg or "ChunkedEncodingError" in msg, msg
    assert http_server.hits["/input.txt"] == 1
    assert _files_under(tmp_cache) == []


def test_http_404(tmp_cache, http_server, monkeypatch):
    url = http_server.base + "/nowhere.txt"
    _with_urls(monkeypatch, "tinyshakespeare", (url,))
    with pytest.raises(data.DataUnavailableError, match="404"):
        data.fetch("tinyshakespeare", progressbar=False)
    assert _files_under(tmp_cache) == []


@pytest.fixture
def trickle_url(monkeypatch):
    """The URL of a local server that trickles one byte every 0.2 s (stopped after the test)."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _TrickleHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/input.txt"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_download_deadline(tmp_cache, trickle_url, monkeypatch):
    """A server that never stops trickling bytes cannot hold a download past COURSE_DOWNLOAD_TIMEOUT."""
    monkeypatch.setenv("COURSE_DOWNLOAD_TIMEOUT", "1")
    _with_urls(monkeypatch, "tinyshakespeare", (trickle_url,))
    with pytest.raises(data.DataUnavailableError) as info:   # the server would trickle for minutes
        data.fetch("tinyshakespeare", progressbar=False)
    msg = str(info.value)
    assert f"{trickle_url} did not finish downloading within 1 s" in msg and "COURSE_DOWNLOAD_TIMEOUT" in msg
    assert _files_under(tmp_cache) == []  # the .part is gone


@pytest.mark.parametrize("value", ["abc", "0", "-5", "inf"])
def test_bad_download_timeout(tmp_cache, monkeypatch, value):
    monkeypatch.setenv("COURSE_DOWNLOAD_TIMEOUT", value)
    monkeypatch.setattr(download, "_download", _must_not_download)
    with pytest.raises(EnvError, match=rf"COURSE_DOWNLOAD_TIMEOUT must be a positive number.*'{value}'"):
        data.fetch("tinyshakespeare")
    assert _files_under(tmp_cache) == []


def test_wrong_content_downloaded(tmp_cache, http_server, monkeypatch):
    url = http_server("/input.txt", b"not shakespeare\n")
    _with_urls(monkeypatch, "tinyshakespeare", (url,))
    with pytest.raises(data.ChecksumError) as info:
        data.fetch("tinyshakespeare", progressbar=False)
    msg = str(info.value)
    assert url in msg and data.get("tinyshakespeare").files["input.txt"].sha256 in msg
    assert _files_under(tmp_cache) == []


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in members.items():
            zf.writestr(name, body)
    return buf.getvalue()


def test_download_archive_from_local_server(real_root, tmp_cache, http_server, monkeypatch):
    ds = data.get("sentiment")
    members = {rf.archive_member: _real_bytes(real_root, "sentiment", fn) for fn, rf in ds.files.items()}
    members["__MACOSX/sentiment labelled sentences/._readme.txt"] = b"resource fork"
    dead = http_server.base + "/gone.zip"  # first mirror fails (404), the second works
    url = http_server("/sentiment.zip", _zip(members))
    _with_urls(monkeypatch, "sentiment", (dead, url))

    paths = data.fetch("sentiment", progressbar=False)

    assert http_server.hits["/sentiment.zip"] == 1  # one download serves all four members
    assert _files_under(tmp_cache) == sorted(f"sentiment-labelled-sentences/{fn}" for fn in ds.files)
    for fn, path in paths.items():
        assert path == tmp_cache / ds.folder / fn
        assert download.sha256sum(path) == ds.files[fn].sha256
    assert data.verify("sentiment").ok
    assert len(data.load_sentiment("imdb")) == 1000


def test_download_rezipped_archive(real_root, tmp_cache, http_server, monkeypatch):
    """A mirror that re-zips the file under another folder still works (the member is found by name)."""
    body = _real_bytes(real_root, "spa-eng", "_about.txt")
    url = http_server("/spa-eng.zip", _zip({"other-folder/_about.txt": body, "other-folder/x.txt": b"x"}))
    _with_urls(monkeypatch, "spa-eng", (url,))
    path = data.fetch("spa-eng", "_about.txt", progressbar=False)
    assert path.read_bytes() == body
    assert _files_under(tmp_cache) == ["spa-eng/_about.txt"]


def test_archive_without_member(tmp_cache, http_server, monkeypatch):
    url = http_server("/spa-eng.zip", _zip({"README": b"nothing here"}))
    _with_urls(monkeypatch, "spa-eng", (url,))
    with pytest.raises(data.DataUnavailableError, match="no member 'spa-eng/spa.txt'"):
        data.fetch("spa-eng", "spa.txt", progressbar=False)
    assert _files_under(tmp_cache) == []


def test_plain_download_from_local_server(real_root, tmp_cache, http_server, monkeypatch):
    body = _real_bytes(real_root, "wikitext2-subset", "README")
    url = http_server("/README", body)
    _with_urls(monkeypatch, "wikitext2-subset", (url,))
    path = data.fetch("wikitext2-subset", "README", progressbar=True)
    assert path == tmp_cache / "wikitext-2-tokens-subset" / "README" and path.read_bytes() == body
    assert _files_under(tmp_cache) == ["wikitext-2-tokens-subset/README"]
    assert data.fetch("wikitext2-subset", "README") == path  # second call: cached, no request
    assert http_server.hits["/README"] == 1


# --------------------------------------------------------------------------------------------------
# the course's numeric environment variables
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5", "inf"])
def test_env_error_positive_int(monkeypatch, value):
    monkeypatch.setenv("COURSE_SOME_COUNT", value)
    with pytest.raises(EnvError, match=rf"COURSE_SOME_COUNT must be a positive integer \(things\); "
                                       rf"got COURSE_SOME_COUNT='{value}'"):
        EnvError.positive("COURSE_SOME_COUNT", 1, int, "things")


def test_env_error_positive_values(monkeypatch):
    monkeypatch.delenv("COURSE_SOME_COUNT", raising=False)
    assert EnvError.positive("COURSE_SOME_COUNT", 7) == 7
    monkeypatch.setenv("COURSE_SOME_COUNT", " 3 ")
    assert EnvError.positive("COURSE_SOME_COUNT", 7) == 3
    monkeypatch.setenv("COURSE_SOME_COUNT", "0.25")
    assert EnvError.positive("COURSE_SOME_COUNT", 7.0, float) == 0.25


def test_bad_torch_threads(monkeypatch):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("COURSE_TORCH_THREADS is read only on a CPU-only machine")
    from attention_course import setup
    from attention_course.notebook import frameworks, profile

    threads = torch.get_num_threads()
    try:
        for value, message in (("abc", r"COURSE_TORCH_THREADS must be a positive integer.*'abc'"),
                               ("1000", rf"COURSE_TORCH_THREADS=1000 asks for more threads than this machine's "
                                        rf"{os.cpu_count()} CPU cores")):
            monkeypatch.setenv("COURSE_TORCH_THREADS", value)
            with pytest.raises(ConfigError, match=message):
                setup(frameworks="pytorch", banner=False)
    finally:
        profile.use(None)
        frameworks.use(None)
    assert torch.get_num_threads() == threads


SETUP_THREADS = """
import tensorflow as tf
from attention_course import setup
setup(frameworks="keras", banner=False)
print(tf.config.threading.get_intra_op_parallelism_threads())
"""


@pytest.mark.parametrize("value, threads", [(None, 1), ("2", 2)])
def test_setup_gives_tensorflow_one_thread_unless_told(value, threads):
    """A kernel's TensorFlow runs each operation on one CPU thread (``TF_NUM_INTRAOP_THREADS`` changes it); in a fresh
    interpreter, as a kernel starts, since TensorFlow fixes its threads when it first runs."""
    import subprocess

    tf = pytest.importorskip("tensorflow")
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("the threads are set only on a CPU-only machine")
    env = {k: v for k, v in os.environ.items() if k != "TF_NUM_INTRAOP_THREADS"}
    env.update({} if value is None else {"TF_NUM_INTRAOP_THREADS": value})
    out = subprocess.run([sys.executable, "-c", SETUP_THREADS], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split()[-1] == str(threads)


def test_bad_tensorflow_threads(monkeypatch):
    pytest.importorskip("tensorflow")
    from attention_course.notebook import session

    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "two")
    with pytest.raises(ConfigError, match=r"TF_NUM_INTRAOP_THREADS must be a positive integer.*'two'"):
        session.tensorflow_threads()


def test_bad_sizes_and_encoding_are_refused_before_loading(monkeypatch):
    monkeypatch.setattr(data.loaders, "fetch", _must_not_download)
    with pytest.raises(ConfigError, match=r"'cp1252' \(the default\) or 'latin-1'; got encoding='klingon'"):
        data.load_ner(encoding="klingon")
    for kwargs, needle in [({"max_len": 0}, "max_len must be a positive integer; got 0"),
                           ({"max_len": 8, "n_train": 0}, r"n_train must be a positive integer or None \(all\)"),
                           ({"max_len": 8, "n_test": -1}, "n_test must be")]:
        with pytest.raises(ConfigError, match=needle):
            data.prepare_ner(**kwargs, sentences=[])
    with pytest.raises(ConfigError, match="n_val must be a positive integer; got 0"):
        data.prepare_sentiment(0, n_val=0)
    with pytest.raises(ConfigError, match="max_len must be a positive integer; got 2.5"):
        data.prepare_sentiment(0, max_len=2.5)


def test_n_val_larger_than_the_data(real_root):
    with pytest.raises(ConfigError, match=r"n_val=5000 leaves no training sentence.*2000 sentences"):
        data.prepare_sentiment(0, n_val=5000)


def test_a_download_killed_mid_way_is_reported_then_cleared(tmp_cache, real_root, monkeypatch, capsys):
    """SIGKILL leaves no chance to clean up: verify() reports the unfinished file, the next fetch removes it."""
    import signal
    import subprocess
    import sys

    script = ("import time\nfrom attention_course import data\nfrom attention_course.data import download\n"
              "def slow(url, dest, progressbar=False):\n"
              "    open(dest, 'wb').write(b'First Citizen:'); print('started', flush=True); time.sleep(120)\n"
              "download._download = slow\ndata.fetch('tinyshakespeare', progressbar=False)\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "COURSE_DATA_DIR": str(tmp_cache)})
    try:
        assert child.stdout.readline().strip() == "started"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    folder = tmp_cache / "tinyshakespeare"
    (folder / "input.txt.backup.part").write_text("a file of the user's that only looks like a part file")
    left = [p for p in folder.iterdir() if p.name.startswith(f"input.txt.{child.pid}-")]
    assert len(left) == 1 and left[0].read_bytes() == b"First Citizen:"
    report = data.verify("tinyshakespeare")
    assert [c.path for c in report.problems if c.status == "leftover"] == left
    assert "unfinished download" in str(report)

    real = _real_bytes(real_root, "tinyshakespeare", "input.txt")
    monkeypatch.setattr(download, "_download", lambda url, dest, progressbar=False: Path(dest).write_bytes(real))
    path = data.fetch("tinyshakespeare", "input.txt", progressbar=False)
    assert path.read_bytes() == real and not left[0].exists()
    assert str(left[0]) in capsys.readouterr().err
    assert (folder / "input.txt.backup.part").is_file()                 # not the course's: left alone
    assert not [c for c in data.verify("tinyshakespeare").problems if c.status == "leftover"]


def test_a_folder_where_a_data_file_belongs_is_named_not_called_missing(tmp_cache, monkeypatch):
    (tmp_cache / "tinyshakespeare" / "input.txt").mkdir(parents=True)
    monkeypatch.setattr(download, "_download", _must_not_download)
    check = data.verify("tinyshakespeare").checks[0]
    assert (check.status, check.actual) == ("invalid", "a folder, not a file")
    with pytest.raises(data.DataUnavailableError, match=r"input\.txt is a folder.*move or rename"):
        data.fetch("tinyshakespeare", progressbar=False)
    assert (tmp_cache / "tinyshakespeare" / "input.txt").is_dir()


@pytest.mark.parametrize("name", ["tinyshakespeare", "flickr8k"])
def test_an_offline_fetch_leaves_the_data_folder_as_it_was(tmp_cache, monkeypatch, name):
    def offline(*args, **kwargs):
        raise ConnectionError("no network (simulated)")

    monkeypatch.setattr(download, "_download", offline)
    monkeypatch.setattr(download._Session, "archive", offline)
    with pytest.raises(data.DataUnavailableError):
        data.fetch(name, progressbar=False)
    assert list(tmp_cache.iterdir()) == []                   # not even an empty dataset folder


def test_a_model_lives_under_the_model_root(tmp_path, monkeypatch):
    """Pretrained weights (``kind="model"``) are looked for and checked under ``COURSE_MODEL_DIR``, not the data
    root; a wrong file there is refused with both hashes, and moved aside, never deleted."""
    monkeypatch.setenv("COURSE_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path / "data"))
    path = data.file_path("stories260K", "tok512.bin")
    assert path == tmp_path / "models" / "stories260K" / "tok512.bin"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a tokenizer")
    report = data.verify("stories260K")
    assert {c.filename: c.status for c in report.checks} == {"stories260K.bin": "missing", "tok512.bin": "mismatch"}
    assert f"root: {tmp_path / 'models'}" in str(report)
    with pytest.raises(download.ChecksumError, match="tok512.bin"):
        data.fetch("stories260K", "tok512.bin")
    assert not path.exists() and list(path.parent.glob("tok512.bin.mismatch-*")), "moved aside, not deleted"

