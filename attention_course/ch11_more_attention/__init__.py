"""Chapter 11, more ways to attend: ``torch.py``/``keras.py`` (the pointer network, whose attention over the input
positions is its output, and the same encoder-decoder with a fixed output vocabulary), ``reference.py`` (the
chapter's computations in plain NumPy), ``experiment.py`` (the sorting task, training, greedy pointing and its
scores)."""
