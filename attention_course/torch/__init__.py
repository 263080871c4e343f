"""PyTorch versions of the course's layers and models (same names and signatures as ``ac.keras``)."""

from .layers import DotProductAttention, masked_softmax
from .models import ManyToMany, ManyToOne, OneToMany, OneToOne, Seq2Seq
from .train import accuracy, device, fit, predict

__all__ = [
    "DotProductAttention", "masked_softmax", "OneToOne", "OneToMany", "ManyToOne", "ManyToMany", "Seq2Seq",
    "fit", "predict", "accuracy", "device",
]
