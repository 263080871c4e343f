"""The pretrained ``stories260K``, read from llama2.c's file, is the model ``transformers``' ``LlamaForCausalLM``
computes once its query and key rows are reordered for the other rotary layout: llama2.c (and Meta's code, and the
course's ``rope``) rotate adjacent pairs (x0, x1), (x2, x3), …, ``transformers`` rotates x_i with x_{i + d/2}."""

import numpy as np
import pytest
import torch

from attention_course.ch10_modern_attention import torch as ch10_torch

pytestmark = pytest.mark.chapter(10)
transformers = pytest.importorskip("transformers")


def halves(w: np.ndarray, heads: int) -> torch.Tensor:
    """Reorder the rows of W_q or W_k (heads · d_head, d_model) from adjacent pairs to halves, per head: the rows
    (0, 1, 2, 3, …) of a head become (0, 2, 4, …, 1, 3, 5, …), as transformers' conversion script does."""
    rows, cols = w.shape
    return torch.as_tensor(w).view(heads, rows // heads // 2, 2, cols).transpose(1, 2).reshape(rows, cols)


def test_stories260k_is_what_transformers_llama_computes(stories):
    checkpoint, tokenizer = stories
    c, w = checkpoint.config, checkpoint.weights
    config = transformers.LlamaConfig(
        vocab_size=c["vocab_size"], hidden_size=c["dim"], intermediate_size=c["hidden_dim"],
        num_hidden_layers=c["n_layers"], num_attention_heads=c["n_heads"], num_key_value_heads=c["n_kv_heads"],
        max_position_embeddings=c["seq_len"], rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
        attention_bias=False, mlp_bias=False, hidden_act="silu")
    theirs = transformers.LlamaForCausalLM(config).eval()
    state = {"model.embed_tokens.weight": torch.as_tensor(w["token_embedding"]),
             "model.norm.weight": torch.as_tensor(w["rms_final"])}
    for i in range(c["n_layers"]):
        p = f"model.layers.{i}."
        state.update({p + "self_attn.q_proj.weight": halves(w["wq"][i], c["n_heads"]),
                      p + "self_attn.k_proj.weight": halves(w["wk"][i], c["n_kv_heads"]),
                      p + "self_attn.v_proj.weight": torch.as_tensor(w["wv"][i]),
                      p + "self_attn.o_proj.weight": torch.as_tensor(w["wo"][i]),
                      p + "mlp.gate_proj.weight": torch.as_tensor(w["w1"][i]),
                      p + "mlp.down_proj.weight": torch.as_tensor(w["w2"][i]),
                      p + "mlp.up_proj.weight": torch.as_tensor(w["w3"][i]),
                      p + "input_layernorm.weight": torch.as_tensor(w["rms_att"][i]),
                      p + "post_attention_layernorm.weight": torch.as_tensor(w["rms_ffn"][i])})
    missing, unexpected = theirs.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)     # tied to the embedding
    ours = ch10_torch.load_llama2c(checkpoint)
    ids = torch.tensor([tokenizer.encode("Once upon a time, there was a little girl named Lily. She loved to play.")])
    with torch.no_grad():
        expected = theirs(ids).logits
        got = ours(ids)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-4, atol=1e-4)
    # without the reordering the two layouts disagree: the check above is not vacuous
    theirs.model.layers[0].self_attn.q_proj.weight.data = torch.as_tensor(w["wq"][0])
    theirs.model.layers[0].self_attn.k_proj.weight.data = torch.as_tensor(w["wk"][0])
    with torch.no_grad():
        assert (theirs(ids).logits - expected).abs().max() > 1e-2
