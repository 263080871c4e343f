"""Exercise checkers of Chapter 4 (score functions)."""

__all__: list[str] = []
