"""Chapter 6's Flickr8k path: the registry entry verified by structure, the structure check, the loader, the
download (staged, checked, moved into place), the feature grids and whether the path can run here.

Nothing touches the network and no pretrained weights are loaded: every test builds a small Flickr8k-shaped folder
(a few tiny JPEGs made with Pillow, the four text files in the real format), downloads are served from memory by a
monkeypatched downloader, and the feature tests use randomly initialised networks.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import sys
import types
import urllib.error
import zipfile
from pathlib import Path

import numpy as np
import pytest

from attention_course import data
from attention_course.ch06_image_captioning import experiment as c6
from attention_course.ch06_image_captioning import flickr8k as f8k
from attention_course.ch06_image_captioning import image_features as imf
from attention_course.ch09_bert.pretrained import ModelUnavailableError
from attention_course.core.errors import ConfigError, CourseError
from attention_course.data import download, registry

pytestmark = pytest.mark.chapter(6)   # Chapter 6: `make test CHAPTERS=...` picks by it

Image = pytest.importorskip("PIL.Image")

SPLIT_IMAGES = {"train": ["1000_a.jpg", "1001_b.jpg", "1002_c.jpg"], "dev": ["2000_d.jpg", "2001_e.jpg"],
                "test": ["3000_f.jpg", "3001_g.jpg"]}
QUIRK = "2258277193_586949ec62.jpg.1"  # captioned, in no split, no file: as in the real caption file
SMALL = {"lines": 40, "images": 8, "train": 3, "dev": 2, "test": 2}
TEXT_URL, IMAGES_URL = (data.get("flickr8k").file(n).urls[0] for n in (f8k.CAPTIONS, f8k.IMAGES))


def _captions(image: str) -> list[str]:
    stem = image.split("_")[1][0]
    return [f"A dog named {stem.upper()} runs , number {n} ." if n % 2 else f"Two People walk ({stem}) by the sea"
            for n in range(5)]


def _jpeg(seed: int) -> bytes:
    colour = tuple(int(c) for c in np.random.default_rng(seed).integers(0, 256, 3))
    buf = io.BytesIO()
    Image.new("RGB", (24, 16), colour).save(buf, "JPEG")
    return buf.getvalue()


def _texts() -> dict[str, bytes]:
    names = [*(i for images in SPLIT_IMAGES.values() for i in images), QUIRK]
    token = "".join(f"{name}#{n}\t{c}\n" for name in names for n, c in enumerate(_captions(name)))
    files = {f8k.CAPTIONS: token}
    files |= {f8k.SPLITS[s]: "".join(f"{i}\n" for i in images) for s, images in SPLIT_IMAGES.items()}
    return {name: text.encode() for name, text in files.items()}


def image_input() -> dict[str, bytes]:
    return {name: _jpeg(i) for i, name in enumerate(i for images in SPLIT_IMAGES.values() for i in images)}


def _write(folder: Path) -> Path:
    (folder / f8k.IMAGES).mkdir(parents=True)
    for name, body in _texts().items():
        (folder / name).write_bytes(body)
    for name, body in image_input().items():
        (folder / f8k.IMAGES / name).write_bytes(body)
    return folder


@pytest.fixture
def folder(tmp_path) -> Path:
    """A small Flickr8k-shaped folder: 7 images in three splits, 8 captioned images, 40 caption lines."""
    return _write(tmp_path / "flickr8k-small")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """Empty data and derived caches (COURSE_DATA_DIR, COURSE_CACHE_DIR); the data root is returned."""
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path / "derived"))
    return tmp_path / "data"


def _small_registry(monkeypatch) -> None:
    """Flickr8k registered with the small folder's counts (the real entry enforces the real ones)."""
    ds = data.get("flickr8k")
    small = dataclasses.replace(ds, structure=functools.partial(f8k.check_flickr8k, counts=SMALL))
    monkeypatch.setitem(registry._REGISTRY, "flickr8k", small)


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, body in members.items():
            zf.writestr(name, body)
    return buf.getvalue()


def _serve(monkeypatch, images: dict[str, bytes] | None = None) -> list[str]:
    """Downloads served from memory: the two archives as the mirror lays them out. Returns the URLs fetched."""
    text_zip = _zip({**_texts(), "readme.txt": b"Flickr8k", "__MACOSX/._Flickr8k.token.txt": b"fork"})
    image_zip = _zip({**{f"{f8k.IMAGES}/{n}": b for n, b in (images or image_input()).items()},
                      f"__MACOSX/{f8k.IMAGES}/._1000_a.jpg": b"fork"})
    bodies, fetched = {TEXT_URL: text_zip, IMAGES_URL: image_zip}, []

    def fake(url, dest, progressbar=False):
        fetched.append(url)
        Path(dest).write_bytes(bodies[url])

    monkeypatch.setattr(download, "_download", fake)
    return fetched


def _no_network(url, dest, progressbar=False):
    raise ConnectionError(f"Failed to resolve host for {url} (simulated: no network)")


def _must_not_download(url, dest, progressbar=False):
    raise AssertionError(f"unexpected download of {url}")


def _files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


# ---- the registry entry ------------------------------------------------------------------------------------------

def test_registry_entry():
    ds = data.get("flickr8k")
    assert ds.folder == "flickr8k" and ds.structure is not None
    assert ds.homepage == "https://hockenmaier.cs.illinois.edu/8k-pictures.html"
    assert "Hodosh" in ds.citation and "Journal of Artificial Intelligence Research" in ds.citation
    assert "2013" in ds.citation and "research use only" in ds.license.lower() and "Flickr" in ds.license
    assert set(ds.files) == {f8k.CAPTIONS, *f8k.SPLITS.values(), f8k.IMAGES}
    for rf in ds.files.values():
        assert rf.sha256 is None and rf.verify == "structure" and "Verified by size and structure" in rf.note
    base = "https://github.com/jbrownlee/Datasets/releases/download/Flickr8k/"
    assert ds.file(f8k.IMAGES).urls == (base + "Flickr8k_Dataset.zip",)
    assert ds.file(f8k.IMAGES).archive_member == "Flicker8k_Dataset/"
    assert ds.file(f8k.CAPTIONS).urls == (base + "Flickr8k_text.zip",)


def test_remote_file_says_how_it_is_verified():
    with pytest.raises(ConfigError, match="verify='sha256' needs a sha256 of 64 hex digits"):
        data.RemoteFile("x.txt", None)
    with pytest.raises(ConfigError, match="verify='structure' takes sha256=None"):
        data.RemoteFile("x.txt", "0" * 64, verify="structure")
    with pytest.raises(ConfigError, match="verify must be 'sha256' or 'structure'"):
        data.RemoteFile("x.txt", None, verify="size")
    loose = data.RemoteFile("x.txt", None, verify="structure")
    with pytest.raises(ConfigError, match="need a structure check"):
        data.Dataset("x", "x", {"x.txt": loose}, "l", "@c", "d", "https://x")


# ---- the structure check and the loader --------------------------------------------------------------------------

def test_loader_reads_the_splits_with_five_tokenised_captions(folder):
    train = data.load_flickr8k("train", root=folder, counts=SMALL)
    assert train.split == "train" and len(train) == 3
    assert [p.name for p in train.images] == SPLIT_IMAGES["train"]
    assert all(p.is_file() and p.parent == folder / f8k.IMAGES for p in train.images)
    assert all(len(c) == 5 for c in train.captions)
    assert train.captions[0][0] == ["two", "people", "walk", "a", "by", "the", "sea"]  # lower case, no punctuation
    assert train.captions[0][1] == ["a", "dog", "named", "a", "runs", "number", "1"]
    for split in ("dev", "test"):
        part = data.load_flickr8k(split, root=folder, counts=None)
        assert [p.name for p in part.images] == SPLIT_IMAGES[split] and len(part.captions) == len(part)
    with pytest.raises(ConfigError, match="unknown split 'val'; choose one of: train, dev, test"):
        data.load_flickr8k("val", root=folder)


def test_check_passes_on_a_complete_copy_and_returns_it(folder):
    index = data.check_flickr8k(folder, counts=SMALL)
    assert index.splits == SPLIT_IMAGES and len(index.captions) == 8 and index.folder == folder / f8k.IMAGES
    assert index.captions[QUIRK] == _captions(QUIRK)
    assert data.check_flickr8k({n: folder / n for n in data.get("flickr8k").files}, counts=None).splits == SPLIT_IMAGES


def test_crlf_line_ends_are_read(folder):
    for name in (f8k.CAPTIONS, f8k.SPLITS["train"]):
        path = folder / name
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert data.load_flickr8k("train", root=folder, counts=SMALL).captions[0][0][-1] == "sea"


def test_real_counts_refuse_the_small_copy(folder):
    with pytest.raises(data.StructureError) as info:
        data.load_flickr8k("train", root=folder)            # the default: the real dataset's sizes
    msg = str(info.value)
    assert "not the sizes of Flickr8k" in msg
    assert "lines 40 (expected 40,460)" in msg and "images 8 (expected 8,092)" in msg
    assert "train 3 (expected 6,000)" in msg and "dev 2 (expected 1,000)" in msg
    with pytest.raises(ConfigError, match="counts takes the keys lines, images, train, dev, test; got 'val'"):
        data.check_flickr8k(folder, counts={"val": 2})


def test_missing_image_is_named(folder):
    (folder / f8k.IMAGES / "2001_e.jpg").unlink()
    with pytest.raises(data.StructureError, match=r"Flicker8k_Dataset/ lacks 1 of the 7 images the splits name: "
                                                  r"2001_e\.jpg"):
        data.check_flickr8k(folder, counts=SMALL)


def test_empty_image_is_named(folder):
    (folder / f8k.IMAGES / "1001_b.jpg").write_bytes(b"")
    with pytest.raises(data.StructureError, match=r"Flicker8k_Dataset/ holds 1 empty image file\(s\): 1001_b\.jpg"):
        data.check_flickr8k(folder, counts=SMALL)


def test_half_extracted_image_folder_is_refused(folder):
    for path in sorted((folder / f8k.IMAGES).iterdir())[2:]:
        path.unlink()
    with pytest.raises(data.StructureError, match=r"lacks 5 of the 7 images.*and 2 more"):
        data.load_flickr8k("train", root=folder, counts=None)


@pytest.mark.parametrize("line, needle", [
    ("1000_a.jpg#0 A caption after a space, not a tab", "line 1 '1000_a.jpg#0 A caption"),
    ("1000_a.jpg#7\tcaption number seven", "line 1 '1000_a.jpg#7"),
    ("1000_a.jpg\tno caption number", "line 1 '1000_a.jpg"),
    ("1000_a.jpg#0\t   ", "line 1 '1000_a.jpg#0"),
])
def test_malformed_caption_line_is_named(folder, line, needle):
    path = folder / f8k.CAPTIONS
    lines = path.read_text().split("\n")
    path.write_text("\n".join([line, *lines[1:]]))
    with pytest.raises(data.StructureError) as info:
        data.check_flickr8k(folder, counts=None)
    msg = str(info.value)
    assert "Flickr8k.token.txt: 1 line(s) are not 'IMAGE.jpg#N<TAB>caption' with N in 0..4" in msg and needle in msg
    assert "1 image(s) do not have 5 captions: 1000_a.jpg (4)" in msg


def test_repeated_caption_number_is_named(folder):
    path = folder / f8k.CAPTIONS
    path.write_text(path.read_text().replace("1000_a.jpg#1\t", "1000_a.jpg#0\t"))
    with pytest.raises(data.StructureError, match=r"1 caption\(s\) appear twice: 1000_a\.jpg#0 \(line 2\)"):
        data.check_flickr8k(folder, counts=None)


def test_split_naming_an_unknown_image_is_named(folder):
    with open(folder / f8k.SPLITS["dev"], "a") as f:
        f.write("9999_nothere.jpg\n")
    with pytest.raises(data.StructureError, match=r"Flickr_8k\.devImages\.txt: 1 line\(s\) name an image without "
                                                  r"captions in Flickr8k\.token\.txt: '9999_nothere\.jpg' \(line 3\)"):
        data.check_flickr8k(folder, counts=None)


def test_image_in_two_splits_is_named(folder):
    with open(folder / f8k.SPLITS["test"], "a") as f:
        f.write("1000_a.jpg\n")
    with pytest.raises(data.StructureError, match=r"testImages\.txt: 1 image\(s\) listed twice: 1000_a\.jpg \(also "
                                                  r"in Flickr_8k\.trainImages\.txt\)"):
        data.check_flickr8k(folder, counts=None)


def test_missing_files_are_named(folder):
    (folder / f8k.SPLITS["test"]).unlink()
    with pytest.raises(data.StructureError, match=r"missing: Flickr_8k\.testImages\.txt$"):
        data.check_flickr8k(folder)
    with pytest.raises(data.DataUnavailableError) as info:
        data.load_flickr8k("train", root=folder, counts=None)
    msg = str(info.value)
    assert f"Flickr8k is not in {folder}: Flickr_8k.testImages.txt missing" in msg
    assert TEXT_URL in msg and IMAGES_URL in msg


# ---- the data cache: missing, downloaded, half-extracted ---------------------------------------------------------

def test_missing_and_offline_says_where_to_put_it(cache, monkeypatch):
    monkeypatch.setattr(download, "_download", _no_network)
    with pytest.raises(data.DataUnavailableError) as info:
        data.load_flickr8k("train")
    msg = str(info.value)
    assert isinstance(info.value, CourseError) and "ConnectionError" in msg
    assert TEXT_URL in msg and IMAGES_URL in msg
    assert str(cache / "flickr8k") in msg and "COURSE_DATA_DIR" in msg
    assert "Flickr8k.token.txt" in msg and "Flicker8k_Dataset/" in msg
    assert _files_under(cache) == [] and not (cache / "flickr8k").exists()   # no staging folder, no empty folder
    report = data.verify("flickr8k")
    assert not report.ok and {c.status for c in report.checks} == {"missing"}


def test_download_is_extracted_checked_and_moved_into_place(cache, monkeypatch):
    _small_registry(monkeypatch)
    fetched = _serve(monkeypatch)
    paths = data.fetch("flickr8k", progressbar=False)
    assert sorted(fetched) == sorted([TEXT_URL, IMAGES_URL])       # one download per archive
    folder = cache / "flickr8k"
    assert paths == {n: folder / n for n in data.get("flickr8k").files}
    assert sorted(p.name for p in folder.iterdir()) == sorted(paths)  # no archive, staging folder or readme left
    assert sorted(p.name for p in (folder / f8k.IMAGES).iterdir()) == sorted(image_input())  # no __MACOSX forks
    assert data.verify("flickr8k").ok
    monkeypatch.setattr(download, "_download", _must_not_download)
    assert data.fetch("flickr8k", f8k.CAPTIONS) == folder / f8k.CAPTIONS  # in place: nothing downloaded
    test = data.load_flickr8k("test", counts=SMALL)
    assert [p.name for p in test.images] == SPLIT_IMAGES["test"] and test.images[0].parent == folder / f8k.IMAGES


def test_download_failing_the_check_keeps_nothing(cache, monkeypatch):
    images = image_input()
    del images["3001_g.jpg"]                                      # the image archive lacks a test image
    _small_registry(monkeypatch)
    _serve(monkeypatch, images)
    with pytest.raises(data.StructureError) as info:
        data.fetch("flickr8k", progressbar=False)
    msg = str(info.value)
    assert "lacks 1 of the 7 images the splits name: 3001_g.jpg" in msg and "The download was not kept" in msg
    assert _files_under(cache) == []


def test_real_counts_refuse_a_small_download(cache, monkeypatch):
    _serve(monkeypatch)                                           # the registered entry, with the real counts
    with pytest.raises(data.StructureError, match=r"train 3 \(expected 6,000\)"):
        data.fetch("flickr8k", progressbar=False)
    assert _files_under(cache) == []


def test_only_missing_parts_are_downloaded(cache, monkeypatch):
    folder = _write(cache / "flickr8k")
    (folder / f8k.SPLITS["dev"]).unlink()
    _small_registry(monkeypatch)
    fetched = _serve(monkeypatch)
    data.fetch("flickr8k", progressbar=False)
    assert fetched == [TEXT_URL] and (folder / f8k.SPLITS["dev"]).read_bytes() == _texts()[f8k.SPLITS["dev"]]


def test_half_extracted_cache_is_refused_and_left_alone(cache, monkeypatch):
    folder = _write(cache / "flickr8k")
    for name in ("1000_a.jpg", "3000_f.jpg"):
        (folder / f8k.IMAGES / name).unlink()
    before = _files_under(cache)
    _small_registry(monkeypatch)
    monkeypatch.setattr(download, "_download", _must_not_download)
    with pytest.raises(data.StructureError) as info:
        data.load_flickr8k("dev", counts=None)
    msg = str(info.value)
    assert f"The copy of dataset 'flickr8k' in {folder} is incomplete" in msg
    assert "lacks 2 of the 7 images the splits name: 1000_a.jpg, 3000_f.jpg" in msg
    assert "Nothing was changed" in msg and TEXT_URL in msg and IMAGES_URL in msg
    assert _files_under(cache) == before
    report = data.verify("flickr8k")
    assert {c.status for c in report.checks} == {"invalid"} and "lacks 2 of the 7" in str(report)


# ---- feature grids -----------------------------------------------------------------------------------------------

def test_grid_is_row_major():
    maps = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    flat = imf.grid(maps)
    assert flat.shape == (2, 12, 5)
    np.testing.assert_array_equal(flat[1, 2 * 4 + 3], maps[1, 2, 3])          # location l = row · w + column


def test_pytorch_without_torchvision_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchvision", None)         # import torchvision fails, installed or not
    with pytest.raises(ModelUnavailableError, match="torchvision, which is not installed here: pip install "
                                                    "torchvision"):
        imf.backbone("pytorch")
    ok, why = imf.weights_available("pytorch")
    assert not ok and "pip install torchvision" in why


def _fake_torchvision(monkeypatch) -> None:
    """A stand-in for torchvision: ``resnet50(weights=None)`` is a tiny random network (conv, relu, pool, fc);
    asking for the ImageNet weights fails as a download does offline."""
    torch = pytest.importorskip("torch")

    def resnet50(weights=None):
        if weights is not None:
            raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Conv2d(3, 6, 8, stride=8), torch.nn.ReLU(),
                                   torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())

    weights = types.SimpleNamespace(DEFAULT=types.SimpleNamespace(url="https://download.pytorch.org/models/r.pth"))
    fake = types.SimpleNamespace(models=types.SimpleNamespace(resnet50=resnet50, ResNet50_Weights=weights))
    monkeypatch.setitem(sys.modules, "torchvision", fake)


def test_pytorch_features_and_offline_weights(folder, cache, monkeypatch):
    _fake_torchvision(monkeypatch)
    with pytest.raises(ModelUnavailableError, match=r"could not be downloaded from https://download\.pytorch\.org/"
                                                    r"models/r\.pth: this cell needs the internet.*URLError"):
        imf.backbone("pytorch")
    model = imf.backbone("pytorch", weights=None, size=32)
    paths = data.load_flickr8k("train", root=folder, counts=None).images
    feats = imf.image_features(paths, "pytorch", model=model, name="tiny", size=32, cache=False)
    assert feats.shape == (3, 16, 6) and feats.dtype == np.float16                      # 4 × 4 grid, D = 6
    import torch

    x = torch.as_tensor(imf.preprocess(imf.load_images(paths, 32), "pytorch"))
    with torch.no_grad():
        expected = model(x).permute(0, 2, 3, 1).reshape(3, 16, 6).numpy()
    np.testing.assert_allclose(feats, expected, rtol=1e-2, atol=1e-2)


def test_pytorch_weights_in_torchs_cache(tmp_path, monkeypatch):
    _fake_torchvision(monkeypatch)
    monkeypatch.setattr(imf, "_reachable", lambda url, timeout=5.0: False)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch-home"))
    ok, why = imf.weights_available("pytorch")
    assert not ok and "https://download.pytorch.org/models/r.pth cannot be reached" in why
    checkpoint = tmp_path / "torch-home" / "hub" / "checkpoints" / "r.pth"
    checkpoint.parent.mkdir(parents=True)
    checkpoint.write_bytes(b"cached")
    assert imf.weights_available("pytorch") == (True, f"ResNet-50 weights for pytorch in {checkpoint}")
    monkeypatch.setattr(imf, "_reachable", lambda url, timeout=5.0: True)
    checkpoint.unlink()
    assert imf.weights_available("pytorch")[0]


def test_keras_features_grid_and_cache(folder, cache, monkeypatch):
    keras = pytest.importorskip("keras")
    model = imf.backbone("keras", weights=None, size=64)           # ResNet-50, random weights: nothing downloaded
    paths = data.load_flickr8k("dev", root=folder, counts=None).images
    feats = imf.image_features(paths, "keras", model=model, name="resnet50-random", size=64, batch_size=1)
    assert feats.shape == (2, 4, 2048) and feats.dtype == np.float16                    # 2 × 2 grid of 2,048
    maps = keras.ops.convert_to_numpy(model(imf.preprocess(imf.load_images(paths, 64), "keras"), training=False))
    np.testing.assert_allclose(feats, imf.grid(maps), rtol=1e-2, atol=1e-2)
    path = imf.cache_path(paths, "keras", "resnet50-random", 64)
    assert path.parent == cache.parent / "derived" / "image-features" and path.is_file()
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]                 # no .part left
    again = imf.image_features(paths, "keras", model=object(), name="resnet50-random", size=64)  # not called
    np.testing.assert_array_equal(again, feats)


def test_keras_offline_weights_say_the_cell_needs_the_internet(monkeypatch):
    keras = pytest.importorskip("keras")

    def offline(**kwargs):
        raise Exception("URL fetch failure on https://storage.googleapis.com/...: None -- [Errno -3] "
                        "Temporary failure in name resolution")

    monkeypatch.setattr(keras.applications, "ResNet50", offline)
    with pytest.raises(ModelUnavailableError, match="this cell needs the internet once.*URL fetch failure"):
        imf.backbone("keras")


def test_image_features_refuses_bad_arguments():
    with pytest.raises(ConfigError, match="unknown framework 'jax'"):
        imf.framework_name("jax")
    with pytest.raises(ConfigError, match="weights must be 'imagenet' or None"):
        imf.backbone("keras", weights="places365")
    with pytest.raises(CourseError, match="at least one image path"):
        imf.image_features([], "keras")


# ---- can the path run here? --------------------------------------------------------------------------------------

def test_available_without_data(cache, monkeypatch):
    monkeypatch.setattr(download, "_download", _must_not_download)
    ok, why = c6.flickr8k_available(("keras",))
    assert not ok and "Flickr8k is not in the data cache" in why and "download=True" in why
    assert TEXT_URL in why and str(cache / "flickr8k") in why
    monkeypatch.setattr(download, "_download", _no_network)
    ok, why = c6.flickr8k_available(("keras",), download=True)
    assert not ok and "Could not download" in why and _files_under(cache) == []


def test_available_with_data_needs_the_weights(cache, monkeypatch):
    _write(cache / "flickr8k")
    _small_registry(monkeypatch)
    monkeypatch.setattr(imf, "_reachable", lambda url, timeout=5.0: False)     # offline, nothing cached
    monkeypatch.setenv("KERAS_HOME", str(cache.parent / "keras-home"))
    monkeypatch.setattr(imf.tempfile, "gettempdir", lambda: str(cache.parent / "tmp"))
    ok, why = c6.flickr8k_available("keras")
    assert not ok and "not cached here" in why and "needs the internet" in why
    monkeypatch.setitem(sys.modules, "torchvision", None)
    ok, why = c6.flickr8k_available(("pytorch",))
    assert not ok and "pip install torchvision" in why
    weights = cache.parent / "keras-home" / "models" / "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5"
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"cached")
    ok, why = c6.flickr8k_available("keras")
    assert ok and str(cache / "flickr8k") in why and str(weights) in why


# ---- captioners on the feature grids, end to end -----------------------------------------------------------------

TINY = {"n_train": None, "n_test": None, "image_size": 64, "min_count": 5, "max_words": 6, "embed": 8, "hidden": 16,
        "dim": 12, "units": 10, "epochs": 1, "batch_size": 4, "lr": 3e-3}


def test_flickr8k_corpus_pairs_every_caption_with_its_grid(folder, cache):
    pytest.importorskip("keras")
    model = imf.backbone("keras", weights=None, size=64)          # ResNet-50, random weights: nothing downloaded
    corpus = c6.flickr8k_corpus("keras", TINY, root=folder, counts=SMALL, model=model, name="resnet50-random")
    assert corpus.features == 2048 and corpus.grid == (2, 2)      # 64 pixels: a 2 × 2 grid of 2,048 features
    assert corpus.train.features.shape == (3, 4, 2048) and corpus.test.features.shape == (2, 4, 2048)
    assert len(corpus.train) == 15 and corpus.train.images.shape == (15, 4, 2048)   # 5 captions per photograph
    np.testing.assert_array_equal(corpus.train.images[[5, 14]], corpus.train.features[[1, 2]])
    assert corpus.train_in.shape == (15, 7) and corpus.test_in.shape == (2, 7)   # BOS + at most 6 words
    assert corpus.test.references[1] == [" ".join(c) for c in _captions_tokens("3001_g.jpg")]       # uncut
    assert {"dog", "walk", "b"} <= set(corpus.vocab.tokens)       # 6, 9 and 5 times in the training captions
    assert "sea" not in corpus.vocab                               # the 7th word: cut
    assert [p.name for p in corpus.test.paths] == SPLIT_IMAGES["test"]
    again = c6.flickr8k_corpus("keras", {**TINY, "min_count": 6}, root=folder, counts=SMALL, model=object(),
                               name="resnet50-random")            # the grids come from the cache: no model runs
    np.testing.assert_array_equal(again.train.features, corpus.train.features)
    assert "dog" in again.vocab and "b" not in again.vocab         # seen 5 times, under min_count 6: UNK


def _captions_tokens(image: str) -> list[list[str]]:
    from attention_course.core.text import tokenize

    return [[t for t in tokenize(c) if t[0].isalnum()] for c in _captions(image)]


@pytest.mark.parametrize("framework", ["pytorch", "keras"])
def test_train_and_caption_flickr8k_end_to_end(folder, cache, framework):
    """load → grids (the Keras ResNet-50 with random weights; PyTorch reads them too: torchvision is not needed) →
    one epoch of soft and hard attention (Keras: hard only, whose graph takes 10 s to trace here) → greedy and beam
    captions → BLEU against the 5 references."""
    pytest.importorskip("keras")
    import attention_course as ac

    fw = ac.torch if framework == "pytorch" else ac.keras
    model = imf.backbone("keras", weights=None, size=64)
    corpus = c6.flickr8k_corpus("keras", TINY, root=folder, counts=SMALL, model=model, name="resnet50-random")
    for name in ("soft, λ = 1", "hard") if framework == "pytorch" else ("hard",):
        spec = c6.MODELS[name]
        captioner = c6.build(fw, corpus, TINY, seed=0, **spec)
        assert captioner.features == 2048
        history = c6.train(fw, captioner, corpus, TINY, seed=0, **spec)
        assert len(history) == 1 and np.isfinite(history.last("loss"))
        for beam in (1, 2):
            captions, maps = c6.caption(captioner, corpus, beam=beam)
            assert len(captions) == 2 and all(isinstance(c, str) for c in captions)
            assert all(m.shape[1:] == (2, 2) and np.allclose(m.sum((1, 2)), 1, atol=1e-4) for m in maps)
            scores = c6.bleu_scores(captions, corpus.test)
            assert list(scores) == ["BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4"]
            assert all(0 <= s <= 100 for s in scores.values())
        alpha = c6.teacher_forced_attention(fw, captioner, corpus)
        assert alpha.shape == (2, corpus.test_in.shape[1], 2, 2)
    # the references are scored as they should be: a reference itself scores 100
    assert c6.bleu_scores([refs[0] for refs in corpus.test.references], corpus.test)["BLEU-4"] == pytest.approx(100)


def test_the_feature_cache_is_keyed_by_the_images_contents(tmp_path, cache):
    from PIL import Image

    first, second = tmp_path / "a", tmp_path / "b"
    for folder, colour in ((first, (250, 0, 0)), (second, (0, 0, 250))):
        folder.mkdir()
        for name in ("1.png", "2.png"):
            Image.new("RGB", (8, 8), colour).save(folder / name)
    paths = [lambda f, n=n: f / n for n in ("1.png", "2.png")]
    a, b = ([p(f) for p in paths] for f in (first, second))
    assert imf.cache_path(a, "keras") != imf.cache_path(b, "keras")        # same names, other images
    copy = tmp_path / "copy"
    copy.mkdir()
    for p in a:
        (copy / p.name).write_bytes(p.read_bytes())
    assert imf.cache_path(a, "keras") == imf.cache_path([copy / p.name for p in a], "keras")   # same images
    with pytest.raises(CourseError, match=r"image .*missing\.png cannot be read"):
        imf.cache_path([tmp_path / "missing.png"], "keras")
