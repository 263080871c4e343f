"""Seeded synthetic tasks, generated rather than downloaded.

Token ids follow :mod:`attention_course.core.text`: 0 pad, 1 unk, 2 bos, 3 eos, then the symbols from
``FIRST_SYMBOL`` on. Every generator takes a ``seed`` and returns NumPy arrays (framework-neutral).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from attention_course.core import validate
from attention_course.core.errors import ConfigError
from attention_course.core.text import BOS, EOS, PAD, UNK  # noqa: F401  (synthetic.PAD … are part of its API)

FIRST_SYMBOL = 4

__all__ = [
    "SequenceTask", "sequence_task", "one_to_one_task", "one_to_many_task", "many_to_one_task",
    "many_to_many_task", "FIRST_SYMBOL", "shifted_copy_task", "AlignedPairs", "aligned_pair_task",
    "aligned_pair_lexicon", "steps_back_task", "lookback_task",
]


@dataclass(frozen=True)
class SequenceTask:
    """A seq2seq data set.

    ``src`` (n, S) source ids, left-padded so the last column is the last real token;
    ``src_mask`` (n, S) True on real tokens; ``tgt_in`` (n, T) = bos + target, right-padded;
    ``tgt_out`` (n, T) = target + eos, right-padded; ``lengths`` (n,) source lengths.
    """

    kind: str
    src: np.ndarray
    src_mask: np.ndarray
    tgt_in: np.ndarray
    tgt_out: np.ndarray
    lengths: np.ndarray
    n_symbols: int

    @property
    def vocab_size(self) -> int:
        return FIRST_SYMBOL + self.n_symbols

    def __len__(self) -> int:
        return len(self.src)

    def subset(self, index) -> SequenceTask:
        """The examples at ``index`` (a slice, a boolean mask or integer indices)."""
        return SequenceTask(self.kind, self.src[index], self.src_mask[index], self.tgt_in[index],
                            self.tgt_out[index], self.lengths[index], self.n_symbols)

    def target_tokens(self, i: int) -> list[int]:
        """The target of example ``i`` without specials."""
        return [int(t) for t in self.tgt_out[i] if t >= FIRST_SYMBOL]


def sequence_task(n: int, *, kind: str = "reverse", min_len: int = 3, max_len: int = 20,
                  n_symbols: int = 10, seed: int = 0) -> SequenceTask:
    """``n`` random symbol strings of length ``min_len..max_len`` (uniform) and their copy or reversal."""
    if kind not in ("copy", "reverse"):
        raise ConfigError(f"unknown sequence task {kind!r}: use 'copy' or 'reverse'")
    if not 1 <= min_len <= max_len:
        raise ConfigError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_len, max_len + 1, size=n)
    src = np.full((n, max_len), PAD, dtype=np.int64)
    tgt_in = np.full((n, max_len + 1), PAD, dtype=np.int64)
    tgt_out = np.full((n, max_len + 1), PAD, dtype=np.int64)
    for i, length in enumerate(lengths):
        seq = rng.integers(FIRST_SYMBOL, FIRST_SYMBOL + n_symbols, size=length)
        target = seq[::-1] if kind == "reverse" else seq
        src[i, max_len - length:] = seq          # left padding: the encoder ends on a real token
        tgt_in[i, 0] = BOS
        tgt_in[i, 1:length + 1] = target
        tgt_out[i, :length] = target
        tgt_out[i, length] = EOS
    return SequenceTask(kind, src, src != PAD, tgt_in, tgt_out, lengths, n_symbols)


def one_to_one_task(n: int, *, n_symbols: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One input, one output: a symbol ``x`` (n,) and its label ``(x * 3 + 1) mod n_symbols`` (n,)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_symbols, size=n)
    return x.astype(np.int64), ((x * 3 + 1) % n_symbols).astype(np.int64)


def one_to_many_task(n: int, *, steps: int = 8, n_symbols: int = 10, seed: int = 0):
    """One input, a sequence out: a start symbol ``x`` (n,) and the count-up ``x, x+2, x+4, …`` (mod
    ``n_symbols``) as token ids: ``tgt_in`` (n, steps) starts with bos, ``tgt_out`` (n, steps)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_symbols, size=n)
    seq = (x[:, None] + 2 * np.arange(steps)[None, :]) % n_symbols + FIRST_SYMBOL
    tgt_in = np.concatenate([np.full((n, 1), BOS), seq[:, :-1]], axis=1)
    return x.astype(np.int64), tgt_in.astype(np.int64), seq.astype(np.int64)


def many_to_one_task(n: int, *, length: int = 12, n_symbols: int = 10, seed: int = 0):
    """A sequence in, one label out: ids (n, length) and the largest symbol in each sequence (n,), 0-based."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_symbols, size=(n, length))
    return (x + FIRST_SYMBOL).astype(np.int64), x.max(axis=1).astype(np.int64)


def many_to_many_task(n: int, *, length: int = 12, n_symbols: int = 10, seed: int = 0):
    """Sequence labeling: ids (n, length) and, at every step, the running maximum so far (n, length)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_symbols, size=(n, length))
    return (x + FIRST_SYMBOL).astype(np.int64), np.maximum.accumulate(x, axis=1).astype(np.int64)


def shifted_copy_task(n: int, *, length: int = 32, shift: int = 3, n_symbols: int = 10, seed: int = 0):
    """A pointer task: a source of ``length`` random symbols; output step t must emit the source symbol at
    position t + ``shift``, for t = 0 … length - shift - 1 (so every output depends on ONE source position).

    Returns ids (n, length) (symbols from ``FIRST_SYMBOL`` on) and labels (n, length - shift), 0-based.
    """
    if not 0 <= shift < length:
        raise ConfigError(f"need 0 <= shift < length, got shift={shift}, length={length}")
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_symbols, size=(n, length))
    return (x + FIRST_SYMBOL).astype(np.int64), x[:, shift:].astype(np.int64)


# ---- Chapter 7: long-range recall and order --------------------------------------------------------------------

def steps_back_task(n: int, *, length: int = 32, n_symbols: int = 8,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """"Which symbol stood k steps back?": a task whose answer lies a chosen distance back.

    Each sequence holds ``length`` − 1 random symbols (ids 0 … ``n_symbols`` − 1), then a query token that asks
    for the symbol k steps before it, 1 ≤ k < ``length`` (id ``n_symbols + k``; the vocabulary has
    ``n_symbols + length`` ids). Returns ids (n, length), labels (n,) that symbol, and distance (n,) k, each
    distance equally common.
    """
    if length < 2 or n_symbols < 2:
        raise ConfigError(f"need length >= 2 and n_symbols >= 2, got length={length}, n_symbols={n_symbols}")
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, n_symbols, size=(n, length))
    distance = rng.integers(1, length, size=n)
    labels = ids[np.arange(n), length - 1 - distance].copy()
    ids[:, -1] = n_symbols + distance
    return ids.astype(np.int64), labels.astype(np.int64), distance.astype(np.int64)


def lookback_task(n: int, *, length: int = 16, offsets: tuple[int, int] = (1, 3), n_symbols: int = 8,
                  seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """At every step, name the two symbols ``offsets`` steps back: a task only order can solve.

    Returns ids (n, length), symbols 0 … ``n_symbols`` − 1, and labels (n, length): at step t,
    ``x[t − a] · n_symbols + x[t − b]`` for offsets (a, b), a class out of ``n_symbols²``; −1 where t < max(a, b)
    (nothing to name: leave those out with ``ignore_index=-1``).
    """
    a, b = offsets
    if not (0 < a and 0 < b and max(a, b) < length):
        raise ConfigError(f"need 0 < offsets < length, got offsets={offsets}, length={length}")
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_symbols, size=(n, length))
    labels = np.full((n, length), -1)
    first = max(a, b)
    labels[:, first:] = x[:, first - a:length - a] * n_symbols + x[:, first - b:length - b]
    return x.astype(np.int64), labels.astype(np.int64)


# ---- Chapter 5: a synthetic language pair with known word alignments ------------------------------------------

_NOUNS = (
    "cat", "dog", "bird", "horse", "cow", "fish", "mouse", "lion", "bear", "wolf", "fox", "goat", "sheep",
    "child", "teacher", "doctor", "farmer", "king", "queen", "girl", "boy", "man", "woman", "friend", "baker",
    "sailor", "soldier", "student", "apple", "book", "table", "chair", "house", "garden", "river", "tree",
    "stone", "letter", "ship", "car",
)
_ADJECTIVES = (
    "big", "small", "old", "young", "red", "green", "blue", "black", "white", "happy", "sad", "tall", "short",
    "quiet", "loud", "brave", "clever", "lazy", "kind", "angry", "hungry", "strong", "tired", "rich", "poor",
)
_VERBS = (
    "sees", "likes", "finds", "follows", "helps", "watches", "calls", "meets", "loves", "hates", "pushes",
    "pulls", "carries", "takes", "paints", "builds", "reads", "writes", "buys", "sells", "feeds", "chases",
    "visits", "teaches", "knows",
)
_DETERMINERS = ("the", "a", "this", "that", "every", "my", "his", "her", "our")
_DETERMINER_WEIGHTS = (4, 3, 1, 1, 1, 1, 1, 1, 1)
_ADVERBS = ("often", "never", "quickly", "slowly", "again", "today", "yesterday", "gladly")
_PREPOSITIONS = ("in", "on", "near", "under", "behind", "with", "from")
_UNTRANSLATED = frozenset({"a", "an"})        # one-to-zero: the target has no indefinite article
_TWO_WORD_VERBS = frozenset(_VERBS[::3])       # one-to-many: these verbs become verb + particle


@functools.lru_cache(maxsize=1)
def aligned_pair_lexicon() -> dict[str, tuple[str, ...]]:
    """The dictionary of :func:`aligned_pair_task`: each source word and its target words (none for ``a`` and
    ``an``, two for every third verb). The same for every seed: data sets of different seeds share a language."""
    rng = np.random.default_rng(2017)          # fixed: the language does not depend on the data seed
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    source = (*_NOUNS, *_ADJECTIVES, *_VERBS, *_DETERMINERS, "an", *_ADVERBS, *_PREPOSITIONS)
    taken = set(source)

    def word(syllables: int) -> str:
        while True:
            w = "".join(consonants[rng.integers(len(consonants))] + vowels[rng.integers(len(vowels))]
                        for _ in range(syllables))
            if w not in taken:
                taken.add(w)
                return w

    lexicon: dict[str, tuple[str, ...]] = {}
    for src in source:
        if src in _UNTRANSLATED:
            lexicon[src] = ()
        elif src in _TWO_WORD_VERBS:
            lexicon[src] = (word(2), word(1))
        else:
            lexicon[src] = (word(1 if src in _DETERMINERS or src in _PREPOSITIONS else 2),)
    return lexicon


@dataclass(frozen=True)
class AlignedPairs:
    """Sentence pairs with gold word alignments: ``source`` and ``target`` space-joined sentences, and for each
    pair the set of ``(i, j)`` links, source word ``i`` aligned to target word ``j`` (0-based)."""

    source: list[str]
    target: list[str]
    alignments: list[set[tuple[int, int]]]

    def __len__(self) -> int:
        return len(self.source)

    def subset(self, index) -> AlignedPairs:
        """The pairs at ``index`` (a slice, a boolean mask or integer indices)."""
        keep = np.atleast_1d(np.arange(len(self))[index])
        return AlignedPairs([self.source[k] for k in keep], [self.target[k] for k in keep],
                            [set(self.alignments[k]) for k in keep])


def _noun_phrase(rng: np.random.Generator, max_adjectives: int) -> list[tuple[str, str]]:
    """determiner? adjective* noun, as (word, part of speech) pairs."""
    words = []
    if rng.random() < 0.7:
        p = np.asarray(_DETERMINER_WEIGHTS, float)
        words.append((_DETERMINERS[rng.choice(len(_DETERMINERS), p=p / p.sum())], "det"))
    n_adj = min(int(rng.choice(3, p=[0.5, 0.3, 0.2])), max_adjectives)
    for k in rng.choice(len(_ADJECTIVES), size=n_adj, replace=False):
        words.append((_ADJECTIVES[k], "adj"))
    words.append((_NOUNS[rng.integers(len(_NOUNS))], "noun"))
    return words


def _translate_phrase(phrase: list[tuple[int, str, str]]) -> list[int]:
    """Source positions of a noun phrase in target order: determiner, noun, then the adjectives mirrored."""
    det = [i for i, _, pos in phrase if pos == "det"]
    adj = [i for i, _, pos in phrase if pos == "adj"]
    noun = [i for i, _, pos in phrase if pos == "noun"]
    return det + noun + adj[::-1]


def aligned_pair_task(n: int, *, seed: int = 0, min_len: int = 3, max_len: int = 12) -> AlignedPairs:
    """``n`` sentence pairs of a synthetic language pair whose word alignments are known, to test whether
    attention is alignment (Koehn & Knowles, "Six Challenges for Neural Machine Translation", 2017).

    The source is English-like SVO: determiner? adjective* noun, verb, determiner? adjective* noun, then
    optionally a prepositional phrase or an adverb (3 to 13 words; ``min_len..max_len`` kept). The target (a
    Basque-like order) translates word by word with :func:`aligned_pair_lexicon` and reorders: nouns before their
    adjectives (mirrored: "big black cat" -> cat black big), postpositions, and the verb last (S O X V). The
    article "a"/"an" has no translation (one-to-zero) and every third verb becomes two words (one-to-many).
    """
    n = validate.integer("n (the number of pairs)", n)
    min_len, max_len = validate.sizes(min_len=min_len, max_len=max_len)
    seed = validate.seed(seed)
    if not 3 <= min_len <= max_len <= 13:
        raise ConfigError(f"need 3 <= min_len <= max_len <= 13 (the grammar's sentence lengths), got "
                          f"min_len={min_len}, max_len={max_len}")
    lexicon = aligned_pair_lexicon()
    rng = np.random.default_rng(seed)
    sources: list[str] = []
    targets: list[str] = []
    alignments: list[set[tuple[int, int]]] = []
    while len(sources) < n:
        parts: list[tuple[str, list[tuple[str, str]]]] = [
            ("subj", _noun_phrase(rng, 2)), ("verb", [(_VERBS[rng.integers(len(_VERBS))], "verb")]),
            ("obj", _noun_phrase(rng, 2))]
        extra = rng.random()
        if extra < 0.35:
            parts.append(("pp", [(_PREPOSITIONS[rng.integers(len(_PREPOSITIONS))], "prep")]
                          + _noun_phrase(rng, 1)))
        elif extra < 0.6:
            parts.append(("adv", [(_ADVERBS[rng.integers(len(_ADVERBS))], "adv")]))
        words = [w for _, phrase in parts for w, _ in phrase]
        words = ["an" if w == "a" and nxt[:1] in ("a", "e", "i", "o", "u") else w
                 for w, nxt in zip(words, [*words[1:], ""], strict=True)]
        if not min_len <= len(words) <= max_len:
            continue
        indexed: dict[str, list[tuple[int, str, str]]] = {}
        i = 0
        for role, phrase in parts:
            indexed[role] = [(i + k, w, pos) for k, (w, pos) in enumerate(phrase)]
            i += len(phrase)
        order = _translate_phrase(indexed["subj"]) + _translate_phrase(indexed["obj"])
        if "pp" in indexed:                              # postposition: the noun phrase, then the adposition
            order += _translate_phrase(indexed["pp"][1:]) + [indexed["pp"][0][0]]
        if "adv" in indexed:
            order.append(indexed["adv"][0][0])
        order.append(indexed["verb"][0][0])              # verb-final
        target: list[str] = []
        links: set[tuple[int, int]] = set()
        for src_i in order:
            for tgt_word in lexicon[words[src_i]]:
                links.add((src_i, len(target)))
                target.append(tgt_word)
        sources.append(" ".join(words))
        targets.append(" ".join(target))
        alignments.append(links)
    return AlignedPairs(sources, targets, alignments)
