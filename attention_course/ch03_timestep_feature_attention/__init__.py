"""Chapter 3, timestep- and feature-wise attention: ``torch.py``/``keras.py`` (the attention blocks, taggers and
classifiers), ``experiment.py`` and ``article.py`` (the full runs), ``data.py``, ``exercises.py``, ``charts.py``."""
