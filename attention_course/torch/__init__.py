"""PyTorch versions of the course's layers and models, every chapter's, in one place (``ac.torch``),
with the same names and signatures as ``ac.keras``. Each chapter's are in its folder
(``attention_course/chNN_*/torch.py``); the training loop is :mod:`attention_course.core.torch.train`."""

from __future__ import annotations

from attention_course.ch01_sequence_models.torch import *  # noqa: F403  (Chapter 1)
from attention_course.ch01_sequence_models.torch import __all__ as _ch01
from attention_course.ch02_soft_hard_attention.torch import *  # noqa: F403  (Chapter 2)
from attention_course.ch02_soft_hard_attention.torch import __all__ as _ch02
from attention_course.ch03_timestep_feature_attention.torch import *  # noqa: F403  (Chapter 3)
from attention_course.ch03_timestep_feature_attention.torch import __all__ as _ch03
from attention_course.ch04_score_functions.torch import *  # noqa: F403  (Chapter 4)
from attention_course.ch04_score_functions.torch import __all__ as _ch04
from attention_course.ch05_neural_machine_translation.torch import *  # noqa: F403  (Chapter 5)
from attention_course.ch05_neural_machine_translation.torch import __all__ as _ch05
from attention_course.ch06_image_captioning.torch import *  # noqa: F403  (Chapter 6)
from attention_course.ch06_image_captioning.torch import __all__ as _ch06
from attention_course.ch07_self_attention.torch import *  # noqa: F403  (Chapter 7)
from attention_course.ch07_self_attention.torch import __all__ as _ch07
from attention_course.ch08_transformer.torch import *  # noqa: F403  (Chapter 8)
from attention_course.ch08_transformer.torch import __all__ as _ch08
from attention_course.ch09_bert.torch import *  # noqa: F403  (Chapter 9)
from attention_course.ch09_bert.torch import __all__ as _ch09
from attention_course.ch10_modern_attention.torch import *  # noqa: F403  (Chapter 10)
from attention_course.ch10_modern_attention.torch import __all__ as _ch10
from attention_course.ch11_more_attention.torch import *  # noqa: F403  (Chapter 11)
from attention_course.ch11_more_attention.torch import __all__ as _ch11
from attention_course.core.torch.train import accuracy, device, evaluate_loss, fit, predict

__all__ = ["fit", "predict", "accuracy", "device", "evaluate_loss", "load_trained",
           *_ch01, *_ch02, *_ch03, *_ch04, *_ch05, *_ch06, *_ch07, *_ch08, *_ch09, *_ch10, *_ch11]


def load_trained(build, arrays, example_inputs=None):
    """A PyTorch model holding a trained model's ``arrays`` (``ac.trained.load``), in evaluation mode:
    ``build(ac.torch)`` makes it, untrained, with the sizes its record gives. ``example_inputs`` is Keras'."""
    import sys

    from attention_course.core.trained import into_torch

    return into_torch(build(sys.modules[__name__]), arrays)
