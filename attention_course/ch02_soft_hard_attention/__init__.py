"""Chapter 2, soft and hard attention: ``torch.py``/``keras.py`` (hard, Gumbel-softmax and local attention; the
pointer experiment), ``exercises.py``, ``charts.py``."""
