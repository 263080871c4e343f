"""Chapter 5, neural machine translation: ``torch.py``/``keras.py`` (the translators), ``experiment.py``, ``data.py``
(sentence pairs, the subword tokenizer), ``metrics.py`` (BLEU, chrF, alignment), ``exercises.py``."""
