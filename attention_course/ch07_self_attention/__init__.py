"""Chapter 7, self-attention: ``torch.py``/``keras.py`` (scaled dot-product and multi-head attention, positions,
the recall and look-back networks), ``exercises.py``."""
