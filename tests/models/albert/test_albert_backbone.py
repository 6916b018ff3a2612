import numpy as np
import pytest

from keras_pretrain.errors import ConfigError
from keras_pretrain.models.albert import AlbertBackbone
from keras_pretrain.models.albert import AlbertClassifier
from keras_pretrain.models.albert import AlbertPretrainer
from keras_pretrain.models.albert.albert_backbone import group_of_layer
from tests.testing import random_encoder_inputs
from tests.testing import run_encoder_backbone_test
from tests.testing import run_task_test

TINY = dict(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
            embedding_dim=8, num_groups=2, num_inner_repetitions=2, max_sequence_length=24)
# Task tests compile fit/predict on every backend: fewer blocks, still shared.
TASK_TINY = {**TINY, "num_layers": 2, "num_inner_repetitions": 1}


def test_backbone_basics(tmp_path):
    data = random_encoder_inputs(2, 10, 50, pad_from=7)
    backbone = run_encoder_backbone_test(
        AlbertBackbone, TINY, data, tmp_path,
        expected_output_shape={"sequence_output": (2, 10, 16), "pooled_output": (2, 16)},
    )
    # Sharing: 2 groups x 2 inner blocks exist, whatever num_layers is.
    assert len(backbone.transformer_layers) == 2 and len(backbone.transformer_layers[0]) == 2
    deeper = AlbertBackbone(**{**TINY, "num_layers": 12})
    assert deeper.count_params() == backbone.count_params()


def test_group_assignment_is_the_original_one():
    assert [group_of_layer(i, 12, 1) for i in range(12)] == [0] * 12
    assert [group_of_layer(i, 3, 2) for i in range(3)] == [0, 0, 1]
    assert [group_of_layer(i, 6, 3) for i in range(6)] == [0, 0, 1, 1, 2, 2]


def test_bad_config():
    with pytest.raises(ConfigError, match="num_groups"):
        AlbertBackbone(**{**TINY, "num_groups": 4})
    with pytest.raises(ConfigError, match="unknown preset"):
        AlbertBackbone.from_preset("albert_gigantic_v2")


# Spec: exact backbone counts; MLM head (V = 30000) and SOP head.
PUBLISHED = {
    "base": (11_683_584, 10_547_968, 128_688, 1_538),
    "large": (17_683_968, 16_548_352, 161_456, 2_050),
    "xlarge": (58_724_864, 57_589_248, 292_528, 4_098),
    "xxlarge": (222_595_584, 221_459_968, 554_672, 8_194),
}


def check_preset(name, backbone_params, mlm, sop):
    backbone = AlbertBackbone.from_preset(name)
    assert backbone.count_params() == backbone_params
    assert AlbertBackbone.preset_configs[name]["params"] == backbone_params
    pretrainer = AlbertPretrainer(backbone)
    heads = pretrainer.count_params() - backbone_params
    assert heads == mlm + sop
    assert AlbertPretrainer(backbone, sentence_head=False).count_params() - backbone_params == mlm


@pytest.mark.tf_only  # counts are structural; model init is slow under JAX on a busy CPU
def test_base_parameter_counts():
    check_preset("albert_base_v2", 11_683_584, 128_688, 1_538)
    check_preset("albert_base_zh", 10_547_968, 128_688 - 30000 + 21128, 1_538)


@pytest.mark.tf_only  # the counts do not depend on the backend; building xxlarge takes ~6 s
@pytest.mark.parametrize("size", ["large", "xlarge", pytest.param("xxlarge", marks=pytest.mark.large)])  # xxlarge: 22 s
def test_published_parameter_counts(size):
    v2, zh, mlm, sop = PUBLISHED[size]
    check_preset(f"albert_{size}_v2", v2, mlm, sop)
    check_preset(f"albert_{size}_zh", zh, mlm - 30000 + 21128, sop)


def test_preset_configs_match_the_spec():
    presets = AlbertBackbone.preset_configs
    assert len(presets) == 8
    assert presets["albert_xxlarge_v2"]["config"]["num_heads"] == 64
    assert presets["albert_base_zh"]["config"]["activation"] == "relu"
    assert presets["albert_large_v2"]["config"]["activation"] == "gelu_approximate"
    for preset in presets.values():
        c = preset["config"]
        assert (c["embedding_dim"], c["dropout"], c["max_sequence_length"], c["num_groups"]) == (128, 0.0, 512, 1)


def feature_dicts(batch=4, length=12, vocabulary_size=50, predictions=3):
    import tensorflow as tf

    data = random_encoder_inputs(batch, length, vocabulary_size, pad_from=9)
    rng = np.random.default_rng(0)
    features = {
        "input_ids": data["token_ids"],
        "input_mask": data["padding_mask"],
        "segment_ids": data["segment_ids"],
        "masked_lm_positions": np.tile(np.array([1, 4, 0], "int32"), (batch, 1)),
        "masked_lm_ids": rng.integers(5, vocabulary_size, (batch, predictions)).astype("int32"),
        "masked_lm_weights": np.array([[1, 1, 0]] * batch, "float32"),
        "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype("int32"),
    }
    return tf.data.Dataset.from_tensor_slices(features).batch(2), data


def test_pretrainer_fits_on_original_feature_dicts(tmp_path):
    backbone = AlbertBackbone(**TASK_TINY)
    pretrainer = AlbertPretrainer(backbone)
    pretrainer.compile()
    dataset, data = feature_dicts()
    predict = {**data, "masked_lm_positions": np.tile(np.array([1, 4, 0], "int32"), (4, 1))}
    history = run_task_test(pretrainer, dataset, tmp_path, predict_data=predict)
    assert any(k.startswith("sop") for k in history.history), sorted(history.history)
    outputs = pretrainer.predict(predict, verbose=0)
    assert outputs["mlm"].shape == (4, 3, 50) and outputs["sop"].shape == (4, 2)


def test_classifier(tmp_path):
    classifier = AlbertClassifier(AlbertBackbone(**TASK_TINY), num_classes=3)
    classifier.compile()
    data = random_encoder_inputs(4, 10, 50, pad_from=7)
    labels = np.array([0, 1, 2, 1], "int32")
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices((data, labels)).batch(2)
    run_task_test(classifier, dataset, tmp_path, predict_data=data)
    assert classifier.predict(data, verbose=0).shape == (4, 3)
