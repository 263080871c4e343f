"""The data cache: where files live, how they are downloaded and how they are checked.

Layout: ``<cache_dir()>/<dataset folder>/<file name>``, for example
``~/.cache/attention-course/spa-eng/spa.txt``. The root is the environment variable ``COURSE_DATA_DIR``
when it is set (point it at a folder of pre-downloaded files to work offline), else pooch's per-user
cache folder for ``attention-course``. ``COURSE_DOWNLOAD_TIMEOUT`` bounds each download (seconds, default 300).

Guarantees:

* a file returned by :func:`fetch` has the sha256 recorded in the registry;
* a cached file with the wrong sha256 is never used and never deleted: it is moved aside to
  ``<file>.mismatch-<first 12 hex digits of its sha256>`` next to it (some files, like the Kaggle NER csv,
  cannot be downloaded again) and :class:`ChecksumError` names the file, both hashes and what to do;
* downloads go to a temporary ``*.part`` file in the same folder and are moved into place with
  :func:`os.replace` only after the check, so an interrupted, failed or timed-out download leaves nothing
  behind;
* a dataset verified by structure (no sha256 known, see :mod:`~attention_course.data.registry`) is checked as a
  whole: what is missing is extracted into a ``.<folder>.*.part`` staging folder inside the dataset's folder, the
  structure check runs on the staged files together with those already in place, and only then is each staged
  file or folder moved into place with :func:`os.replace`. A failed download or check removes the staging folder.
  A copy already in place that fails the check is refused with :class:`StructureError` naming the problem, and
  left as it is.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import overload

from attention_course.core.errors import ChecksumError, CourseError, DataUnavailableError, EnvError, StructureError  # noqa: F401  (re-exported)
from attention_course.data.registry import Dataset, RemoteFile, get, names

__all__ = [
    "ENV_VAR",
    "MODEL_VAR",
    "ChecksumError",
    "DataUnavailableError",
    "FileCheck",
    "StructureError",
    "VerifyReport",
    "cache_dir",
    "download_timeout",
    "fetch",
    "file_path",
    "mismatch_path",
    "model_dir",
    "root_of",
    "sha256sum",
    "verify",
]

ENV_VAR = "COURSE_DATA_DIR"
TIMEOUT_VAR = "COURSE_DOWNLOAD_TIMEOUT"
DEFAULT_DOWNLOAD_TIMEOUT_S = 300.0
_CHUNK = 1 << 20
_TIMEOUT_S = 60  # the longest wait for a connection or for the next bytes


def cache_dir() -> Path:
    """Root of the data cache: ``$COURSE_DATA_DIR`` if set, else pooch's user cache ``attention-course``.

    Raises :class:`~attention_course.core.errors.EnvError` when ``COURSE_DATA_DIR`` names something that is not a
    folder (a file, say); a folder that does not exist yet is fine (downloads create it)."""
    env = os.environ.get(ENV_VAR)
    if env:
        root = Path(env).expanduser()
        if root.exists() and not root.is_dir():
            raise EnvError(f"{ENV_VAR} must be a folder (the root of the data cache, holding "
                           f"'<dataset folder>/<file>'); got {ENV_VAR}={env!r}, which is a file")
        return root
    import pooch

    return Path(pooch.os_cache("attention-course"))


MODEL_VAR = "COURSE_MODEL_DIR"


def model_dir() -> Path:
    """Root of the pretrained models (a registry entry of ``kind="model"``): ``$COURSE_MODEL_DIR`` if set, else a
    ``models`` folder in pooch's user cache ``attention-course``."""
    env = os.environ.get(MODEL_VAR)
    if env:
        root = Path(env).expanduser()
        if root.exists() and not root.is_dir():
            raise EnvError(f"{MODEL_VAR} must be a folder (holding '<model folder>/<file>'); got {MODEL_VAR}={env!r}, "
                           "which is a file")
        return root
    import pooch

    return Path(pooch.os_cache("attention-course")) / "models"


def root_of(ds: Dataset) -> Path:
    """The root a dataset's folder lives under: the models' for pretrained weights, else the data cache."""
    return model_dir() if ds.kind == "model" else cache_dir()


def _variable(ds: Dataset) -> str:
    return MODEL_VAR if ds.kind == "model" else ENV_VAR


def derived_dir() -> Path:
    """Where what is computed from the data is kept (tokenizer vocabularies, training checkpoints):
    ``$COURSE_CACHE_DIR``, else the user cache ``attention-course``; never the folder of ``COURSE_DATA_DIR``, which
    may be a shared or read-only copy of the data."""
    env = os.environ.get("COURSE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import pooch

    return Path(pooch.os_cache("attention-course"))


def download_timeout() -> float:
    """The most seconds one download may take: ``$COURSE_DOWNLOAD_TIMEOUT``, default 300."""
    return EnvError.positive(TIMEOUT_VAR, DEFAULT_DOWNLOAD_TIMEOUT_S, float, "the most seconds one download may take")


def _root_origin(var: str = ENV_VAR) -> str:
    env = os.environ.get(var)
    return f"from {var}={env!r}" if env else f"the default cache; {var} is not set"


def file_path(name: str, filename: str) -> Path:
    """Where file ``filename`` of dataset ``name`` lives (or must be put) in the cache."""
    ds = get(name)
    ds.file(filename)
    return root_of(ds) / ds.folder / filename


def sha256sum(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of the file at ``path``, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------------------------------
# messages
# --------------------------------------------------------------------------------------------------
def _manual_hint(ds: Dataset, rf: RemoteFile, path: Path) -> str:
    if rf.verify == "structure":
        return structure_hint(ds, path.parent)
    member = f" (inside the .zip it is {rf.archive_member!r}; extract it)" if rf.archive_member else ""
    return (
        f"To fix it by hand, put the file {rf.filename!r}{member} at exactly\n"
        f"    {path}\n"
        f"with sha256 {rf.sha256}.\n"
        f"Or set the environment variable {_variable(ds)} to a folder that holds "
        f"'{ds.folder}/{rf.filename}' (the root now is {path.parent.parent}, {_root_origin(_variable(ds))})."
    )


def structure_hint(ds: Dataset, folder: Path) -> str:
    urls = dict.fromkeys(u for rf in ds.files.values() for u in rf.urls)
    entries = ", ".join(f"{fn}/" if (rf.archive_member or "").endswith("/") else fn for fn, rf in ds.files.items())
    return (
        "To fix it by hand, download\n" + "".join(f"    {u}\n" for u in urls) +
        f"extract them, and put {entries} in exactly\n    {folder}\n"
        "(no sha256 is known for these files: they are checked by their structure, lines and counts).\n"
        f"Or set the environment variable {ENV_VAR} to a folder that holds '{ds.folder}/' with those files (the "
        f"data root now is {folder.parent}, {_root_origin()})."
    )


def _short(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------------------------------
# temporary files
# --------------------------------------------------------------------------------------------------
def _new_part(folder: Path, stem: str) -> Path:
    """A new, empty ``<stem>.<pid>-<random>.part`` file in ``folder``: the process id tells a later call whether
    the download that wrote it is still running (see :func:`_stale_parts`).

    Same folder, hence same filesystem, so the final ``os.replace`` is atomic."""
    fd, name = tempfile.mkstemp(prefix=f"{stem}.{os.getpid()}-", suffix=".part", dir=folder)
    os.close(fd)
    return Path(name)


_PART = re.compile(r"^(?P<stem>.+?)\.(?:(?P<pid>\d+)-)?[A-Za-z0-9_]{6,}\.part$")
_OLD_PART_S = 3600.0       # a part file without a process id (an older version's) older than this is stale


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:        # exists, owned by someone else
        return True
    return True


def _stale_parts(folder: Path, stem: str | None = None, legacy: bool = True) -> list[Path]:
    """The unfinished downloads in ``folder`` (of file ``stem``, or of any file) that no running process owns:
    files and staging folders this module named ``<stem>.<pid>-<random>.part`` whose process has ended (a download
    killed mid-way), and with ``legacy`` the ones an older version named without a process id, over an hour old
    (reported, never removed: the name alone does not prove whose they are)."""
    if not folder.is_dir():
        return []
    stale = []
    for path in folder.iterdir():
        m = _PART.match(path.name)
        if not m or (stem is not None and m["stem"] not in (stem, f".{stem}")):
            continue
        if m["pid"] is not None:
            if int(m["pid"]) != os.getpid() and not _alive(int(m["pid"])):
                stale.append(path)
        elif legacy:
            try:
                if time.time() - path.stat().st_mtime > _OLD_PART_S:
                    stale.append(path)
            except OSError:
                continue
    return sorted(stale)


def _clear_stale_parts(folder: Path, stem: str) -> None:
    """Remove what killed downloads of ``stem`` left in ``folder`` (they are this module's own files), saying so."""
    for path in _stale_parts(folder, stem, legacy=False):
        try:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        except OSError:
            continue
        print(f"Removed {path}: an unfinished download left by an interrupted run.", file=sys.stderr)


def _remove_quietly(path: Path | None) -> None:
    if path is not None:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError:  # pragma: no cover - nothing more we can do
            pass


@contextmanager
def _part_file(folder: Path, stem: str) -> Iterator[Path]:
    """Yield a fresh ``.part`` path; it is removed on exit unless it was moved away."""
    part = _new_part(folder, stem)
    try:
        yield part
    finally:
        _remove_quietly(part)


# --------------------------------------------------------------------------------------------------
# downloading
# --------------------------------------------------------------------------------------------------
def _tqdm_available() -> bool:
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


def _download(url: str, dest: Path, progressbar: bool = False) -> None:
    """Download ``url`` into the (existing, empty) file ``dest`` within :func:`download_timeout` seconds.

    The lowest level of the downloader: it raises whatever the transfer raises (connection errors,
    HTTP errors, incomplete reads, :class:`TimeoutError` past the deadline). Cleaning up ``dest`` is the
    caller's job. The body is read with ``read1``, which returns as soon as *some* bytes arrive, so the
    deadline is checked even when a server trickles a byte now and then.
    """
    import requests

    limit = download_timeout()
    deadline = time.monotonic() + limit
    wait = min(_TIMEOUT_S, limit)
    bar = None
    with requests.get(url, stream=True, timeout=(wait, wait)) as response, open(dest, "wb") as out:
        response.raise_for_status()
        if progressbar and _tqdm_available():
            from tqdm.auto import tqdm

            size = int(response.headers.get("Content-Length") or 0) or None
            bar = tqdm(total=size, unit="B", unit_scale=True, desc=PurePosixPath(url).name, leave=False)
        read = getattr(response.raw, "read1", response.raw.read)  # older urllib3: no read1, coarser deadline
        try:
            while chunk := read(64 * 1024, decode_content=True):
                out.write(chunk)
                if bar is not None:  # bytes over the wire: the Content-Length counts them compressed, if so
                    bar.update(response.raw.tell() - bar.n)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{url} did not finish downloading within {limit:g} s: the server sends "
                                       f"too slowly (try later, or allow more seconds with {TIMEOUT_VAR})")
        finally:
            if bar is not None:
                bar.close()


class _MemberNotFound(Exception):
    pass


def _open_member(zf: zipfile.ZipFile, member: str, depth: int = 0):
    """Open ``member`` of ``zf`` for reading. Falls back to the one entry with the same base name
    (mirrors sometimes re-zip under another folder), then to zips nested one level deep."""
    names_ = [n for n in zf.namelist() if not n.startswith("__MACOSX/") and not n.endswith("/")]
    if member in names_:
        return zf.open(member)
    base = PurePosixPath(member).name
    same = [n for n in names_ if PurePosixPath(n).name == base]
    if len(same) == 1:
        return zf.open(same[0])
    if depth == 0:
        for inner in (n for n in names_ if n.lower().endswith(".zip")):
            try:
                return _open_member(zipfile.ZipFile(zf.open(inner)), member, depth + 1)
            except (_MemberNotFound, zipfile.BadZipFile):
                continue
    shown = ", ".join(names_[:10]) + (" ..." if len(names_) > 10 else "")
    raise _MemberNotFound(f"the archive has no member {member!r} (it has: {shown})")


def _extract(archive: Path, member: str, dest: Path) -> None:
    """Copy ``member`` of the zip ``archive`` into the file ``dest``."""
    with zipfile.ZipFile(archive) as zf, _open_member(zf, member) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out, _CHUNK)


def _extract_folder(archive: Path, member: str, dest: Path) -> None:
    """Copy the files directly inside the folder ``member`` (``"name/"``) of the zip ``archive`` into the new folder
    ``dest``. The folder may sit under another one in the archive (found by its name); ``__MACOSX`` is skipped."""
    name = member.rstrip("/")
    with zipfile.ZipFile(archive) as zf:
        files = [n for n in zf.namelist() if not n.startswith("__MACOSX/") and not n.endswith("/")
                 and PurePosixPath(n).parent.name == name]
        if not files:
            raise _MemberNotFound(f"the archive has no folder {member!r} with files in it")
        dest.mkdir()
        for n in files:
            with zf.open(n) as src, open(dest / PurePosixPath(n).name, "wb") as out:
                shutil.copyfileobj(src, out, _CHUNK)


@dataclass
class _Session:
    """State of one :func:`fetch` call: archives already downloaded (several files may come from
    the same zip), removed when the call ends, whatever happens."""

    progressbar: bool
    archives: dict[str, Path] = field(default_factory=dict)

    def archive(self, url: str, folder: Path) -> Path:
        if url not in self.archives:
            stem = PurePosixPath(url.split("?")[0]).name or "download"
            part = _new_part(folder, stem)
            try:
                _download(url, part, self.progressbar)
            except BaseException:
                _remove_quietly(part)
                raise
            self.archives[url] = part
        return self.archives[url]

    def close(self) -> None:
        for part in self.archives.values():
            _remove_quietly(part)
        self.archives.clear()


def mismatch_path(path: Path, actual: str) -> Path:
    """Where a cached file with the wrong sha256 ``actual`` is moved aside: ``<file>.mismatch-<12 hex>``."""
    return path.with_name(f"{path.name}.mismatch-{actual[:12]}")


def _checksum_mismatch(ds: Dataset, rf: RemoteFile, path: Path, actual: str) -> ChecksumError:
    """Move the bad file aside (never delete it: it may be a hand-placed file that cannot be downloaded
    again) and return the error that says what happened and what to do."""
    aside = mismatch_path(path, actual)
    try:
        os.replace(path, aside)  # same folder: atomic; a file already there has the same sha256, same bytes
        fate = (f"Nothing was deleted: it was moved aside to\n    {aside}\n"
                "(delete that copy yourself once you no longer need it). ")
        fate += ("The next call downloads a fresh copy." if rf.urls else
                 "This file cannot be downloaded automatically; put the right one in its place by hand.")
    except OSError as exc:
        fate = (f"It could not be moved aside ({_short(exc)}; the folder is probably read-only) and is still "
                "there, unused; replace it by hand.")
    return ChecksumError(
        f"The data file {path} (dataset {ds.name!r}) is corrupt or not the expected version:\n"
        f"    expected sha256 {rf.sha256}\n"
        f"    actual   sha256 {actual}\n"
        f"{fate}\n" + (f"{rf.note}\n" if not rf.urls and rf.note else "") + _manual_hint(ds, rf, path)
    )


def _check_writable(ds: Dataset, rf: RemoteFile, folder: Path, path: Path) -> None:
    """Raise :class:`DataUnavailableError` unless ``folder`` can be created and written (downloads go there)."""
    download_timeout()  # a bad COURSE_DOWNLOAD_TIMEOUT is reported as such, not as a failed download
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _remove_quietly(_new_part(folder, rf.filename))  # probe: is the folder writable?
    except OSError as exc:
        var = _variable(ds)
        env = os.environ.get(var)
        fix = (f"{var} must name a folder this user can write to (downloads go there); got {var}={env!r}.\n"
               if env else "")
        raise DataUnavailableError(
            f"The data file {rf.filename!r} of dataset {ds.name!r} is missing and cannot be downloaded "
            f"because the folder {folder} is not writable ({_short(exc)}).\n{fix}" + _manual_hint(ds, rf, path)
        ) from exc


def _ensure(ds: Dataset, rf: RemoteFile, root: Path, session: _Session) -> Path:
    """Return the checked path of ``rf``, downloading it first if it is missing."""
    folder = root / ds.folder
    path = folder / rf.filename
    if path.is_dir():
        raise DataUnavailableError(
            f"{path} is a folder, where the data file {rf.filename!r} of dataset {ds.name!r} belongs; nothing was "
            "changed: move or rename that folder, and the next call downloads the file.\n" + _manual_hint(ds, rf, path))
    if path.exists():
        actual = sha256sum(path)
        if actual != rf.sha256:
            raise _checksum_mismatch(ds, rf, path, actual)
        return path

    if not rf.urls:
        raise DataUnavailableError(
            f"The data file {rf.filename!r} of dataset {ds.name!r} is not in the cache and cannot be "
            f"downloaded automatically.\n{rf.note}\n" + _manual_hint(ds, rf, path)
        )
    created = _created_folders(folder)
    try:
        return _download_file(ds, rf, folder, path, session)
    finally:
        _remove_if_empty(created)


def _created_folders(folder: Path) -> list[Path]:
    """The folders on the way to ``folder`` that do not exist yet (deepest first): created by a download, they are
    removed again if it fails and leaves them empty, so an offline call leaves the data folder as it was."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_if_empty(folders: list[Path]) -> None:
    for folder in folders:
        try:
            folder.rmdir()                 # only if empty: a downloaded file keeps it
        except OSError:
            return


def _download_file(ds: Dataset, rf: RemoteFile, folder: Path, path: Path, session: _Session) -> Path:
    """Download ``rf`` into ``path`` through a ``.part`` file, checked before it is moved into place."""
    _check_writable(ds, rf, folder, path)
    _clear_stale_parts(folder, rf.filename)

    failures: list[str] = []
    bad_hash = False
    for url in rf.urls:
        where = f"{url} (member {rf.archive_member!r})" if rf.archive_member else url
        if session.progressbar:
            print(f"Downloading {rf.filename} ({ds.name}) from {url}", file=sys.stderr)
        with _part_file(folder, rf.filename) as part:
            try:
                if rf.archive_member:
                    _extract(session.archive(url, folder), rf.archive_member, part)
                else:
                    _download(url, part, session.progressbar)
            except Exception as exc:  # network, HTTP status, bad zip, missing member, disk full...
                failures.append(f"{where}: {_short(exc)}")
                continue
            actual = sha256sum(part)
            if actual != rf.sha256:
                bad_hash = True
                failures.append(f"{where}: downloaded, but its sha256 is {actual}, expected {rf.sha256}")
                continue
            os.replace(part, path)
            return path

    tried = "\n".join(f"  - {f}" for f in failures)
    if bad_hash:
        raise ChecksumError(
            f"The data file {rf.filename!r} of dataset {ds.name!r} was downloaded, but not with the "
            f"expected content (nothing was kept). Tried:\n{tried}\n" + _manual_hint(ds, rf, path)
        )
    raise DataUnavailableError(
        f"Could not download the data file {rf.filename!r} of dataset {ds.name!r} "
        f"(no network, the host is down or too slow). Tried:\n{tried}\n" + _manual_hint(ds, rf, path)
    )


def _check_structure(ds: Dataset, paths: dict[str, Path], folder: Path, what: str) -> None:
    """Run the dataset's structure check on ``paths``; :class:`StructureError` saying ``what`` happened if it fails."""
    assert ds.structure is not None
    try:
        ds.structure(paths)
    except StructureError as exc:
        raise StructureError(f"The copy of dataset {ds.name!r} in {folder} is incomplete or not the expected "
                             f"version: {exc}\n{what}\n" + structure_hint(ds, folder)) from None


def _ensure_structured(ds: Dataset, root: Path, session: _Session) -> dict[str, Path]:
    """Every file of ``ds``, a dataset verified by structure, checked as a whole; the missing ones are downloaded,
    staged and moved into place only once the whole copy passes the check (see the module's docstring)."""
    folder = root / ds.folder
    final = {fn: folder / fn for fn in ds.files}
    missing = [rf for fn, rf in ds.files.items() if not final[fn].exists()]
    if not missing:
        _check_structure(ds, final, folder, "Nothing was changed: complete or replace the files by hand, or delete "
                                            f"{folder} to download a fresh copy on the next call.")
        return final
    created = _created_folders(folder)
    try:
        return _download_structured(ds, missing, folder, final, session)
    finally:
        _remove_if_empty(created)


def _download_structured(ds: Dataset, missing: list[RemoteFile], folder: Path, final: dict[str, Path],
                         session: _Session) -> dict[str, Path]:
    _check_writable(ds, missing[0], folder, final[missing[0].filename])
    _clear_stale_parts(folder, ds.folder)
    stage = Path(tempfile.mkdtemp(prefix=f".{ds.folder}.{os.getpid()}-", suffix=".part", dir=folder))
    try:
        staged = {}
        for rf in missing:
            failures = []
            for url in rf.urls:
                if session.progressbar:
                    print(f"Downloading {rf.filename} ({ds.name}) from {url}", file=sys.stderr)
                dest, member = stage / rf.filename, rf.archive_member
                try:
                    if member is None:
                        _download(url, dest, session.progressbar)
                    elif member.endswith("/"):
                        _extract_folder(session.archive(url, folder), member, dest)
                    else:
                        _extract(session.archive(url, folder), member, dest)
                except Exception as exc:  # network, HTTP status, bad zip, missing member, disk full...
                    if dest.is_dir():
                        shutil.rmtree(dest, ignore_errors=True)
                    _remove_quietly(dest)
                    failures.append(f"{url}" + (f" (member {rf.archive_member!r})" if rf.archive_member else "")
                                    + f": {_short(exc)}")
                    continue
                staged[rf.filename] = dest
                break
            else:
                tried = "\n".join(f"  - {f}" for f in failures) or "  (it has no download address)"
                raise DataUnavailableError(
                    f"Could not download {rf.filename!r} of dataset {ds.name!r} (no network, the host is down or too "
                    f"slow); nothing was kept. Tried:\n{tried}\n" + structure_hint(ds, folder))
        _check_structure(ds, {**final, **staged}, folder,
                         "The download was not kept (the files already there were left as they are).")
        for fn, path in staged.items():
            os.replace(path, final[fn])
        return final
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        session.close()  # the archives (a gigabyte for images) go as soon as the copy is in place


@overload
def fetch(name: str, filename: str, *, progressbar: bool | None = None) -> Path: ...
@overload
def fetch(name: str, filename: None = None, *, progressbar: bool | None = None) -> dict[str, Path]: ...
def fetch(
    name: str, filename: str | None = None, *, progressbar: bool | None = None
) -> Path | dict[str, Path]:
    """Make sure the files of dataset ``name`` are in the cache, checked, and return their paths.

    Args:
        name: a registered dataset (see :func:`~attention_course.data.names`).
        filename: one file of it; ``None`` for all its files.
        progressbar: show download progress (default: when ``tqdm`` is installed).

    Returns:
        the :class:`~pathlib.Path` of ``filename``, or ``{filename: Path}`` for all files.

    Raises:
        ChecksumError: a cached file has the wrong sha256 (it is moved aside to ``<file>.mismatch-<hash>``,
            never deleted), or a downloaded one has (it is not kept).
        StructureError: (a :class:`ChecksumError`) a dataset verified by structure fails its check; a copy in the
            cache is left as it is, a download is not kept. The message names the problem.
        DataUnavailableError: a file is missing and could not be downloaded; the message lists the
            URLs tried and the exact path where to put the file by hand.
        ConfigError: unknown dataset or file name; ``COURSE_DATA_DIR`` or ``COURSE_DOWNLOAD_TIMEOUT`` unusable.
    """
    ds = get(name)
    wanted = [ds.file(filename)] if filename is not None else list(ds.files.values())
    session = _Session(progressbar=_tqdm_available() if progressbar is None else progressbar)
    root = root_of(ds)
    try:
        if ds.structure is not None:  # checked as a whole: every file, whichever was asked for
            paths = _ensure_structured(ds, root, session)
        else:
            paths = {rf.filename: _ensure(ds, rf, root, session) for rf in wanted}
    finally:
        session.close()
    return paths[filename] if filename is not None else paths


# --------------------------------------------------------------------------------------------------
# verification
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileCheck:
    """The state of one cached file: ``status`` is ``"ok"``, ``"missing"``, ``"mismatch"`` (wrong sha256),
    ``"invalid"`` (``actual`` says why: a folder where the file belongs, or for a dataset verified by structure,
    whose ``expected`` is ``"structure"``, a failed check), ``"unchecked"`` (present, but other files of the
    dataset are missing) or ``"leftover"`` (an unfinished download a killed run left behind)."""

    dataset: str
    filename: str
    path: Path
    expected: str
    actual: str | None
    status: str


@dataclass(frozen=True)
class VerifyReport:
    """The result of :func:`verify`: one :class:`FileCheck` per registered file."""

    checks: tuple[FileCheck, ...]

    @property
    def ok(self) -> bool:
        """True when every file is present with the expected sha256."""
        return all(c.status == "ok" for c in self.checks)

    @property
    def problems(self) -> tuple[FileCheck, ...]:
        """The checks that are not ``"ok"``."""
        return tuple(c for c in self.checks if c.status != "ok")

    def __str__(self) -> str:
        roots = dict.fromkeys(root_of(get(c.dataset)) for c in self.checks) or {cache_dir(): None}
        lines = [f"root: {root}" for root in roots]
        for c in self.checks:
            extra = f" (sha256 {c.actual}, expected {c.expected})" if c.status == "mismatch" else ""
            extra = f" ({c.actual})" if c.status == "invalid" else extra
            extra = (" (an unfinished download left by an interrupted run; the next fetch of its file removes it, or "
                     "delete it)") if c.status == "leftover" else extra
            lines.append(f"{c.status:8s} {c.dataset}/{c.filename}{extra}")
        lines.append("all files OK" if self.ok else f"{len(self.problems)} problem(s)")
        return "\n".join(lines)


def verify(name: str | None = None) -> VerifyReport:
    """Check the sha256 of every cached file of dataset ``name`` (of all datasets if ``None``); a dataset verified
    by structure is checked as a whole by its structure check.

    Read-only: nothing is downloaded or removed. Use :func:`fetch` to repair. Unfinished downloads that a killed
    run left in a dataset's folder are reported as ``"leftover"`` (the next :func:`fetch` of that file removes them).
    """
    datasets = [get(name)] if name is not None else [get(n) for n in names()]
    checks: list[FileCheck] = []
    for ds in datasets:
        root = root_of(ds)
        if ds.structure is not None:
            checks += _verify_structured(ds, root)
            continue
        for rf in ds.files.values():
            assert rf.sha256 is not None
            path = root / ds.folder / rf.filename
            if path.is_dir():
                checks.append(FileCheck(ds.name, rf.filename, path, rf.sha256, "a folder, not a file", "invalid"))
                continue
            if not path.is_file():
                checks.append(FileCheck(ds.name, rf.filename, path, rf.sha256, None, "missing"))
                continue
            actual = sha256sum(path)
            status = "ok" if actual == rf.sha256 else "mismatch"
            checks.append(FileCheck(ds.name, rf.filename, path, rf.sha256, actual, status))
        checks += [FileCheck(ds.name, part.name, part, "", None, "leftover")
                   for part in _stale_parts(root / ds.folder)]
    return VerifyReport(tuple(checks))


def _verify_structured(ds: Dataset, root: Path) -> list[FileCheck]:
    assert ds.structure is not None
    paths = {fn: root / ds.folder / fn for fn in ds.files}
    if not all(p.exists() for p in paths.values()):
        return [FileCheck(ds.name, fn, p, "structure", None, "unchecked" if p.exists() else "missing")
                for fn, p in paths.items()]
    try:
        ds.structure(paths)
    except StructureError as exc:
        reason = " ".join(str(exc).split())[:300]  # one line
        return [FileCheck(ds.name, fn, p, "structure", reason, "invalid") for fn, p in paths.items()]
    return [FileCheck(ds.name, fn, p, "structure", None, "ok") for fn, p in paths.items()]
