"""Chapter 10's NumPy references: the online softmax and FlashAttention's tiled forward pass equal the two-pass
softmax and explicit attention (with padding and causal masks, any block size); llama2.c's files are read as
``run.c`` reads them, and the forward pass of the pretrained ``stories260K`` writes the greedy story its authors
published."""

import numpy as np
import pytest

from attention_course.ch10_modern_attention import reference as ref
from attention_course.ch10_modern_attention.llama2c import Tokenizer, read_checkpoint
from attention_course.core.errors import InputError

pytestmark = pytest.mark.chapter(10)


@pytest.mark.parametrize("block", [1, 3, 16])
def test_the_online_softmax_is_the_softmax(block):
    x = np.random.default_rng(block).normal(scale=10, size=(4, 5, 13))
    np.testing.assert_allclose(ref.online_softmax(x, block), ref.softmax(x), rtol=1e-12, atol=1e-15)
    assert np.isfinite(ref.online_softmax(x + 1000, block)).all(), "the running maximum keeps exp() finite"


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("block", [1, 4, 5, 64])
def test_tiled_attention_is_explicit_attention(causal, block):
    rng = np.random.default_rng(block)
    q, k, v = rng.normal(size=(2, 3, 7, 8)), rng.normal(size=(2, 3, 11, 8)), rng.normal(size=(2, 3, 11, 5))
    mask = np.ones((2, 3, 11), bool)
    mask[0, :, 8:] = False                                       # three pads in the first example
    got = ref.flash_attention(q, k, v, mask, causal, block=block)
    np.testing.assert_allclose(got, ref.explicit_attention(q, k, v, mask, causal), rtol=1e-12, atol=1e-12)


def test_a_query_with_no_key_to_see_gets_zeros_in_both():
    q, k, v = np.ones((1, 2, 4)), np.ones((1, 3, 4)), np.ones((1, 3, 2))
    mask = np.zeros((1, 3), bool)
    assert (ref.flash_attention(q, k, v, mask, block=2) == 0).all()
    assert (ref.explicit_attention(q, k, v, mask) == 0).all()


def test_stories260k_is_read_as_run_c_reads_it(stories):
    model, tokenizer = stories
    assert model.config == {"dim": 64, "hidden_dim": 172, "n_layers": 5, "n_heads": 8, "n_kv_heads": 4,
                            "vocab_size": 512, "seq_len": 512, "shared_classifier": 1, "head_dim": 8}
    assert model.parameters == 260_032
    cos, sin = ref.rope_tables(512, 8)
    np.testing.assert_allclose(model.weights["freq_cis_real"], cos, atol=1e-5)   # RoPE's tables, as stored
    np.testing.assert_allclose(model.weights["freq_cis_imag"], sin, atol=1e-5)
    assert tokenizer.encode("Once upon a time") == [1, 403, 407, 261, 378]
    assert tokenizer.decode(tokenizer.encode("A cat, a dog and 3 ducks!")) == "A cat, a dog and 3 ducks!"
    assert tokenizer.decode(tokenizer.encode("naïve café")) == "naïve café", "bytes for what is not a piece"


def test_stories260k_writes_its_published_greedy_story(stories):
    model, tokenizer = stories
    ids = tokenizer.encode("Once upon a time")
    for _ in range(30):
        ids.append(int(ref.llama_forward(model, ids)[-1].argmax()))
    assert ids[5:15] == [432, 383, 286, 261, 376, 298, 315, 421, 395, 317]
    assert tokenizer.decode(ids).startswith("Once upon a time, there was a little girl named Lily. She loved to "
                                            "play outside in the park.")


def test_a_damaged_checkpoint_or_tokenizer_is_named(tmp_path, stories):
    model, _ = stories
    from attention_course import data

    good = data.fetch("stories260K")
    short = tmp_path / "short.bin"
    short.write_bytes(good["stories260K.bin"].read_bytes()[:-4])
    with pytest.raises(InputError, match="short.bin holds 264,127 float32 .* needs 264,128"):
        read_checkpoint(short)
    tiny = tmp_path / "tiny.bin"
    tiny.write_bytes(b"\x00" * 10)
    with pytest.raises(InputError, match="28-byte header"):
        read_checkpoint(tiny)
    with pytest.raises(InputError, match="ends after .* pieces"):
        Tokenizer(good["tok512.bin"], 600)
    with pytest.raises(InputError, match="takes a str"):
        Tokenizer(good["tok512.bin"], 512).encode(b"bytes")


def test_linear_attention_is_an_rnn():
    """Katharopoulos et al.: the causal parallel form (for training) and the recurrent form (for decoding, a d × d_v
    state and a d-vector carried from step to step) are the same computation."""
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(2, 3, 9, 4)), rng.normal(size=(2, 3, 9, 4)), rng.normal(size=(2, 3, 9, 5))
    np.testing.assert_allclose(ref.linear_attention_recurrent(q, k, v), ref.linear_attention(q, k, v),
                               rtol=1e-12, atol=1e-12)
    assert (ref.elu_feature_map(rng.normal(size=100) * 10) > 0).all(), "the feature map is positive"
    first = ref.linear_attention(q, k, v, eps=0.0)[..., 0, :]
    np.testing.assert_allclose(first, v[..., 0, :], rtol=1e-12), "the first step sees only itself"


def test_decayed_linear_attention_is_an_rnn_that_forgets():
    """RetNet's decay in the same frame: weighing key j by γ^(i−j) in parallel is multiplying the state and the
    normaliser by γ before each step; γ = 1 is plain linear attention, and a small γ forgets all but the last key."""
    rng = np.random.default_rng(4)
    q, k, v = rng.normal(size=(2, 3, 9, 4)), rng.normal(size=(2, 3, 9, 4)), rng.normal(size=(2, 3, 9, 5))
    decay = np.array([0.5, 0.9, 1.0])
    np.testing.assert_allclose(ref.linear_attention_recurrent(q, k, v, decay), ref.linear_attention(q, k, v,
                               decay=decay), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ref.linear_attention(q, k, v, decay=np.ones(3)), ref.linear_attention(q, k, v),
                               rtol=1e-12)
    np.testing.assert_allclose(ref.linear_attention(q, k, v, decay=np.full(3, 1e-9), eps=0.0), v, rtol=1e-6)
