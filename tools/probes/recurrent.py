"""Bad input to Chapter 3's and 4's layers: the variational LSTM, feature-, timestep- and repeat-vector
attention, attention pooling, the attention GRU, the NER tagger, the sentiment models, and the score functions
with ``make_score`` and ``ScoredSeq2Seq``.

Sizes and rates out of range, unknown choices, inputs of the wrong width or length, masks that are not bool,
NaN where a mask hides it, gates that are not weights.
"""

from __future__ import annotations

import numpy as np

from . import Probe, to_input, to_numpy
from .layers import bad, call, first, ids, is_torch, rand

B, T, D = 2, 5, 6
PADS = np.array([[True, True, True, False, False], [True, True, True, True, True]])


def layer_call(make, x_shape=(B, T, D), mask=None, **kwargs):
    def run(fw):
        return call(fw, make(fw), to_input(fw, rand(*x_shape)), **({} if mask is None else
                                                                   {"mask": to_input(fw, mask)}), **kwargs)
    return run


def pooling_ignores_nan_at_pads(fw):
    """A NaN in a padded state does not reach the pooled vector."""
    layer = fw.AttentionPooling(D)
    x = rand(B, T, D)
    clean = to_numpy(call(fw, layer, to_input(fw, x), mask=to_input(fw, PADS)))
    x[0, 4] = np.nan
    out = to_numpy(call(fw, layer, to_input(fw, x), mask=to_input(fw, PADS)))
    np.testing.assert_allclose(out, clean, rtol=1e-5, atol=1e-6, err_msg="a NaN behind the mask reached the pool")


def pooling_weights_sum_to_one_over_real_steps(fw):
    _, w = call(fw, fw.AttentionPooling(D), to_input(fw, rand(B, T, D)), mask=to_input(fw, PADS),
                return_weights=True)
    w = to_numpy(w)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)
    assert (w[~PADS] == 0).all(), "a padded step got weight"


def pooling_of_nothing_is_zero(fw):
    """An example whose every step is masked has nothing to pool: zero weights and a zero vector, never NaN (the
    masked softmax's convention), and the other example is untouched."""
    layer, x = fw.AttentionPooling(D), rand(B, T, D)
    mask = np.array([[False] * T, [True] * T])
    out, w = call(fw, layer, to_input(fw, x), mask=to_input(fw, mask), return_weights=True)
    out, w = to_numpy(out), to_numpy(w)
    assert (out[0] == 0).all() and (w[0] == 0).all(), "a fully masked example pooled something"
    alone = to_numpy(call(fw, layer, to_input(fw, x[1:]), mask=to_input(fw, mask[1:])))
    np.testing.assert_allclose(out[1], alone[0], rtol=1e-5, atol=1e-6)


def poisoned_step(make, bad=np.nan, step=0, mask=PADS, x_shape=(B, T, D), name="x"):
    """A NaN or inf in a step of example 0 (``step`` 0 is a real token, 4 a pad): without a check, NaN outputs.
    (TimestepAttention's T × T Dense reads the pads too: a NaN there would reach every step.)"""
    def run(fw):
        x = rand(*x_shape)
        layer = make(fw)
        kwargs = {} if mask is None else {"mask": to_input(fw, mask)}
        clean = to_numpy(first(call(fw, layer, to_input(fw, x), **kwargs)))
        x[0, step, 0] = bad
        got = to_numpy(first(call(fw, layer, to_input(fw, x), **kwargs)))
        assert np.isfinite(got).all(), f"a {bad} in {name} reached the output: {got}"
        np.testing.assert_allclose(got, clean, rtol=1e-5, atol=1e-6)
    return run


def poisoned_facts(fw):
    x = rand(B, T, D)
    x[1, 2, 3] = np.nan
    call(fw, fw.AttentionGRU(D, 4), to_input(fw, x), to_input(fw, np.full((B, T), 0.5, "float32")))


def tagger(fw, **kwargs):
    return fw.NERTagger(20, 5, embed=D, hidden=4, **kwargs)


def tagger_call(x, **kwargs):
    def run(fw):
        return call(fw, tagger(fw, **kwargs), to_input(fw, np.asarray(x)))
    return run


def score_call(name, q_shape=(B, 3, D), k_shape=(B, T, D), **kwargs):
    def run(fw):
        score = fw.make_score(name, **kwargs)
        return call(fw, score, to_input(fw, rand(*q_shape)), to_input(fw, rand(*k_shape, seed=1)))
    return run


def score_instance(make):
    def run(fw):
        return call(fw, make(fw), to_input(fw, rand(B, 3, D)), to_input(fw, rand(B, T, D, seed=1)))
    return run


def dot_score_is_the_product(fw):
    q, k = rand(B, 3, D), rand(B, T, D, seed=1)
    got = to_numpy(call(fw, fw.make_score("dot"), to_input(fw, q), to_input(fw, k)))
    np.testing.assert_allclose(got, q @ k.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)


def score_class(name, q_shape=(B, 3, D), k_shape=(B, T, D), *args):
    def run(fw):
        return call(fw, getattr(fw, name)(*args), to_input(fw, rand(*q_shape)), to_input(fw, rand(*k_shape, seed=1)))
    return run


def scaled_is_dot_over_root_d(fw):
    q, k = to_input(fw, rand(B, 3, D)), to_input(fw, rand(B, T, D, seed=1))
    np.testing.assert_allclose(to_numpy(call(fw, fw.ScaledDotScore(), q, k)),
                               to_numpy(call(fw, fw.DotScore(), q, k)) / np.sqrt(D), rtol=1e-5, atol=1e-6)


def pairs_are_every_query_with_every_key(fw):
    q, k = rand(B, 3, D), rand(B, T, D - 1, seed=1)
    pairs = to_numpy(fw.concat_pairs(to_input(fw, q), to_input(fw, k)))        # (B, T_q, T_k, d_q + d_k)
    assert pairs.shape == (B, 3, T, 2 * D - 1), pairs.shape
    np.testing.assert_allclose(pairs[1, 2, 4], np.concatenate([q[1, 2], k[1, 4]]))


def gumbel_noise_is_gumbel(fw):
    g = to_numpy(fw.gumbel_noise((20000,), seed=0))
    assert np.isfinite(g).all() and abs(g.mean() - 0.5772) < 0.03 and abs(g.std() - 1.2825) < 0.03, (g.mean(), g.std())


def framework_encoder_layer_agrees(fw):
    layer = fw.EncoderLayer(D, 2, 16, dropout=0.0)
    x = to_input(fw, rand(B, T, D))
    ours = to_numpy(call(fw, layer, x))
    theirs = fw.framework_encoder_layer(layer)
    out = call(fw, theirs, x) if is_torch(fw) else theirs([x, np.ones((B, T), bool)])       # Keras: (x, mask)
    np.testing.assert_allclose(to_numpy(out), ours, rtol=1e-4, atol=1e-5)


# bad(...): must raise the course's error; Probe(...): must give a right result (checked)
PROBES = [
    bad("lstm", "VariationalLSTM(recurrent_dropout=1.2)", lambda fw: fw.VariationalLSTM(D, 4, recurrent_dropout=1.2)),
    bad("lstm", "VariationalLSTM input of another width", layer_call(lambda fw: fw.VariationalLSTM(D + 1, 4))),
    bad("lstm", "VariationalLSTM on a 2-D input", layer_call(lambda fw: fw.VariationalLSTM(D, 4), x_shape=(T, D))),
    bad("feature", "FeatureAttention(activation='relu')", lambda fw: fw.FeatureAttention(D, activation="relu")),
    bad("feature", "FeatureAttention input of another width", layer_call(lambda fw: fw.FeatureAttention(D + 2))),
    bad("feature", "FeatureAttention float mask of 0.5", layer_call(lambda fw: fw.FeatureAttention(D),
                                                                     mask=np.full((B, T), 0.5, "float32"))),
    bad("timestep", "TimestepAttention on another length", layer_call(lambda fw: fw.TimestepAttention(T + 1))),
    bad("timestep", "TimestepAttention(steps=0)", lambda fw: fw.TimestepAttention(0)),
    bad("repeat", "RepeatVectorAttention with T ≠ d", layer_call(lambda fw: fw.RepeatVectorAttention(D),
                                                                 x_shape=(B, D + 1, D))),
    Probe("pooling", "a NaN behind the mask stays there", pooling_ignores_nan_at_pads),
    Probe("pooling", "weights sum to 1 over the real steps", pooling_weights_sum_to_one_over_real_steps),
    bad("pooling", "mask of another length", layer_call(lambda fw: fw.AttentionPooling(D),
                                                        mask=np.ones((B, T + 1), bool))),
    Probe("pooling", "an example with every step masked pools to zeros", pooling_of_nothing_is_zero),
    bad("nan", "FeatureAttention NaN in a real step", poisoned_step(lambda fw: fw.FeatureAttention(D))),
    bad("nan", "FeatureAttention(single) inf in a real step", poisoned_step(lambda fw: fw.FeatureAttention(
        D, single=True), np.inf)),
    bad("nan", "TimestepAttention NaN in a real step", poisoned_step(lambda fw: fw.TimestepAttention(T))),
    bad("nan", "TimestepAttention NaN at a pad", poisoned_step(lambda fw: fw.TimestepAttention(T), step=4)),
    bad("nan", "RepeatVectorAttention inf in a step", poisoned_step(lambda fw: fw.RepeatVectorAttention(D), np.inf,
                                                                    mask=None, x_shape=(B, D, D))),
    bad("nan", "AttentionPooling NaN in a real step", poisoned_step(lambda fw: fw.AttentionPooling(D),
                                                                    name="states")),
    bad("nan", "AttentionPooling inf in a real step", poisoned_step(lambda fw: fw.AttentionPooling(D), np.inf,
                                                                    name="states")),
    bad("nan", "AttentionGRU NaN in the facts", poisoned_facts),
    bad("agru", "gates above 1", lambda fw: call(fw, fw.AttentionGRU(D, 4), to_input(fw, rand(B, T, D)),
                                                 to_input(fw, np.full((B, T), 1.5, "float32")))),
    bad("agru", "gates of another length", lambda fw: call(fw, fw.AttentionGRU(D, 4), to_input(fw, rand(B, T, D)),
                                                           to_input(fw, np.full((B, T + 1), 0.5, "float32")))),
    bad("tagger", "unknown attention", lambda fw: tagger(fw, attention="sparse")),
    bad("tagger", "unknown place", lambda fw: tagger(fw, attention="feature", place="inside")),
    bad("tagger", "timestep attention without max_len", lambda fw: tagger(fw, attention="timestep")),
    bad("tagger", "the talk's model 1 with max_len ≠ embed", lambda fw: tagger(fw, attention="repeat_vector",
                                                                              max_len=D + 1)),
    bad("tagger", "dropout 1", lambda fw: tagger(fw, dropout=1.0)),
    bad("tagger", "an id outside the vocabulary", tagger_call([[1, 2, 25, 3, 0]])),
    bad("tagger", "float ids", tagger_call(np.ones((1, T), "float32"))),
    bad("tagger", "timestep tagger on another length", tagger_call(ids(20, (1, T + 2)), attention="timestep",
                                                                   max_len=T)),
    bad("sentiment", "unknown pooling", lambda fw: fw.SentimentClassifier(20, pooling="max")),
    bad("sentiment", "embed_init of 0", lambda fw: fw.SentimentClassifier(20, embed_init=0.0)),
    bad("sentiment", "BagOfWords(vocab=0)", lambda fw: fw.BagOfWords(0)),
    Probe("scores", "dot score is q·kᵀ", dot_score_is_the_product),
    bad("scores", "unknown score", lambda fw: fw.make_score("cosine")),
    bad("scores", "the bare ScoreFunction base", score_instance(lambda fw: fw.ScoreFunction())),
    bad("scores", "a ScoreFunction subclass without a score", score_instance(
        lambda fw: type("Cosine", (fw.ScoreFunction,), {})())),
    bad("scores", "general score without sizes", lambda fw: fw.make_score("general")),
    bad("scores", "dot score of different widths", score_call("dot", k_shape=(B, T, D + 1))),
    bad("scores", "general score of another width", score_call("general", q_shape=(B, 3, D + 2), d_query=D,
                                                               d_key=D)),
    bad("scores", "additive score with units=0", lambda fw: fw.make_score("additive", d_query=D, d_key=D, units=0)),
    bad("scores", "batches of different sizes", score_call("dot", k_shape=(B + 1, T, D))),
    bad("scores", "ScoredSeq2Seq with an unknown score", lambda fw: fw.ScoredSeq2Seq(20, score="cosine")),
    Probe("scores", "ScaledDotScore is DotScore / √d", scaled_is_dot_over_root_d),
    bad("scores", "DotScore of different widths", score_class("DotScore", k_shape=(B, T, D + 1))),
    bad("scores", "GeneralScore(d_query=0)", lambda fw: fw.GeneralScore(0, D)),
    bad("scores", "GeneralScore on another key width", score_class("GeneralScore", (B, 3, D), (B, T, D + 1), D, D)),
    bad("scores", "ConcatScore(units=0)", lambda fw: fw.ConcatScore(D, D, 0)),
    bad("scores", "AdditiveScore on another query width", score_class("AdditiveScore", (B, 3, D + 1), (B, T, D), D,
                                                                       D, 4)),
    Probe("scores", "concat_pairs pairs every query with every key", pairs_are_every_query_with_every_key),
    bad("scores", "concat_pairs of batches of different sizes",
        lambda fw: fw.concat_pairs(to_input(fw, rand(B, 3, D)), to_input(fw, rand(B + 1, T, D)))),
    Probe("gumbel", "gumbel_noise has the Gumbel mean and spread", gumbel_noise_is_gumbel),
    bad("gumbel", "gumbel_noise of a negative size", lambda fw: fw.gumbel_noise((-3,), seed=0)),
    Probe("transformer", "the framework's own encoder layer computes the same", framework_encoder_layer_agrees),
]
