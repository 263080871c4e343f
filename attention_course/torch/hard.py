"""Chapter 2 hard and local attention (torch). Same names and signatures in both frameworks."""

__all__: list[str] = []
