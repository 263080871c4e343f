"""Chapter 2 hard and local attention (keras). Same names and signatures in both frameworks."""

__all__: list[str] = []
