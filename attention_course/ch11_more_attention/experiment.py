"""Chapter 11's experiments, the same in both frameworks (pass ``ac.torch`` or ``ac.keras`` as ``fw``).

Pointer networks (Vinyals et al., 2015) on sorting: the input is N numbers, the output the positions that list
them in increasing order. Trained on lengths up to ``train_max``; tested on longer lists, where a decoder with a
fixed vocabulary of ``train_max`` positions cannot even name the answer and a pointer network still can.

Convolutional attention (Allamanis et al., 2016) on reading the token after a marker: a score that sees each key
alone can find the marker but not the token after it; one that sees a window of keys can.

Hierarchical attention (Yang et al., 2016) on BBC News, against flat attention and a bag of words.

Multi-source attention (Zoph & Knight, 2016) on two sources that each hold half of the answer: the target is the
first source's tokens, then the second's; a decoder that reads one source can only write its half.

The pointer-generator (See et al., 2017) on translating sentences with names: words are translated, names are
copied, and the test sentences hold names never seen in training, which no fixed vocabulary contains.

Monotonic attention (Raffel et al., 2017) on spelling to sound (the CMU Pronouncing Dictionary), against soft
attention: the phoneme error rate, how monotone the alignments are and how much of the word is read before writing.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from attention_course.core import validate
from attention_course.core.backend import backend
from attention_course.core.errors import ConfigError
from attention_course.core.text import BOS, EOS, UNK
from attention_course.notebook import session

__all__ = ["SIZES", "IGNORE", "Sorting", "sorting", "build", "train", "point", "scores", "generalisation",
           "MARKER", "MARKER_SIZES", "Marked", "after_marker", "marker_reading",
           "NEWS_SIZES", "NEWS_MODELS", "Documents", "news", "classify",
           "MULTI_SIZES", "MULTI_MODELS", "START", "TwoSources", "two_sources", "translate_sources", "multi_source",
           "COPY_SIZES", "COPY_MODELS", "Named", "named_sentences", "translate_copying", "copying",
           "SPELL_SIZES", "SPELL_MODELS", "Spelled", "spellings", "spell", "phoneme_error_rate", "alignment_measures",
           "spelling_to_sound"]

#: The targets of padded steps, left out of the loss and the scores.
IGNORE = -1

#: Sizes of each profile: training lists of ``train_min``–``train_max`` numbers, test lists of each ``test_lengths``.
SIZES: dict[str, dict[str, Any]] = {
    "quick": {"n_train": 12_000, "n_test": 500, "train_min": 5, "train_max": 10, "test_lengths": (5, 10, 15, 20),
              "hidden": 64, "epochs": 6, "batch_size": 64, "lr": 3e-3},
    "full": {"n_train": 100_000, "n_test": 2000, "train_min": 5, "train_max": 10,
             "test_lengths": (5, 10, 15, 20, 30, 40), "hidden": 256, "epochs": 10, "batch_size": 128, "lr": 2e-3},
}


@dataclass(frozen=True)
class Sorting:
    """Lists to sort, padded to the longest: ``x`` (n, N, 1) the numbers in [0, 1), ``mask`` (n, N) True at real
    ones, ``order`` (n, N) the positions in increasing order of their numbers (``IGNORE`` after a list's end) and
    ``previous`` (n, N) the decoder's input positions, the order shifted right (−1 first, 0 after the end)."""

    x: np.ndarray
    mask: np.ndarray
    order: np.ndarray
    previous: np.ndarray

    @property
    def inputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.x, self.previous, self.mask


def sorting(n: int, lengths: tuple[int, int] | int, seed: int) -> Sorting:
    """``n`` lists of uniform numbers, each of a length drawn from ``lengths`` (low, high inclusive) or of that one
    length, seeded."""
    n = validate.integer("n", n)
    low, high = (lengths, lengths) if isinstance(lengths, int) else lengths
    low, high = validate.sizes(low=low, high=high)
    if low > high:
        raise ConfigError(f"lengths runs from {low} to {high}: the first must not exceed the second")
    rng = np.random.default_rng(seed)
    size = rng.integers(low, high + 1, n)
    x = rng.random((n, high, 1), dtype=np.float32)
    mask = np.arange(high)[None] < size[:, None]                                 # (n, N)
    keyed = np.where(mask, x[..., 0], np.inf)                                    # pads sort last
    order = np.argsort(keyed, axis=1, kind="stable")
    order = np.where(mask, order, IGNORE)
    previous = np.concatenate([np.full((n, 1), -1), np.maximum(order[:, :-1], 0)], axis=1)
    return Sorting(np.where(mask[..., None], x, 0.0).astype(np.float32), mask, order.astype(np.int64),
                   previous.astype(np.int64))


def build(fw: ModuleType, kind: str, sizes: dict[str, Any], seed: int = 0):
    """A ``PointerNetwork`` (``kind="pointer"``) or a ``FixedOutputNetwork`` of ``train_max`` positions
    (``"fixed"``), seeded."""
    validate.choice("model", kind, ("pointer", "fixed"))
    session.seed_everything(seed)
    if kind == "pointer":
        return fw.PointerNetwork(1, sizes["hidden"])
    return fw.FixedOutputNetwork(1, sizes["hidden"], sizes["train_max"])


def train(fw: ModuleType, model, data: Sorting, sizes: dict[str, Any], *, seed: int = 0, desc: str | None = None):
    """Teacher forcing on the training lists (padded steps left out of the loss). Returns the history."""
    return fw.fit(model, data.inputs, data.order, epochs=sizes["epochs"], batch_size=sizes["batch_size"],
                  lr=sizes["lr"], ignore_index=IGNORE, seed=seed, clip_norm=2.0, desc=desc)


def point(model, data: Sorting, batch_size: int = 500) -> np.ndarray:
    """Greedy decoding: at each step the most likely position, fed back as the next step's input (the whole
    prefix is run again each step; the lists are short). → (n, N) positions, ``IGNORE`` after each list's end."""
    run = backend(model).runner(model)
    out = np.full(data.order.shape, IGNORE, np.int64)
    for start in range(0, len(data.x), batch_size):
        rows = slice(start, start + batch_size)
        x, mask = data.x[rows], data.mask[rows]
        previous = np.full((len(x), 1), -1, np.int64)
        for t in range(x.shape[1]):
            chosen = run(x, previous, mask)[:, -1].argmax(-1)            # (b,)
            out[rows, t] = chosen
            previous = np.concatenate([previous, np.minimum(chosen, x.shape[1] - 1)[:, None]], axis=1)
    return np.where(data.mask, out, IGNORE)


def scores(predicted: np.ndarray, data: Sorting) -> dict[str, float]:
    """The share of output steps right, and of lists sorted exactly (every step right)."""
    right = (predicted == data.order) | ~data.mask
    return {"steps right": float(right[data.mask].mean()), "lists sorted": float(right.all(1).mean())}


def generalisation(fw: ModuleType, sizes: dict[str, Any], seed: int = 0, *, models=("pointer", "fixed")):
    """Train each model on lists of ``train_min``–``train_max`` numbers, then score it on test lists of each of
    ``test_lengths``. A DataFrame: model, length, steps right, lists sorted, and the share of steps whose answer
    is a position the fixed vocabulary lacks (≥ ``train_max``)."""
    import pandas as pd

    train_data = sorting(sizes["n_train"], (sizes["train_min"], sizes["train_max"]), seed)
    rows, trained = [], {}
    for kind in models:
        model = build(fw, kind, sizes, seed)
        train(fw, model, train_data, sizes, seed=seed, desc=f"{kind} ({backend(fw).name})")
        trained[kind] = model
        for length in sizes["test_lengths"]:
            test = sorting(sizes["n_test"], length, seed + 1000 + length)
            beyond = float((test.order[test.mask] >= sizes["train_max"]).mean())
            rows.append({"model": kind, "length": length, **scores(point(model, test), test),
                         "answers beyond the vocabulary": beyond})
    return pd.DataFrame(rows), trained


#: The marker's token id (0 is padding); the other tokens are 2, 3, …
MARKER = 1
#: The marker task: sequences of ``length`` random tokens from ``vocab`` (the marker and padding included), one
#: marker at a random place before the last token; the model reads the token after it.
MARKER_SIZES: dict[str, dict[str, Any]] = {
    "quick": {"n_train": 8000, "n_test": 1000, "length": 12, "vocab": 20, "dim": 32, "epochs": 6, "batch_size": 64,
              "lr": 1e-2, "widths": (1, 3)},
    "full": {"n_train": 50_000, "n_test": 5000, "length": 40, "vocab": 100, "dim": 64, "epochs": 10,
             "batch_size": 128, "lr": 3e-3, "widths": (1, 3, 5)},
}


@dataclass(frozen=True)
class Marked:
    """``ids`` (n, N) random tokens with one ``MARKER`` each at ``where`` (n,), ``mask`` (n, N) all True, and
    ``target`` (n,) the token right after the marker."""

    ids: np.ndarray
    mask: np.ndarray
    where: np.ndarray
    target: np.ndarray


def after_marker(n: int, length: int, vocab: int, seed: int) -> Marked:
    """``n`` sequences of ``length`` tokens drawn from 2 … ``vocab`` − 1, each with the marker at a random place
    before the last token, seeded."""
    n, length, vocab = validate.sizes(n=n, length=length, vocab=vocab)
    if length < 2 or vocab < 3:
        raise ConfigError(f"the marker task needs sequences of at least 2 tokens and a vocabulary of at least 3 (the "
                          f"pad, the marker and one word); got length={length}, vocab={vocab}")
    rng = np.random.default_rng(seed)
    ids = rng.integers(MARKER + 1, vocab, size=(n, length))
    where = rng.integers(0, length - 1, n)
    ids[np.arange(n), where] = MARKER
    return Marked(ids.astype(np.int64), np.ones((n, length), bool), where, ids[np.arange(n), where + 1])


def marker_reading(fw: ModuleType, sizes: dict[str, Any], seeds=(0,)):
    """Train a ``MarkerReader`` of each of ``widths`` on the marker task, once per seed; score it on held-out
    sequences. A DataFrame: width, seed, accuracy, and the attention weight on the token after the marker (mean)
    and on the marker itself; and the trained models, by (width, seed)."""
    import pandas as pd

    rows, trained = [], {}
    for seed in seeds:
        data = after_marker(sizes["n_train"], sizes["length"], sizes["vocab"], seed)
        test = after_marker(sizes["n_test"], sizes["length"], sizes["vocab"], seed + 1000)
        for width in sizes["widths"]:
            session.seed_everything(seed)
            model = fw.MarkerReader(sizes["vocab"], sizes["dim"], width)
            fw.fit(model, (data.ids, data.mask), data.target, epochs=sizes["epochs"], batch_size=sizes["batch_size"],
                   lr=sizes["lr"], seed=seed, desc=f"width {width} ({backend(fw).name})")
            logits, weights = backend(fw).run(model, test.ids, test.mask, return_weights=True)
            each = np.arange(len(test.ids))
            rows.append({"width": width, "seed": seed, "accuracy": float((logits.argmax(-1) == test.target).mean()),
                         "weight after the marker": float(weights[each, test.where + 1].mean()),
                         "weight on the marker": float(weights[each, test.where].mean())})
            trained[width, seed] = model
    return pd.DataFrame(rows), trained


#: BBC News as documents of at most ``sentences`` sentences of at most ``words`` words (the rest cut off), a
#: vocabulary of the ``vocab`` − 2 most frequent training words (0 padding, 1 any other word), and the models' sizes.
NEWS_SIZES: dict[str, dict[str, Any]] = {
    "quick": {"sentences": 10, "words": 20, "vocab": 5000, "embed": 32, "hidden": 16, "epochs": 3, "batch_size": 64,
              "lr": 7e-3},
    "full": {"sentences": 30, "words": 40, "vocab": 20_000, "embed": 100, "hidden": 50, "epochs": 10,
             "batch_size": 32, "lr": 1e-3},
}
#: The three classifiers of the comparison: the hierarchy, flat attention over all words, and Chapter 3's bag of
#: words.
NEWS_MODELS = ("hierarchical", "flat", "bag of words")
UNKNOWN = 1


@dataclass(frozen=True)
class Documents:
    """Articles as word ids: ``ids`` (n, S, W) sentence by sentence, ``flat`` (n, S·W) the same words in one
    right-padded row, ``labels`` (n,) class indices, ``words`` each kept sentence's words (for showing weights) and
    ``titles``."""

    ids: np.ndarray
    flat: np.ndarray
    labels: np.ndarray
    words: list[list[list[str]]]
    titles: list[str]


def news(sizes: dict[str, Any], seed: int = 0):
    """BBC News split by ``bbc_news.split`` (one copy of each text, none in two parts), cut to ``sizes``:
    (vocabulary, train, validation, test), the vocabulary (a list, index = id) made from the training split."""
    from collections import Counter

    from attention_course.data import bbc_news, fetch

    parts = bbc_news.split(bbc_news.articles(fetch("bbc-news", bbc_news.FOLDER)), seed=seed)
    cut = [[[bbc_news.words(s)[:sizes["words"]] for s in bbc_news.sentences(a.body)[:sizes["sentences"]]]
            for a in part] for part in parts]
    counts = Counter(w for doc in cut[0] for sentence in doc for w in sentence)
    vocabulary = ["<pad>", "<unk>"] + [w for w, _ in counts.most_common(sizes["vocab"] - 2)]
    index = {w: i for i, w in enumerate(vocabulary)}

    def encode(part, docs) -> Documents:
        ids = np.zeros((len(docs), sizes["sentences"], sizes["words"]), np.int64)
        flat = np.zeros((len(docs), sizes["sentences"] * sizes["words"]), np.int64)
        for d, doc in enumerate(docs):
            doc = [s for s in doc if s]                                          # sentences without words dropped
            for i, sentence in enumerate(doc):
                ids[d, i, :len(sentence)] = [index.get(w, UNKNOWN) for w in sentence]
            every = [index.get(w, UNKNOWN) for s in doc for w in s]
            flat[d, :len(every)] = every
        return Documents(ids, flat, np.array([a.label for a in part]), [[s for s in doc if s] for doc in docs],
                         [a.title for a in part])

    return (vocabulary, *(encode(part, docs) for part, docs in zip(parts, cut, strict=True)))


def classify(fw: ModuleType, sizes: dict[str, Any], seed: int = 0, *, models=NEWS_MODELS):
    """Train each of ``models`` on BBC News' training split (the weights of the best validation epoch kept) and
    score it on the test split. A DataFrame: model, seed, test accuracy, parameters; and the trained models."""
    import pandas as pd

    from attention_course.ch05_neural_machine_translation.experiment import parameters

    vocabulary, train, val, test = news(sizes, seed)
    rows, trained = [], {}
    for kind in models:
        session.seed_everything(seed)
        if kind == "hierarchical":
            model = fw.HierarchicalAttentionNetwork(len(vocabulary), 5, sizes["embed"], sizes["hidden"])
        elif kind == "flat":
            model = fw.FlatAttentionNetwork(len(vocabulary), 5, sizes["embed"], sizes["hidden"])
        else:                                               # Chapter 3's, with five classes
            model = fw.BagOfWords(len(vocabulary), sizes["embed"], classes=5)
        pick = {"hierarchical": lambda d: (d.ids,), "flat": lambda d: (d.flat,),
                "bag of words": lambda d: (d.flat, d.flat != 0)}[kind]
        fw.fit(model, pick(train), train.labels, epochs=sizes["epochs"], batch_size=sizes["batch_size"],
               lr=sizes["lr"], seed=seed, validation=(pick(val), val.labels),
               desc=f"{kind} ({backend(fw).name})")
        run = backend(fw).runner(model)
        logits = np.concatenate([run(*(x[i:i + 100] for x in pick(test))) for i in range(0, len(test.labels), 100)])
        rows.append({"model": kind, "seed": seed, "accuracy": float((logits.argmax(-1) == test.labels).mean()),
                     "parameters": parameters(model)})
        trained[kind] = model
    return pd.DataFrame(rows), trained, (vocabulary, test)


#: Two sources of ``length`` tokens from 2 … ``vocab`` − 1 (0 is padding, ``START`` the decoder's first input); the
#: target is the first source, then the second.
MULTI_SIZES: dict[str, dict[str, Any]] = {
    "quick": {"n_train": 3000, "n_test": 500, "length": 6, "vocab": 12, "embed": 32, "hidden": 32, "epochs": 6,
              "batch_size": 64, "lr": 5e-3},
    "full": {"n_train": 50_000, "n_test": 2000, "length": 12, "vocab": 30, "embed": 64, "hidden": 128, "epochs": 8,
             "batch_size": 128, "lr": 2e-3},
}
#: The models of the comparison, by the sources each reads.
MULTI_MODELS: dict[str, tuple[int, ...]] = {"both sources": (0, 1), "first source only": (0,),
                                            "second source only": (1,)}
START = 1


@dataclass(frozen=True)
class TwoSources:
    """``sources`` (n, 2, L) the two sources' tokens, ``target`` (n, 2L) the first source then the second, and
    ``tgt_in`` (n, 2L) the decoder's inputs, the target shifted right after ``START``."""

    sources: np.ndarray
    tgt_in: np.ndarray
    target: np.ndarray


def two_sources(n: int, length: int, vocab: int, seed: int) -> TwoSources:
    """``n`` pairs of sources of ``length`` random tokens from 2 … ``vocab`` − 1, seeded."""
    n, length, vocab = validate.sizes(n=n, length=length, vocab=vocab)
    if vocab < 3:
        raise ConfigError(f"vocab={vocab}: the task needs the padding, the start token and at least one word")
    rng = np.random.default_rng(seed)
    sources = rng.integers(START + 1, vocab, size=(n, 2, length))
    target = sources.reshape(n, 2 * length)
    tgt_in = np.concatenate([np.full((n, 1), START), target[:, :-1]], axis=1)
    return TwoSources(sources.astype(np.int64), tgt_in.astype(np.int64), target.astype(np.int64))


def _greedy(run_prefix, inputs: tuple[np.ndarray, ...], steps: int, start: int, batch_size: int = 500):
    """Greedy decoding that runs the whole prefix again at each step (the outputs are short): ``run_prefix(*batch,
    written)`` returns the model's outputs, the scores (B, t, V) first, and the most likely id of the last step is
    fed back, from ``start``. → the ids written (n, ``steps``) and the other outputs of the last run, each joined
    over the batches of ``batch_size`` rows of ``inputs``."""
    written, others = [], []
    for begin in range(0, len(inputs[0]), batch_size):
        batch = [x[begin:begin + batch_size] for x in inputs]
        out = np.full((len(batch[0]), 1), start, np.int64)
        for _ in range(steps):
            scores, *rest = run_prefix(*batch, out)
            out = np.concatenate([out, scores[:, -1].argmax(-1)[:, None]], axis=1)
        written.append(out[:, 1:])
        others.append(rest)
    return np.concatenate(written), [np.concatenate(parts) for parts in zip(*others, strict=True)]


def translate_sources(model, sources: np.ndarray, steps: int, batch_size: int = 500) -> np.ndarray:
    """Greedy decoding from ``START``: at each step the most likely token, fed back (the whole prefix is run again
    each step; the targets are short). sources (n, K, S) → (n, ``steps``) tokens."""
    run = backend(model).runner(model)
    return _greedy(lambda src, written: (run(src, written),), (sources,), steps, START, batch_size)[0]


def multi_source(fw: ModuleType, sizes: dict[str, Any], seed: int = 0, *, models=tuple(MULTI_MODELS)):
    """Train a ``MultiSourceTranslator`` on each of ``models``' sources (``MULTI_MODELS``) and decode new pairs
    greedily. A DataFrame: model, seed, the share of tokens right in the target's first half (the first source's)
    and its second half, and of whole targets right; the trained models; and the test pairs."""
    import pandas as pd

    data = two_sources(sizes["n_train"], sizes["length"], sizes["vocab"], seed)
    test = two_sources(sizes["n_test"], sizes["length"], sizes["vocab"], seed + 1000)
    half = sizes["length"]
    rows, trained = [], {}
    for name in models:
        read = list(MULTI_MODELS[name])
        session.seed_everything(seed)
        model = fw.MultiSourceTranslator(sizes["vocab"], sizes["vocab"], len(read), sizes["embed"], sizes["hidden"])
        fw.fit(model, (data.sources[:, read], data.tgt_in), data.target, epochs=sizes["epochs"],
               batch_size=sizes["batch_size"], lr=sizes["lr"], seed=seed, clip_norm=1.0,
               desc=f"{name} ({backend(fw).name})")
        right = translate_sources(model, test.sources[:, read], 2 * half) == test.target
        rows.append({"model": name, "seed": seed, "first half right": float(right[:, :half].mean()),
                     "second half right": float(right[:, half:].mean()), "targets right": float(right.all(1).mean())})
        trained[name] = model
    return pd.DataFrame(rows), trained, test


#: Sentences of ``length`` tokens, each a name with probability ``name_share``, else one of ``words`` words. Names
#: come from a pool of ``names``; the ``known`` most frequent are in both vocabularies, the rest of the training
#: names are not (the model sees them only as ``UNK``), and the test names (the pool's last ``unseen``) never occur
#: in training.
COPY_SIZES: dict[str, dict[str, Any]] = {
    "quick": {"n_train": 4000, "n_test": 500, "length": 8, "words": 40, "names": 400, "known": 50, "unseen": 100,
              "name_share": 0.25, "embed": 32, "hidden": 48, "epochs": 6, "batch_size": 128, "lr": 8e-3},
    "full": {"n_train": 50_000, "n_test": 2000, "length": 16, "words": 200, "names": 4000, "known": 200,
             "unseen": 1000, "name_share": 0.25, "embed": 64, "hidden": 128, "epochs": 8, "batch_size": 128,
             "lr": 2e-3},
}
#: The models of the comparison: with the copy gate, and the same translator without it.
COPY_MODELS: dict[str, bool] = {"pointer-generator": True, "no copying": False}


@dataclass(frozen=True)
class Named:
    """Sentences to translate: ``src`` (n, L) source ids (0 padding, ``UNK`` for names outside the vocabulary),
    ``src_ext`` (n, L) each source word's id in the extended target vocabulary (a known name its target id, an
    unknown one ``tgt_vocab`` + k for the k-th in its sentence, a word ``UNK``: words are translated, not copied),
    ``target`` (n, L) in extended ids, ``tgt_in`` (n, L) the target shifted right after ``BOS``, ``is_name``
    (n, L), and the vocabularies' sizes."""

    src: np.ndarray
    src_ext: np.ndarray
    target: np.ndarray
    tgt_in: np.ndarray
    is_name: np.ndarray
    src_vocab: int
    tgt_vocab: int


def named_sentences(sizes: dict[str, Any], n: int, seed: int, test: bool = False) -> Named:
    """``n`` sentences with names (``COPY_SIZES``), seeded. Word w (of ``words``) translates to target word
    (7w + 3) mod ``words``; a name is copied. Training names: the ``known`` first names of the pool for half the
    names, the others uniform over the rest of the pool but its last ``unseen``; test names (``test=True``): only
    those last ``unseen``, never seen in training."""
    words, names, known, unseen = (validate.integer(k, sizes[k]) for k in ("words", "names", "known", "unseen"))
    if not 0 < known < names - unseen:
        raise ConfigError(f"names={names}, known={known}, unseen={unseen}: the known names, the other training "
                          f"names and the unseen ones must each be at least one")
    length = validate.integer("length", sizes["length"])
    rng = np.random.default_rng(seed)
    is_name = rng.random((n, length)) < sizes["name_share"]
    word = rng.integers(0, words, (n, length))
    if test:
        name = rng.integers(names - unseen, names, (n, length))
    else:
        name = np.where(rng.random((n, length)) < 0.5, rng.integers(0, known, (n, length)),
                        rng.integers(known, names - unseen, (n, length)))
    # source ids: 0 pad, UNK, the words, the known names; target ids: 0 pad, UNK, BOS, the words, the known names
    src_vocab, tgt_vocab = 2 + words + known, 3 + words + known
    src = np.where(is_name, np.where(name < known, 2 + words + name, UNK), 2 + word)
    target = np.where(is_name, np.where(name < known, 3 + words + name, -1), 3 + (7 * word + 3) % words)
    src_ext = np.where(is_name & (name < known), target, UNK)
    for i in range(n):                                     # the k-th distinct unknown name of a sentence: V + k
        slots: dict[int, int] = {}
        for j in np.flatnonzero(is_name[i] & (name[i] >= known)):
            slots.setdefault(int(name[i, j]), tgt_vocab + len(slots))
            src_ext[i, j] = target[i, j] = slots[int(name[i, j])]
    tgt_in = np.concatenate([np.full((n, 1), BOS), target[:, :-1]], axis=1)
    src, src_ext, target, tgt_in = (a.astype(np.int64) for a in (src, src_ext, target, tgt_in))
    return Named(src, src_ext, target, tgt_in, is_name, src_vocab, tgt_vocab)


def translate_copying(model, data: Named, batch_size: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """Greedy decoding from ``BOS`` over the extended vocabulary (the whole prefix run again each step): the
    written ids (n, L) and, for a copying model, p_gen at each step (n, L) (ones without copying)."""
    written, (_, gates) = _greedy(backend(model).runner(model, return_weights=True), (data.src, data.src_ext),
                                  data.target.shape[1], BOS, batch_size)
    return written, gates


def copying(fw: ModuleType, sizes: dict[str, Any], seed: int = 0, *, models=tuple(COPY_MODELS)):
    """Train a ``PointerGenerator`` with and without its copy gate (``COPY_MODELS``) on sentences with names and
    translate test sentences whose names were never seen. A DataFrame: model, seed, the share of names right
    (copied), of words right (translated), of sentences right, BLEU (sacreBLEU on the ids), and the mean p_gen at
    name and at word positions; the trained models; and the test sentences. The model without copying is trained
    to write ``UNK`` for a name outside its vocabulary."""
    import pandas as pd
    import sacrebleu

    data = named_sentences(sizes, sizes["n_train"], seed)
    test = named_sentences(sizes, sizes["n_test"], seed + 1000, test=True)
    rows, trained = [], {}
    for name in models:
        copy = COPY_MODELS[name]
        session.seed_everything(seed)
        model = fw.PointerGenerator(data.src_vocab, data.tgt_vocab, sizes["length"], sizes["embed"], sizes["hidden"],
                                    copy=copy)
        target = data.target if copy else np.where(data.target >= data.tgt_vocab, UNK, data.target)
        fw.fit(model, (data.src, data.src_ext, data.tgt_in), target, epochs=sizes["epochs"],
               batch_size=sizes["batch_size"], lr=sizes["lr"], seed=seed, clip_norm=1.0,
               desc=f"{name} ({backend(fw).name})")
        written, gate = translate_copying(model, test)
        right = written == test.target
        bleu = sacrebleu.corpus_bleu([" ".join(map(str, w)) for w in written],
                                     [[" ".join(map(str, t)) for t in test.target]], tokenize="none").score
        rows.append({"model": name, "seed": seed, "names right": float(right[test.is_name].mean()),
                     "words right": float(right[~test.is_name].mean()), "sentences right": float(right.all(1).mean()),
                     "BLEU": bleu, "p_gen at names": float(gate[test.is_name].mean()),
                     "p_gen at words": float(gate[~test.is_name].mean())})
        trained[name] = model
    return pd.DataFrame(rows), trained, test


#: Spelling to sound: words of 3–10 letters from the CMU Pronouncing Dictionary with their first pronunciation
#: (``data.cmu_pronouncing``), shuffled with the seed into ``n_train`` training and ``n_test`` test words.
SPELL_SIZES: dict[str, dict[str, Any]] = {
    "quick": {"n_train": 4000, "n_test": 500, "embed": 32, "hidden": 64, "epochs": 8, "batch_size": 128, "lr": 8e-3},
    "full": {"n_train": 80_000, "n_test": 5000, "embed": 128, "hidden": 256, "epochs": 15, "batch_size": 128,
             "lr": 2e-3},
}
#: The two attentions of the comparison (``Speller``'s ``attention``).
SPELL_MODELS = ("soft", "monotonic")
LETTERS, SOUNDS = 10, 12                   # the longest word, and the longest pronunciation with its end mark


@dataclass(frozen=True)
class Spelled:
    """Words as letter ids ``src`` (n, 10) right-padded with 0, their pronunciations as phoneme ids ``target``
    (n, 12) ending with ``EOS`` and padded with 0, ``tgt_in`` the target shifted right after ``BOS``; the ``words``,
    and the ``letters`` and ``phonemes`` (lists, index = id)."""

    src: np.ndarray
    tgt_in: np.ndarray
    target: np.ndarray
    words: list[str]
    letters: list[str]
    phonemes: list[str]


def spellings(sizes: dict[str, Any], seed: int = 0) -> tuple[Spelled, Spelled]:
    """The training and test words (``SPELL_SIZES``), drawn without overlap by a seeded shuffle."""
    from attention_course.data.cmu_pronouncing import pronunciations

    known = pronunciations(3, LETTERS)
    words = sorted(known)
    n_train, n_test = validate.sizes(n_train=sizes["n_train"], n_test=sizes["n_test"])
    if n_train + n_test > len(words):
        raise ConfigError(f"n_train + n_test = {n_train + n_test}: the dictionary has {len(words)} such words")
    np.random.default_rng(seed).shuffle(words)
    letters = ["<pad>", *"abcdefghijklmnopqrstuvwxyz"]
    phonemes = ["<pad>", "<unk>", "<bos>", "<eos>", *sorted({p for w in words for p in known[w]})]
    index = {p: i for i, p in enumerate(phonemes)}

    def encode(chosen: list[str]) -> Spelled:
        src, target = np.zeros((len(chosen), LETTERS), np.int64), np.zeros((len(chosen), SOUNDS), np.int64)
        for i, word in enumerate(chosen):
            src[i, :len(word)] = [ord(c) - ord("a") + 1 for c in word]
            sounds = [index[p] for p in known[word]][:SOUNDS - 1] + [EOS]
            target[i, :len(sounds)] = sounds
        tgt_in = np.concatenate([np.full((len(chosen), 1), BOS), target[:, :-1]], axis=1)
        return Spelled(src, tgt_in, target, chosen, letters, phonemes)

    return encode(words[:n_train]), encode(words[n_train:n_train + n_test])


def spell(model, data: Spelled, hard: bool = False, batch_size: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """Greedy decoding from ``BOS`` (the whole prefix run again each step): the phonemes written (n, 12) and the
    attention of the last run (n, 12, 10); ``hard`` decodes a ``Speller`` with monotonic attention online."""
    extra = {"hard": True} if hard else {}
    written, (weights,) = _greedy(backend(model).runner(model, return_weights=True, **extra), (data.src,), SOUNDS,
                                  BOS, batch_size)
    return written, weights


def _until_end(ids: np.ndarray) -> list[int]:
    found = [int(i) for i in ids]
    return found[:found.index(EOS)] if EOS in found else found


def phoneme_error_rate(written: np.ndarray, target: np.ndarray) -> float:
    """Edits (insertions, deletions, substitutions) from each written pronunciation to the right one, over the
    right ones' phonemes, up to each end mark."""
    edits = total = 0
    for w, t in zip(written, target, strict=True):
        w, t = _until_end(w), _until_end(t)
        row = np.arange(len(t) + 1)
        for x in w:
            new = [row[0] + 1]
            for j, y in enumerate(t):
                new.append(min(row[j + 1] + 1, new[j] + 1, row[j] + (x != y)))
            row = np.array(new)
        edits, total = edits + int(row[-1]), total + len(t)
    return edits / total


def alignment_measures(weights: np.ndarray, data: Spelled, written: np.ndarray, online: bool) -> dict[str, float]:
    """Over the phonemes written (up to the end mark): the share of steps whose most weighted letter is not before the
    step before's ("monotone steps"), and the share of its word the model had read when it wrote each phoneme
    ("input read"): up to the furthest letter attended so far when decoding ``online`` (monotonic attention's scan,
    a step that ran off the end having read it all), and all of it for soft attention, whose softmax needs every
    letter's score."""
    monotone, read = [], []
    for a, src, w in zip(weights, data.src, written, strict=True):
        steps, length = len(_until_end(w)), int((src != 0).sum())
        ended = a[:steps].sum(-1) == 0                   # a monotonic scan that ran off the end: all of it read
        peak = np.where(ended, length - 1, a[:steps].argmax(-1))
        monotone += list(np.diff(peak) >= 0)
        reach = [length - 1 if end or not online else int(row.argmax()) for row, end in zip(a[:steps], ended,
                                                                                            strict=True)]
        read += list((np.maximum.accumulate(reach) + 1) / length) if steps else []
    return {"monotone steps": float(np.mean(monotone)), "input read": float(np.mean(read))}


def spelling_to_sound(fw: ModuleType, sizes: dict[str, Any], seed: int = 0, *, models=SPELL_MODELS):
    """Train a ``Speller`` with soft and with monotonic attention on the same words and spell the test words
    greedily (monotonic attention online, one letter at a time). A DataFrame: model, seed, the phoneme error rate,
    the share of monotone steps and of the input read before writing; the trained models; and the test words."""
    import pandas as pd

    train, test = spellings(sizes, seed)
    rows, trained = [], {}
    for kind in models:
        session.seed_everything(seed)
        model = fw.Speller(len(train.letters), len(train.phonemes), sizes["embed"], sizes["hidden"], attention=kind)
        fw.fit(model, (train.src, train.tgt_in), train.target, epochs=sizes["epochs"], batch_size=sizes["batch_size"],
               lr=sizes["lr"], seed=seed, clip_norm=1.0, ignore_index=0, desc=f"{kind} ({backend(fw).name})")
        written, weights = spell(model, test, hard=kind == "monotonic")
        rows.append({"model": f"{kind} attention", "seed": seed, "PER": phoneme_error_rate(written, test.target),
                     **alignment_measures(weights, test, written, online=kind == "monotonic")})
        trained[kind] = model
    return pd.DataFrame(rows), trained, test
