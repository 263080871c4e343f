"""Chapter 5's trained translator (book/05-neural-machine-translation/checkpoints): both frameworks load the same
file and translate alike, and its BLEU is the one its record holds."""

import numpy as np
import pytest

import attention_course as ac
from attention_course.ch05_neural_machine_translation import experiment as c5
from attention_course.ch05_neural_machine_translation.data import ParallelArrays

pytestmark = pytest.mark.chapter(5)
NAME = "05-neural-machine-translation/checkpoints/bahdanau-cpu"


@pytest.fixture(scope="module")
def loaded():
    record, arrays = ac.trained.load(NAME)
    data = c5.corpus(record["sizes"])
    example = (data.test.src[:2], data.test.src_mask[:2], data.test.tgt_in[:2])
    models = {fw.__name__: fw.load_trained(lambda f: c5.build(f, data, "bahdanau", record["sizes"]), arrays,
                                            example) for fw in (ac.torch, ac.keras)}
    return record, data, models


def test_both_frameworks_translate_alike(loaded):
    _, data, models = loaded
    some = ParallelArrays(*[a[:60] for a in data.test])
    (torch_hyps, torch_found), (keras_hyps, keras_found) = (c5.translate(m, data, some) for m in models.values())
    assert torch_hyps == keras_hyps
    for a, b in zip(torch_found.attention, keras_found.attention, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)


def test_its_bleu_is_the_recorded_one(loaded):
    record, data, models = loaded
    hyps, _ = c5.translate(models["attention_course.torch"], data)
    assert c5.evaluate(hyps, data)["bleu"] == pytest.approx(record["runs"][0]["beam1"]["bleu"], abs=0.3)
    assert record["runs"][0]["beam1"]["bleu"] > 15          # a translator, not noise (the quick model's is ~2)
