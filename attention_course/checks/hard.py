"""Exercise checkers of Chapter 2 (hard and local attention)."""

__all__: list[str] = []
