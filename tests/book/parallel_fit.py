"""Train a small language model with ``fit`` and save its weights and history: run by
tests/book/test_data_parallel.py as one process, under ``torchrun`` as two, and in Keras on two CPU devices.

    python parallel_fit.py FRAMEWORK OUT [DEVICES]

A mini-batch of 20 over 101 examples leaves a last mini-batch of one (one process's share is empty), targets of 0
are padding (left out), and the gradients are clipped: the cases where a share's weight matters."""

import json
import sys
from contextlib import nullcontext

import numpy as np

from attention_course.core import parallel
from attention_course.notebook import frameworks, session

framework, out = sys.argv[1], sys.argv[2]
frameworks.use(framework)
import attention_course as ac  # noqa: E402

if framework == "pytorch":
    from attention_course.core.torch import parallel as torch_parallel

    torch_parallel.start()
    fw, scope = ac.torch, nullcontext()
else:
    from attention_course.core.keras import parallel as keras_parallel

    fw, scope = ac.keras, keras_parallel.replicas(int(sys.argv[3]) if len(sys.argv) > 3 else 1).scope()
rng = np.random.default_rng(0)
x = rng.integers(1, 20, size=(101, 12))
y = np.roll(x, -1, axis=1)
y[:, -1] = 0
y[::7, -4:] = 0
with scope:
    session.seed_everything(0)
    model = fw.LanguageModel(20, d_model=16, heads=2, layers=1, d_ff=32, dropout=0.0, context=12)
    history = fw.fit(model, (x,), y, epochs=2, batch_size=20, lr=3e-3, ignore_index=0, clip_norm=0.5, seed=0,
                     validation=((x[:20],), y[:20]), checkpoint=out + ".ckpt")
if parallel.is_main():
    weights = model.state_dict().values() if framework == "pytorch" else model.get_weights()
    np.savez(out + ".npz", *[np.asarray(w) for w in weights])
    with open(out + ".json", "w") as f:
        json.dump(history.metrics, f)
