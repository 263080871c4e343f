"""Exceptions with messages a learner can act on."""

from __future__ import annotations


class CourseError(Exception):
    """Base class of the course's own errors."""

    # Keras re-raises an error that has this attribute as it is, without wrapping its message in "Exception
    # encountered when calling <layer>.call() … Arguments received by …": the same message in both frameworks.
    _keras_call_info_injected = True


class ShapeError(CourseError, ValueError):
    """Tensors whose shapes do not fit together; the message names the shapes."""


class ConfigError(CourseError, ValueError):
    """An unknown profile, framework or option."""


class InputError(CourseError, ValueError):
    """An input whose type, dtype or values a layer cannot take (a mask that is not 0/1, token ids outside the
    vocabulary, integer queries, every target ignored); the message names the argument, the rule and the values."""


class OutOfVocabularyError(InputError, IndexError):
    """An id outside the vocabulary: the course's error, and an ``IndexError`` as an index out of range is."""


class MissingFileError(CourseError, FileNotFoundError):
    """A file the course was asked to read is not there; the message names it and how to make it."""


class EnvError(ConfigError):
    """An environment variable of the course set to a value it cannot use; the message names the variable,
    what it expects and the value."""

    @classmethod
    def positive(cls, name: str, default: float, kind: type = int, what: str = ""):
        """The environment variable ``name`` as a positive ``int`` or ``float`` (``kind``); ``default`` when it
        is unset or empty. Raises this error for anything else (``"abc"``, ``"0"``, ``"-1"``, ``"inf"``)."""
        import math
        import os

        raw = os.environ.get(name, "").strip()
        if not raw:
            return default
        try:
            value = kind(raw)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or value <= 0:
            expected = "a positive integer" if kind is int else "a positive number"
            raise cls(f"{name} must be {expected}{f' ({what})' if what else ''}; got {name}={raw!r}")
        return value


class CheckpointError(CourseError, ValueError):
    """A training checkpoint the course will not read: another format (a pickle, which could run code when
    loaded), a damaged file; the message names the file and what to do with it."""


class ChecksumError(CourseError):
    """A data file whose sha256 is not the one recorded in the registry."""


class DataUnavailableError(CourseError):
    """A data file that is not in the cache and could not be downloaded."""


class StructureError(ChecksumError):
    """A dataset verified by structure (no sha256 known) whose files are incomplete or malformed: a missing file or
    image, a malformed line, a count that is not the expected one. The message names the problem."""


class ModelUnavailableError(CourseError):
    """The pretrained model is neither on disk nor downloadable from here."""


class AssignError(CourseError, ValueError):
    """Bad markers, an unknown chapter, a malformed chapter spec or an output folder that is not safe to use."""


class ResultsUnavailableError(CourseError, FileNotFoundError):
    """A results file that is neither beside the notebook nor online; the message names where it was looked for."""


class ExerciseError(CourseError, AssertionError):
    """The learner's answer is wrong, or their function failed or did not return; the message says how."""
