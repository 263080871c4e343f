"""Chapter 9's experiments, in one place for the notebook and ``tools/chapter9_pretrain.py``: the heads of a pretrained
BERT (``heads``), pretraining a small BERT (``pretraining``), next-sentence prediction (``next_sentence``),
fine-tuning (``finetuning``) and whether attention explains (``explanation``). Importing this module loads no
framework: the functions take the framework's module (``ac.torch`` or ``ac.keras``)."""

from __future__ import annotations

from attention_course.ch09_bert.explanation import *  # noqa: F403
from attention_course.ch09_bert.explanation import __all__ as _explanation
from attention_course.ch09_bert.finetuning import *  # noqa: F403
from attention_course.ch09_bert.finetuning import __all__ as _finetuning
from attention_course.ch09_bert.heads import *  # noqa: F403
from attention_course.ch09_bert.heads import __all__ as _heads
from attention_course.ch09_bert.next_sentence import *  # noqa: F403
from attention_course.ch09_bert.next_sentence import __all__ as _next_sentence
from attention_course.ch09_bert.pretraining import *  # noqa: F403
from attention_course.ch09_bert.pretraining import CLS, MASK, PAD, SEP, UNK, VAL_SEED  # noqa: F401  (the notebook's constants)
from attention_course.ch09_bert.pretraining import __all__ as _pretraining

__all__ = [*_heads, *_pretraining, *_next_sentence, *_finetuning, *_explanation]
