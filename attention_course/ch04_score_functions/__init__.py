"""Chapter 4, score functions: ``torch.py``/``keras.py`` (the five scores, ``ScoredAttention``, ``ScoredSeq2Seq``),
``exercises.py``, ``charts.py``."""
