"""Keras 3 (TensorFlow backend) versions of the course's layers and models (same names and signatures as
``ac.torch``)."""

from .._quiet import import_keras

import_keras()

from . import cost  # noqa: F401,E402  (timings and counted costs: make bench, Chapters 2 and 4)
from .bert import *  # noqa: F403, E402  (Chapter 9)
from .bert import __all__ as _bert_all  # noqa: E402
from .captioning import *  # noqa: F403, E402  (Chapter 6)
from .captioning import __all__ as _captioning_all  # noqa: E402
from .draw import *  # noqa: F403, E402  (Chapter 6: DRAW's reading window)
from .draw import __all__ as _draw_all  # noqa: E402
from .explain import *  # noqa: F403, E402  (Chapter 9: is attention an explanation?)
from .explain import __all__ as _explain_all  # noqa: E402
from .hard import *  # noqa: F403, E402  (Chapter 2)
from .hard import __all__ as _hard_all  # noqa: E402
from .layers import DotProductAttention, masked_softmax  # noqa: E402
from .models import ManyToMany, ManyToOne, OneToMany, OneToOne, Seq2Seq  # noqa: E402
from .pointer import *  # noqa: F403, E402  (Chapter 2's experiment)
from .pointer import __all__ as _pointer_all  # noqa: E402
from .probes import *  # noqa: F403, E402  (Chapter 7's experiments)
from .probes import __all__ as _probes_all  # noqa: E402
from .recurrent import *  # noqa: F403, E402  (Chapter 3)
from .recurrent import __all__ as _recurrent_all  # noqa: E402
from .scores import *  # noqa: F403, E402  (Chapter 4)
from .scores import __all__ as _scores_all  # noqa: E402
from .self_attention import *  # noqa: F403, E402  (Chapter 7)
from .self_attention import __all__ as _self_attention_all  # noqa: E402
from .train import accuracy, device, evaluate_loss, fit, predict  # noqa: E402
from .transformer import *  # noqa: F403, E402  (Chapter 8)
from .transformer import __all__ as _transformer_all  # noqa: E402
from .translation import *  # noqa: F403, E402  (Chapter 5)
from .translation import __all__ as _translation_all  # noqa: E402

__all__ = [
    "DotProductAttention", "masked_softmax", "OneToOne", "OneToMany", "ManyToOne", "ManyToMany", "Seq2Seq",
    "fit", "predict", "accuracy", "device", "evaluate_loss",
    *_hard_all, *_pointer_all, *_recurrent_all, *_scores_all, *_translation_all, *_captioning_all, *_draw_all,
    *_self_attention_all, *_probes_all, *_transformer_all, *_bert_all, *_explain_all,
]
