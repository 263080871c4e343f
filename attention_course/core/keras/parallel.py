"""Data-parallel training in Keras (TensorFlow): one process over several devices with
``tf.distribute.MirroredStrategy``; each device (a replica) trains on its share of every mini-batch, and the step
applies the gradients summed over the replicas, the step one device would take on the whole mini-batch::

    with replicas().scope():       # every GPU of this machine
        model = ...                # the weights are created on every device
        ac.keras.fit(model, ...)   # fit sees the strategy and splits each mini-batch
"""

from __future__ import annotations

import tensorflow as tf


def replicas(cpus: int | None = None) -> tf.distribute.Strategy:
    """A strategy over every GPU TensorFlow sees, or, without GPUs, over ``cpus`` virtual CPU devices (one CPU
    split in several, to try it on a laptop; they must be asked for before TensorFlow first runs anything). With
    one device it is TensorFlow's default strategy, and training runs as without it."""
    if tf.config.list_physical_devices("GPU"):         # (listing the logical devices would start TensorFlow)
        gpus = [d.name for d in tf.config.list_logical_devices("GPU")]
        return tf.distribute.MirroredStrategy(gpus) if len(gpus) > 1 else tf.distribute.get_strategy()
    cpus = 1 if cpus is None else cpus
    if cpus < 1:
        raise ValueError(f"cpus must be a positive number of devices, got {cpus}")
    if cpus == 1:
        return tf.distribute.get_strategy()
    physical = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(physical, [tf.config.LogicalDeviceConfiguration()] * cpus)
    except RuntimeError as err:                      # TensorFlow already started with its devices
        have = len(tf.config.list_logical_devices("CPU"))
        if have != cpus:
            raise RuntimeError(f"{cpus} CPU devices must be asked for before TensorFlow runs anything; this "
                               f"process already has {have}") from err
    return tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")])
