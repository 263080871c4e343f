"""Chapter 1, sequence models and where attention fits: ``torch.py``/``keras.py`` (the RNN shapes, the masked
softmax, dot-product attention, the encoder–decoder), ``exercises.py``, ``charts.py`` (the softmax playground)."""
