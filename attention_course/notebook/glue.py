"""What the book's prose takes from an executed notebook: ``ac.glue(name, value)`` stores a value that the text
quotes with ``{glue:text}`name:.2f```, and shows it in the notebook (``ac.glue`` is this module's ``glue``)."""

from __future__ import annotations

import os
from ast import literal_eval


def glue(name: str, value, fmt: str = "{}") -> None:
    """Print ``name = value`` and, where myst-nb is installed (the book build), glue it silently.

    A float is glued with its format: ``{glue:text}`name``` shows ``fmt.format(value)`` (three significant
    digits when no format is given), and ``{glue:text}`name:.2f``` still formats the number itself.
    ``COURSE_GLUE_ECHO=0`` (set by the Makefile for the book) leaves out the printed line."""
    if hasattr(value, "item"):  # NumPy / framework scalars → plain Python numbers (glue stores their repr)
        value = value.item()
    if isinstance(value, float) and fmt == "{}":
        fmt = "{:.3g}"  # never a raw float in the prose: 0.0058, not 0.005800000000000027
    text = fmt.format(value)
    if os.environ.get("COURSE_GLUE_ECHO", "1") != "0":  # the book sets 0: the prose shows the value
        print(f"{name} = {text}")
    try:
        from myst_nb import glue as _glue
    except ImportError:  # Colab, plain Jupyter: the printed line is enough
        return
    if isinstance(value, str):
        value = _Text(value)
    elif isinstance(value, float):
        value = _Number(value, text)
    elif isinstance(value, int) and not isinstance(value, bool) and fmt != "{}":
        value = _Integer(value, text)                       # 893,416 with "{:,}", not 893416
    _glue(name, value, display=False)


class _Text(str):
    """A string glued as itself: ``{glue:text}`` shows the text/plain form, which for a str is its quoted repr."""

    def __repr__(self) -> str:
        return str(self)


class _Formatted:
    """A number glued with its formatted ``text``: its text/plain form (what ``{glue:text}`` shows) comes from it."""

    text: str

    def __new__(cls, value, text: str):
        number = super().__new__(cls, value)  # type: ignore[call-arg]
        number.text = text
        return number


class _Integer(_Formatted, int):
    """An int glued with its format (``"{:,}"``): the text quoted, since ``{glue:text}`` reads it back as a Python
    literal (unquoted, ``893,416`` would be the tuple ``(893, 416)``)."""

    def __repr__(self) -> str:
        return repr(self.text)


class _Number(_Formatted, float):
    """A float glued with its format: its text/plain form is the formatted text, quoted where ``{glue:text}``, which
    reads it back as a Python literal, would read something else: "1,666" (``"{:,.0f}"``) is the tuple (1, 666),
    "+1.5" the number 1.5 and "0.50" the number 0.5."""

    def __repr__(self) -> str:
        try:
            same = str(literal_eval(self.text)) == self.text
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
            same = True                                     # not a literal ("12 %"): myst-nb shows it as it is
        return self.text if same else repr(self.text)
