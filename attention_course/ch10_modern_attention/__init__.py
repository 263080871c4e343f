"""Chapter 10, attention in today's language models: ``torch.py``/``keras.py`` (FlashAttention's tiled forward
pass, grouped-query and multi-head latent attention, sliding windows, linear attention, a Llama), ``llama2c.py``
(Karpathy's llama2.c checkpoint and tokenizer, read with NumPy), ``reference.py`` (the chapter's computations in
plain NumPy), ``cache.py`` (what a key-value cache costs per token, for published model shapes)."""
