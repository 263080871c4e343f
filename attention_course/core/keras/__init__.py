"""What every chapter's Keras code stands on: how layers take their inputs, the base classes and the training
loop. Importing it imports Keras on the TensorFlow backend, without TensorFlow's start-up chatter."""

from attention_course.core.quiet import import_keras

import_keras()
