"""What the book's prose takes from an executed notebook: ``ac.glue(name, value)`` stores a value that the text
quotes with ``{glue:text}`name:.2f```, and shows it in the notebook (``ac.glue`` is this module's ``glue``)."""

from __future__ import annotations


def glue(name: str, value, fmt: str = "{}") -> None:
    """Print ``name = value`` and, where myst-nb is installed (the book build), glue it silently."""
    if hasattr(value, "item"):  # NumPy / framework scalars → plain Python numbers (glue stores their repr)
        value = value.item()
    print(f"{name} = {fmt.format(value)}")
    try:
        from myst_nb import glue as _glue
    except ImportError:  # Colab, plain Jupyter: the printed line is enough
        return
    _glue(name, _Text(value) if isinstance(value, str) else value, display=False)


class _Text(str):
    """A string glued as itself: ``{glue:text}`` shows the text/plain form, which for a str is its quoted repr."""

    def __repr__(self) -> str:
        return str(self)
