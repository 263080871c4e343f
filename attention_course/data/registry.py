"""Which datasets the course uses, where they come from and how to check them.

Every file is pinned by the sha256 of the file as it lies in the cache (for a file that ships inside a
``.zip``, the sha256 of the *extracted* member, since a mirror may re-zip the same bytes), with one exception: a
dataset whose sha256 cannot be verified from here (Flickr8k: 8,091 images, no published checksum) is **verified by
its structure** instead. Its files say ``verify="structure"`` and ``sha256=None``, and its :class:`Dataset` has a
``structure`` function that checks the whole copy (every file present, the expected line formats and counts) and
raises :class:`~attention_course.data.download.StructureError` naming what is wrong. Provenance and quirks of
each file are recorded here, in its :class:`RemoteFile` (``urls``, ``note``) and :class:`Dataset` (``license``,
``citation``, ``homepage``). The offline copies that CI uses (``COURSE_DATA_DIR``, ``../shared/data`` beside
the repository) carry their own ``SOURCES.md``, which lies outside this repository.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from attention_course.core.errors import ConfigError
from attention_course.data.bbc_news import check_bbc_news
from attention_course.data.flickr8k import check_flickr8k

__all__ = ["Dataset", "RemoteFile", "StructureCheck", "get", "names", "register"]


@dataclass(frozen=True)
class RemoteFile:
    """One file of a dataset.

    Attributes:
        filename: name of the file in the dataset's cache folder (of a folder, for a folder member).
        sha256: hex sha256 of that file (after extraction, if it comes from an archive); ``None`` exactly when
            ``verify="structure"``.
        urls: where to download it from, tried in order. Empty when there is no automatic download
            (the file must then be placed by hand; ``note`` says how).
        archive_member: path of the file inside the archive when the URLs point at a ``.zip``;
            ``None`` when the URLs serve the file itself. A path ending in ``/`` names a folder: every file
            under it is extracted (only for ``verify="structure"``).
        archive_sha256: sha256 of the archive as last seen, for information only: it is *not* enforced,
            because a mirror may re-zip the same content; the extracted file is always checked.
        note: how to get the file by hand, quirks (encoding, line endings), anything a learner may need.
        verify: ``"sha256"`` (the default: the file must have ``sha256``) or ``"structure"`` (no sha256 is
            known; the dataset's ``structure`` function checks the whole copy instead).
    """

    filename: str
    sha256: str | None
    urls: tuple[str, ...] = ()
    archive_member: str | None = None
    archive_sha256: str | None = None
    note: str = ""
    verify: str = "sha256"

    def __post_init__(self) -> None:
        if self.verify == "sha256":
            if not (isinstance(self.sha256, str) and re.fullmatch(r"[0-9a-f]{64}", self.sha256)):
                raise ConfigError(f"{self.filename}: verify='sha256' needs a sha256 of 64 hex digits, "
                                  f"got {self.sha256!r}")
        elif self.verify == "structure":
            if self.sha256 is not None:
                raise ConfigError(f"{self.filename}: verify='structure' takes sha256=None, got {self.sha256!r}")
        else:
            raise ConfigError(f"{self.filename}: verify must be 'sha256' or 'structure', got {self.verify!r}")
        if self.archive_member and self.archive_member.endswith("/") and self.verify != "structure":
            raise ConfigError(f"{self.filename}: a folder member ({self.archive_member!r}) needs verify='structure'")


#: A structure check: ``{filename: path}`` of every file of the dataset → anything (what it parsed); raises
#: :class:`~attention_course.data.download.StructureError` naming the problem when the copy is not right.
StructureCheck = Callable[[Mapping[str, Path]], object]


@dataclass(frozen=True)
class Dataset:
    """A named dataset: a cache folder holding one or more :class:`RemoteFile` s. ``structure`` is set for a
    dataset verified by structure (its files have ``verify="structure"``); it checks the files as a whole."""

    name: str
    folder: str
    files: dict[str, RemoteFile] = field(hash=False)
    license: str
    citation: str
    description: str
    homepage: str
    structure: StructureCheck | None = field(default=None, hash=False, compare=False, repr=False)
    kind: str = "data"      # "model": pretrained weights, kept under COURSE_MODEL_DIR instead of COURSE_DATA_DIR

    def __post_init__(self) -> None:
        if self.kind not in ("data", "model"):
            raise ConfigError(f"dataset {self.name!r}: kind is 'data' or 'model', got {self.kind!r}")
        by_structure = {rf.verify == "structure" for rf in self.files.values()}
        if by_structure == {True, False}:
            raise ConfigError(f"dataset {self.name!r} mixes files verified by sha256 and by structure")
        if (True in by_structure) != (self.structure is not None):
            raise ConfigError(f"dataset {self.name!r}: files with verify='structure' need a structure check, "
                              "and only they")

    def file(self, filename: str) -> RemoteFile:
        """The :class:`RemoteFile` called ``filename``; :class:`ConfigError` if this dataset has none."""
        try:
            return self.files[filename]
        except KeyError:
            known = ", ".join(sorted(self.files))
            raise ConfigError(
                f"dataset {self.name!r} has no file {filename!r}; its files are: {known}"
            ) from None


_REGISTRY: dict[str, Dataset] = {}


def register(dataset: Dataset) -> Dataset:
    """Add ``dataset`` to the registry (replacing one of the same name) and return it."""
    _REGISTRY[dataset.name] = dataset
    return dataset


def names() -> list[str]:
    """Names of all registered datasets, sorted."""
    return sorted(_REGISTRY)


def get(name: str) -> Dataset:
    """The registered :class:`Dataset` called ``name``; :class:`ConfigError` naming the known ones if none."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ConfigError(f"unknown dataset {name!r}; known datasets: {', '.join(names())}") from None


def _files(*files: RemoteFile) -> dict[str, RemoteFile]:
    return {f.filename: f for f in files}


# --------------------------------------------------------------------------------------------------
# UCI "Sentiment Labelled Sentences" (Kotzias et al., KDD 2015)
# --------------------------------------------------------------------------------------------------
_UCI_URLS = (
    "https://archive.ics.uci.edu/static/public/331/sentiment+labelled+sentences.zip",
    "https://archive.ics.uci.edu/ml/machine-learning-databases/00331/sentiment%20labelled%20sentences.zip",
)
_UCI_DIR = "sentiment labelled sentences/"
_UCI_NOTE = (
    "UTF-8, LF line endings, `sentence<TAB>label`; read with quoting=csv.QUOTE_NONE (stray double quotes). "
    "imdb_labelled.txt holds a few C1 control characters (U+0085, U+0096, U+0097) left over from a "
    "Windows-1252 -> Latin-1 -> UTF-8 conversion: they stand for '…', '–', '—'."
)

register(
    Dataset(
        name="sentiment",
        folder="sentiment-labelled-sentences",
        files=_files(
            RemoteFile(
                "amazon_cells_labelled.txt",
                "47003fc0a0d4840b00e96e715b6189bad09e7443a3da41c4cbe12ffc79f86ae3",
                _UCI_URLS,
                _UCI_DIR + "amazon_cells_labelled.txt",
                note=_UCI_NOTE,
            ),
            RemoteFile(
                "imdb_labelled.txt",
                "aef2e49e3da25714d61175e3a6e68eeef74a20a2f914318dc3be9947ea86512d",
                _UCI_URLS,
                _UCI_DIR + "imdb_labelled.txt",
                note=_UCI_NOTE,
            ),
            RemoteFile(
                "yelp_labelled.txt",
                "c76468b7b5c6e56a0804d728345c5f84aa2142ddb214420f61cc9cfd4c00d2ea",
                _UCI_URLS,
                _UCI_DIR + "yelp_labelled.txt",
                note=_UCI_NOTE,
            ),
            RemoteFile(
                "readme.txt",
                "736c26aa54e3614459e50314ece0698051f0923d108ed53938dcb1aa0483bfd4",
                _UCI_URLS,
                _UCI_DIR + "readme.txt",
                note="The original readme of the UCI zip.",
            ),
        ),
        license="CC BY 4.0 (UCI Machine Learning Repository)",
        citation="""@inproceedings{kotzias2015group,
  author    = {Kotzias, Dimitrios and Denil, Misha and de Freitas, Nando and Smyth, Padhraic},
  title     = {From Group to Individual Labels Using Deep Features},
  booktitle = {Proceedings of the 21th ACM SIGKDD International Conference on Knowledge Discovery
               and Data Mining (KDD '15)},
  pages     = {597--606},
  year      = {2015},
  publisher = {ACM},
  doi       = {10.1145/2783258.2783380}
}""",
        description=(
            "3 x 1000 review sentences (Amazon, IMDB, Yelp) labelled positive (1) or negative (0), "
            "500 of each per source."
        ),
        homepage="https://archive.ics.uci.edu/dataset/331/sentiment+labelled+sentences",
    )
)

# --------------------------------------------------------------------------------------------------
# GMB-based NER corpus as published on Kaggle ("Annotated Corpus for Named Entity Recognition")
# --------------------------------------------------------------------------------------------------
_KAGGLE_NER = "https://www.kaggle.com/datasets/abhinavwalia95/entity-annotated-corpus"

register(
    Dataset(
        name="ner-gmb",
        folder="ner-gmb-kaggle",
        files=_files(
            RemoteFile(
                "ner_dataset.csv",
                "83257dd94ed59596809dc9f5b28f1f035c9d925d5a647f266db43a2f098e8f1a",
                urls=(),  # Kaggle needs a login: no automatic download.
                note=(
                    f"There is no automatic download: Kaggle needs a (free) login. Open {_KAGGLE_NER}, "
                    "click Download, unzip the archive and take the file `ner_dataset.csv` "
                    "(15,208,151 bytes) from it. Windows-1252 encoded (it also decodes, less nicely, as "
                    "Latin-1), CRLF line endings."
                ),
            ),
        ),
        license="ODbL 1.0 (as listed on Kaggle); the text comes from the Groningen Meaning Bank",
        citation="""@incollection{bos2017groningen,
  author    = {Bos, Johan and Basile, Valerio and Evang, Kilian and Venhuizen, Noortje J.
               and Bjerva, Johannes},
  title     = {The Groningen Meaning Bank},
  booktitle = {Handbook of Linguistic Annotation},
  editor    = {Ide, Nancy and Pustejovsky, James},
  publisher = {Springer},
  pages     = {463--496},
  year      = {2017},
  doi       = {10.1007/978-94-024-0881-2_18}
}
@misc{walia2017entity,
  author       = {Walia, Abhinav},
  title        = {Annotated Corpus for Named Entity Recognition},
  howpublished = {Kaggle, \\url{https://www.kaggle.com/datasets/abhinavwalia95/entity-annotated-corpus}},
  year         = {2017}
}""",
        description=(
            "Named-entity recognition corpus from the GMB: 47,959 sentences, 1,048,575 tokens with POS tags "
            "and 17 BIO entity tags (geo, gpe, per, org, tim, art, eve, nat)."
        ),
        homepage=_KAGGLE_NER,
    )
)

# --------------------------------------------------------------------------------------------------
# English-Spanish pairs (Tatoeba via manythings.org), the zip of the TensorFlow NMT tutorial
# --------------------------------------------------------------------------------------------------
_SPA_URLS = ("https://storage.googleapis.com/download.tensorflow.org/data/spa-eng.zip",)
_SPA_ZIP_SHA = "f80e581ae291aa34dd3aba7bd98b5e9505234da4318e2f3295df70a1520c7f61"

register(
    Dataset(
        name="spa-eng",
        folder="spa-eng",
        files=_files(
            RemoteFile(
                "spa.txt",
                "6ec60e212f812ee3430f7568ea6f33b6fb080e32193c5952e8da0ee8ba45574c",
                _SPA_URLS,
                "spa-eng/spa.txt",
                _SPA_ZIP_SHA,
                note="UTF-8, LF, `english<TAB>spanish`, 118,964 pairs (the 2018-05-13 export).",
            ),
            RemoteFile(
                "_about.txt",
                "df6f57ec7e6d9b31e2b9c8b6a4e0bea4aebe0a408a8e7fb24ae217e37ef4e92f",
                _SPA_URLS,
                "spa-eng/_about.txt",
                _SPA_ZIP_SHA,
                note="Terms of use and attribution note from manythings.org.",
            ),
        ),
        license="CC BY 2.0 FR (Tatoeba); attribution: www.manythings.org/anki and tatoeba.org",
        citation="""@misc{tatoeba2018spaeng,
  author       = {{Tatoeba contributors}},
  title        = {Tatoeba: English--Spanish sentence pairs (Anki export of 2018-05-13)},
  howpublished = {\\url{https://tatoeba.org}, via \\url{https://www.manythings.org/anki/}},
  note         = {CC BY 2.0 FR},
  year         = {2018}
}""",
        description=(
            "118,964 English-Spanish sentence pairs, as used by the TensorFlow NMT-with-attention tutorial."
        ),
        homepage="https://www.manythings.org/anki/",
    )
)

# --------------------------------------------------------------------------------------------------
# Multi30k task 1 (German-English image descriptions)
# --------------------------------------------------------------------------------------------------
_M30K = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/"
_M30K_NOTE = "gzip-compressed UTF-8 text, one sentence per line; the .de and .en files are line-aligned."
_M30K_FILES = {
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
}

register(
    Dataset(
        name="multi30k",
        folder="multi30k-de-en",
        files=_files(*(RemoteFile(f, sha, (_M30K + f,), note=_M30K_NOTE) for f, sha in _M30K_FILES.items())),
        license=(
            "No explicit license; derived from Flickr30k, for non-commercial research and educational use "
            "(see the multi30k/dataset README)"
        ),
        citation="""@inproceedings{elliott2016multi30k,
  author    = {Elliott, Desmond and Frank, Stella and Sima'an, Khalil and Specia, Lucia},
  title     = {Multi30K: Multilingual English-German Image Descriptions},
  booktitle = {Proceedings of the 5th Workshop on Vision and Language},
  pages     = {70--74},
  year      = {2016},
  publisher = {Association for Computational Linguistics},
  doi       = {10.18653/v1/W16-3210}
}""",
        description=(
            "German-English image descriptions: 29,000 training, 1,014 validation and 1,000 test "
            "(2016 Flickr) sentence pairs."
        ),
        homepage="https://github.com/multi30k/dataset",
    )
)

# --------------------------------------------------------------------------------------------------
# Tiny Shakespeare (char-rnn)
# --------------------------------------------------------------------------------------------------
register(
    Dataset(
        name="tinyshakespeare",
        folder="tinyshakespeare",
        files=_files(
            RemoteFile(
                "input.txt",
                "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
                (
                    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",
                    "https://storage.googleapis.com/download.tensorflow.org/data/shakespeare.txt",
                ),
                note="ASCII text, LF, 1,115,394 characters, 40,000 lines.",
            ),
        ),
        license="Public-domain text (the char-rnn repository is MIT)",
        citation="""@misc{karpathy2015charrnn,
  author       = {Karpathy, Andrej},
  title        = {char-rnn: Multi-layer Recurrent Neural Networks for character-level language models},
  howpublished = {\\url{https://github.com/karpathy/char-rnn}},
  year         = {2015}
}""",
        description="About 1.1 MB of Shakespeare plays, a small corpus for character-level language models.",
        homepage="https://github.com/karpathy/char-rnn",
    )
)

# --------------------------------------------------------------------------------------------------
# WikiText-2 (tokenized), validation and test splits only
# --------------------------------------------------------------------------------------------------
_WT2 = "https://raw.githubusercontent.com/pytorch/examples/main/word_language_model/data/wikitext-2/"
_WT2_NOTE = "SUBSET of WikiText-2 (tokenized, rare words replaced by <unk>); UTF-8, LF."

register(
    Dataset(
        name="wikitext2-subset",
        folder="wikitext-2-tokens-subset",
        files=_files(
            RemoteFile(
                "valid.txt",
                "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
                (_WT2 + "valid.txt",),
                note=_WT2_NOTE + " Validation split, 3,760 lines.",
            ),
            RemoteFile(
                "test.txt",
                "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
                (_WT2 + "test.txt",),
                note=_WT2_NOTE + " Test split, 4,358 lines.",
            ),
            RemoteFile(
                "README",
                "ed96062abea03d4f4e8ca80f0caad8b07ec59687b8064319c7ee6f6d900b6286",
                (_WT2 + "README",),
                note="The pytorch/examples note pointing to the WikiText page.",
            ),
        ),
        license="CC BY-SA 3.0 (Wikipedia text)",
        citation="""@article{merity2016pointer,
  author  = {Merity, Stephen and Xiong, Caiming and Bradbury, James and Socher, Richard},
  title   = {Pointer Sentinel Mixture Models},
  journal = {arXiv preprint arXiv:1609.07843},
  year    = {2016}
}""",
        description=(
            "The tokenized WikiText-2 validation (3,760 lines) and test (4,358 lines) splits; the training "
            "split is not included."
        ),
        homepage="https://www.salesforce.com/blog/the-wikitext-long-term-dependency-language-modeling-dataset/",
    )
)

# --------------------------------------------------------------------------------------------------
# Flickr8k (Hodosh, Young & Hockenmaier 2013): verified by structure, not by sha256
# --------------------------------------------------------------------------------------------------
_F8K = "https://github.com/jbrownlee/Datasets/releases/download/Flickr8k/"
_F8K_TEXT = (_F8K + "Flickr8k_text.zip",)
_F8K_NOTE = (
    "Verified by size and structure, not by sha256: no sha256 of these archives could be verified when this entry "
    "was written, so none is pinned. The check "
    "(attention_course.data.flickr8k.check_flickr8k) requires Flickr8k.token.txt to hold 40,460 lines "
    "`IMAGE.jpg#N<TAB>caption`, 5 captions (#0-#4) for each of 8,092 images; the three split files to list "
    "6,000 / 1,000 / 1,000 distinct images that have captions, no image in two splits; and every image a split "
    "lists to be in Flicker8k_Dataset/, not empty. The mirror is Jason Brownlee's widely used copy of the "
    "archives the authors distributed."
)
_F8K_FILES = {
    "Flickr8k.token.txt": "5 captions per image: `IMAGE.jpg#N<TAB>caption`, N = 0..4. It also names "
                          "'2258277193_586949ec62.jpg.1', an image that is in no split and not in the image archive.",
    "Flickr_8k.trainImages.txt": "The 6,000 training images, one file name per line.",
    "Flickr_8k.devImages.txt": "The 1,000 validation images, one file name per line.",
    "Flickr_8k.testImages.txt": "The 1,000 test images, one file name per line.",
}


register(
    Dataset(
        name="flickr8k",
        folder="flickr8k",
        files=_files(
            *(RemoteFile(f, None, _F8K_TEXT, f, note=f"{what} {_F8K_NOTE}", verify="structure")
              for f, what in _F8K_FILES.items()),
            RemoteFile(
                "Flicker8k_Dataset",  # sic: the archive's folder is misspelt
                None,
                (_F8K + "Flickr8k_Dataset.zip",),
                "Flicker8k_Dataset/",
                note="A folder of 8,091 JPEG photographs from Flickr (about 1 GB), as the archive's folder "
                     f"Flicker8k_Dataset/ (sic). {_F8K_NOTE}",
                verify="structure",
            ),
        ),
        license=(
            "Research use only: the photographs belong to their Flickr owners and are used under Flickr's terms of "
            "use; the captions are the authors' (see the homepage). Not for redistribution or commercial use."
        ),
        citation="""@article{hodosh2013framing,
  author  = {Hodosh, Micah and Young, Peter and Hockenmaier, Julia},
  title   = {Framing Image Description as a Ranking Task: Data, Models and Evaluation Metrics},
  journal = {Journal of Artificial Intelligence Research},
  volume  = {47},
  pages   = {853--899},
  year    = {2013},
  doi     = {10.1613/jair.3994}
}""",
        description=(
            "8,091 Flickr photographs of people and animals in action, each with 5 English captions; splits of "
            "6,000 training, 1,000 validation and 1,000 test images."
        ),
        homepage="https://hockenmaier.cs.illinois.edu/8k-pictures.html",
        structure=check_flickr8k,
    )
)

# --------------------------------------------------------------------------------------------------
# BBC News: 2,225 articles in five classes, Chapter 11 (checked by structure: counts and one digest)
# --------------------------------------------------------------------------------------------------
register(
    Dataset(
        name="bbc-news",
        folder="bbc-news",
        files=_files(
            RemoteFile(
                "bbc",
                None,
                ("https://mlg.ucd.ie/files/datasets/bbc-fulltext.zip",),
                "bbc/",
                note="The archive's folder bbc/: five class folders (business, entertainment, politics, sport, "
                     "tech) of 2,225 articles, one per file: a title line, a blank line, the paragraphs. sport/199.txt "
                     "holds one Latin-1 byte (a pound sign), as in the original; the others are UTF-8.",
                verify="structure",
            ),
        ),
        license="Non-commercial and research use only (see the homepage); copyright in the articles is the BBC's.",
        citation="""@inproceedings{greene2006practical,
  author    = {Greene, Derek and Cunningham, P\\'{a}draig},
  title     = {Practical Solutions to the Problem of Diagonal Dominance in Kernel Document Clustering},
  booktitle = {Proceedings of the 23rd International Conference on Machine Learning (ICML)},
  pages     = {377--384},
  year      = {2006}
}""",
        description="2,225 English BBC News articles from 2004-2005 in five classes: business, entertainment, "
                    "politics, sport and tech.",
        homepage="https://mlg.ucd.ie/datasets/bbc.html",
        structure=check_bbc_news,
    )
)

# --------------------------------------------------------------------------------------------------
# stories260K: Karpathy's smallest pretrained Llama (llama2.c format), Chapter 10
# --------------------------------------------------------------------------------------------------
_TINYLLAMAS = "https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K/"

register(
    Dataset(
        name="stories260K",
        folder="stories260K",
        files=_files(
            RemoteFile("stories260K.bin", "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696",
                       (_TINYLLAMAS + "stories260K.bin",),
                       note="llama2.c's legacy export: a header of 7 int32 (dim, hidden_dim, n_layers, n_heads, "
                            "n_kv_heads, vocab_size, seq_len), then float32 weights, matrices (out, in)."),
            RemoteFile("tok512.bin", "037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312",
                       (_TINYLLAMAS + "tok512.bin",),
                       note="llama2.c's tokenizer file: a uint32 max token length, then 512 entries of (float32 "
                            "score, int32 length, bytes)."),
        ),
        license="MIT (karpathy/tinyllamas and llama2.c)",
        citation="""@misc{karpathy2023llama2c,
  author       = {Karpathy, Andrej},
  title        = {llama2.c: Inference Llama 2 in one file of pure C},
  year         = {2023},
  howpublished = {\\url{https://github.com/karpathy/llama2.c}},
  note         = {Model stories260K, trained on TinyStories}
}""",
        description=(
            "A decoder-only Llama 2 with 260,032 parameters trained on TinyStories: 5 layers, dim 64, 8 query heads "
            "sharing 4 key-value heads (grouped-query attention), RoPE, RMSNorm, SwiGLU, a 512-piece vocabulary."
        ),
        homepage="https://github.com/karpathy/llama2.c",
        kind="model",
    )
)
