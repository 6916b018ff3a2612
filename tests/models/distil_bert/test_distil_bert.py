"""DistilBERT backbone, pretrainer, classifier, preset."""

import numpy as np
import pytest
import tensorflow as tf

from keras_pretrain.models.distil_bert import DistilBertBackbone
from keras_pretrain.models.distil_bert import DistilBertClassifier
from keras_pretrain.models.distil_bert import DistilBertPretrainer
from tests.testing import random_encoder_inputs
from tests.testing import run_backbone_test
from tests.testing import run_task_test

TINY = dict(vocabulary_size=60, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
            max_sequence_length=16)


def encoder_inputs(n=2, length=10):
    d = random_encoder_inputs(n, length, 60, pad_from=6)
    return {"token_ids": d["token_ids"], "padding_mask": d["padding_mask"]}


def test_backbone(tmp_path):
    backbone = run_backbone_test(DistilBertBackbone, TINY, encoder_inputs(), tmp_path,
                                 expected_output_shape={"sequence_output": (2, 10, 16)})
    assert set(backbone.input) == {"token_ids", "padding_mask"}
    assert "pooled_output" not in backbone.output


def test_pretrainer_and_classifier(tmp_path):
    rng = np.random.default_rng(0)
    d = random_encoder_inputs(8, 10, 60)
    features = {"input_ids": d["token_ids"], "input_mask": d["padding_mask"], "segment_ids": d["segment_ids"],
                "masked_lm_positions": rng.integers(1, 10, (8, 3)).astype("int32"),
                "masked_lm_ids": rng.integers(5, 60, (8, 3)).astype("int32"),
                "masked_lm_weights": np.ones((8, 3), "float32"),
                "next_sentence_labels": np.zeros((8,), "int32")}
    pretrainer = DistilBertPretrainer(DistilBertBackbone(**TINY))
    run_task_test(pretrainer, tf.data.Dataset.from_tensor_slices(features).batch(4), tmp_path)
    assert set(pretrainer.output) == {"mlm"}
    data = encoder_inputs(8, 10)
    classifier = DistilBertClassifier(DistilBertBackbone(**TINY), num_classes=2)
    run_task_test(classifier, tf.data.Dataset.from_tensor_slices((data, np.arange(8) % 2)).batch(4),
                  tmp_path, predict_data=data)


@pytest.mark.tf_only
def test_preset_parameter_count():
    assert DistilBertBackbone.from_preset("distil_bert_base_en_uncased").count_params() == 66_362_880
