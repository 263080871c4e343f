"""Chapter 10, attention in today's language models: ``llama2c.py`` (Karpathy's llama2.c checkpoint and tokenizer,
read with NumPy), ``reference.py`` (the chapter's computations in plain NumPy: the online softmax, FlashAttention's
tiled forward pass, a Llama's forward pass)."""
