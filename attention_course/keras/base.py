"""What every Keras layer and model of the course shares, so that each states it once.

The course passes masks as explicit arguments (``mask=``, ``src_mask=``); Keras' implicit mask propagation is not
used. Sub-layers build on their first call, so a layer made of them needs no ``build()`` of its own.
"""

from __future__ import annotations

import keras


class Layer(keras.layers.Layer):
    """A layer whose masks are explicit arguments: ``compute_mask`` returns None (no implicit mask flows on),
    and ``supports_masking`` is True (Keras does not warn that an incoming implicit mask is dropped)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_mask(self, *args, **kwargs):
        return None


class BuildOnCall:
    """Mixin for a layer or model made of sub-layers that build on their first call."""

    def build(self, *args, **kwargs):
        self.built = True


class Model(BuildOnCall, keras.Model):
    """A subclassed model whose sub-layers build on their first call (no ``build()`` needed)."""
