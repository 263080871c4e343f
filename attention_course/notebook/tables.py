"""Tables that a notebook prints show numbers as a person writes them.

pandas prints every float with six decimals: a count as ``7436.0``, a setting as ``64.00000``, an accuracy as
``0.375008``, a difference as ``3.576279e-07``. ``readable_tables`` makes it print whole numbers as integers with
thousands separators, numbers of 1,000 or more without decimals, and the others with four significant digits.
"""

from __future__ import annotations

import math

__all__ = ["readable", "readable_tables"]


def readable(x: float) -> str:
    """7436.0 → "7,436"; 1011.9421 → "1,012"; 0.375008 → "0.375"; 3.576279e-07 → "3.576e-07"; nan → "nan"."""
    if not math.isfinite(x):
        return str(x)
    if float(x).is_integer() or abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def readable_tables() -> None:
    """Make pandas print the floats of every table with ``readable`` (pandas' own option, for this kernel)."""
    import pandas as pd

    pd.set_option("display.float_format", readable)
