"""Grids of image features from ResNet-50 pretrained on ImageNet, for Chapter 6's Flickr8k captioner.

ResNet-50 without its pooling and classifier turns a 224 × 224 image into a 7 × 7 grid of 2,048 features: L = 49
locations of D = 2,048 features each, the annotation vectors that Show, Attend and Tell's decoder attends over.
Keras builds it with ``keras.applications``, PyTorch with ``torchvision.models`` (not a requirement of the course:
``pip install torchvision``). Each framework downloads its weights once into its own cache, so the first call needs
the internet; offline it raises :class:`~attention_course.core.errors.ModelUnavailableError` saying so. The two are
different trainings of the same network and give different features: each framework's captioner reads its own.

Grids are cached as ``.npy`` files (float16) under ``derived_dir()/image-features``, written to a ``.part`` file and
moved into place once complete. Importing this module loads no framework.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from attention_course.core.backend import backend
from attention_course.core.errors import ConfigError, InputError, MissingFileError, ModelUnavailableError
from attention_course.data.download import derived_dir

__all__ = ["NAME", "SIZE", "backbone", "cache_path", "framework_name", "grid", "image_features", "load_images",
           "preprocess", "weights_available"]

NAME = "resnet50"
SIZE = 224
_KERAS_FILE = "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5"  # what keras.applications downloads
_KERAS_URL = "https://storage.googleapis.com/tensorflow/keras-applications/resnet/" + _KERAS_FILE
_MEAN, _STD = np.array([0.485, 0.456, 0.406], "float32"), np.array([0.229, 0.224, 0.225], "float32")
_TORCHVISION = ("PyTorch's pretrained ResNet-50 comes from torchvision, which is not installed here: "
                "pip install torchvision (the build that matches your torch; Colab has it)")


def framework_name(fw: str | ModuleType) -> str:
    """``"keras"`` or ``"pytorch"``, from that name or from the framework's module (``ac.keras``, ``ac.torch``)."""
    name = backend(fw).name
    return name


def load_images(paths: Sequence[str | os.PathLike[str]], size: int = SIZE) -> np.ndarray:
    """The images at ``paths`` as (n, size, size, 3) uint8 RGB, each resized to size × size (Pillow)."""
    try:
        from PIL import Image
    except ImportError:
        raise ConfigError("reading JPEGs needs Pillow: pip install pillow") from None
    out = np.empty((len(paths), size, size, 3), np.uint8)
    for i, path in enumerate(paths):
        with Image.open(path) as image:
            out[i] = np.asarray(image.convert("RGB").resize((size, size), Image.Resampling.BILINEAR))
    return out


def backbone(fw: str | ModuleType, weights: str | None = "imagenet", size: int = SIZE) -> Any:
    """ResNet-50 without its pooling and classifier (``weights=None``: randomly initialised, nothing downloaded).

    Keras: a ``keras.Model`` mapping (n, size, size, 3) to (n, size/32, size/32, 2048). PyTorch: a ``torch.nn``
    module in eval mode, on the CPU (``.to("cuda")`` it for a GPU), mapping (n, 3, size, size) to
    (n, 2048, size/32, size/32).

    Raises:
        ModelUnavailableError: torchvision is not installed (PyTorch), or the weights cannot be downloaded (offline).
    """
    fw = framework_name(fw)
    if weights not in ("imagenet", None):
        raise ConfigError(f"weights must be 'imagenet' or None (randomly initialised), got {weights!r}")
    if fw == "keras":
        import keras

        try:
            return keras.applications.ResNet50(include_top=False, weights=weights, input_shape=(size, size, 3))
        except Exception as error:
            if weights is None:
                raise
            raise ModelUnavailableError(f"ResNet-50's ImageNet weights for Keras could not be downloaded from "
                                        f"{_KERAS_URL}: this cell needs the internet once (then they are cached in "
                                        f"~/.keras/models). {type(error).__name__}: {error}") from None
    try:
        import torchvision
    except ImportError:
        raise ModelUnavailableError(_TORCHVISION) from None
    import torch

    imagenet = torchvision.models.ResNet50_Weights.DEFAULT
    try:
        net = torchvision.models.resnet50(weights=imagenet if weights is not None else None)
    except Exception as error:
        if weights is None:
            raise
        raise ModelUnavailableError(f"ResNet-50's ImageNet weights for PyTorch could not be downloaded from "
                                    f"{imagenet.url}: this cell needs the internet once (then torch caches them). "
                                    f"{type(error).__name__}: {error}") from None
    return torch.nn.Sequential(*list(net.children())[:-2]).eval()  # without avgpool and fc


def preprocess(images: np.ndarray, fw: str | ModuleType) -> np.ndarray:
    """(n, H, W, 3) uint8 RGB as the pretrained network expects it: Keras's ResNet50 takes BGR minus the ImageNet
    means (``keras.applications.resnet50.preprocess_input``), (n, H, W, 3); torchvision's takes RGB in [0, 1]
    standardised by the ImageNet statistics, (n, 3, H, W)."""
    x = np.array(images, "float32")  # a copy: Keras's preprocessing works in place
    if framework_name(fw) == "keras":
        import keras

        return np.asarray(keras.applications.resnet50.preprocess_input(x))
    return np.ascontiguousarray(((x / 255.0 - _MEAN) / _STD).transpose(0, 3, 1, 2))


def grid(features: np.ndarray) -> np.ndarray:
    """(n, h, w, D) → (n, L, D) with L = h·w, location l = row·w + column (row-major, as the chapter's encoder)."""
    n, h, w, d = features.shape
    return features.reshape(n, h * w, d)


def _forward(model, x: np.ndarray, fw: str) -> np.ndarray:
    """The model's (n, h, w, D) feature maps of the preprocessed batch ``x``."""
    if fw == "keras":
        import keras

        return keras.ops.convert_to_numpy(model(x, training=False))
    import torch

    device = next(model.parameters()).device                     # a GPU when the caller moved the model there
    with torch.no_grad():
        return model(torch.as_tensor(x, device=device)).permute(0, 2, 3, 1).float().cpu().numpy()


def cache_path(paths: Sequence[str | os.PathLike[str]], fw: str | ModuleType, name: str = NAME,
               size: int = SIZE) -> Path:
    """Where :func:`image_features` keeps the grids of ``paths``:
    ``derived_dir()/image-features/{name}-{framework}-{size}-{digest}.npy``, ``digest`` the first 12 hex digits of a
    sha256 over the images' contents, in order: the same images elsewhere on disk share the file, and other images
    that happen to have the same names (``1.png``, ``2.png``) do not."""
    digest = hashlib.sha256()
    for p in paths:
        try:
            digest.update(hashlib.sha256(Path(p).read_bytes()).digest())
        except OSError as error:
            raise MissingFileError(f"image {p} cannot be read ({type(error).__name__}: {error})") from None
    return derived_dir() / "image-features" / f"{name}-{framework_name(fw)}-{size}-{digest.hexdigest()[:12]}.npy"


def image_features(paths: Sequence[str | os.PathLike[str]], fw: str | ModuleType, *, model: Any = None,
                   name: str = NAME, size: int = SIZE, batch_size: int = 32, cache: bool = True) -> np.ndarray:
    """The feature grids of the images at ``paths``: (n, L, D) float16, L = (size/32)² locations (49 at 224 pixels),
    D = 2,048 for ResNet-50.

    Args:
        fw: ``"keras"`` or ``"pytorch"`` (or ``ac.keras`` / ``ac.torch``).
        model: the network, as :func:`backbone` returns it (the default builds it, with ImageNet weights).
        name: what the cache file calls the network: give another for another ``model``.
        cache: read the grids from :func:`cache_path` when there, else write them there (a read-only cache: kept in
            memory, with a warning). A cached array is memory-mapped, read-only.

    Raises:
        ModelUnavailableError: the pretrained weights cannot be had here (see :func:`backbone`).
    """
    fw, paths = framework_name(fw), list(paths)
    if not paths:
        raise InputError("image_features needs at least one image path; got none")
    path = cache_path(paths, fw, name, size) if cache else None
    if path is not None and path.is_file():
        try:
            cached = np.load(path, mmap_mode="r")
            if cached.shape[0] == len(paths):
                return cached
            del cached  # not these images: computed again below
        except (OSError, ValueError) as error:
            warnings.warn(f"ignoring the unreadable cached features {path} ({error}); computing them again",
                          stacklevel=2)
    from attention_course.core.train import progress

    model = backbone(fw, size=size) if model is None else model
    grids: np.ndarray | None = None
    part: Path | None = None
    try:
        with progress(len(paths), f"{name} features ({fw})") as bar:
            for start in range(0, len(paths), batch_size):
                batch = paths[start:start + batch_size]
                g = grid(_forward(model, preprocess(load_images(batch, size), fw), fw))
                if grids is None:
                    grids, part = _new_array(path, (len(paths), *g.shape[1:]))
                grids[start:start + len(batch)] = g
                bar.update(len(batch))
        assert grids is not None
        if part is None:
            return grids
        assert path is not None
        grids.flush()  # type: ignore[attr-defined]
        del grids
        os.replace(part, path)
        part = None
        return np.load(path, mmap_mode="r")
    finally:
        if part is not None:
            part.unlink(missing_ok=True)


def _new_array(path: Path | None, shape: tuple[int, ...]) -> tuple[np.ndarray, Path | None]:
    """A float16 array of ``shape``: a memory map on a new ``.part`` file beside ``path`` (moved into place by the
    caller once complete), or in memory when ``path`` is None or its folder cannot be written."""
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".part", dir=path.parent)
            os.close(fd)
        except OSError as error:
            warnings.warn(f"could not cache image features in {path.parent} ({error}); they are kept in memory",
                          stacklevel=3)
        else:
            try:
                return np.lib.format.open_memmap(name, mode="w+", dtype=np.float16, shape=shape), Path(name)
            except BaseException:
                Path(name).unlink(missing_ok=True)
                raise
    return np.empty(shape, np.float16), None


def _reachable(url: str, timeout: float = 5.0) -> bool:
    import requests

    try:
        return requests.head(url, timeout=timeout, allow_redirects=True).ok
    except requests.RequestException:
        return False


def weights_available(fw: str | ModuleType) -> tuple[bool, str]:
    """Whether :func:`backbone` can load ResNet-50's ImageNet weights for ``fw`` here, and why (not): they are in the
    framework's cache, or their server answers (a HEAD request, 5 s at most); for PyTorch, torchvision must be
    installed. Nothing is downloaded."""
    import importlib.util

    fw = framework_name(fw)
    if fw == "keras":
        if importlib.util.find_spec("keras") is None:
            return False, "Keras is not installed"
        homes = [Path(os.environ.get("KERAS_HOME", "~/.keras")).expanduser(), Path(tempfile.gettempdir()) / ".keras"]
        url, cached = _KERAS_URL, [home / "models" / _KERAS_FILE for home in homes]
    else:
        try:
            import torch
            import torchvision
        except ImportError:
            return False, _TORCHVISION
        url = torchvision.models.ResNet50_Weights.DEFAULT.url
        cached = [Path(torch.hub.get_dir()) / "checkpoints" / url.rsplit("/", 1)[-1]]
    if any(p.is_file() for p in cached):
        return True, f"ResNet-50 weights for {fw} in {next(p for p in cached if p.is_file())}"
    if _reachable(url):
        return True, f"ResNet-50 weights for {fw} downloadable from {url}"
    return False, (f"ResNet-50's ImageNet weights for {fw} are not cached here and {url} cannot be reached: "
                   "this part needs the internet")
