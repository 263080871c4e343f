"""Chapter 6, image captioning and DRAW: ``torch.py``/``keras.py``, ``experiment.py``, ``scenes.py``, ``flickr8k.py``,
``image_features.py``, ``metrics.py``, ``exercises.py``, ``charts.py``."""
