"""Charts of Chapter 4: score statistics (variance, entropy, gradients) and costs."""

__all__: list[str] = []
