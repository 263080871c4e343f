"""Bad input to the data registry and downloads, and to the course's environment variables.

Every probe works in a temporary cache (``COURSE_DATA_DIR`` is set for its duration only) and never touches the
network: the one download goes to a local server on 127.0.0.1. A probe that expects the course's error checks
what it says, and what is left on disk, before letting it escape.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import Probe


def _set(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@contextmanager
def env(**values):
    """Set (or with ``None`` unset) environment variables for the duration of the block."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            _set(k, v)
        yield
    finally:
        for k, v in saved.items():
            _set(k, v)


@contextmanager
def cache():
    """An empty temporary data cache in ``COURSE_DATA_DIR``."""
    with tempfile.TemporaryDirectory() as tmp, env(COURSE_DATA_DIR=tmp, COURSE_DOWNLOAD_TIMEOUT=None):
        yield Path(tmp)


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def expect(error, run, check=lambda err: None):
    """Run ``run()``; it must raise ``error``, which ``check`` inspects before it escapes to the runner."""
    try:
        run()
    except error as err:
        check(err)
        raise
    raise AssertionError(f"no {error.__name__} was raised")


def _mismatch(dataset: str, folder: str, filename: str, body: bytes):
    from attention_course import data

    with cache() as root:
        path = root / folder / filename
        path.parent.mkdir()
        path.write_bytes(body)
        actual = data.sha256sum(path)

        def check(err):
            msg, aside = str(err), data.download.mismatch_path(path, actual)
            assert aside.read_bytes() == body, "the file with the wrong sha256 was not kept"
            assert str(path) in msg and actual in msg and data.get(dataset).file(filename).sha256 in msg, msg
            assert str(aside) in msg, msg

        expect(data.ChecksumError, lambda: data.fetch(dataset, filename), check)


def manual_file_mismatch(fw):
    """The hand-placed Kaggle NER csv with the wrong content: moved aside, never deleted."""
    _mismatch("ner-gmb", "ner-gmb-kaggle", "ner_dataset.csv", b"Sentence #,Word,POS,Tag\r\n")


def downloadable_file_mismatch(fw):
    """A downloadable file with the wrong content: moved aside too (no silent deletion)."""
    _mismatch("tinyshakespeare", "tinyshakespeare", "input.txt", b"not shakespeare\n")


def data_dir_is_a_file(fw):
    from attention_course import data
    from attention_course.core.errors import EnvError

    with tempfile.NamedTemporaryFile() as f, env(COURSE_DATA_DIR=f.name):
        def check(err):
            assert "COURSE_DATA_DIR must be a folder" in str(err) and repr(f.name) in str(err), str(err)

        expect(EnvError, lambda: data.fetch("tinyshakespeare"), check)


def data_dir_not_writable(fw):
    from attention_course import data

    with cache() as root:
        folder = root / "read-only"
        folder.mkdir(mode=0o555)
        with env(COURSE_DATA_DIR=str(folder)):
            if os.access(folder, os.W_OK):  # root writes anywhere: make the folder unusable another way
                (folder / "tinyshakespeare").write_text("a file where the dataset folder should be")

            def check(err):
                assert "COURSE_DATA_DIR must name a folder this user can write to" in str(err), str(err)

            try:
                expect(data.DataUnavailableError, lambda: data.fetch("tinyshakespeare"), check)
            finally:
                folder.chmod(0o755)


def bad_download_timeout(fw):
    from attention_course import data
    from attention_course.core.errors import EnvError

    with cache() as root, env(COURSE_DOWNLOAD_TIMEOUT="abc"):
        def check(err):
            assert "COURSE_DOWNLOAD_TIMEOUT must be a positive number" in str(err) and "'abc'" in str(err), str(err)
            assert not files_under(root), files_under(root)

        expect(EnvError, lambda: data.fetch("tinyshakespeare"), check)


class _Trickle(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        stop = time.monotonic() + 8
        try:
            while time.monotonic() < stop:
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass

    def log_message(self, *args):
        pass


def trickling_server(fw):
    """A server that sends one byte every 0.2 s, with COURSE_DOWNLOAD_TIMEOUT=1: the fetch gives up in time."""
    from attention_course import data
    from attention_course.data import registry

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/input.txt"
    ds = data.get("tinyshakespeare")
    slow = dataclasses.replace(ds, files={f: dataclasses.replace(rf, urls=(url,)) for f, rf in ds.files.items()})
    registry._REGISTRY[ds.name] = slow
    start = time.monotonic()

    def check(err):
        assert time.monotonic() - start < 5, "the deadline did not stop the download"
        assert f"{url} did not finish downloading within 1 s" in str(err), str(err)
        assert not files_under(root), files_under(root)

    try:
        with cache() as root, env(COURSE_DOWNLOAD_TIMEOUT="1", NO_PROXY="127.0.0.1", no_proxy="127.0.0.1"):
            expect(data.DataUnavailableError, lambda: data.fetch("tinyshakespeare", progressbar=False), check)
    finally:
        registry._REGISTRY[ds.name] = ds
        server.shutdown()
        server.server_close()


def unknown_dataset(fw):
    from attention_course import data

    data.fetch("imdb-full")


def unknown_file(fw):
    from attention_course import data

    data.fetch("wikitext2-subset", "train.txt")


def dataset_name_not_a_string(fw):
    from attention_course import data

    data.fetch(["spa-eng"])


def unknown_ner_encoding(fw):
    from attention_course import data

    data.load_ner(encoding="klingon")


def prepare_ner_zero_length(fw):
    from attention_course import data

    data.prepare_ner(max_len=0, sentences=[])


def prepare_ner_zero_train(fw):
    from attention_course import data

    data.prepare_ner(max_len=8, n_train=0, sentences=[])


def prepare_sentiment_zero_val(fw):
    from attention_course import data

    data.prepare_sentiment(0, n_val=0)


def bad_torch_threads(fw):
    """COURSE_TORCH_THREADS=abc: ``ac.setup`` names the variable (read on CPU-only machines)."""
    import torch

    from attention_course import setup
    from attention_course.core.errors import EnvError
    from attention_course.notebook import frameworks, profile

    def check(err):
        assert "COURSE_TORCH_THREADS must be a positive integer" in str(err) and "'abc'" in str(err), str(err)

    if torch.cuda.is_available():
        return
    try:
        with env(COURSE_TORCH_THREADS="abc"):
            expect(EnvError, lambda: setup(frameworks="pytorch", banner=False), check)
    finally:
        profile.use(None)
        frameworks.use(None)


PROBES = [
    Probe("data", "checksum mismatch, manual file (NER)", manual_file_mismatch, False),
    Probe("data", "checksum mismatch, downloadable file", downloadable_file_mismatch, False),
    Probe("data", "COURSE_DATA_DIR is a file", data_dir_is_a_file, False),
    Probe("data", "COURSE_DATA_DIR not writable", data_dir_not_writable, False),
    Probe("data", "COURSE_DOWNLOAD_TIMEOUT=abc", bad_download_timeout, False),
    Probe("data", "server trickling bytes (deadline 1 s)", trickling_server, False),
    Probe("data", "unknown dataset", unknown_dataset, False),
    Probe("data", "unknown file of a dataset", unknown_file, False),
    Probe("data", "dataset name not a string", dataset_name_not_a_string, False),
    Probe("data", "load_ner(encoding='klingon')", unknown_ner_encoding, False),
    Probe("data", "prepare_ner(max_len=0)", prepare_ner_zero_length, False),
    Probe("data", "prepare_ner(n_train=0)", prepare_ner_zero_train, False),
    Probe("data", "prepare_sentiment(n_val=0)", prepare_sentiment_zero_val, False),
    Probe("env", "COURSE_TORCH_THREADS=abc", bad_torch_threads, False),
]
