"""Chapter 6's trained captioner (book/06-image-captioning/checkpoints): both frameworks load the same file and
caption alike, its BLEU-4 is the recorded one, and it captions other scenes through their vocabulary."""

import numpy as np
import pytest

import attention_course as ac
from attention_course.ch06_image_captioning import experiment as c6
from attention_course.core.errors import ConfigError

pytestmark = pytest.mark.chapter(6)


@pytest.fixture(scope="module")
def loaded():
    record, arrays = ac.trained.load("06-image-captioning/checkpoints/soft-cpu")
    data = c6.corpus(record["sizes"], seed=record["runs"][0]["seed"])
    assert data.vocab.tokens == record["vocabulary"]                       # the words its ids stand for
    example = (data.test.images[:2], data.test_in[:2])
    models = {fw: fw.load_trained(lambda f: c6.build(f, data, record["sizes"], **c6.MODELS["soft"]), arrays,
                                   example) for fw in (ac.torch, ac.keras)}
    return record, data, models


def test_both_frameworks_caption_alike(loaded):
    _, data, models = loaded
    (torch_caps, torch_maps), (keras_caps, keras_maps) = (c6.caption(m, data, data.test.images[:40])
                                                          for m in models.values())
    assert torch_caps == keras_caps
    for a, b in zip(torch_maps, keras_maps, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)


def test_its_bleu_is_the_recorded_one(loaded):
    record, data, models = loaded
    captions, _ = c6.caption(models[ac.torch], data)
    assert c6.bleu_scores(captions, data.test)["BLEU-4"] == pytest.approx(record["runs"][0]["beam1"]["BLEU-4"],
                                                                          abs=0.5)


def test_other_scenes_are_read_in_its_vocabulary(loaded):
    record, _, models = loaded
    quick = c6.corpus(c6.SIZES["quick"], seed=1)
    scenes = c6.in_vocabulary(quick, record["vocabulary"])
    assert scenes.vocab.tokens == record["vocabulary"] and scenes.test.captions == quick.test.captions
    assert [scenes.vocab.decode(list(row[row > 3])) for row in scenes.test_out[:3]] == \
        [quick.vocab.decode(list(row[row > 3])) for row in quick.test_out[:3]]
    captions, _ = c6.caption(models[ac.torch], scenes, scenes.test.images[:100])
    exact = np.mean([c in refs for c, refs in zip(captions, scenes.test.references[:100], strict=True)])
    assert exact > 0.5, captions[:5]
    with pytest.raises(ConfigError, match=r"lacks words of these captions: \['zero'\]"):
        c6.in_vocabulary(quick, [t for t in record["vocabulary"] if t != "zero"])
    with pytest.raises(ConfigError, match="must start with"):
        c6.in_vocabulary(quick, record["vocabulary"][4:])
