"""The course's Llama in both frameworks (RMSNorm, SwiGLU, grouped-query attention with rotary positions, tied
output) holds the pretrained ``stories260K`` and computes what the NumPy reference of llama2.c's ``run.c`` computes;
both frameworks continue the published prompt with the published greedy story."""

import numpy as np
import pytest
import torch
from conftest import to_numpy

from attention_course.ch10_modern_attention import keras as ch10_keras
from attention_course.ch10_modern_attention import reference as ref
from attention_course.ch10_modern_attention import torch as ch10_torch
from attention_course.core.errors import ConfigError, CourseError

pytestmark = pytest.mark.chapter(10)
MODULES = {"keras": ch10_keras, "pytorch": ch10_torch}


def _logits(framework, model, ids):
    if framework == "pytorch":
        with torch.no_grad():
            return model(torch.as_tensor(ids)).numpy()
    return to_numpy(model(ids))


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_the_course_llama_computes_what_run_c_computes(stories, framework):
    checkpoint, tokenizer = stories
    model = MODULES[framework].load_llama2c(checkpoint)
    ids = np.array([tokenizer.encode("Once upon a time, there was a little girl named Lily.")])
    np.testing.assert_allclose(_logits(framework, model, ids)[0], ref.llama_forward(checkpoint, ids[0]),
                               rtol=1e-3, atol=1e-3)
    story = tokenizer.encode("Once upon a time")
    for _ in range(10):
        story.append(int(_logits(framework, model, np.array([story]))[0, -1].argmax()))
    assert story[5:] == [432, 383, 286, 261, 376, 298, 315, 421, 395, 317]   # ", there was a little girl named Lily"


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_the_llamas_parts_check_their_arguments(framework):
    module = MODULES[framework]
    with pytest.raises(ConfigError, match="eps"):
        module.RMSNorm(8, eps=0)
    with pytest.raises(ConfigError, match="hidden"):
        module.SwiGLU(8, 0)
    with pytest.raises(ConfigError, match="kv_heads=3"):
        module.Llama(32, 16, 4, 3, 1, 24)
    with pytest.raises(CourseError, match="ids"):
        _logits(framework, module.Llama(32, 16, 4, 2, 1, 24, max_len=8), np.full((1, 4), 32))


@pytest.mark.parametrize("framework", ["keras", "pytorch"])
def test_a_window_as_long_as_the_text_changes_nothing_and_a_short_one_does(stories, framework):
    checkpoint, tokenizer = stories
    module = MODULES[framework]
    model = module.load_llama2c(checkpoint)
    ids = np.array([tokenizer.encode("Once upon a time, there was a little girl named Lily. She loved to play.")])
    t = ids.shape[1]
    full = _logits(framework, model, ids)
    if framework == "pytorch":
        with torch.no_grad():
            wide = model(torch.as_tensor(ids), mask=module.window_mask(t, window=t)).numpy()
            narrow = model(torch.as_tensor(ids), mask=module.window_mask(t, window=4)).numpy()
    else:
        wide = to_numpy(model(ids, mask=module.window_mask(t, window=t)))
        narrow = to_numpy(model(ids, mask=module.window_mask(t, window=4)))
    np.testing.assert_allclose(wide, full, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(narrow[0, :4], full[0, :4], rtol=1e-5, atol=1e-5)   # the first four see it all
    assert np.abs(narrow[0, 12:] - full[0, 12:]).max() > 0.1, "later positions lose what left the window"
