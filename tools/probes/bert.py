"""Bad input to Chapter 9's BERT: the embeddings, the encoder, the masked-LM head, the sentence classifier, the
loading of pretrained weights, and the two tests of whether attention explains a prediction
(``logits_with_cls_attention``, ``token_gradients``).

Ids outside the vocabulary or longer than the position table, segments of another shape or outside the segment
table, positions outside the sentence, weights of the wrong size or without the head asked for, an attention row
that is not a distribution or that weighs padding, and a model that is not a sentence classifier.
"""

from __future__ import annotations

import numpy as np

from attention_course.core.backend import backend

from . import Probe, to_input, to_numpy
from .layers import bad, call, ids

V, D, H, L, FF, MAX = 30, 8, 2, 2, 16, 6
B, T = 2, 5
MASK = np.array([[True, True, True, True, False], [True] * T])          # (B, T): one pad in example 0


def bert(fw, **kwargs):
    return fw.Bert(**{"vocab": V, "d_model": D, "heads": H, "layers": L, "d_ff": FF, "max_len": MAX,
                      "dropout": 0.0, **kwargs})


def classifier(fw, seed=0):
    backend(fw).seed(seed)
    return fw.SentenceClassifier(bert(fw), classes=3, dropout=0.0)


def words(shape=(B, T), vocab=V):
    return ids(vocab, shape).astype("int64")


def embeddings_call(x, segments=None, **kwargs):
    def run(fw):
        layer = fw.BertEmbeddings(V, D, max_len=MAX, dropout=0.0, **kwargs)
        return call(fw, layer, to_input(fw, np.asarray(x)),
                    None if segments is None else to_input(fw, np.asarray(segments)))
    return run


def embeddings_are_normalised(fw):
    """Each token's vector leaves the LayerNorm with mean 0 and variance 1 (γ = 1, β = 0 at the start)."""
    out = to_numpy(embeddings_call(words())(fw))
    assert out.shape == (B, T, D), f"shape {out.shape}"
    np.testing.assert_allclose(out.mean(-1), 0, atol=1e-5)
    np.testing.assert_allclose(out.var(-1), 1, atol=1e-3)


def masked_lm_call(positions, mask=MASK):
    def run(fw):
        backend(fw).seed(0)
        model = fw.MaskedLM(V, D, H, L, FF, max_len=MAX, dropout=0.0)
        return call(fw, model, to_input(fw, words()), to_input(fw, mask), to_input(fw, np.asarray(positions)))
    return run


def masked_lm_reads_its_positions(fw):
    """The logits of positions [[1, 2], [0, 4]] are those of the full sequence at those positions."""
    got = to_numpy(masked_lm_call(np.array([[1, 2], [0, 4]]))(fw))
    every = to_numpy(masked_lm_call(np.tile(np.arange(T), (B, 1)))(fw))
    assert got.shape == (B, 2, V), f"shape {got.shape}"
    np.testing.assert_allclose(got, every[[[0], [1]], [[1, 2], [0, 4]]], rtol=1e-4, atol=1e-5)


def classifier_call(x=None, mask=MASK, segments=None, **kwargs):
    def run(fw):
        model = classifier(fw)
        x_ = words() if x is None else np.asarray(x)
        return call(fw, model, to_input(fw, x_), None if mask is None else to_input(fw, mask),
                    None if segments is None else to_input(fw, np.asarray(segments)), **kwargs)
    return run


def classifier_ignores_pads(fw):
    """Changing a padded token's id changes no logit."""
    x = words()
    clean = to_numpy(classifier_call(x)(fw))
    x[0, 4] = 7 if x[0, 4] != 7 else 8
    np.testing.assert_allclose(to_numpy(classifier_call(x)(fw)), clean, rtol=1e-5, atol=1e-6,
                               err_msg="a padded token changed the prediction")


def classifier_of(what):
    def run(fw):
        inner = {"masked LM": lambda: fw.MaskedLM(V, D, H, L, FF, max_len=MAX), "number": lambda: 3,
                 "classifier": lambda: classifier(fw)}[what]()
        return fw.SentenceClassifier(inner, classes=2)
    return run


def exported(fw, masked_lm=False):
    backend(fw).seed(0)
    model = fw.MaskedLM(V, D, H, L, FF, max_len=MAX) if masked_lm else bert(fw)
    return fw.export_bert(model)


def load_round_trip(fw):
    """Weights exported from one model and loaded again give the same hidden states."""
    backend(fw).seed(0)
    model = bert(fw)
    again = fw.load_pretrained(fw.export_bert(model), dropout=0.0)
    x, m = to_input(fw, words()), to_input(fw, MASK)
    np.testing.assert_allclose(to_numpy(call(fw, again, x, m)), to_numpy(call(fw, model, x, m)),
                               rtol=1e-5, atol=1e-5)


def load_without_head(fw):
    return fw.load_pretrained(exported(fw), masked_lm=True)


def load_resized(fw):
    """One table of the weights has another size than the config says."""
    weights = exported(fw)
    key = "embeddings.word_embeddings.weight"
    weights.weights[key] = weights.weights[key][:-1]
    return fw.load_pretrained(weights)


def load_what(thing):
    def run(fw):
        return fw.load_pretrained(thing)
    return run


def own_attention(fw, model):
    """The [CLS] row of the last layer's attention (B, h, T), as the model computes it."""
    _, attention = call(fw, model, to_input(fw, words()), to_input(fw, MASK), return_weights=True)
    return to_numpy(attention[-1])[:, :, 0, :]


def own_attention_gives_own_logits(fw):
    model = classifier(fw)
    logits = to_numpy(call(fw, model, to_input(fw, words()), to_input(fw, MASK)))
    got = fw.logits_with_cls_attention(model, words(), MASK, own_attention(fw, model))
    np.testing.assert_allclose(got, logits, rtol=1e-4, atol=1e-5)


def cls_attention(change):
    def run(fw):
        model = classifier(fw)
        a = change(own_attention(fw, model))
        return fw.logits_with_cls_attention(model, words(), MASK, a)
    return run


def on_pad(a):
    a = a.copy()
    a[0, :, :] = 1 / T           # uniform over every position, the pad included
    return a


def cls_attention_of(what):
    def run(fw):
        model = {"bert": lambda: bert(fw), "masked LM": lambda: fw.MaskedLM(V, D, H, L, FF, max_len=MAX)}[what]()
        return fw.logits_with_cls_attention(model, words(), MASK, np.full((B, H, T), 1 / T, "float32"))
    return run


def cls_attention_with_mask(mask):
    def run(fw):
        model = classifier(fw)
        return fw.logits_with_cls_attention(model, words(), mask, np.full((B, H, T), 1 / T, "float32"))
    return run


def gradients_call(x=None, mask=MASK):
    def run(fw):
        return fw.token_gradients(classifier(fw), words() if x is None else x, mask)
    return run


def gradients_skip_pads(fw):
    """A padded token cannot change the prediction: its gradient is exactly 0; the real tokens' are not."""
    g = gradients_call()(fw)
    assert g.shape == (B, T), f"shape {g.shape}"
    assert g[0, 4] == 0, f"the pad's gradient is {g[0, 4]}"
    assert (g[MASK] > 0).all(), "a real token has no gradient"


PROBES = [
    Probe("bert", "BertEmbeddings: output normalised per token", embeddings_are_normalised),
    bad("bert", "BertEmbeddings: id = vocab", embeddings_call(np.full((B, T), V))),
    bad("bert", "BertEmbeddings: negative id", embeddings_call(np.full((B, T), -1))),
    bad("bert", "BertEmbeddings: float ids", embeddings_call(words().astype("float32"))),
    bad("bert", "BertEmbeddings: longer than max_len", embeddings_call(words((B, MAX + 1)))),
    bad("bert", "BertEmbeddings: segment id 2 of 2", embeddings_call(words(), np.full((B, T), 2))),
    bad("bert", "BertEmbeddings: segments of another shape", embeddings_call(words(), np.zeros((B, T - 1), int))),
    bad("bert", "BertEmbeddings: no token", embeddings_call(np.zeros((B, 0), int))),
    bad("bert", "BertEmbeddings(d_model=0)", lambda fw: fw.BertEmbeddings(V, 0)),
    bad("bert", "BertEmbeddings(dropout=1.5)", lambda fw: fw.BertEmbeddings(V, D, dropout=1.5)),
    bad("bert", "Bert(vocab=0)", lambda fw: bert(fw, vocab=0)),
    bad("bert", "Bert(heads=3) with d_model 8", lambda fw: bert(fw, heads=3)),
    bad("bert", "Bert(layers=0)", lambda fw: bert(fw, layers=0)),
    Probe("bert", "MaskedLM: logits at the positions asked for", masked_lm_reads_its_positions),
    bad("bert", "MaskedLM: position = T", masked_lm_call(np.array([[1, T], [0, 1]]))),
    bad("bert", "MaskedLM: negative position", masked_lm_call(np.array([[1, -1], [0, 1]]))),
    bad("bert", "MaskedLM: float positions", masked_lm_call(np.array([[1.0, 2.0], [0.0, 1.0]]))),
    bad("bert", "MaskedLM: positions for another batch", masked_lm_call(np.array([[1, 2]]))),
    bad("bert", "MaskedLM: mask of another shape", masked_lm_call(np.array([[1, 2], [0, 1]]), MASK[:, :3])),
    Probe("bert", "SentenceClassifier: pads change nothing", classifier_ignores_pads),
    bad("bert", "SentenceClassifier: mask not bool or 0/1", classifier_call(mask=MASK * 2.5)),
    bad("bert", "SentenceClassifier: segments of another shape", classifier_call(segments=np.zeros((B, 2), int))),
    bad("bert", "SentenceClassifier(classes=0)", lambda fw: fw.SentenceClassifier(bert(fw), classes=0)),
    bad("bert", "SentenceClassifier(a MaskedLM)", classifier_of("masked LM")),
    bad("bert", "SentenceClassifier(a number)", classifier_of("number")),
    bad("bert", "SentenceClassifier(a SentenceClassifier)", classifier_of("classifier")),
    Probe("bert", "load_pretrained: exported and loaded again", load_round_trip),
    bad("bert", "load_pretrained(masked_lm=True) without a head", load_without_head),
    bad("bert", "load_pretrained: a table of another size", load_resized),
    bad("bert", "load_pretrained(a folder name)", load_what("models/bert")),
    bad("bert", "load_pretrained(None)", load_what(None)),
    Probe("bert", "logits_with_cls_attention: own weights, own logits", own_attention_gives_own_logits),
    bad("bert", "logits_with_cls_attention: rows not summing to 1", cls_attention(lambda a: a * 2)),
    bad("bert", "logits_with_cls_attention: negative weights", cls_attention(lambda a: a - a.mean())),
    bad("bert", "logits_with_cls_attention: NaN weights", cls_attention(lambda a: a * np.nan)),
    bad("bert", "logits_with_cls_attention: weight on a pad", cls_attention(on_pad)),
    bad("bert", "logits_with_cls_attention: (B, T) weights", cls_attention(lambda a: a[:, 0])),
    bad("bert", "logits_with_cls_attention: a Bert, no classifier", cls_attention_of("bert")),
    bad("bert", "logits_with_cls_attention: a MaskedLM", cls_attention_of("masked LM")),
    bad("bert", "logits_with_cls_attention: mask of another shape", cls_attention_with_mask(MASK[:, :3])),
    Probe("bert", "token_gradients: pads get 0", gradients_skip_pads),
    bad("bert", "token_gradients: id = vocab", gradients_call(np.full((B, T), V))),
    bad("bert", "token_gradients: mask of another shape", gradients_call(mask=MASK[:1])),
    bad("bert", "token_gradients: mask not bool or 0/1", gradients_call(mask=MASK * 2.5)),
]
