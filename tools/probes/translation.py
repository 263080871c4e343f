"""Bad input to Chapter 5's public API: the translators (``Translator``, ``SlidesTranslator``, ``OneStepAttention``,
the encoder and decoders), greedy and beam search (``attention_course.core.decode``), the translation metrics, the
aligned-pair task and the translation data (pairs, the subword tokenizer, ``encode_pairs``), and the course's
vocabulary and padding (``attention_course.core.text``: ``Vocab``, ``pad_batch``).

Masks that are not bool or 0/1, or not right-padded (the PyTorch encoder packs the first ``length`` positions of
each row), shapes and batch sizes that do not fit, ids outside the vocabulary, empty batches and sequences, beam
widths and penalties that make no sense, a single string where a list of sentences belongs, NaN from a model, an
id where a token belongs, a float id, a pad that is also a token.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from . import Probe, to_input, to_numpy
from .data import env
from .layers import bad, call

ROOT = Path(__file__).resolve().parents[2]
B, S, T, V_SRC, V_TGT = 3, 6, 4, 20, 16


def batch(seed=0, b=B, s=S, t=T):
    """src (B, S) right-padded ids, src_mask (B, S) bool, tgt_in (B, T) ids."""
    rng = np.random.default_rng(seed)
    lengths = np.array([s, s - 2, 1][:b] + [s] * max(0, b - 3))
    mask = np.arange(s)[None, :] < lengths[:, None]
    src = np.where(mask, rng.integers(4, V_SRC, size=(b, s)), 0)
    return src, mask, rng.integers(4, V_TGT, size=(b, t))


def translator(fw, attention="bahdanau", **kwargs):
    return fw.Translator(V_SRC, V_TGT, attention, **{"embed": 8, "hidden": 12, **kwargs})


def slides_translator(fw):
    return fw.SlidesTranslator(V_SRC, V_TGT, embed=8, latent_dim=6, latent_dim_decoder=10)


def run_translator(make=translator, src=None, mask=None, tgt=None, **kwargs):
    """Call a translator on the batch, with the given parts replaced (functions of the good part)."""
    def run(fw):
        s, m, t = batch()
        args = [f(x) if f is not None else x for f, x in ((src, s), (mask, m), (tgt, t))]
        return call(fw, make(fw), *[a if a is None else to_input(fw, a) for a in args], **kwargs)
    return run


def additive(mask):
    return np.where(mask, 0.0, -np.inf).astype("float32")


def left_padded(mask):
    """The same number of real tokens in each row, but at the end (the pads first)."""
    return mask[:, ::-1].copy()


def empty_row(mask):
    mask = mask.copy()
    mask[1] = False
    return mask


def numpy_inputs_work(fw):
    """NumPy arrays and 0/1 int masks give the result of framework tensors and bool masks; the attention rows
    sum to 1 over the real source tokens and are 0 on the pads."""
    src, mask, tgt = batch()
    model = translator(fw)
    logits, w = call(fw, model, src, mask.astype("int64"), tgt, return_weights=True)
    ref, ref_w = call(fw, model, to_input(fw, src), to_input(fw, mask), to_input(fw, tgt), return_weights=True)
    logits, w = to_numpy(logits), to_numpy(w)
    assert logits.shape == (B, T, V_TGT) and np.isfinite(logits).all(), logits.shape
    np.testing.assert_allclose(logits, to_numpy(ref), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w, to_numpy(ref_w), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)
    assert (w[~np.broadcast_to(mask[:, None], w.shape)] == 0).all(), "attention on a pad"


def no_attention_weights_are_zero(fw):
    src, mask, tgt = batch()
    logits, w = call(fw, translator(fw, "none"), to_input(fw, src), to_input(fw, mask), to_input(fw, tgt),
                     return_weights=True)
    w = to_numpy(w)
    assert w.shape == (B, T, S) and not w.any(), f"no attention: weights of zeros (B, T, S), got {w.shape}"


def step_with(tokens=None, index=None):
    """Translator.start, then one step with ``tokens`` or a reorder with ``index`` (functions of the good ones)."""
    def run(fw):
        src, mask, _ = batch()
        model = translator(fw)
        state = model.start(to_input(fw, src), to_input(fw, mask))
        good = np.full(B, 2)
        if tokens is not None:
            return model.step(tokens(good), state)
        return model.reorder(state, index(np.arange(B)))
    return run


def reorder_works(fw):
    """reorder(state, index) then a step equals a step then taking the rows ``index`` of its outputs."""
    src, mask, _ = batch()
    model = translator(fw)
    state = model.start(to_input(fw, src), to_input(fw, mask))
    index = np.array([2, 0, 0, 1])
    lp_all, _, a_all = model.step(np.full(B, 2), state)
    lp, _, a = model.step(np.full(4, 2), model.reorder(state, index))
    np.testing.assert_allclose(lp, lp_all[index], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a, a_all[index], rtol=1e-5, atol=1e-6)


def one_step_attention(fw, a_shape=(B, S, 8), s_shape=(B, 5), mask=None):
    rng = np.random.default_rng(0)
    layer = fw.OneStepAttention(5, 8)
    a = to_input(fw, rng.normal(size=a_shape).astype("float32"))
    s = to_input(fw, rng.normal(size=s_shape).astype("float32"))
    return call(fw, layer, a, s, None if mask is None else to_input(fw, mask))


def one_step_attention_works(fw):
    _, mask, _ = batch()
    context, alphas = one_step_attention(fw, mask=mask)
    context, alphas = to_numpy(context), to_numpy(alphas)
    assert context.shape == (B, 1, 8) and alphas.shape == (B, S, 1), (context.shape, alphas.shape)   # the slides'
    np.testing.assert_allclose(alphas.sum(1), 1.0, rtol=1e-5)                  # a softmax over time (axis 1)
    assert (alphas[:, :, 0][~mask] == 0).all()


def fit_late_left_padded(fw):
    """A left-padded row past the first batch: Keras meets it inside tf.function (a graph assertion)."""
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(4, V_SRC, size=(12, S)), rng.integers(4, V_TGT, size=(12, T))
    mask = np.ones((12, S), bool)
    mask[-1, 0] = False                                    # the last row: a pad first, then real tokens
    fw.fit(translator(fw), (src, mask, tgt), tgt, epochs=1, batch_size=4)


# ---- decoding ------------------------------------------------------------------------------------------------

class NaNDecoder:
    """A decoder whose log-probs turn NaN at the second step (a model that has diverged)."""

    def __init__(self, vocab=8):
        self.vocab, self.steps = vocab, 0

    def start(self, src, src_mask):
        return len(src)

    def step(self, tokens, state):
        self.steps += 1
        lp = np.log(np.full((state, self.vocab), 1.0 / self.vocab))
        lp[:, 5] = np.log(0.5)
        if self.steps > 1:
            lp[:, 6] = np.nan
        return lp, state, None

    def reorder(self, state, index):
        return len(index)


def search(kind="greedy", src=None, mask=None, **kwargs):
    def run(fw):
        from attention_course.core import decode

        s, m, _ = batch()
        s, m = (f(x) if f is not None else x for f, x in ((src, s), (mask, m)))
        model = translator(fw)
        if kind == "greedy":
            return decode.greedy_search(model, s, m, **{"max_len": 5, **kwargs})
        return decode.beam_search(model, s, m, **{"max_len": 5, "beam": 2, **kwargs})
    return run


def beam_integer_width_works(fw):
    from attention_course.core import decode

    s, m, _ = batch()
    model = translator(fw)
    got = decode.beam_search(model, s, m, beam=np.int64(2), max_len=np.int32(4), alpha=np.float32(0.5))
    ref = decode.beam_search(model, s, m, beam=2, max_len=4, alpha=0.5)
    assert got.tokens == ref.tokens, (got.tokens, ref.tokens)
    np.testing.assert_allclose(got.scores, ref.scores)


def search_nan(kind):
    def run(fw):
        from attention_course.core import decode

        s, m, _ = batch()
        if kind == "greedy":
            return decode.greedy_search(NaNDecoder(), s, m, max_len=4)
        return decode.beam_search(NaNDecoder(), s, m, beam=2, max_len=4)
    return run


def beam_step_with(beam=2, log_probs=None, scores=None, finished=None):
    def run(fw):
        from attention_course.core import decode

        rng = np.random.default_rng(0)
        lp = np.log(rng.dirichlet(np.ones(5), size=(2, 2)))            # (B, K, V) = (2, 2, 5)
        sc = np.zeros((2, 2))
        fin = np.zeros((2, 2), bool)
        return decode.beam_step(lp if log_probs is None else log_probs(lp), sc if scores is None else scores(sc),
                                fin if finished is None else finished(fin), beam)
    return run


def beam_step_poisoned(where, bad):
    """A NaN or +inf log-prob or score: it would sort last (NaN) or first (+inf) without a word."""
    def run(fw):
        def poison(x):
            x = x.copy()
            x[1, 1, ...] = bad
            return x
        return beam_step_with(**{where: poison})(fw)
    return run


def beam_step_works(fw):
    from attention_course.core import decode

    lp = np.log(np.array([[[0.1, 0.2, 0.7], [0.3, 0.3, 0.4]]]))       # (1, 2, 3)
    scores, parent, token = decode.beam_step(lp, np.array([[0.0, -np.inf]]), np.zeros((1, 2), bool), 2)
    assert parent.tolist() == [[0, 0]] and token.tolist() == [[2, 1]], (parent, token)
    np.testing.assert_allclose(scores, np.log([[0.7, 0.2]]))


# ---- the course's vocabulary and padding ----------------------------------------------------------------------

def vocab_call(use):
    def run(fw):
        from attention_course.core.text import Vocab, tokenize

        return use(Vocab.build([tokenize("the cat sat on the mat"), tokenize("a dog")]))
    return run


def vocab_tokens_work(vocab):
    from attention_course.core.text import UNK

    assert vocab["zebra"] == UNK and vocab.lookup(vocab["cat"]) == "cat", (vocab["zebra"], vocab["cat"])


def lookup_whole_ids_work(vocab):
    got = [vocab.lookup(i) for i in (2.0, np.int64(2), np.array(2))]
    assert got == ["<bos>"] * 3, got


def padded(seqs=((5, 6, 7), (8,)), **kwargs):
    def run(fw):
        from attention_course.core.text import pad_batch

        return pad_batch([list(s) for s in seqs], **kwargs)
    return run


def pad_batch_works(fw):
    from attention_course.core.text import pad_batch

    ids, lengths = pad_batch([[5, 6, 7], [8]], pad=-1, padding="pre")
    assert ids.tolist() == [[5, 6, 7], [-1, -1, 8]] and lengths.tolist() == [3, 1], (ids, lengths)


# ---- metrics ---------------------------------------------------------------------------------------------------

HYPS = ["the cat sat on the mat", "a dog runs"]
REFS = ["the cat sat on the mat", "the dog runs"]


def metric(name, *args, **kwargs):
    def run(fw):
        from attention_course.ch05_neural_machine_translation import metrics as tm

        return getattr(tm, name)(*args, **kwargs)
    return run


def bleu_by_length_works(fw):
    from attention_course.ch05_neural_machine_translation import metrics as tm

    df = tm.bleu_by_length(HYPS, REFS, [6, 3], [1, 5])
    assert list(df.bucket) == ["1-4", "5+"] and list(df.n) == [1, 1], df
    assert abs(df.bleu.iloc[1] - 100) < 1e-9 and df.bleu.iloc[0] == 0.0, df


def aer_works(fw):
    from attention_course.ch05_neural_machine_translation import metrics as tm

    got = tm.alignment_error_rate([[(0, 0), (1, 1)], {(0, 1)}], [{(0, 0), (1, 1)}, {(1, 0)}])
    assert abs(got - (1 - 2 * 2 / 6)) < 1e-12, got


def coverage_works(fw):
    from attention_course.ch05_neural_machine_translation import metrics as tm

    w = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]])     # (1, T=3, S=3)
    got = tm.coverage_counts(w, np.array([[True, True, False]]))
    assert got == {"dropped": 0, "repeated": 1, "source_tokens": 2}, got
    assert tm.coverage_counts([]) == {"dropped": 0, "repeated": 0, "source_tokens": 0}


# ---- data ------------------------------------------------------------------------------------------------------

def aligned(**kwargs):
    def run(fw):
        from attention_course.data import synthetic

        return synthetic.aligned_pair_task(**{"n": 3, **kwargs})
    return run


def pairs(**kwargs):
    def run(fw):
        from attention_course.ch05_neural_machine_translation import data as translation

        return translation.translation_pairs(**kwargs)
    return run


def no_train_pairs(fw):
    """n_train=0 asks for the held-out splits only: an empty train split, the others full."""
    from attention_course.ch05_neural_machine_translation import data as translation

    offline = ROOT.parent / "shared" / "data"            # the tests' offline copies, when this machine has them
    with env(COURSE_DATA_DIR=os.environ.get("COURSE_DATA_DIR") or (str(offline) if offline.is_dir() else None)):
        data = translation.translation_pairs("spa-eng", n_train=0, n_val=5, n_test=5)
    assert data.train == [] and len(data.val) == 5 and len(data.test) == 5, data


_TOKENIZERS: dict = {}


def tokenizers():
    """Two small tokenizers, trained in memory once."""
    if not _TOKENIZERS:
        from attention_course.ch05_neural_machine_translation.data import SubwordTokenizer

        text = ["the cat sat on the mat", "a dog runs in the park", "el gato", "un perro corre"] * 5
        _TOKENIZERS["tok"] = SubwordTokenizer.train(text, 40)
    return _TOKENIZERS["tok"], _TOKENIZERS["tok"]


def encode(pairs_, **kwargs):
    def run(fw):
        from attention_course.ch05_neural_machine_translation import data as translation

        src_tok, tgt_tok = tokenizers()
        return translation.encode_pairs(pairs_, src_tok, tgt_tok, **{"max_src": 12, "max_tgt": 12, **kwargs})
    return run


def encode_no_pairs(fw):
    """No pairs: arrays with no rows, of the asked widths."""
    from attention_course.ch05_neural_machine_translation import data as translation

    src_tok, tgt_tok = tokenizers()
    arrays, kept = translation.encode_pairs([], src_tok, tgt_tok, max_src=7, max_tgt=5)
    assert kept == [] and arrays.src.shape == (0, 7) and arrays.tgt_in.shape == (0, 5), arrays.src.shape


def tokenizer(method, *args):
    def run(fw):
        tok, _ = tokenizers()
        return getattr(tok, method)(*args)
    return run


def tokenizer_train(texts, vocab_size=40, **kwargs):
    def run(fw):
        from attention_course.ch05_neural_machine_translation.data import SubwordTokenizer

        return SubwordTokenizer.train(texts, vocab_size, **kwargs)
    return run


def tokenizer_load_missing(fw):
    from attention_course.ch05_neural_machine_translation.data import SubwordTokenizer

    SubwordTokenizer.load("/nonexistent/tokenizer.json")


def decode_array_works(fw):
    tok, _ = tokenizers()
    ids = tok.encode("the cat")
    assert tok.decode(np.array([2, *ids, 3, 9])) == "the cat", tok.decode(np.array([2, *ids, 3]))


MAKE = {
    "Translator units=0": lambda fw: fw.Translator(V_SRC, V_TGT, "bahdanau", units=0),
    "Translator units=-3": lambda fw: fw.Translator(V_SRC, V_TGT, "bahdanau", units=-3),
    "Translator hidden=2.5": lambda fw: fw.Translator(V_SRC, V_TGT, hidden=2.5),
    "Translator attention=None": lambda fw: fw.Translator(V_SRC, V_TGT, None),
    "SlidesTranslator latent_dim_decoder=0": lambda fw: fw.SlidesTranslator(V_SRC, V_TGT, latent_dim_decoder=0),
    "SlidesTranslator dropout=1": lambda fw: fw.SlidesTranslator(V_SRC, V_TGT, dropout=1),
    "OneStepAttention units=0": lambda fw: fw.OneStepAttention(5, 8, units=0),
    "Encoder hidden=0": lambda fw: fw.Encoder(V_SRC, 8, 0),
    "BahdanauDecoder vocab=0": lambda fw: fw.BahdanauDecoder(0, 8, 12),
    "LuongDecoder embed=-1": lambda fw: fw.LuongDecoder(V_TGT, -1, 12),
    "PlainDecoder hidden=1.5": lambda fw: fw.PlainDecoder(V_TGT, 8, 1.5),
}


def make(factory):
    def run(fw):
        return factory(fw)
    return run


def terms(fw, alphas_shape=(B, T, S), src_shape=(B, S), tgt_shape=(B, T)):
    """Chapter 5's coverage penalty on the batch's shapes (every real source word got one unit: 0)."""
    alphas = np.zeros(alphas_shape, "float32")
    alphas[..., 0] = 1.0
    return fw.coverage_penalty(to_input(fw, alphas), to_input(fw, np.ones(src_shape, bool)),
                               to_input(fw, np.ones(tgt_shape, bool)))


def coverage_is_zero_when_each_word_gets_one_unit(fw):
    alphas = np.zeros((1, 3, 3), "float32")
    alphas[0, [0, 1, 2], [0, 1, 2]] = 1.0                       # a one-to-one alignment
    got = float(to_numpy(fw.coverage_penalty(to_input(fw, alphas), to_input(fw, np.ones((1, 3), bool)),
                                             to_input(fw, np.ones((1, 3), bool)))))
    assert abs(got) < 1e-6, got


def agreement_is_one_for_mirrored_hard_alignments(fw):
    a_xy = np.eye(3, dtype="float32")[None]                      # (1, T, S)
    got = float(to_numpy(fw.agreement(to_input(fw, a_xy), to_input(fw, a_xy.transpose(0, 2, 1)),
                                      to_input(fw, np.ones((1, 3), bool)))))
    assert abs(got - 1.0) < 1e-6, got


def terms_training(**kwargs):
    def run(fw):
        from attention_course.ch05_neural_machine_translation import experiment as c5

        task = c5.alignment_task(12, 6, seed=0)
        model = fw.Translator(len(task.src_vocab), len(task.tgt_vocab), "bahdanau", embed=4, hidden=4)
        return fw.fit_attention_terms(model, task.train, epochs=1, lr=1e-2, batch_size=4, **kwargs)
    return run


PROBES = [
    # coverage and agreement (Chapter 5's training terms)
    Probe("terms", "coverage is 0 when every source word gets one unit", coverage_is_zero_when_each_word_gets_one_unit),
    Probe("terms", "agreement is 1 for mirrored hard alignments", agreement_is_one_for_mirrored_hard_alignments),
    bad("terms", "coverage with a source mask of another length", lambda fw: terms(fw, src_shape=(B, S + 1))),
    bad("terms", "fit_attention_terms with a negative coverage weight", terms_training(coverage=-1.0)),
    bad("terms", "fit_attention_terms with agreement but no reverse data",
        terms_training(agreement_weight=1.0, reverse=None)),
    # Translator.forward
    bad("translator", "Translator additive src_mask", run_translator(mask=additive)),
    bad("translator", "Translator src_mask shorter than src", run_translator(mask=lambda m: m[:, :-1])),
    bad("translator", "Translator src_mask None", run_translator(mask=lambda m: None)),
    bad("translator", "Translator left-padded src_mask", run_translator(mask=left_padded)),
    bad("translator", "Translator a row with no real token", run_translator(mask=empty_row)),
    bad("translator", "Translator batch sizes differ", run_translator(tgt=lambda t: t[:-1])),
    bad("translator", "Translator src id = src_vocab", run_translator(src=lambda s: np.where(s == 0, 0, V_SRC))),
    bad("translator", "Translator tgt_in id -1", run_translator(tgt=lambda t: t - 10)),
    bad("translator", "Translator float src ids", run_translator(src=lambda s: s + 0.5)),
    bad("translator", "Translator 1-D src", run_translator(src=lambda s: s[:, 0], mask=lambda m: m[:, 0])),
    bad("translator", "Translator empty src", run_translator(src=lambda s: s[:, :0], mask=lambda m: m[:, :0])),
    bad("translator", "Translator empty tgt_in", run_translator(tgt=lambda t: t[:, :0])),
    bad("translator", "Translator empty batch", run_translator(src=lambda s: s[:0], mask=lambda m: m[:0],
                                                               tgt=lambda t: t[:0])),
    bad("translator", "fit Translator left-padded src_mask after the first batch", fit_late_left_padded),
    Probe("translator", "Translator NumPy inputs, 0/1 int mask", numpy_inputs_work),
    Probe("translator", "Translator(none) weights are zeros", no_attention_weights_are_zero),
    # SlidesTranslator, OneStepAttention
    bad("translator", "SlidesTranslator src_mask shorter than src",
        run_translator(slides_translator, mask=lambda m: m[:, :-1])),
    bad("translator", "SlidesTranslator batch sizes differ", run_translator(slides_translator, tgt=lambda t: t[:-1])),
    bad("translator", "SlidesTranslator additive src_mask", run_translator(slides_translator, mask=additive)),
    bad("translator", "SlidesTranslator left-padded src_mask", run_translator(slides_translator, mask=left_padded)),
    bad("translator", "SlidesTranslator src id = src_vocab",
        run_translator(slides_translator, src=lambda s: np.where(s == 0, 0, V_SRC))),
    bad("translator", "OneStepAttention st_1 of the wrong size", lambda fw: one_step_attention(fw, s_shape=(B, 4))),
    bad("translator", "OneStepAttention h of the wrong size", lambda fw: one_step_attention(fw, a_shape=(B, S, 7))),
    bad("translator", "OneStepAttention batch sizes differ", lambda fw: one_step_attention(fw, s_shape=(B + 1, 5))),
    bad("translator", "OneStepAttention mask shorter than S",
        lambda fw: one_step_attention(fw, mask=batch()[1][:, :-1])),
    Probe("translator", "OneStepAttention with a mask", one_step_attention_works),
    # start / step / reorder
    bad("steps", "Translator.step token id = tgt_vocab", step_with(tokens=lambda t: t * 0 + V_TGT)),
    bad("steps", "Translator.step more tokens than rows", step_with(tokens=lambda t: np.append(t, 2))),
    bad("steps", "Translator.step float tokens", step_with(tokens=lambda t: t + 0.5)),
    bad("steps", "Translator.reorder index out of range", step_with(index=lambda i: i + 1)),
    bad("steps", "Translator.reorder float index", step_with(index=lambda i: i + 0.5)),
    Probe("steps", "Translator.reorder repeats and drops rows", reorder_works),
    # sizes
    *[bad("arguments", name, make(factory)) for name, factory in MAKE.items()],
    # decode
    bad("decode", "beam_search beam=0", search("beam", beam=0)),
    bad("decode", "beam_search beam=-2", search("beam", beam=-2)),
    bad("decode", "beam_search beam=2.5", search("beam", beam=2.5)),
    bad("decode", "beam_search alpha=-0.5", search("beam", alpha=-0.5)),
    bad("decode", "beam_search alpha=nan", search("beam", alpha=float("nan"))),
    bad("decode", "beam_search beta=nan", search("beam", beta=float("nan"))),
    bad("decode", "beam_search beta=-1", search("beam", beta=-1.0)),
    bad("decode", "greedy_search max_len=0", search(max_len=0)),
    bad("decode", "beam_search max_len=0", search("beam", max_len=0)),
    bad("decode", "greedy_search max_len=2.0", search(max_len=2.0)),
    bad("decode", "greedy_search src/src_mask shapes differ", search(mask=lambda m: m[:, :-1])),
    bad("decode", "beam_search src/src_mask shapes differ", search("beam", mask=lambda m: m[:-1])),
    bad("decode", "greedy_search additive src_mask", search(mask=additive)),
    bad("decode", "beam_search src_mask of 0.5", search("beam", mask=lambda m: m * 0.5)),
    bad("decode", "greedy_search left-padded src_mask", search(mask=left_padded)),
    bad("decode", "greedy_search empty batch", search(src=lambda s: s[:0], mask=lambda m: m[:0])),
    bad("decode", "beam_search empty batch", search("beam", src=lambda s: s[:0], mask=lambda m: m[:0])),
    bad("decode", "greedy_search src id = src_vocab", search(src=lambda s: s * 0 + V_SRC)),
    bad("decode", "greedy_search float src", search(src=lambda s: s + 0.5)),
    bad("decode", "greedy_search NaN log-probs", search_nan("greedy"), False),
    bad("decode", "beam_search NaN log-probs", search_nan("beam"), False),
    Probe("decode", "beam_search NumPy integer beam and max_len", beam_integer_width_works),
    bad("decode", "beam_step beam=0", beam_step_with(beam=0), False),
    bad("decode", "beam_step NaN log_probs", beam_step_poisoned("log_probs", np.nan), False),
    bad("decode", "beam_step +inf log_probs", beam_step_poisoned("log_probs", np.inf), False),
    bad("decode", "beam_step NaN scores", beam_step_poisoned("scores", np.nan), False),
    bad("decode", "beam_step beam > K·V", beam_step_with(beam=11), False),
    bad("decode", "beam_step scores (B, K+1)", beam_step_with(scores=lambda s: np.zeros((2, 3))), False),
    bad("decode", "beam_step scores (B,)", beam_step_with(scores=lambda s: s[:, 0]), False),
    bad("decode", "beam_step finished of the wrong shape", beam_step_with(finished=lambda f: f[:1]), False),
    bad("decode", "beam_step 2-D log_probs", beam_step_with(log_probs=lambda lp: lp[:, 0]), False),
    Probe("decode", "beam_step of a known case", beam_step_works, False),
    # metrics
    bad("metrics", "bleu lengths differ", metric("bleu", HYPS, REFS[:1]), False),
    bad("metrics", "bleu no sentences", metric("bleu", [], []), False),
    bad("metrics", "bleu one string each", metric("bleu", "a cat", "a cat"), False),
    bad("metrics", "chrf lengths differ", metric("chrf", HYPS[:1], REFS), False),
    bad("metrics", "chrf token lists", metric("chrf", [h.split() for h in HYPS], REFS), False),
    bad("metrics", "bleu_by_length lengths differ", metric("bleu_by_length", HYPS, REFS, [6], [1, 5]), False),
    bad("metrics", "bleu_by_length unsorted edges", metric("bleu_by_length", HYPS, REFS, [6, 3], [5, 1]), False),
    bad("metrics", "bleu_by_length empty edges", metric("bleu_by_length", HYPS, REFS, [6, 3], []), False),
    bad("metrics", "bleu_by_length edge nan", metric("bleu_by_length", HYPS, REFS, [6, 3], [1, float("nan")]),
        False),
    bad("metrics", "bleu_by_length edge 4.5", metric("bleu_by_length", HYPS, REFS, [6, 3], [1, 4.5]), False),
    bad("metrics", "bleu_by_length length below the first edge", metric("bleu_by_length", HYPS, REFS, [6, 3], [4]),
        False),
    Probe("metrics", "bleu_by_length of a known case", bleu_by_length_works, False),
    bad("metrics", "alignment_error_rate lists differ",
        metric("alignment_error_rate", [{(0, 0)}], [{(0, 0)}, {(1, 1)}]), False),
    bad("metrics", "alignment_error_rate bare sets of links",
        metric("alignment_error_rate", {(0, 1)}, {(1, 0)}), False),
    bad("metrics", "alignment_error_rate no links", metric("alignment_error_rate", [set()], [set()]), False),
    Probe("metrics", "alignment_error_rate of a known case", aer_works, False),
    bad("metrics", "attention_alignment src_len=0", metric("attention_alignment", np.eye(3), 0, 3), False),
    bad("metrics", "attention_alignment src_len=2.5", metric("attention_alignment", np.eye(3), 2.5, 3), False),
    bad("metrics", "shifted by=0.5", metric("shifted", {(0, 1)}, 0.5), False),
    bad("metrics", "coverage_counts src_mask rows differ",
        metric("coverage_counts", np.ones((2, 3, 4)) / 4, np.ones((3, 4), bool)), False),
    bad("metrics", "coverage_counts src_mask too short",
        metric("coverage_counts", np.ones((2, 3, 4)) / 4, np.ones((2, 3), bool)), False),
    bad("metrics", "coverage_counts low > high", metric("coverage_counts", np.ones((2, 3, 4)) / 4, low=2.0), False),
    bad("metrics", "coverage_counts NaN weights", metric("coverage_counts", np.full((2, 3, 4), np.nan)), False),
    bad("metrics", "coverage_counts 1-D weights", metric("coverage_counts", np.ones(4)), False),
    Probe("metrics", "coverage_counts of a known case", coverage_works, False),
    bad("metrics", "attention_entropy NaN weights", metric("attention_entropy", np.full((3, 4), np.nan)), False),
    bad("metrics", "repeated_words one string each", metric("repeated_words", "the the cat", "the cat"), False),
    # data
    bad("data", "aligned_pair_task n=0", aligned(n=0), False),
    bad("data", "aligned_pair_task n=-2", aligned(n=-2), False),
    bad("data", "aligned_pair_task n=2.5", aligned(n=2.5), False),
    bad("data", "aligned_pair_task n='3'", aligned(n="3"), False),
    bad("data", "aligned_pair_task min_len > max_len", aligned(min_len=8, max_len=5), False),
    bad("data", "aligned_pair_task min_len=3.5", aligned(min_len=3.5), False),
    bad("data", "aligned_pair_task seed=-1", aligned(seed=-1), False),
    bad("data", "translation_pairs unknown dataset", pairs(name="fra-eng"), False),
    bad("data", "translation_pairs name as a list", pairs(name=["spa-eng"]), False),
    bad("data", "translation_pairs n_train=-1", pairs(n_train=-1), False),
    bad("data", "translation_pairs n_val=2.5", pairs(n_val=2.5), False),
    bad("data", "translation_pairs max_words=0", pairs(max_words=0), False),
    bad("data", "translation_pairs seed=-1", pairs(seed=-1, n_val=5, n_test=5), False),
    Probe("data", "translation_pairs n_train=0", no_train_pairs, False),
    bad("data", "encode_pairs max_src=0", encode([("the cat", "el gato")], max_src=0), False),
    bad("data", "encode_pairs a bare pair", encode(("the cat", "el gato")), False),
    bad("data", "encode_pairs None in a pair", encode([("the cat", None)]), False),
    bad("data", "encode_pairs ids instead of text", encode([([4, 5], "el gato")]), False),
    Probe("data", "encode_pairs no pairs", encode_no_pairs, False),
    bad("data", "SubwordTokenizer.train vocab_size=3", tokenizer_train(["a b c"], 3), False),
    bad("data", "SubwordTokenizer.train one string", tokenizer_train("the cat sat"), False),
    bad("data", "SubwordTokenizer.train no text", tokenizer_train([" ", ""]), False),
    bad("data", "SubwordTokenizer.train min_frequency=0", tokenizer_train(["a b"], min_frequency=0), False),
    bad("data", "SubwordTokenizer.load missing file", tokenizer_load_missing, False),
    bad("data", "SubwordTokenizer.encode None", tokenizer("encode", None), False),
    bad("data", "SubwordTokenizer.encode_batch [None]", tokenizer("encode_batch", ["the cat", None]), False),
    bad("data", "SubwordTokenizer.decode id -1", tokenizer("decode", [5, -1]), False),
    bad("data", "SubwordTokenizer.decode id 1.5", tokenizer("decode", [5, 1.5]), False),
    bad("data", "SubwordTokenizer.decode a string", tokenizer("decode", "the cat"), False),
    bad("data", "SubwordTokenizer.decode one id", tokenizer("decode", 5), False),
    bad("data", "SubwordTokenizer.decode a 2-D array", tokenizer("decode", np.array([[5, 6], [7, 8]])), False),
    bad("data", "SubwordTokenizer.decode_batch one string", tokenizer("decode_batch", "the cat"), False),
    Probe("data", "SubwordTokenizer.decode a NumPy row", decode_array_works, False),
    # the course's vocabulary and padding
    bad("text", "Vocab[5] (an id, not a token)", vocab_call(lambda v: v[5]), False),
    bad("text", "Vocab[np.int64(5)]", vocab_call(lambda v: v[np.int64(5)]), False),
    bad("text", "Vocab[None]", vocab_call(lambda v: v[None]), False),
    Probe("text", "Vocab of a token and an unknown token", vocab_call(vocab_tokens_work), False),
    bad("text", "Vocab.lookup(2.7)", vocab_call(lambda v: v.lookup(2.7)), False),
    bad("text", "Vocab.lookup(True)", vocab_call(lambda v: v.lookup(True)), False),
    bad("text", "Vocab.lookup(an id = size)", vocab_call(lambda v: v.lookup(len(v))), False),
    bad("text", "Vocab.decode [2.5]", vocab_call(lambda v: v.decode([4, 2.5])), False),
    Probe("text", "Vocab.lookup of 2.0, a NumPy id, a 0-d array", vocab_call(lookup_whole_ids_work), False),
    bad("text", "pad_batch pad=1.5", padded(pad=1.5), False),
    bad("text", "pad_batch pad=True", padded(pad=True), False),
    bad("text", "pad_batch pad that is a real id", padded(pad=6), False),
    bad("text", "pad_batch rows padded before (PAD inside)", padded([[5, 6, 0, 0], [7, 0, 0, 0]]), False),
    bad("text", "pad_batch max_len=2.5", padded(max_len=2.5), False),
    Probe("text", "pad_batch pad=-1, pre-padding", pad_batch_works, False),
]
