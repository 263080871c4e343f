"""Chapter 9, BERT: ``torch.py``/``keras.py`` (BERT, its heads, Jain & Wallace's tests of attention as
explanation), ``experiment.py``, ``pretrained.py`` (pretrained weights), ``huggingface.py`` (the ``transformers``
library's BERT, run in a process of its own), ``exercises.py``, ``charts.py``."""
