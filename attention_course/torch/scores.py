"""Chapter 4 score functions (torch). Same names and signatures in both frameworks."""

__all__: list[str] = []
