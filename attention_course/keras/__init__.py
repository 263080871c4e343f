"""Keras 3 (TensorFlow backend) versions of the course's layers and models, every chapter's, in one place
(``ac.keras``), with the same names and signatures as ``ac.torch``. Each chapter's are in its folder
(``attention_course/chNN_*/keras.py``); the training loop is :mod:`attention_course.core.keras.train`."""

from __future__ import annotations

from attention_course.core.quiet import import_keras

import_keras()

from attention_course.ch01_sequence_models.keras import *  # noqa: F403, E402  (Chapter 1)
from attention_course.ch01_sequence_models.keras import __all__ as _ch01  # noqa: E402
from attention_course.ch02_soft_hard_attention.keras import *  # noqa: F403, E402  (Chapter 2)
from attention_course.ch02_soft_hard_attention.keras import __all__ as _ch02  # noqa: E402
from attention_course.ch03_timestep_feature_attention.keras import *  # noqa: F403, E402  (Chapter 3)
from attention_course.ch03_timestep_feature_attention.keras import __all__ as _ch03  # noqa: E402
from attention_course.ch04_score_functions.keras import *  # noqa: F403, E402  (Chapter 4)
from attention_course.ch04_score_functions.keras import __all__ as _ch04  # noqa: E402
from attention_course.ch05_neural_machine_translation.keras import *  # noqa: F403, E402  (Chapter 5)
from attention_course.ch05_neural_machine_translation.keras import __all__ as _ch05  # noqa: E402
from attention_course.ch06_image_captioning.keras import *  # noqa: F403, E402  (Chapter 6)
from attention_course.ch06_image_captioning.keras import __all__ as _ch06  # noqa: E402
from attention_course.ch07_self_attention.keras import *  # noqa: F403, E402  (Chapter 7)
from attention_course.ch07_self_attention.keras import __all__ as _ch07  # noqa: E402
from attention_course.ch08_transformer.keras import *  # noqa: F403, E402  (Chapter 8)
from attention_course.ch08_transformer.keras import __all__ as _ch08  # noqa: E402
from attention_course.ch09_bert.keras import *  # noqa: F403, E402  (Chapter 9)
from attention_course.ch09_bert.keras import __all__ as _ch09  # noqa: E402
from attention_course.ch10_modern_attention.keras import *  # noqa: F403, E402  (Chapter 10)
from attention_course.ch10_modern_attention.keras import __all__ as _ch10  # noqa: E402
from attention_course.ch11_more_attention.keras import *  # noqa: F403, E402  (Chapter 11)
from attention_course.ch11_more_attention.keras import __all__ as _ch11  # noqa: E402
from attention_course.core.keras.train import accuracy, device, evaluate_loss, fit, predict  # noqa: E402

__all__ = ["fit", "predict", "accuracy", "device", "evaluate_loss", "load_trained",
           *_ch01, *_ch02, *_ch03, *_ch04, *_ch05, *_ch06, *_ch07, *_ch08, *_ch09, *_ch10, *_ch11]


def load_trained(build, arrays, example_inputs):
    """A Keras model holding a trained model's ``arrays`` (``ac.trained.load``, PyTorch's parameter names):
    ``build(ac.keras)`` makes it with the sizes its record gives, built on ``example_inputs`` (a tuple of arrays), and
    ``core.parity.arrays_to_keras`` puts the arrays in, the conversion the parity tests check (no PyTorch needed)."""
    import sys

    from attention_course.core.parity import arrays_to_keras

    model = build(sys.modules[__name__])
    arrays_to_keras(arrays, model, example_inputs)
    return model
