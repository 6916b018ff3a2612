"""A family registered from a test module (tests/fixtures/toy_family) fine-tunes, saves, exports and serves
through the library's generic code, without touching a library file (issue 38, item 1; docs/add-a-family.md)."""

import os

import keras
import numpy as np
import pytest

from keras_pretrain import families
from tests.hub_modules.fixtures import WORDPIECE

COLUMNS = [["The cat sat on the mat.", "the the the cat cat cat sat sat sat on on on mat mat"],
           ["on the mat", "猫坐在垫子上"]]
SEQ_LENGTH = 12


@pytest.fixture
def toy():
    from tests.fixtures.toy_family import TOY

    families.register(TOY)
    yield TOY
    families.unregister("toy")


def _classifier(toy):
    from keras_pretrain.models.bert import BertTokenizer

    backbone = toy.backbone_class(vocabulary_size=len(WORDPIECE))
    classifier = toy.classifier_class(backbone, num_classes=3)
    rng = np.random.default_rng(0)
    for weight in classifier.weights:
        weight.assign(rng.normal(0, 0.3, weight.shape).astype("float32"))
    return classifier, BertTokenizer(vocabulary=WORDPIECE, lowercase=True)


def _recipe_inputs(classifier, tokenizer):
    from recipes import finetune

    preprocessor = finetune.preprocessor("toy", tokenizer)
    ids = preprocessor.special_ids()
    x = finetune.encode("toy", tokenizer, COLUMNS, SEQ_LENGTH, (ids["cls"], ids["sep"]))
    return {name: x[name] for name in classifier.input}


def test_registered_family_fine_tunes_and_round_trips(toy, tmp_path):
    classifier, tokenizer = _classifier(toy)
    assert families.family_of(classifier) is toy
    assert hasattr(classifier, "head_dense"), "the family's summary (a tanh projection) was not applied"
    x = _recipe_inputs(classifier, tokenizer)
    assert x["token_ids"][0, 0] == tokenizer.token_to_id("[CLS]")  # BERT's packing, asked of the family
    expected = np.asarray(classifier.predict(x, verbose=0))
    path = str(tmp_path / "toy.keras")
    classifier.save(path)
    reloaded = keras.saving.load_model(path)
    np.testing.assert_allclose(np.asarray(reloaded.predict(x, verbose=0)), expected, atol=1e-6)
    classifier.compile()
    history = classifier.fit(x, np.array([0, 2]), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


@pytest.mark.tf_only
def test_registered_family_exports_and_serves(toy, tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from keras_pretrain.export import export_encoder
    from keras_pretrain.export.serving import export_serving

    classifier, tokenizer = _classifier(toy)
    x = _recipe_inputs(classifier, tokenizer)
    expected = np.asarray(classifier.predict(x, verbose=0))

    export_serving(classifier, str(tmp_path / "serving"), tokenizer=tokenizer, pair=True, seq_length=SEQ_LENGTH)
    served = tf.saved_model.load(str(tmp_path / "serving")).signatures["serving_default"](
        text_a=tf.constant(COLUMNS[0]), text_b=tf.constant(COLUMNS[1]))
    np.testing.assert_allclose(served["logits"].numpy(), expected, atol=1e-5)

    export_encoder(classifier.backbone, str(tmp_path / "encoder"))
    encoder = tf.saved_model.load(str(tmp_path / "encoder"))
    outputs = encoder({"input_word_ids": x["token_ids"], "input_mask": x["padding_mask"],
                       "input_type_ids": x["segment_ids"]})
    ours = classifier.backbone({k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")})
    np.testing.assert_allclose(outputs["pooled_output"].numpy(), np.asarray(ours["pooled_output"]), atol=1e-5)
    assert sorted(os.listdir(tmp_path / "encoder")) == ["assets", "fingerprint.pb", "saved_model.pb", "variables"]


def test_register_refuses_what_is_not_a_family():
    from keras_pretrain.errors import ConfigError

    with pytest.raises(ConfigError, match="families.register takes a Family"):
        families.register({"name": "toy"})
