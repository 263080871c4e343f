"""Chapter 8: the Transformer's layers and model in both frameworks with shared weights, parity with PyTorch's
``nn.TransformerEncoderLayer`` and with the same layer composed of Keras' own layers, incremental decoding with a
key–value cache equal to recomputing the prefix (greedy and beam search), the decoder's causality, and errors."""

import keras
import numpy as np
import pytest
import torch
from conftest import as_input, to_numpy

import attention_course as ac
from attention_course.core import decode
from attention_course.core.backend import backend
from attention_course.core.errors import ConfigError, InputError, ShapeError
from attention_course.core.parity import torch_to_keras

pytestmark = pytest.mark.chapter(8, 9)   # Chapters 8 and 9: `make test CHAPTERS=...` picks by it

RTOL, ATOL = 1e-5, 1e-5
D, H, FF = 16, 4, 32


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    src = rng.integers(4, 20, size=(3, 7))
    src_mask = np.ones((3, 7), bool)
    src_mask[1, 4:] = False                                                        # a padded source
    src[1, 4:] = 0
    tgt = rng.integers(4, 30, size=(3, 6))
    return src, src_mask, tgt


def _models(norm_first, seed=0):
    torch.manual_seed(seed)
    keras.utils.set_random_seed(seed)
    t = ac.torch.Transformer(20, 30, d_model=D, heads=H, layers=2, d_ff=FF, dropout=0.0, norm_first=norm_first)
    k = ac.keras.Transformer(20, 30, d_model=D, heads=H, layers=2, d_ff=FF, dropout=0.0, norm_first=norm_first)
    torch_to_keras(t.eval(), k, _batch())
    return t, k


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_twins_agree_with_their_weights(norm_first):
    t, k = _models(norm_first)
    src, mask, tgt = _batch(1)
    with torch.no_grad():
        logits, weights = t(src, mask, tgt, return_weights=True)
    logits_k, weights_k = k(src, mask, tgt, return_weights=True)
    assert tuple(logits.shape) == (3, 6, 30)
    np.testing.assert_allclose(to_numpy(logits_k), logits.numpy(), rtol=RTOL, atol=ATOL)
    for part in ("encoder", "decoder", "cross"):
        assert len(weights[part]) == 2                                              # one per layer
        for w_t, w_k in zip(weights[part], weights_k[part], strict=True):
            np.testing.assert_allclose(to_numpy(w_k), w_t.numpy(), rtol=RTOL, atol=ATOL)
    assert (weights["cross"][0].numpy()[1, :, :, 4:] == 0).all()                    # pads get no attention
    assert np.allclose(np.triu(weights["decoder"][1].numpy(), 1), 0)                # nor does the future


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_equals_torch_transformer_encoder_layer(norm_first):
    torch.manual_seed(0)
    ours = ac.torch.EncoderLayer(D, H, FF, dropout=0.0, norm_first=norm_first).eval()
    theirs = ac.torch.framework_encoder_layer(ours).eval()
    assert isinstance(theirs, torch.nn.TransformerEncoderLayer) and theirs.norm_first == norm_first
    src, mask, _ = _batch()
    x = torch.randn(3, 7, D)
    with torch.no_grad():
        want = theirs(x, src_key_padding_mask=torch.as_tensor(~mask))             # PyTorch: True = hidden
        got = ours(x, mask)
    np.testing.assert_allclose(got.numpy()[mask], want.numpy()[mask], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("norm_first", [False, True])
def test_keras_encoder_layer_equals_one_composed_of_keras_layers(norm_first):
    keras.utils.set_random_seed(0)
    ours = ac.keras.EncoderLayer(D, H, FF, dropout=0.0, norm_first=norm_first)
    _, mask, _ = _batch()
    x = np.random.default_rng(0).normal(size=(3, 7, D)).astype(np.float32)
    got = to_numpy(ours(x, mask))
    theirs = ac.keras.framework_encoder_layer(ours)
    layer_types = {type(layer).__name__ for layer in theirs.layers}
    assert {"MultiHeadAttention", "LayerNormalization", "Dense"} <= layer_types
    np.testing.assert_allclose(got[mask], to_numpy(theirs([x, mask]))[mask], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("fw_name", ["torch", "keras"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_decoding_equals_recomputing_the_prefix(fw_name, norm_first):
    t, k = _models(norm_first)
    model = t if fw_name == "torch" else k
    src, mask, tgt = _batch(2)
    full = to_numpy(model(src, mask, tgt))                                          # every prefix at once
    full = full - np.log(np.exp(full - full.max(-1, keepdims=True)).sum(-1, keepdims=True)) - full.max(
        -1, keepdims=True)                                                          # log-softmax
    state = model.start(src, mask)
    for i in range(tgt.shape[1]):
        log_probs, state, _ = model.step(tgt[:, i], state)
        np.testing.assert_allclose(log_probs, full[:, i], rtol=1e-4, atol=1e-4)
    assert len(state["caches"][0]) == tgt.shape[1]                                  # one cached step per token


def test_keras_decodes_through_a_compiled_step_traced_once_per_cache_capacity():
    # the Keras step is one graph over a StaticKVCache: same numbers as the eager, growing KVCache; a full cache is
    # copied into one twice the size, so 9 steps from a capacity of 4 trace three graphs (4, 8, 16), not nine
    _, model = _models(False)
    src, mask, _ = _batch(2)
    tokens = np.random.default_rng(3).integers(4, 30, size=(3, 9))
    state, memory = model.start(src, mask, capacity=4), model.encode(src, mask)
    eager = [ac.keras.KVCache() for _ in model.decoder]
    for i in range(tokens.shape[1]):
        log_probs, state, _ = model.step(tokens[:, i], state)
        logits = to_numpy(model.decode(tokens[:, i:i + 1], *memory, caches=eager, offset=i))[:, -1]
        expected = logits - logits.max(-1, keepdims=True)
        expected -= np.log(np.exp(expected).sum(-1, keepdims=True))
        np.testing.assert_allclose(log_probs, expected, rtol=1e-4, atol=1e-4)
    assert len(state["caches"][0]) == 9 and state["caches"][0].keys.shape[-2] == 16
    assert model._graphs["_cached_step"].experimental_get_tracing_count() == 3
    # without the cache: the prefix padded to a power of two, one graph per size (8, 16), not one per length
    recompute = decode.Recompute(model)
    state = recompute.start(src, mask)
    for i in range(12):
        _, state, _ = recompute.step(tokens[:, i % 9], state)
    assert model._graphs["decode"].experimental_get_tracing_count() == 2


def test_keras_start_encodes_through_one_graph_per_batch_shape_and_checks_ids_first():
    # start runs the encoder as a compiled graph (a decoding loop over batches of one shape traces it once): the
    # memory the eager encoder gives; the ids are checked eagerly before the graph, with the usual error
    _, model = _models(False)
    src, mask, _ = _batch(2)
    for rows in (src, src, src[:2]):
        state = model.start(rows, mask[:len(rows)])
        memory, _ = model.encode(rows, mask[:len(rows)])
        np.testing.assert_allclose(to_numpy(state["memory"]), to_numpy(memory), rtol=1e-5, atol=1e-6)
    assert model._graphs["encode"].experimental_get_tracing_count() == 2      # (3, 7) and (2, 7)
    with pytest.raises(InputError, match=r"src must hold integer token ids in \[0, 20\).*got ids from 0 to 20"):
        model.start(np.where(src == src.max(), 20, src), mask)
    with pytest.raises(ShapeError, match="src_mask"):
        model.start(src, mask[:, :5])


@pytest.mark.parametrize("fw_name", ["torch", "keras"])
def test_recompute_decodes_as_the_cache_does_in_beam_search(fw_name):
    # decode.Recompute (no cache: the whole prefix again at each step) is the baseline of make bench's ch8-kvcache
    t, k = _models(False, seed=1)
    model = t if fw_name == "torch" else k
    src, mask, _ = _batch(3)
    cached = decode.beam_search(model, src, mask, beam=3, max_len=8)
    again = decode.beam_search(decode.Recompute(model), src, mask, beam=3, max_len=8)
    assert [list(a) for a in cached.tokens] == [list(b) for b in again.tokens]
    np.testing.assert_allclose(cached.scores, again.scores, rtol=1e-4, atol=1e-4)


def test_the_decoding_benchmark_runs_both_ways():
    for kind in ("cache", "recompute"):
        ac.bench.decoding_pass(ac.torch, kind, 3, batch=2, src_len=4, vocab=20)()
    with pytest.raises(ConfigError, match="decoding kind"):
        ac.bench.decoding_pass(ac.torch, "cached", 3)


def test_beam_search_reorders_the_cache():
    t, _ = _models(True, seed=3)
    src, mask, _ = _batch(3)
    greedy = decode.greedy_search(t, src, mask, max_len=8)
    beam_1 = decode.beam_search(t, src, mask, beam=1, max_len=8)
    assert [list(a) for a in greedy.tokens] == [list(b) for b in beam_1.tokens]
    beam_4 = decode.beam_search(t, src, mask, beam=4, max_len=8)
    assert (beam_4.scores >= greedy.scores - 1e-4).all()                            # a wider beam finds no worse


def test_decoder_is_causal(fw):
    torch.manual_seed(0)
    keras.utils.set_random_seed(0)
    model = fw.Transformer(20, 30, d_model=D, heads=H, layers=2, d_ff=FF, dropout=0.0)
    if fw is ac.torch:
        model.eval()
    src, mask, tgt = _batch()
    changed = tgt.copy()
    changed[:, 4:] = 5                                                              # a different future
    a, b = to_numpy(model(src, mask, tgt)), to_numpy(model(src, mask, changed))
    np.testing.assert_allclose(a[:, :4], b[:, :4], rtol=RTOL, atol=ATOL)
    assert not np.allclose(a[:, 4:], b[:, 4:])


def test_transformer_arguments_name_the_rule(fw):
    model = fw.Transformer(20, 30, d_model=D, heads=H, layers=1, d_ff=FF)
    src, mask, tgt = _batch()
    with pytest.raises(InputError, match="src"):
        model(src + 20, mask, tgt)                                                  # ids past the vocabulary
    with pytest.raises(ShapeError, match="src_mask"):
        model(src, mask[:, :5], tgt)
    with pytest.raises(ShapeError):
        model(src, mask, tgt[:2])                                                   # batch sizes differ


# ---- the exercises' checkers -----------------------------------------------------------------------------------

def _decoder_masks(src_mask, tgt_mask, causal=True, target_pads=True, cross_pads=True):
    t = tgt_mask.shape[1]
    self_mask = np.broadcast_to(np.tri(t, dtype=bool) if causal else np.ones((t, t), bool), (len(tgt_mask), t, t))
    self_mask = self_mask & tgt_mask[:, None, :] if target_pads else self_mask.copy()
    cross = src_mask if cross_pads else np.ones_like(src_mask)
    return self_mask, np.repeat(cross[:, None, :], t, axis=1)


def test_decoder_masks_checker_passes_the_answer_and_names_mistakes(capsys):
    ac.exercises.decoder_masks(_decoder_masks)
    assert "decoder masks" in capsys.readouterr().out
    mistakes = {
        "see later positions": lambda s, t: _decoder_masks(s, t, causal=False),
        "shows the target's pads": lambda s, t: _decoder_masks(s, t, target_pads=False),
        "self_mask is inverted": lambda s, t: (~_decoder_masks(s, t)[0], _decoder_masks(s, t)[1]),
        "hides the diagonal": lambda s, t: (_decoder_masks(s, t)[0] & ~np.eye(t.shape[1], dtype=bool),
                                            _decoder_masks(s, t)[1]),
        "shows the source's pads": lambda s, t: _decoder_masks(s, t, cross_pads=False),
        "must not be causal": lambda s, t: (_decoder_masks(s, t)[0],
                                            _decoder_masks(s, t)[1] & np.tri(t.shape[1], s.shape[1], dtype=bool)),
        "return two masks": lambda s, t: _decoder_masks(s, t)[0],
    }
    for needle, fn in mistakes.items():
        with pytest.raises(ac.exercises.ExerciseError, match=needle):
            ac.exercises.decoder_masks(fn)


def test_warmup_checker_passes_the_answer_and_names_mistakes():
    ac.exercises.warmup(lambda step, d, w: ac.train.warmup_schedule(d, w)(step))
    mistakes = {
        "warmup\\^-1.5": lambda step, d, w: d ** -0.5 * min(step ** -0.5, step * w ** -0.5),
        "d_model\\^-0.5": lambda step, d, w: min(step ** -0.5, step * w ** -1.5),
        "not the maximum": lambda step, d, w: d ** -0.5 * max(step ** -0.5, step * w ** -1.5),
        "not 1/step": lambda step, d, w: d ** -0.5 * min(1 / step, step * w ** -1.5),
        "return one number": lambda step, d, w: "fast",
    }
    for needle, fn in mistakes.items():
        with pytest.raises(ac.exercises.ExerciseError, match=needle):
            ac.exercises.warmup(fn)


def test_warmup_schedule_rises_then_falls():
    rate = ac.train.warmup_schedule(64, 100)
    rates = [rate(s) for s in range(1, 1001)]
    assert int(np.argmax(rates)) + 1 == 100                                         # the peak at the warm-up's end
    assert np.isclose(max(rates), 64 ** -0.5 * 100 ** -0.5)
    assert rate(0) == rate(1)                                                       # step 0 is treated as step 1


def test_label_smoothing_is_the_same_in_both_fits():
    import tensorflow as tf

    from attention_course.core.keras.train import _masked_loss_and_hits

    rng = np.random.default_rng(0)
    logits, y = rng.normal(size=(4, 5, 7)).astype(np.float32), rng.integers(0, 7, size=(4, 5))
    y[0, :2] = -1
    for eps in (0.0, 0.1, 0.3):
        want = torch.nn.functional.cross_entropy(torch.as_tensor(logits).reshape(-1, 7), torch.as_tensor(y).reshape(-1),
                                                 ignore_index=-1, label_smoothing=eps)
        got = _masked_loss_and_hits(tf.constant(y), tf.constant(logits), -1, eps)[0]
        assert np.isclose(float(got), float(want), rtol=1e-5), eps


@pytest.mark.parametrize("bad", [-0.1, 1.0, "0.1"])
def test_label_smoothing_must_be_a_share(fw, bad):
    x, y = ac.data.synthetic.lookback_task(8, length=6)
    with pytest.raises(ac.errors.ConfigError, match="label_smoothing"):
        fw.fit(fw.LookbackNet("none", 8, 64, d_model=8), (x,), y, epochs=1, ignore_index=-1, label_smoothing=bad)


def test_fit_follows_the_schedule(fw):
    """The learning rate the optimiser used at each step is the schedule's."""
    x, y = ac.data.synthetic.lookback_task(64, length=6)
    seen = []

    def schedule(step):
        seen.append(step)
        return 1e-3 / step

    fw.fit(fw.LookbackNet("none", 8, 64, d_model=8), (x,), y, epochs=2, batch_size=16, ignore_index=-1,
           schedule=schedule)
    assert seen == list(range(1, 9))                                                # 4 batches × 2 epochs


@pytest.mark.parametrize("fw", ["torch", "keras"])
def test_no_source_mask_means_no_padding_and_bad_sizes_are_named(fw):
    module = getattr(ac, fw)
    src, tgt = np.ones((2, 5), "int64"), np.ones((2, 4), "int64")
    model = module.Transformer(20, 20, d_model=8, heads=2, layers=1, d_ff=16, dropout=0.0)
    without = to_numpy(model(src, None, tgt))
    np.testing.assert_allclose(without, to_numpy(model(src, np.ones((2, 5), bool), tgt)), rtol=1e-6, atol=1e-6)
    with pytest.raises(ConfigError, match="d_ff"):
        module.EncoderLayer(8, 2, d_ff=0)
    with pytest.raises(ConfigError, match=r"eps must be a finite number > 0; got -1 \(the LayerNorms' epsilon\)"):
        module.EncoderLayer(8, 2, d_ff=16, eps=-1)


@pytest.mark.parametrize("rotary", [False, True])
def test_the_cached_layer_decodes_step_by_step_as_chapter_7s_layer_does_at_once(fw, rotary):
    """Chapter 8 adds the key–value cache to Chapter 7's layer and nothing else: fed one step at a time through a
    ``KVCache``, ``CachedMultiHeadAttention`` gives what Chapter 7's ``MultiHeadAttention`` gives on the whole
    causal sequence, with the same weights, RoPE included (each step rotated by its true position)."""
    x = np.random.default_rng(5).normal(size=(2, 6, 16)).astype("float32")
    if backend(fw).is_torch:
        torch.manual_seed(0)
    cached = fw.CachedMultiHeadAttention(16, 4, rotary=rotary)
    whole = to_numpy(cached(as_input(fw, x), causal=True))
    plain = fw.MultiHeadAttention(16, 4, rotary=rotary)
    plain(as_input(fw, x))
    if backend(fw).is_torch:
        plain.load_state_dict(cached.state_dict())
    else:
        plain.set_weights(cached.get_weights())
    np.testing.assert_allclose(to_numpy(plain(as_input(fw, x), causal=True)), whole, rtol=1e-5, atol=1e-6)
    cache = fw.KVCache()
    steps = [to_numpy(cached(as_input(fw, x[:, t:t + 1]), cache=cache)) for t in range(6)]
    assert len(cache) == 6
    np.testing.assert_allclose(np.concatenate(steps, axis=1), whole, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make", [
    lambda fw: fw.FeedForward(8, 16, dropout=1.5),
    lambda fw: fw.EncoderLayer(8, 2, 16, dropout=-0.1),
    lambda fw: fw.Transformer(10, 10, d_model=8, heads=2, layers=1, d_ff=16, dropout=1.0),
    lambda fw: fw.LanguageModel(10, d_model=8, heads=2, layers=1, d_ff=16, dropout=2),
])
def test_a_dropout_rate_outside_0_1_is_the_courses_error(fw, make):
    with pytest.raises(ConfigError, match=r"dropout \(a dropout rate\) must be a number in \[0, 1\)"):
        make(fw)


def test_a_cache_belongs_to_one_batch(fw):
    layer, cache = fw.CachedMultiHeadAttention(8, 2), fw.KVCache()
    layer(np.zeros((2, 1, 8), np.float32), cache=cache)
    with pytest.raises(ShapeError, match=r"do not fit the KVCache's \(2, 2, 1, 4\).*start a new KVCache"):
        layer(np.zeros((3, 1, 8), np.float32), cache=cache)


def test_a_static_cache_gives_what_the_growing_cache_gives(fw):
    """``StaticKVCache`` (fixed buffers, the unwritten end hidden): a prompt of 3 steps at once, then one step at a
    time past its capacity of 4 (grown to 8) gives the whole causal sequence's outputs, as ``KVCache`` does."""
    x = np.random.default_rng(6).normal(size=(2, 6, 16)).astype("float32")
    if backend(fw).is_torch:
        torch.manual_seed(0)
    layer = fw.CachedMultiHeadAttention(16, 4)
    whole = to_numpy(layer(as_input(fw, x), causal=True))
    cache = fw.StaticKVCache.empty(2, 4, 4, 4)
    steps = [to_numpy(layer(as_input(fw, x[:, :3]), causal=True, cache=cache))]
    for t in range(3, 6):
        if len(cache) == cache.keys.shape[-2]:
            cache = cache.grown(8)
        steps.append(to_numpy(layer(as_input(fw, x[:, t:t + 1]), causal=True, cache=cache)))
    assert len(cache) == 6 and tuple(cache.keys.shape) == (2, 4, 8, 4)
    np.testing.assert_allclose(np.concatenate(steps, axis=1), whole, rtol=1e-5, atol=1e-5)
    with pytest.raises(ShapeError, match="do not fit the KVCache's"):
        layer(as_input(fw, x[:1, :1]), cache=cache)


# ---- the source's keys and values are computed once per decode --------------------------------------------------

def _count_calls(layers):
    """Count the calls of each layer (PyTorch: a forward hook; Keras: its ``call`` wrapped, run eagerly)."""
    counts = [0] * len(layers)
    for i, layer in enumerate(layers):
        def bump(*_, i=i):
            counts[i] += 1
        if isinstance(layer, torch.nn.Module):
            layer.register_forward_hook(lambda *a, bump=bump: bump())
        else:
            original = layer.call

            def call(*args, original=original, bump=bump, **kwargs):
                bump()
                return original(*args, **kwargs)
            layer.call = call
    return counts


@pytest.mark.parametrize("fw_name", ["torch", "keras"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoding_projects_the_source_once_and_decodes_as_the_full_rerun(fw_name, norm_first):
    # the cross-attention's keys and values of the source are the same at every step: start computes them once,
    # the steps reuse them (and beam search reorders them with the cache); the tokens are those of the uncached
    # run, which feeds the whole prefix through the decoder again at every step
    import tensorflow as tf

    t, k = _models(norm_first, seed=4)
    model = t if fw_name == "torch" else k
    src, mask, _ = _batch(5)
    searches = {"greedy": lambda m: decode.greedy_search(m, src, mask, max_len=8),
                "beam": lambda m: decode.beam_search(m, src, mask, beam=3, max_len=8)}
    reference = {name: search(decode.Recompute(model)) for name, search in searches.items()}
    projections = [p for layer in model.decoder for p in (layer.cross_attention.W_k, layer.cross_attention.W_v)]
    counts = _count_calls(projections)
    tf.config.run_functions_eagerly(fw_name == "keras")                 # Keras: count the calls, not the traces
    try:
        for name, search in searches.items():
            before = list(counts)
            got = search(model)
            assert [c - b for c, b in zip(counts, before, strict=True)] == [1] * len(projections), (name, counts)
            assert [list(a) for a in got.tokens] == [list(b) for b in reference[name].tokens], name
            np.testing.assert_allclose(got.scores, reference[name].scores, rtol=1e-5, atol=1e-5)
    finally:
        tf.config.run_functions_eagerly(False)


def test_an_encoder_layer_takes_a_padding_mask_by_name_with_a_batch_of_s(fw):
    # its mask is the padding of x, (B, S): named padding_mask, so a (S, S) attention mask cannot pass as one
    torch.manual_seed(0)
    keras.utils.set_random_seed(0)
    s = 5
    layer = fw.EncoderLayer(D, H, FF, dropout=0.0)
    if fw is ac.torch:
        layer.eval()
    x = np.random.default_rng(0).normal(size=(s, s, D)).astype(np.float32)      # a batch of S examples
    pad = np.arange(s)[None, :] < np.arange(s, 0, -1)[:, None]
    with pytest.raises(TypeError, match="mask"):
        layer(x, mask=np.tri(s, dtype=bool))
    _, w = layer(x, padding_mask=pad, return_weights=True)
    assert (to_numpy(w)[~np.broadcast_to(pad[:, None, None, :], (s, H, s, s))] == 0).all()    # no pad is seen
    np.testing.assert_allclose(to_numpy(layer(x, pad)), to_numpy(layer(x, padding_mask=pad)), rtol=RTOL, atol=ATOL)


def test_a_static_cache_refuses_a_step_past_its_capacity(fw):
    """Keras wrote past the buffer's end and counted 5 steps in a cache of 4; PyTorch failed inside slice_scatter."""
    layer = fw.CachedMultiHeadAttention(8, 2)
    cache = fw.StaticKVCache.empty(2, 2, 4, 4)
    x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    for i in range(4):
        layer(x[:, i:i + 1], cache=cache)
    with pytest.raises(ShapeError, match="capacity 4 holds 4 steps and cannot take 1 more"):
        layer(x[:, 4:5], cache=cache)
    assert len(cache) == 4
