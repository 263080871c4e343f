"""The chapters' experiments, which the notebooks and the tools/ commands share: ``chapter3`` (timestep- vs
feature-wise attention on NER and sentiment), ``chapter5`` (translation with and without attention),
``chapter6`` (captioning digit scenes), ``chapter8`` (the Transformer on Chapter 5's data). Importing them loads
no framework."""
