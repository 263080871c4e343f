"""Chapter 8, the Transformer: ``torch.py``/``keras.py`` (the key–value cache, the layers, the translator and the
language model), ``experiment.py``, ``exercises.py``."""
