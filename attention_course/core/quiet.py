"""Framework log noise, silenced in one place: environment variables and warning filters set before
TensorFlow is imported, and TensorFlow's C-level start-up messages while it is imported. Also the one order of
imports that keeps TensorFlow and Triton in one process (``triton_before_tensorflow``)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys


def quiet_frameworks() -> None:
    """Silence framework log noise (TensorFlow's C++ logs, deprecation warnings); call before importing
    TensorFlow. The notebooks (through ``ac.setup``), the tests and the tools all call this one function."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", message=".*np.find_common_type.*")
    triton_before_tensorflow()


def triton_before_tensorflow() -> None:
    """Where Triton is installed (the ``kernels`` extra, or with PyTorch on Colab), load it now. TensorFlow and
    Triton each bring their own LLVM; Triton's, loaded after TensorFlow's, aborts the process ("LLVM ERROR:
    inconsistency in registered CommandLine options"), and PyTorch loads Triton by itself whenever it is installed
    (an optimiser's first step does). Loaded first, both work."""
    if "tensorflow" not in sys.modules and importlib.util.find_spec("triton") is not None:
        import triton  # noqa: F401


@contextlib.contextmanager
def native_stderr_silenced():
    """Point file descriptor 2 at /dev/null for the duration (Python-level warnings still go through
    ``sys.stderr`` when it is not fd 2, as in Jupyter)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real fd 2 (some embedded interpreters)
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def import_keras():
    """Import Keras on the TensorFlow backend without TensorFlow's start-up chatter; returns ``keras``."""
    quiet_frameworks()
    if "tensorflow" not in sys.modules:
        with native_stderr_silenced():
            import tensorflow  # noqa: F401
    import keras

    return keras
