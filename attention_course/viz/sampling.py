"""Charts of Chapter 2: how attention distributions change over training, hard samples, local windows."""

__all__: list[str] = []
