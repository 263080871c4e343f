"""Chapter 11, more ways to attend, on two pages (``more-attention``: pointer networks and the pointer-generator;
``where-to-look``: convolutional, hierarchical, monotonic and multi-source attention): ``torch.py``/``keras.py``
(every layer and model, same names in both), ``reference.py`` (the chapter's computations in plain NumPy),
``experiment.py`` (the tasks, training, decoding and scores), ``runs.py`` (the stored runs both pages
read), ``exercises.py`` (the checkers) and ``validate.py`` (the argument checks)."""
