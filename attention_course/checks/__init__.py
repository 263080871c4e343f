"""Exercise checkers: run a learner's function on fresh random inputs against the reference, and when the
answer is wrong, name the likely mistake. One module per topic; all checkers are importable from here.

Every checker refuses ``trials`` < 1 (:class:`~attention_course.errors.ConfigError`), calls the learner's
function with a time limit (``COURSE_CHECK_TIMEOUT`` seconds, default 30) and reports an error it raises with
the shapes of the inputs (:class:`ExerciseError`); the shared code is in :mod:`._run`."""

from .attention import (
    ExerciseError,
    attention_average,
    masked_softmax,
    reference_attention,
    reference_masked_softmax,
)
from .bert import *  # noqa: F403  (Chapter 9: attention entropy, the masked-LM rule)
from .bert import __all__ as _bert_all
from .captioning import *  # noqa: F403  (Chapter 6: gated soft attention, attention correctness)
from .captioning import __all__ as _captioning_all
from .decode import *  # noqa: F403  (Chapter 5: one step of beam search)
from .decode import __all__ as _decode_all
from .hard import *  # noqa: F403  (Chapter 2: Gumbel-softmax, local attention windows)
from .hard import __all__ as _hard_all
from .recurrent import *  # noqa: F403  (Chapter 3: attention pooling, timestep-wise attention)
from .recurrent import __all__ as _recurrent_all
from .scores import *  # noqa: F403  (Chapter 4: score functions)
from .scores import __all__ as _scores_all
from .self_attention import *  # noqa: F403  (Chapter 7: heads, causal mask, RoPE, multi-head)
from .self_attention import __all__ as _self_attention_all
from .transformer import *  # noqa: F403  (Chapter 8: the decoder's masks, the warm-up schedule)
from .transformer import __all__ as _transformer_all
from .translation import *  # noqa: F403  (Chapter 5: one step of Bahdanau's attention)
from .translation import __all__ as _translation_all

__all__ = [
    "ExerciseError", "attention_average", "masked_softmax", "reference_attention", "reference_masked_softmax",
    *_hard_all, *_recurrent_all, *_scores_all,
    *_decode_all, *_translation_all, *_captioning_all, *_self_attention_all, *_transformer_all, *_bert_all,
]
