"""Chapter 9, pretraining a small BERT with the masked-language-model objective: a WordPiece vocabulary trained on
WikiText-2 and Tiny Shakespeare, BERT's masking rule, the training run and fill-in-the-blank. Importing this module
loads no framework."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from attention_course import data as course_data
from attention_course.ch08_transformer.experiment import ngram_loss
from attention_course.notebook import session

__all__ = ["SPECIALS", "PRETRAIN_SIZES", "FINETUNE", "pretraining_texts", "wordpiece", "Pretraining",
           "pretraining_data", "mlm_mask", "masked_examples", "unigram_baseline", "build_mlm", "pretrain", "fill_in",
           "linear_schedule", "cached_checkpoint", "IGNORE", "softmax"]


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
#: split by the seed as Chapter 3 splits them): pieces per sentence, epochs, batch, and Adam's peak rate on the
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
    """The linear warm-up and decay that BERT made common, as Hugging Face's ``get_linear_schedule_with_warmup``
    computes it: rising linearly to ``peak`` over ``warmup`` steps, then falling linearly to 0 at ``steps`` (BERT's
    own code starts the fall at step 0, so its rate ends the warm-up at peak · (1 − warmup / steps)). Steps count
    from 1."""
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


def softmax(logits: np.ndarray) -> np.ndarray:
    """Class probabilities from logits, along the last axis."""
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


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
