"""``ac.setup()``: the first line of every notebook."""

from __future__ import annotations

import os
import random
import sys
from dataclasses import dataclass

from . import frameworks as _frameworks
from . import scale as _scale


@dataclass(frozen=True)
class Session:
    seed: int
    profile: str
    frameworks: tuple[str, ...]
    device: str
    on_colab: bool


def _quiet_frameworks() -> None:
    """Silence framework log noise; must run before TensorFlow is imported."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", message=".*np.find_common_type.*")


def on_colab() -> bool:
    return "google.colab" in sys.modules


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and every framework that is enabled."""
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    fws = _frameworks.enabled()
    if "pytorch" in fws:
        import torch

        torch.manual_seed(seed)
    if "keras" in fws:
        from ._quiet import import_keras

        import_keras().utils.set_random_seed(seed)


def setup(seed: int = 0, *, scale: str | None = None, frameworks: str | None = None, banner: bool = True) -> Session:
    """Prepare a notebook: quiet logs, choose profile and frameworks, seed every RNG, register the
    ``%%keras``/``%%pytorch`` magics, use the course's chart renderer, print one banner line.

    ``scale`` and ``frameworks`` override ``COURSE_SCALE`` and ``COURSE_FRAMEWORKS`` for this session.
    """
    _quiet_frameworks()
    if scale is not None:
        _scale.use(scale)
    if frameworks is not None:
        _frameworks.use(frameworks)
    profile = _scale.current()
    fws = _frameworks.enabled()
    seed_everything(seed)
    _frameworks.register_magics()
    from . import viz

    viz.enable_renderer()

    parts = [f"attention_course {__import__('attention_course').__version__}", f"profile {profile}"]
    device = "cpu"
    if "keras" in fws:
        from ._quiet import import_keras

        keras = import_keras()
        import tensorflow as tf

        parts.append(f"keras {keras.__version__} (tensorflow {tf.__version__})")
        if tf.config.list_physical_devices("GPU"):
            device = "gpu"
    if "pytorch" in fws:
        import torch

        threads = ""
        if torch.cuda.is_available():
            device = f"cuda ({torch.cuda.get_device_name(0)})"
        else:
            # The course's models are small: one thread is as fast, and with two threads PyTorch slows
            # down ~10x whenever another process holds a core (measured on a 2-core machine).
            torch.set_num_threads(int(os.environ.get("COURSE_TORCH_THREADS", "1")))
            threads = f", {torch.get_num_threads()} CPU thread(s)"
        parts.append(f"pytorch {torch.__version__}{threads}")
    parts.append(f"device {device}")
    parts.append(f"seed {seed}")
    session = Session(seed=seed, profile=profile, frameworks=fws, device=device, on_colab=on_colab())
    if banner:
        print(" · ".join(parts))
    return session
