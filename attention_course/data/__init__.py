"""Course datasets: a registry of pinned files, a checked download cache, and simple loaders.

>>> from attention_course import data
>>> data.names()                      # the registered datasets
>>> pairs = data.load_spa_eng()       # downloads once, checks the sha256 on every load
>>> print(data.verify())              # which cached files are present and intact
>>> train = data.load_flickr8k("train")  # Chapter 6: image paths and 5 tokenised captions each (about 1 GB)

Set ``COURSE_DATA_DIR`` to a folder laid out as ``<dataset folder>/<file>`` to work offline.
Importing this package is cheap: pooch, pandas and numpy are imported only when a function needs them.
"""

from __future__ import annotations

from attention_course.core.facade import lazy

_CH3 = "attention_course.ch03_timestep_feature_attention.data"
_CH5 = "attention_course.ch05_neural_machine_translation.data"
_CH6 = "attention_course.ch06_image_captioning.flickr8k"
_DOWNLOAD, _LOADERS, _REGISTRY = (f"{__name__}.{m}" for m in ("download", "loaders", "registry"))
_NAMES = {
    **dict.fromkeys(["ENV_VAR", "ChecksumError", "DataUnavailableError", "FileCheck", "StructureError", "VerifyReport",
                     "cache_dir", "fetch", "file_path", "sha256sum", "verify"], _DOWNLOAD),
    **dict.fromkeys(["TaggedSentence", "load_multi30k", "load_ner", "load_sentiment", "load_spa_eng",
                     "load_tinyshakespeare", "load_wikitext2_subset", "repair_cp1252"], _LOADERS),
    **dict.fromkeys(["Dataset", "RemoteFile", "get", "names"], _REGISTRY),
    "check_flickr8k": f"{__name__}.flickr8k",
    # the chapters' own data, re-exported (Chapters 3, 5 and 6 import from the floor above, never the reverse)
    **dict.fromkeys(["prepare_ner", "prepare_sentiment", "sentiment_words"], _CH3),
    **dict.fromkeys(["ParallelArrays", "SubwordTokenizer", "TranslationData", "encode_pairs", "translation_pairs"],
                    _CH5),
    **dict.fromkeys(["Flickr8kSplit", "load_flickr8k"], _CH6),
}
__all__ = sorted([*_NAMES, "synthetic"])
__getattr__, __dir__ = lazy(__name__, _NAMES)
