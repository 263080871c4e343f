"""The chapters' experiments at full size, which tools/ commands run and whose results the book shows:
``chapter3`` (timestep- vs feature-wise attention on NER and sentiment). Importing them loads no framework."""
