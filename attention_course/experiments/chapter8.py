"""Chapter 8's experiment: the Transformer trained on Chapter 5's data and scored as Chapter 5 scores its models.

``SIZES`` holds the sizes of each run; the data, tokenizers, decoding and scoring are Chapter 5's
(``attention_course.experiments.chapter5``), so the two chapters' numbers are comparable. Importing this module
loads no framework: the functions take the framework's module (``ac.torch`` or ``ac.keras``) as an argument.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..text import PAD
from ..train import warmup_schedule
from . import chapter5

__all__ = ["SIZES", "train"]

#: Model and training sizes of each run; the data of each is Chapter 5's run of the same name.
SIZES: dict[str, dict[str, Any]] = {
    "quick": {"d_model": 64, "heads": 4, "layers": 2, "d_ff": 256, "dropout": 0.1, "epochs": 2, "warmup": 100,
              "lr_factor": 0.5, "label_smoothing": 0.1, "batch_size": 128},
    "full": {"d_model": 256, "heads": 8, "layers": 3, "d_ff": 1024, "dropout": 0.1, "epochs": 20, "warmup": 2000,
             "lr_factor": 1.0, "label_smoothing": 0.1, "batch_size": 128},
}


def train(fw: ModuleType, model, data: chapter5.Corpus, sizes: dict[str, Any], *, seed: int = 0,
          warmup: bool = True, desc: str | None = None):
    """Teacher forcing with label smoothing, Adam on the warm-up schedule (or the schedule's peak rate throughout
    when ``warmup`` is False), gradients clipped at norm 1, the weights of the best validation epoch kept."""
    schedule = warmup_schedule(sizes["d_model"], sizes["warmup"], sizes["lr_factor"])
    peak = schedule(sizes["warmup"])
    return fw.fit(model, (data.train.src, data.train.src_mask, data.train.tgt_in), data.train.tgt_out,
                  epochs=sizes["epochs"], batch_size=sizes["batch_size"], lr=peak, ignore_index=PAD, seed=seed,
                  clip_norm=1.0, label_smoothing=sizes["label_smoothing"], schedule=schedule if warmup else None,
                  desc=desc, validation=((data.val.src, data.val.src_mask, data.val.tgt_in), data.val.tgt_out))
