"""Exercise checkers of every chapter, importable from one place (``ac.exercises.masked_softmax(fn)``). Each chapter's
are in its folder (``attention_course/chNN_*/exercises.py``); what they share is in
:mod:`attention_course.core.grading`.

Every checker refuses ``trials`` < 1 (:class:`~attention_course.core.errors.ConfigError`), calls the learner's
function with a time limit (``COURSE_CHECK_TIMEOUT`` seconds, default 30) and reports an error it raises with
the shapes of the inputs (:class:`~attention_course.core.errors.ExerciseError`)."""

from __future__ import annotations

from attention_course.ch01_sequence_models.exercises import *  # noqa: F403  (Chapter 1)
from attention_course.ch01_sequence_models.exercises import __all__ as _ch01
from attention_course.ch02_soft_hard_attention.exercises import *  # noqa: F403  (Chapter 2)
from attention_course.ch02_soft_hard_attention.exercises import __all__ as _ch02
from attention_course.ch03_timestep_feature_attention.exercises import *  # noqa: F403  (Chapter 3)
from attention_course.ch03_timestep_feature_attention.exercises import __all__ as _ch03
from attention_course.ch04_score_functions.exercises import *  # noqa: F403  (Chapter 4)
from attention_course.ch04_score_functions.exercises import __all__ as _ch04
from attention_course.ch05_neural_machine_translation.exercises import *  # noqa: F403  (Chapter 5)
from attention_course.ch05_neural_machine_translation.exercises import __all__ as _ch05
from attention_course.ch06_image_captioning.exercises import *  # noqa: F403  (Chapter 6)
from attention_course.ch06_image_captioning.exercises import __all__ as _ch06
from attention_course.ch07_self_attention.exercises import *  # noqa: F403  (Chapter 7)
from attention_course.ch07_self_attention.exercises import __all__ as _ch07
from attention_course.ch08_transformer.exercises import *  # noqa: F403  (Chapter 8)
from attention_course.ch08_transformer.exercises import __all__ as _ch08
from attention_course.ch09_bert.exercises import *  # noqa: F403  (Chapter 9)
from attention_course.ch09_bert.exercises import __all__ as _ch09
from attention_course.ch10_modern_attention.exercises import *  # noqa: F403  (Chapter 10)
from attention_course.ch10_modern_attention.exercises import __all__ as _ch10
from attention_course.ch11_more_attention.exercises import *  # noqa: F403  (Chapter 11)
from attention_course.ch11_more_attention.exercises import __all__ as _ch11
from attention_course.core.errors import ExerciseError  # noqa: F401  (re-exported)

__all__ = sorted({"ExerciseError", *_ch01, *_ch02, *_ch03, *_ch04, *_ch05, *_ch06, *_ch07, *_ch08, *_ch09, *_ch10,
                  *_ch11})
