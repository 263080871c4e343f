"""Chapter 8's trained models (book/08-transformer/checkpoints): both frameworks load the same files and agree, and
each scores what its record says (the character model's validation loss, the translator's BLEU)."""

import numpy as np
import pytest

import attention_course as ac
from attention_course.ch05_neural_machine_translation import experiment as c5
from attention_course.ch05_neural_machine_translation.data import ParallelArrays, SubwordTokenizer
from attention_course.ch08_transformer import experiment as c8
from attention_course.core import decode

pytestmark = pytest.mark.chapter(8)


@pytest.fixture(scope="module")
def language_models():
    record, arrays = ac.trained.load("08-transformer/checkpoints/lm-cpu-e80")
    chars = c8.characters(ac.data.load_tinyshakespeare())
    s = record["sizes"]

    def build(fw):
        return fw.LanguageModel(len(chars.vocabulary), d_model=s["d_model"], heads=s["heads"], layers=s["layers"],
                                d_ff=s["d_ff"], dropout=s["dropout"], context=s["context"])

    example = (chars.encode("ROMEO:\n")[None],)
    return record, chars, {fw: fw.load_trained(build, arrays, example) for fw in (ac.torch, ac.keras)}


def test_the_character_model_samples_alike_in_both_frameworks(language_models):
    _, chars, models = language_models
    prompt = chars.encode("ROMEO:\n")[None]
    samples = [decode.sample(m, prompt, steps=60, temperature=0.5, seed=3) for m in models.values()]
    np.testing.assert_array_equal(*samples)


def test_the_character_model_has_its_recorded_validation_loss(language_models):
    record, chars, models = language_models
    s = record["sizes"]
    val_x, val_y = c8.windows(chars.val, s["context"], s["val_windows"], seed=c8.VAL_SEED)
    loss = ac.torch.evaluate_loss(models[ac.torch], (val_x,), val_y)
    assert loss == pytest.approx(min(record["history"]["val_loss"]), abs=0.01)   # float16 weights lose nothing
    assert loss < record["baselines"]["bigram"] - 0.5


@pytest.fixture(scope="module")
def translators():
    record, arrays = ac.trained.load("08-transformer/checkpoints/transformer-d128")
    data = c5.corpus(c5.SIZES[c8.DATA[record["size"]]])
    example = (data.test.src[:2], data.test.src_mask[:2], data.test.tgt_in[:2])
    return record, data, {fw: fw.load_trained(lambda f: c8.build(f, data, record["sizes"]), arrays, example)
                          for fw in (ac.torch, ac.keras)}


def test_the_translator_translates_alike_in_both_frameworks(translators):
    _, data, models = translators
    some = ParallelArrays(*[a[:12] for a in data.test])
    torch_hyps, keras_hyps = (c5.translate(m, data, some)[0] for m in models.values())
    assert torch_hyps == keras_hyps


def test_the_translator_has_its_recorded_bleu(translators):
    record, data, models = translators
    hyps, _ = c5.translate(models[ac.torch], data, batch_size=1000)
    assert c5.evaluate(hyps, data)["bleu"] == pytest.approx(record["runs"][0]["beam1"]["bleu"], abs=0.3)


def test_the_translator_comes_with_its_tokenizers(translators):
    # the page translates with the committed tokenizers and the test split alone (c8.test_corpus): the same arrays
    # and translations as the corpus the model was trained on, without building its training data
    record, data, models = translators
    files = ac.trained.folder("08-transformer/checkpoints/transformer-d128")
    src_tok, tgt_tok = (SubwordTokenizer.load(files / f"{side}-tokenizer.json") for side in ("source", "target"))
    test = c8.test_corpus("multi30k", src_tok, tgt_tok, c5.SIZES[c8.DATA[record["size"]]])
    assert test.test_pairs == data.test_pairs and len(test.train.src) == 0
    for ours, theirs in zip(test.test, data.test, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    some = ParallelArrays(*[a[:6] for a in test.test])
    assert c5.translate(models[ac.keras], test, some)[0] == c5.translate(models[ac.torch], data, some)[0]
