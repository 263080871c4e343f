"""The notebook session: ``ac.setup()`` (the first line of every notebook) and ``seed_everything``."""

from __future__ import annotations

import os
import random
import sys
import warnings
from dataclasses import dataclass

from attention_course.core.quiet import quiet_frameworks
from attention_course.notebook import frameworks as _frameworks
from attention_course.notebook import profile as _profile
from attention_course.notebook.memory import (
    release_after_each_cell,
    reuse_freed_blocks_when_uncapped,
    system_heap_when_capped,
)
from attention_course.notebook.tables import readable_tables


@dataclass(frozen=True)
class Session:
    seed: int
    profile: str
    frameworks: tuple[str, ...]
    device: str
    on_colab: bool


def on_colab() -> bool:
    return "google.colab" in sys.modules


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and every framework that is enabled.

    Python's string hashing (``PYTHONHASHSEED``) is fixed when the interpreter starts and cannot be seeded
    here; nothing in the course depends on it."""
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    fws = _frameworks.enabled()
    if "pytorch" in fws:
        import torch

        torch.manual_seed(seed)
    if "keras" in fws:
        from attention_course.core.quiet import import_keras

        import_keras().utils.set_random_seed(seed)


def seed_from_env(default: int) -> int:
    """``COURSE_SEED`` as a non-negative integer, or ``default`` when it is unset."""
    import os

    raw = os.environ.get("COURSE_SEED", "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        from attention_course.core.errors import EnvError

        raise EnvError(f"COURSE_SEED must be a non-negative integer (the seed of every notebook); "
                       f"got COURSE_SEED={raw!r}")
    return int(raw)


def cpu_threads() -> int:
    """Give PyTorch ``COURSE_TORCH_THREADS`` CPU threads (1 unless set) and return the number. The course's models
    are small: one thread is as fast, and with two threads PyTorch slows down ~10x whenever another process holds
    a core (measured on a 2-core machine)."""
    import torch

    from attention_course.core.errors import EnvError

    threads = EnvError.positive("COURSE_TORCH_THREADS", 1, int, "CPU threads for PyTorch")
    cores = os.cpu_count() or 1
    if threads > cores:
        raise EnvError(f"COURSE_TORCH_THREADS={threads} asks for more threads than this machine's {cores} CPU cores; "
                       f"set it to at most {cores} (1 is as fast for the course's models)")
    torch.set_num_threads(threads)
    return torch.get_num_threads()


def tensorflow_threads() -> int:
    """Run TensorFlow's operations on ``TF_NUM_INTRAOP_THREADS`` CPU threads (TensorFlow's own variable; 1 unless
    set) and return the number, as ``cpu_threads`` does for PyTorch. The course's Keras models are small: one thread
    is as fast alone, and faster when another kernel holds a core (two Keras runs side by side on a 2-core machine:
    about a tenth less time each). TensorFlow's default is a thread per core the process sees, which in a container
    with a CPU quota, as on Binder, can be many more than it may use. Once TensorFlow has run an operation its
    threads are fixed: then this changes nothing and returns what TensorFlow was given (0: its own choice)."""
    import tensorflow as tf

    from attention_course.core.errors import EnvError

    threads = EnvError.positive("TF_NUM_INTRAOP_THREADS", 1, int, "CPU threads for each TensorFlow operation")
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    except RuntimeError:                          # TensorFlow has run an operation: its threads are fixed
        pass
    return tf.config.threading.get_intra_op_parallelism_threads()   # 0: TensorFlow's own choice


def setup(seed: int = 0, *, profile: str | None = None, frameworks: str | None = None, banner: bool = True,
          scale: str | None = None) -> Session:
    """Prepare a notebook: quiet logs, choose profile and frameworks, seed every RNG, register the
    ``%%keras``/``%%pytorch`` magics, give freed memory back to the system after each cell (``memory``; in a kernel
    capped at 4 GB or less that runs Keras, TensorFlow's oneDNN operations allocate from the system heap and large
    blocks go back to the system when freed; in a kernel without such a cap, a cell's freed blocks serve its next
    ones), print tables' numbers as a person writes them (``tables``), use the course's chart renderer, print one
    banner line.

    ``profile`` (``quick`` or ``full``) and ``frameworks`` override ``COURSE_PROFILE`` and ``COURSE_FRAMEWORKS`` for
    this session (``scale`` is the profile's deprecated old name);
    ``COURSE_SEED`` (a non-negative integer) overrides ``seed``, so that ``make robustness`` can run every
    chapter with other seeds. Notebooks derive all their seeds from ``session.seed``.
    """
    if scale is not None:
        warnings.warn("ac.setup(scale=...) is deprecated: pass profile=...", FutureWarning, stacklevel=2)
        profile = scale if profile is None else profile
    quiet_frameworks()
    seed = seed_from_env(seed)
    if profile is not None:
        _profile.use(profile)
    if frameworks is not None:
        _frameworks.use(frameworks)
    profile = _profile.current()
    fws = _frameworks.enabled()
    if "keras" in fws:
        system_heap_when_capped()              # before TensorFlow starts: in 4 GB or less, no pool; large blocks mapped
    reuse_freed_blocks_when_uncapped()         # above 4 GB or no cap: a cell's freed blocks serve its next ones
    seed_everything(seed)
    _frameworks.register_magics()
    release_after_each_cell()
    readable_tables()
    from attention_course import viz

    viz.enable_renderer()

    parts = [f"attention_course {__import__('attention_course').__version__}", f"profile {profile}"]
    device = "cpu"
    if "keras" in fws:
        from attention_course.core.quiet import import_keras

        keras = import_keras()
        import tensorflow as tf

        threads = ""
        if tf.config.list_physical_devices("GPU"):
            device = "gpu"
        else:
            threads = f", {tensorflow_threads() or 'default'} CPU thread(s)"
        parts.append(f"keras {keras.__version__} (tensorflow {tf.__version__}{threads})")
    if "pytorch" in fws:
        import torch

        threads = ""
        if torch.cuda.is_available():
            device = f"cuda ({torch.cuda.get_device_name(0)})"
        else:
            cpu_threads()
            threads = f", {torch.get_num_threads()} CPU thread(s)"
        parts.append(f"pytorch {torch.__version__}{threads}")
    parts.append(f"device {device}")
    parts.append(f"seed {seed}")
    session = Session(seed=seed, profile=profile, frameworks=fws, device=device, on_colab=on_colab())
    if banner:
        print(" · ".join(parts))
    return session
