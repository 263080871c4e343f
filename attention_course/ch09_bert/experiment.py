"""Chapter 9's experiments: pretraining a small BERT with the masked-language-model objective (a WordPiece
vocabulary trained on WikiText-2 and Tiny Shakespeare, BERT's masking rule, fill-in-the-blank), fine-tuning it on
Chapter 3's sentiment sentences; and on a pretrained BERT, the attention maps of every layer and head and Clark et
al.'s statistics of what each head attends to. Importing this module loads no framework: the functions take the
framework's module (``ac.torch`` or ``ac.keras``) as an argument.
"""

from __future__ import annotations

import re
import string
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from attention_course import data as course_data
from attention_course.ch08_transformer.experiment import ngram_loss
from attention_course.core.backend import backend, to_numpy
from attention_course.notebook import session

__all__ = ["SENTENCES", "Encoded", "encode", "forward", "attention_maps", "head_statistics", "STATISTICS",
           "SPECIALS", "PRETRAIN_SIZES", "FINETUNE", "pretraining_texts", "wordpiece", "Pretraining",
           "pretraining_data", "mlm_mask", "masked_examples", "unigram_baseline", "build_mlm", "pretrain", "fill_in",
           "sentiment_pieces", "finetune", "finetune_table", "linear_schedule", "cached_checkpoint", "IGNORE",
           "classify", "softmax", "NSP", "sentences", "SentencePairs", "encode_pairs",
           "next_sentence_data", "overlap_baseline", "train_classifier",
           "permutation_test", "total_variation", "attention_and_gradients"]

#: The seeds' sentences: the Analytics Vidhya guide's chasing example, the NLP-lab slides' "Thinking Machines", and
#: the classic coreference sentence of the Transformer's blog posts.
SENTENCES = ["The FBI is chasing a criminal on the run.",
             "Thinking machines learn to pay attention.",
             "The animal didn't cross the street because it was too tired."]

#: What ``head_statistics`` measures per head (Clark et al. 2019, sections 3 and 4).
STATISTICS = ["[CLS]", "[SEP]", "punctuation", "previous token", "next token", "entropy"]


@dataclass
class Encoded:
    """Sentences as WordPiece ids, padded: ids and mask (N, T), and each sentence's tokens (no padding)."""

    ids: np.ndarray
    mask: np.ndarray
    tokens: list[list[str]]


def encode(tokenizer, sentences: list[str], max_len: int = 128) -> Encoded:
    """[CLS] sentence [SEP] for each sentence (``tokenizers``' BERT tokenizer), cut at ``max_len`` tokens."""
    tokenizer.no_padding()                       # MiniLM's tokenizer.json pads every sentence to 128 tokens
    tokenizer.enable_truncation(max_len)
    encoded = tokenizer.encode_batch(list(sentences))
    width = max(len(e.ids) for e in encoded)
    ids = np.zeros((len(encoded), width), np.int64)
    mask = np.zeros((len(encoded), width), bool)
    for i, e in enumerate(encoded):
        ids[i, :len(e.ids)], mask[i, :len(e.ids)] = e.ids, True
    return Encoded(ids, mask, [list(e.tokens) for e in encoded])


def forward(fw: ModuleType, model, ids, mask) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``model`` (a ``Bert``) on ids and mask (N, T): the hidden states [embeddings, layer 1, …] (N, T, d) and the
    attention of each layer (N, h, T, T), as NumPy arrays, without gradients."""
    _, extra = _run(fw, model, ids, mask, return_weights=True)
    return [to_numpy(h) for h in extra["hidden"]], [to_numpy(a) for a in extra["attention"]]


def _run(fw: ModuleType, model, *args, **kwargs):
    """``model(*args, **kwargs)`` for inference: PyTorch's in eval mode without gradients; Keras' as it is."""
    with backend(fw).inference(model):
        return model(*args, **kwargs)


def attention_maps(fw: ModuleType, model, data: Encoded, batch_size: int = 32) -> list[np.ndarray]:
    """Each sentence's attention, (layers, heads, T_i, T_i) with T_i its real tokens, from ``model`` (a ``Bert``)."""
    out: list[np.ndarray] = []
    for start in range(0, len(data.ids), batch_size):
        ids, mask = data.ids[start:start + batch_size], data.mask[start:start + batch_size]
        width = int(mask.sum(1).max())
        _, attention = forward(fw, model, ids[:, :width], mask[:, :width])
        layers = np.stack(attention, axis=1)                                             # (b, L, h, T, T)
        for row, n in zip(layers, mask[:, :width].sum(1), strict=True):
            out.append(row[:, :, :n, :n])
    return out


def _is_punctuation(token: str) -> bool:
    return len(token) > 0 and all(c in string.punctuation for c in token)


def head_statistics(attention: list[np.ndarray], tokens: list[list[str]]):
    """Per layer and head, averaged over every token of every sentence (as queries): the share of its attention on
    [CLS], on [SEP], on punctuation, on the previous token and on the next one, and the entropy of its attention
    (nats; ln T for uniform attention over T tokens). A DataFrame: layer, head (from 1), statistic, value."""
    import pandas as pd

    if len(attention) != len(tokens):
        raise ValueError(f"got {len(attention)} attention arrays for {len(tokens)} token lists")
    sums: dict[str, np.ndarray] = {}
    count = 0
    for a, toks in zip(attention, tokens, strict=True):
        a = np.asarray(a, dtype=np.float64)                                         # (L, h, T, T)
        if a.shape[-1] != len(toks):
            raise ValueError(f"attention over {a.shape[-1]} keys for {len(toks)} tokens")
        kinds = {"[CLS]": [t == "[CLS]" for t in toks], "[SEP]": [t == "[SEP]" for t in toks],
                 "punctuation": [_is_punctuation(t) for t in toks]}
        shares = {name: a[..., np.array(keys)].sum(-1).sum(-1) for name, keys in kinds.items()}   # (L, h)
        t = len(toks)
        shares["previous token"] = np.diagonal(a, offset=-1, axis1=2, axis2=3).sum(-1)
        shares["next token"] = np.diagonal(a, offset=1, axis1=2, axis2=3).sum(-1)
        shares["entropy"] = -(a * np.log(np.where(a > 0, a, 1.0))).sum(-1).sum(-1)
        for name, value in shares.items():
            sums[name] = sums.get(name, 0) + value
        count += t
    layers, heads = next(iter(sums.values())).shape
    rows = [{"layer": layer + 1, "head": head + 1, "statistic": name, "value": float(sums[name][layer, head] / count)}
            for name in STATISTICS for layer in range(layers) for head in range(heads)]
    return pd.DataFrame(rows)


# ---- pretraining a small BERT --------------------------------------------------------------------------------

#: The word pieces every vocabulary starts with, in this order: [PAD] is id 0, [MASK] id 4.
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, UNK, CLS, SEP, MASK = range(len(SPECIALS))
IGNORE = -100          # the label of a position the loss leaves out

#: The small BERT of each profile and its pretraining: the vocabulary, sequences of ``length`` pieces (``[CLS]``
#: text ``[SEP]``), the training sequences used (None: all), ``copies`` differently masked copies of each (the
#: original BERT's "duplication factor"; RoBERTa later masked afresh every epoch), at most ``predictions`` masked
#: positions per sequence, the model and Adam's rate.
PRETRAIN_SIZES: dict[str, dict[str, Any]] = {
    "quick": {"vocab": 3000, "length": 64, "sequences": 6400, "copies": 1, "epochs": 3, "predictions": 16,
              "d_model": 64, "heads": 4, "layers": 2, "d_ff": 256, "dropout": 0.1, "batch_size": 32, "lr": 2e-3,
              "warmup": 100},
    "full": {"vocab": 8000, "length": 64, "sequences": None, "copies": 4, "epochs": 6, "predictions": 16,
             "d_model": 128, "heads": 4, "layers": 4, "d_ff": 512, "dropout": 0.1, "batch_size": 64, "lr": 1e-3,
             "warmup": 500},
}

#: Fine-tuning on Chapter 3's sentiment sentences (Amazon and Yelp, 1,600 training and 400 validation sentences,
#: split by the seed as Chapter 3 splits them): pieces per sentence, epochs, batch, and Adam's peak rate on BERT's
#: schedule (``linear_schedule``, rising over the ``warmup`` share of the steps); the same for the pretrained BERT and
#: for the one trained from scratch.
FINETUNE: dict[str, Any] = {"max_len": 48, "epochs": 5, "batch_size": 32, "lr": 3e-4, "warmup": 0.1}


def _wikitext(line: str) -> str:
    """A line of the tokenized WikiText-2 with its split numbers joined back and ``<unk>`` as BERT's [UNK]."""
    for split, joined in ((" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", ".")):
        line = line.replace(split, joined)
    return line.replace("<unk>", "[UNK]").strip()


def pretraining_texts() -> list[str]:
    """The unlabelled text: the paragraphs of the offline WikiText-2 subset (validation and test splits, headings
    left out) and Tiny Shakespeare's speeches, one string each."""
    wiki = course_data.load_wikitext2_subset("valid") + course_data.load_wikitext2_subset("test")
    paragraphs = [_wikitext(line) for line in wiki if line.strip() and not line.strip().startswith("=")]
    speeches = [" ".join(block.split()) for block in course_data.load_tinyshakespeare().split("\n\n")]
    return paragraphs + [s for s in speeches if s]


def wordpiece(texts: list[str], vocab_size: int):
    """A WordPiece tokenizer trained on ``texts`` with the ``tokenizers`` library, as BERT's is made: lower-cased,
    accents stripped, split at spaces and punctuation, words cut into pieces of a ``vocab_size`` vocabulary (the
    ``SPECIALS`` first); encoding adds [CLS] … [SEP]."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", CLS), ("[SEP]", SEP)])
    return tokenizer


@dataclass
class Pretraining:
    """The pretraining data: the tokenizer and sequences of word-piece ids, [CLS] … [SEP], (N, length) each, the
    last 5 % of the text held out for validation."""

    tokenizer: Any
    train: np.ndarray
    val: np.ndarray


def pretraining_data(sizes: dict[str, Any], texts: list[str] | None = None) -> Pretraining:
    """Train the WordPiece vocabulary on ``texts`` (default ``pretraining_texts()``), encode the text as one stream
    of pieces and cut it into sequences of ``sizes["length"]`` (two places for [CLS] and [SEP]), the last 5 % for
    validation."""
    texts = pretraining_texts() if texts is None else texts
    tokenizer = wordpiece(texts, sizes["vocab"])
    stream = np.concatenate([e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]).astype(np.int64)
    body = sizes["length"] - 2
    chunks = stream[:len(stream) // body * body].reshape(-1, body)
    rows = np.concatenate([np.full((len(chunks), 1), CLS), chunks, np.full((len(chunks), 1), SEP)], axis=1)
    cut = int(len(rows) * 0.95)
    return Pretraining(tokenizer, rows[:cut], rows[cut:])


def mlm_mask(ids, special, mask_id: int, vocab: int, rng, rate: float = 0.15):
    """BERT's masked-LM rule: ``rate`` of the non-special tokens are chosen; of those, 80 % become ``mask_id``,
    10 % a random id in [0, vocab), 10 % stay as they are. Returns (inputs, labels), both like ``ids``: labels hold
    the original id at the chosen positions and ``IGNORE`` (-100) elsewhere. (The answer of the chapter's exercise.)"""
    ids, special = np.asarray(ids), np.asarray(special, bool)
    chosen = (rng.random(ids.shape) < rate) & ~special
    fate = rng.random(ids.shape)
    inputs = ids.copy()
    inputs[chosen & (fate < 0.8)] = mask_id
    random = chosen & (fate >= 0.8) & (fate < 0.9)
    inputs[random] = rng.integers(0, vocab, size=int(random.sum()))
    return inputs, np.where(chosen, ids, IGNORE)


def masked_examples(ids: np.ndarray, vocab: int, predictions: int, rng) -> tuple[np.ndarray, ...]:
    """``mlm_mask`` on sequences ``ids`` (N, T) of ``[CLS] … [SEP]``, then, as BERT's code does, the chosen positions
    gathered into a fixed number per sequence: inputs (N, T), mask (N, T) all True, positions (N, ``predictions``)
    and labels (N, ``predictions``), ``IGNORE`` where a sequence has fewer chosen positions (a sequence with more
    keeps its first ``predictions`` and gets the others back unchanged)."""
    special = np.isin(ids, [PAD, CLS, SEP])
    inputs, labels = mlm_mask(ids, special, MASK, vocab, rng)
    positions = np.zeros((len(ids), predictions), np.int64)
    targets = np.full((len(ids), predictions), IGNORE, np.int64)
    for row, chosen in enumerate(labels != IGNORE):
        where = np.flatnonzero(chosen)
        inputs[row, where[predictions:]] = ids[row, where[predictions:]]                 # more than fit: undone
        where = where[:predictions]
        positions[row, :len(where)], targets[row, :len(where)] = where, ids[row, where]
    return inputs, ids != PAD, positions, targets


def unigram_baseline(data: Pretraining, labels: np.ndarray) -> dict[str, float]:
    """What a model that ignores the context scores on the masked ``labels``: the cross-entropy (nats) of the
    pieces' frequencies in the training sequences, and the accuracy of always guessing the most frequent piece."""
    train = data.train[:, 1:-1].ravel()
    real = labels[labels != IGNORE]
    counts = np.bincount(train, minlength=data.tokenizer.get_vocab_size())
    return {"loss": ngram_loss(train, real, len(counts), order=1),
            "accuracy": float((real == counts.argmax()).mean())}


def build_mlm(fw: ModuleType, sizes: dict[str, Any], vocab: int, seed: int = 0):
    """A ``MaskedLM`` of framework ``fw`` with the sizes of ``sizes``, seeded."""
    session.seed_everything(seed)
    return fw.MaskedLM(vocab, d_model=sizes["d_model"], heads=sizes["heads"], layers=sizes["layers"],
                       d_ff=sizes["d_ff"], max_len=sizes["length"], dropout=sizes["dropout"])


VAL_SEED = 9   # the masking of the validation sequences: the same for every run, so that runs compare


def linear_schedule(peak: float, warmup: int, steps: int):
    """BERT's learning rate: rising linearly to ``peak`` over ``warmup`` steps, then falling linearly to 0 at
    ``steps``. Steps count from 1."""
    def rate(step: int) -> float:
        return peak * min(step / warmup, max(0.0, (steps - step) / max(steps - warmup, 1)))

    return rate


def pretrain(fw: ModuleType, model, data: Pretraining, sizes: dict[str, Any], *, seed: int = 0, checkpoint=None,
             desc: str | None = None):
    """The masked-LM objective on ``sizes["sequences"]`` training sequences (``copies`` masked copies of each),
    Adam at ``sizes["lr"]``, gradients clipped at norm 1; the loss on the validation sequences (masked the same
    way whatever the seed) after each epoch, the weights of the best epoch kept. Returns (history, validation
    examples)."""
    rng = np.random.default_rng(seed)
    train = data.train
    if sizes["sequences"] is not None:
        train = train[rng.permutation(len(train))[:sizes["sequences"]]]
    vocab = data.tokenizer.get_vocab_size()
    copies = [masked_examples(train, vocab, sizes["predictions"], rng) for _ in range(sizes["copies"])]
    inputs, mask, positions, labels = (np.concatenate(parts) for parts in zip(*copies, strict=True))
    val = masked_examples(data.val, vocab, sizes["predictions"], np.random.default_rng(VAL_SEED))
    steps = sizes["epochs"] * -(-len(inputs) // sizes["batch_size"])
    history = fw.fit(model, (inputs, mask, positions), labels, epochs=sizes["epochs"],
                     batch_size=sizes["batch_size"], lr=sizes["lr"], ignore_index=IGNORE, seed=seed, clip_norm=1.0,
                     schedule=linear_schedule(sizes["lr"], sizes["warmup"], steps), checkpoint=checkpoint, desc=desc,
                     validation=(val[:3], val[3]))
    return history, val


def cached_checkpoint(run, framework: str) -> Path | None:
    """Where the chapter keeps its pretraining checkpoint in the full profile (``run`` is ``ac.setup()``'s session):
    the course's cache of derived files, so that running the chapter again resumes or skips the pretraining. None in
    the quick profile, which pretrains afresh each time (half a minute)."""
    if run.profile != "full":
        return None
    from attention_course.data.download import derived_dir

    return derived_dir() / "chapter9" / f"mlm-full-{framework}-seed{run.seed}.ckpt"


def fill_in(fw: ModuleType, model, tokenizer, sentences: list[str], top: int = 5) -> list[dict[str, Any]]:
    """The ``top`` pieces ``model`` (a ``MaskedLM``) puts at each ``[MASK]`` of each sentence, with their
    probabilities: one row per blank."""
    rows = []
    for sentence in sentences:
        encoded = tokenizer.encode(sentence)
        ids = np.array([encoded.ids])
        where = np.flatnonzero(ids[0] == MASK)
        if not len(where):
            raise ValueError(f"no [MASK] in {sentence!r}")
        p = softmax(fw.predict(model, (ids, np.ones_like(ids, bool), where[None]))[0])  # (P, V)
        for k, position in enumerate(where):
            best = np.argsort(-p[k])[:top]
            rows.append({"sentence": sentence, "blank": int(position),
                         "guesses": [(tokenizer.id_to_token(int(i)), float(p[k, i])) for i in best]})
    return rows


# ---- next-sentence prediction ----------------------------------------------------------------------------------

#: Next-sentence prediction, as a task on its own over the pretrained encoder (both profiles): sentence pairs for
#: training and for testing (half of them real successors), their length in pieces, and the training (as
#: ``FINETUNE``).
NSP: dict[str, Any] = {"train": 10000, "test": 1000, "max_len": 64, "epochs": 2, "batch_size": 32, "lr": 1e-3,
                       "warmup": 0.1}

_SPEAKER = re.compile(r"^[A-Z][A-Za-z ]*:\s*")        # a Shakespeare speech starts with its speaker's name
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")


def sentences(text: str) -> list[str]:
    """A paragraph or speech cut into sentences: after ``.``, ``!`` or ``?`` and before a capital letter or a
    quotation mark (the speaker's name of a speech left out)."""
    return [s for s in _SENTENCE_END.split(_SPEAKER.sub("", text)) if s]


@dataclass
class SentencePairs:
    """Sentence pairs as BERT reads them, ``[CLS] A [SEP] B [SEP]``: ids, mask and segments (N, T), ``y`` 1 where B
    follows A in the text and 0 where it does not, and A's and B's texts."""

    ids: np.ndarray
    mask: np.ndarray
    segments: np.ndarray
    y: np.ndarray
    first: list[str]
    second: list[str]

    @property
    def inputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What a ``SentenceClassifier`` takes: ids, mask, segments."""
        return self.ids, self.mask, self.segments


def encode_pairs(tokenizer, first: list[str], second: list[str], y, max_len: int) -> SentencePairs:
    """``[CLS] A [SEP] B [SEP]`` for each pair, B's pieces and its [SEP] in segment 1; a pair longer than ``max_len``
    pieces loses pieces from the end of the longer of A and B, one at a time, as BERT's ``truncate_seq_pair``. (The
    cut is made here: the tokenizer's own truncation keeps every cut-off piece as an extra encoding, 170 MB for ten
    thousand pairs that the kernel does not give back.)"""
    tokenizer.no_padding()
    tokenizer.no_truncation()
    rows = []
    for a, b in zip(tokenizer.encode_batch(list(first), add_special_tokens=False),
                    tokenizer.encode_batch(list(second), add_special_tokens=False), strict=True):
        a, b = list(a.ids), list(b.ids)
        while len(a) + len(b) > max_len - 3:
            (a if len(a) > len(b) else b).pop()
        rows.append(([CLS, *a, SEP], [*b, SEP]))
    width = max(len(a) + len(b) for a, b in rows)
    ids, segments = np.zeros((len(rows), width), np.int64), np.zeros((len(rows), width), np.int64)
    mask = np.zeros((len(rows), width), bool)
    for i, (a, b) in enumerate(rows):
        n = len(a) + len(b)
        ids[i, :n], segments[i, len(a):n], mask[i, :n] = a + b, 1, True
    return SentencePairs(ids, mask, segments, np.asarray(y, np.int64), list(first), list(second))


def next_sentence_data(tokenizer, sizes: dict[str, Any], texts: list[str] | None = None,
                       seed: int = 0) -> dict[str, SentencePairs]:
    """BERT's next-sentence task on ``texts`` (default ``pretraining_texts()``, a document per string): each example
    takes a sentence A and, for half of the examples, the sentence after it (y = 1), else a sentence drawn at random
    from any document of its side of the split, never the one after A (y = 0). The documents are split at random, a
    tenth of them for the test. Returns ``train``, ``test`` and ``swapped``: the test's real pairs, and the same
    pairs in the wrong order (B then A) as the negatives, the sentence-order task ALBERT put in NSP's place."""
    rng = np.random.default_rng(seed)
    texts = pretraining_texts() if texts is None else texts
    documents = [s for s in (sentences(t) for t in texts) if len(s) > 1]
    held_out = rng.random(len(documents)) < 0.1

    def pairs(docs: list[list[str]], count: int):
        pool = [s for d in docs for s in d]                                          # every sentence, for negatives
        where = [(d, i) for d, doc in enumerate(docs) for i in range(len(doc) - 1)]
        if count > len(where):
            raise ValueError(f"asked for {count:,} sentence pairs, but the documents hold {len(where):,}")
        pick = rng.choice(len(where), size=count, replace=False)
        first = [docs[where[k][0]][where[k][1]] for k in pick]
        real = [docs[where[k][0]][where[k][1] + 1] for k in pick]
        y = rng.permutation(count) < count // 2                                        # half of them real
        second = [b if keep else _other(pool, b, rng) for b, keep in zip(real, y, strict=True)]
        return first, real, second, y

    train_docs = [d for d, out in zip(documents, held_out, strict=True) if not out]
    test_docs = [d for d, out in zip(documents, held_out, strict=True) if out]
    first, _, second, y = pairs(train_docs, sizes["train"])
    train = encode_pairs(tokenizer, first, second, y, sizes["max_len"])
    first, real, second, y = pairs(test_docs, sizes["test"])
    test = encode_pairs(tokenizer, first, second, y, sizes["max_len"])
    order = [(a, b) if keep else (b, a) for a, b, keep in zip(first, real, y, strict=True)]
    swapped = encode_pairs(tokenizer, [a for a, _ in order], [b for _, b in order], y, sizes["max_len"])
    return {"train": train, "test": test, "swapped": swapped}


def _other(pool: list[str], sentence: str, rng) -> str:
    """A sentence of ``pool`` drawn at random, other than ``sentence``."""
    while (drawn := pool[rng.integers(len(pool))]) == sentence:
        pass
    return drawn


def overlap_baseline(pairs: dict[str, SentencePairs]) -> dict[str, float]:
    """A model of the next-sentence task that sees only the words A and B share: the cosine between their TF-IDF
    vectors (the weights learned on the training pairs), through a logistic regression fitted on the training
    pairs. The cosine does not change when A and B swap places, so the model is blind to order. Returns its
    accuracy on each set of ``pairs`` (``next_sentence_data``)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    train = pairs["train"]
    tfidf = TfidfVectorizer().fit(train.first + train.second)

    def cosine(p: SentencePairs) -> np.ndarray:                                   # (N, 1); rows have unit norm
        return np.asarray(tfidf.transform(p.first).multiply(tfidf.transform(p.second)).sum(1))

    model = LogisticRegression().fit(cosine(train), train.y)
    return {name: float(model.score(cosine(p), p.y)) for name, p in pairs.items()}


# ---- fine-tuning on Chapter 3's sentiment sentences ----------------------------------------------------------

def sentiment_pieces(tokenizer, seed: int, max_len: int = FINETUNE["max_len"]) -> dict[str, np.ndarray]:
    """Chapter 3's sentiment data (Amazon and Yelp, the split of ``course_data.prepare_sentiment(seed)``), as word
    pieces of ``tokenizer``, [CLS] sentence [SEP], cut at ``max_len``: ids, mask (N, T), y (N,), train and val
    (index arrays), and vocab, the tokenizer's size."""
    import pandas as pd

    split = course_data.prepare_sentiment(seed)
    frame = pd.concat([course_data.load_sentiment(src) for src in ("amazon", "yelp")], ignore_index=True)
    encoded = encode(tokenizer, frame["sentence"].tolist(), max_len=max_len)
    return {"ids": encoded.ids, "mask": encoded.mask, "y": frame["label"].to_numpy(), "train": split["train"],
            "val": split["val"], "vocab": tokenizer.get_vocab_size()}


def finetune(fw: ModuleType, data: dict[str, np.ndarray], sizes: dict[str, Any], weights=None, *, seed: int = 0,
             settings: dict[str, Any] = FINETUNE, desc: str | None = None) -> dict[str, Any]:
    """Train a ``SentenceClassifier`` on the training sentences of ``data`` (``sentiment_pieces``): over the BERT
    of ``weights`` (``export_bert`` of a pretrained ``MaskedLM``), or, with ``weights=None``, over a fresh BERT of
    the same ``sizes`` (from scratch). Returns the model, its validation accuracy after the last epoch (Chapter
    3's protocol) and the training seconds."""
    tr, va = data["train"], data["val"]
    model, seconds = train_classifier(fw, (data["ids"][tr], data["mask"][tr]), data["y"][tr], sizes, weights,
                                      vocab=int(data["vocab"]), seed=seed, settings=settings, desc=desc)
    accuracy = fw.accuracy(model, (data["ids"][va], data["mask"][va]), data["y"][va])
    return {"model": model, "val_accuracy": float(accuracy), "train_seconds": seconds}


def train_classifier(fw: ModuleType, inputs: tuple, y: np.ndarray, sizes: dict[str, Any], weights=None, *,
                     vocab: int | None = None, classes: int = 2, seed: int = 0, settings: dict[str, Any] = FINETUNE,
                     desc: str | None = None):
    """A ``SentenceClassifier`` over the BERT of ``weights`` (None: a fresh one of ``sizes`` and ``vocab``) trained
    on ``inputs`` (ids, mask[, segments]) and labels ``y`` (0 … ``classes`` − 1) with Adam on BERT's schedule
    (``settings``: epochs, batch_size, lr and the warm-up's share of the steps). Returns the model and the training
    seconds."""
    session.seed_everything(seed)
    if weights is None:
        if vocab is None:
            raise ValueError("a classifier trained from scratch needs the vocabulary's size: pass vocab=")
        bert = fw.Bert(vocab, sizes["d_model"], sizes["heads"], sizes["layers"], sizes["d_ff"],
                       max_len=sizes["length"], dropout=sizes["dropout"])
    else:
        bert = fw.load_pretrained(weights, dropout=sizes["dropout"])
    model = fw.SentenceClassifier(bert, classes, dropout=sizes["dropout"])
    steps = settings["epochs"] * -(-len(y) // settings["batch_size"])
    schedule = linear_schedule(settings["lr"], max(1, round(settings["warmup"] * steps)), steps)
    start = time.perf_counter()
    fw.fit(model, inputs, y, epochs=settings["epochs"], batch_size=settings["batch_size"], lr=settings["lr"],
           seed=seed, schedule=schedule, desc=desc)
    return model, time.perf_counter() - start


def finetune_table(runs: list[dict], chapter3_runs: Sequence[dict] = ()):
    """The chapter's comparison from the results file: per model (the small BERT pretrained and from scratch,
    then Chapter 3's last-state LSTM and attention pooling of the same seeds), the mean and standard deviation of
    the validation accuracy over seeds, the number of seeds, and the parameters where known."""
    import pandas as pd

    rows = [{"model": r["model"], "seed": r["seed"], "accuracy": r["val_accuracy"],
             "parameters": r.get("parameters", np.nan)} for r in runs]
    rows += [{"model": f"Chapter 3: {r['model']}", "seed": r["seed"], "accuracy": r["val_accuracy"],
              "parameters": np.nan} for r in chapter3_runs if r["model"] in ("last state", "attention")]
    frame = pd.DataFrame(rows)
    grouped = frame.groupby("model", sort=False)
    table = pd.DataFrame({"accuracy": grouped["accuracy"].mean(), "sd": grouped["accuracy"].std(ddof=1),
                          "lowest": grouped["accuracy"].min(), "highest": grouped["accuracy"].max(),
                          "seeds": grouped["seed"].nunique(), "parameters": grouped["parameters"].first()})
    return table


# ---- is attention an explanation? ----------------------------------------------------------------------------

CHUNK = 128     # sentences per forward pass in these tests: small batches keep the memory down


def classify(fw: ModuleType, model, ids, mask) -> tuple[np.ndarray, np.ndarray]:
    """``model`` (a ``SentenceClassifier``) in eval mode on ids and mask (B, T): the class probabilities (B, classes)
    and the last layer's attention from [CLS] (B, h, T), as NumPy arrays."""
    probs, rows = [], []
    for start in range(0, len(ids), CHUNK):
        logits, attention = _run(fw, model, ids[start:start + CHUNK], mask[start:start + CHUNK], return_weights=True)
        probs.append(softmax(to_numpy(logits)))
        rows.append(to_numpy(attention[-1])[:, :, 0, :])
    return np.concatenate(probs), np.concatenate(rows)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Class probabilities from logits, along the last axis."""
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def total_variation(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Half the L1 distance between distributions along the last axis: 0 when equal, 1 when disjoint."""
    return 0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum(-1)


def permutation_test(fw: ModuleType, model, ids, mask, permutations: int = 20, seed: int = 0):
    """Jain & Wallace's permutation test on the last layer's [CLS] attention: for each sentence, shuffle that row's
    weights over its real tokens (the same shuffle in every head), ``permutations`` times, and measure how far the
    output distribution moves (total variation distance). A DataFrame with one row per sentence: the median and
    largest distance, the share of shuffles that change the predicted class, and the largest attention weight
    (averaged over heads) the sentence's [CLS] puts on one token."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    probs, own = classify(fw, model, ids, mask)                                       # (B, classes), (B, h, T)
    n = np.asarray(mask).sum(1)
    shuffled = np.repeat(own, permutations, axis=0)                                   # (B · P, h, T)
    for k, real in enumerate(np.repeat(n, permutations)):
        row = shuffled[k]                                                             # (h, T), a view
        row[:, :real] = row[:, rng.permutation(real)]
    rows = np.repeat(np.arange(len(ids)), permutations)
    logits = np.concatenate([fw.logits_with_cls_attention(model, ids[rows[i:i + CHUNK]], mask[rows[i:i + CHUNK]],
                                                          shuffled[i:i + CHUNK]) for i in range(0, len(rows), CHUNK)])
    moved = total_variation(softmax(logits), probs[rows]).reshape(len(ids), permutations)
    flipped = (softmax(logits).argmax(-1) != probs[rows].argmax(-1)).reshape(len(ids), permutations)
    return pd.DataFrame({"median distance": np.median(moved, 1), "largest distance": moved.max(1),
                         "flips": flipped.mean(1), "largest weight": own.mean(1).max(-1), "tokens": n})


def attention_and_gradients(fw: ModuleType, model, ids, mask):
    """Per sentence, Kendall's τ between two rankings of its word pieces ([CLS] and [SEP] left out): by the last
    layer's [CLS] attention (averaged over heads) and by the gradient of the predicted logit with respect to each
    piece's input vector (``token_gradients``). A DataFrame: τ and the number of pieces ranked."""
    import pandas as pd
    from scipy.stats import kendalltau

    _, own = classify(fw, model, ids, mask)
    attention = own.mean(1)                                                          # (B, T)
    gradients = np.concatenate([fw.token_gradients(model, ids[i:i + CHUNK], mask[i:i + CHUNK])
                                for i in range(0, len(ids), CHUNK)])                  # (B, T)
    rows = []
    for a, g, n in zip(attention, gradients, np.asarray(mask).sum(1), strict=True):
        words = slice(1, n - 1)                                                       # between [CLS] and [SEP]
        rows.append({"tau": float(kendalltau(a[words], g[words]).statistic), "pieces": int(n - 2)})
    return pd.DataFrame(rows)
