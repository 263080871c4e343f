"""Keras 3 (TensorFlow backend) versions of the course's layers and models (same names and signatures as
``ac.torch``)."""

from .._quiet import import_keras

import_keras()

from .layers import DotProductAttention, masked_softmax  # noqa: E402
from .models import ManyToMany, ManyToOne, OneToMany, OneToOne, Seq2Seq  # noqa: E402
from .train import accuracy, device, fit, predict  # noqa: E402

__all__ = [
    "DotProductAttention", "masked_softmax", "OneToOne", "OneToMany", "ManyToOne", "ManyToMany", "Seq2Seq",
    "fit", "predict", "accuracy", "device",
]
