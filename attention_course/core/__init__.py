"""The ground floor: errors, the backend seam, text, decoding, argument validation, the training loops, checkpoints,
parity, results, the machine. It imports no chapter, and no framework at import time (``core/torch`` and
``core/keras`` are the frameworks' own foundations, loaded when a chapter's framework module is)."""
