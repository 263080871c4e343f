"""Chapter 4 score functions (keras). Same names and signatures in both frameworks."""

__all__: list[str] = []
