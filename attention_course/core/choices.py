"""The choices that the layers and models of both frameworks take by name, listed once.

``ac.torch`` and ``ac.keras`` re-export them (``ac.torch.SCORES is ac.keras.SCORES``); a notebook can import
them from here without loading a framework. Nothing here imports one.
"""

from __future__ import annotations

from attention_course.core import validate
from attention_course.core.errors import ConfigError

__all__ = ["SCORES", "POINTER_ATTENTION", "ACTIVATIONS", "NER_ATTENTION", "NER_PLACES", "POOLING",
           "TRANSLATION_ATTENTION", "CAPTION_ATTENTION", "score_layer"]

#: The score names ``ScoredAttention`` (and ``Seq2Seq(score=...)``) accept (Chapter 4).
SCORES = ("dot", "scaled_dot", "general", "concat", "additive")
#: The attention of ``PointerModel`` (Chapter 2), also its ``VARIANTS``.
POINTER_ATTENTION = ("soft", "hard", "gumbel", "local-m", "local-p")
#: How the Chapter 3 blocks turn attention scores into weights.
ACTIVATIONS = ("softmax", "linear")
#: The attention of ``NERTagger`` (Chapter 3): none, feature-wise, feature-wise averaged over time, timestep-wise,
#: the talk's model 1 (feature weights averaged over time, laid out with RepeatVector and Permute).
NER_ATTENTION = (None, "feature", "feature_single", "timestep", "repeat_vector")
#: Where ``NERTagger`` (Chapter 3) puts its attention block: on the embeddings or on the BiLSTM's states.
NER_PLACES = ("before", "after")
#: How ``SentimentClassifier`` (Chapter 3) summarises the states.
POOLING = ("last", "attention", "attention_gru")
#: The decoders of ``Translator`` (Chapter 5): no attention, Bahdanau's, Luong's.
TRANSLATION_ATTENTION = ("none", "bahdanau", "luong")
#: The attention of ``Captioner`` (Chapter 6): none (Show and Tell), the mean of the grid, soft, hard.
CAPTION_ATTENTION = ("none", "mean", "soft", "hard")

_SCORE_CLASSES = {"dot": "DotScore", "scaled_dot": "ScaledDotScore", "general": "GeneralScore",
                  "concat": "ConcatScore", "additive": "AdditiveScore"}


def score_layer(score: str, d_query: int | None = None, d_key: int | None = None,
                units: int | None = None) -> tuple[str, tuple[int, ...]]:
    """The class name of the score layer called ``score`` (one of ``SCORES``) and the sizes its constructor
    takes. Learned scores need ``d_query``; ``d_key`` and ``units`` default to it. Each framework's
    ``make_score`` builds its own class of that name."""
    if score not in SCORES:
        raise ConfigError(f"unknown score {score!r}: choose one of {', '.join(SCORES)}")
    if score in ("dot", "scaled_dot"):
        return _SCORE_CLASSES[score], ()
    if d_query is None:
        raise ConfigError(f"the {score!r} score is learned: give its sizes, e.g. d_query=64 (d_key and units "
                          f"default to d_query)")
    d_key = d_query if d_key is None else d_key
    units = d_query if units is None else units
    d_query, d_key, units = validate.sizes(d_query=d_query, d_key=d_key, units=units)
    return _SCORE_CLASSES[score], (d_query, d_key) if score == "general" else (d_query, d_key, units)
