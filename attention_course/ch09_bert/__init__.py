"""Chapter 9, BERT: ``torch.py``/``keras.py`` (BERT, its heads, Jain & Wallace's tests of attention as
explanation), ``experiment.py``, ``pretrained.py``, ``exercises.py``, ``charts.py``."""
