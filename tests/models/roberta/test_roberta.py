"""RoBERTa backbone, pretrainer (FULL-SENTENCES + dynamic masking), classifier, presets."""

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from keras_pretrain.data import pretraining_dataset
from keras_pretrain.models.roberta import RobertaBackbone
from keras_pretrain.models.roberta import RobertaClassifier
from keras_pretrain.models.roberta import RobertaPretrainer
from keras_pretrain.models.roberta import RobertaTokenizer
from keras_pretrain.models.roberta.roberta_backbone import padding_offset_positions
from tests.models.roberta.fixtures import TEXTS
from tests.models.roberta.fixtures import write_bpe_files
from tests.testing import run_backbone_test
from tests.testing import run_task_test
from tests.testing import to_numpy

TINY = dict(vocabulary_size=60, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
            max_sequence_length=18)


def encoder_inputs(n=2, length=10):
    rng = np.random.default_rng(0)
    token_ids = rng.integers(3, 60, (n, length)).astype("int32")
    padding_mask = np.ones((n, length), "int32")
    padding_mask[0, 6:] = 0
    token_ids[0, 6:] = 1
    return {"token_ids": token_ids, "padding_mask": padding_mask}


def test_backbone(tmp_path):
    run_backbone_test(RobertaBackbone, TINY, encoder_inputs(), tmp_path,
                      expected_output_shape={"sequence_output": (2, 10, 16)})
    pooled = RobertaBackbone(**TINY, use_pooler=True)(encoder_inputs())
    assert tuple(pooled["pooled_output"].shape) == (2, 16)
    assert "pooled_output" not in RobertaBackbone(**TINY)(encoder_inputs())


def test_positions_start_past_padding_id():
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], "int32")
    expected = [[2, 3, 4, 1, 1], [2, 3, 4, 5, 6]]
    assert to_numpy(padding_offset_positions(mask, 1)).tolist() == expected


@pytest.fixture(scope="module")
def bpe_dataset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("roberta_data")
    vocab, merges = write_bpe_files(folder)
    tokenizer = RobertaTokenizer(vocabulary=vocab, merges=merges)
    corpus = folder / "corpus.txt"
    corpus.write_text(("\n".join(TEXTS) + "\n\n" + "the quick fox\nHello world\n\n") * 3, encoding="utf-8")
    dataset = pretraining_dataset([str(corpus)], tokenizer, objective="full_sentences", dynamic=True,
                                  seq_length=16, max_predictions=3, batch_size=4, seed=1)
    return tokenizer, dataset


def test_pretrainer_fits_full_sentences_with_dynamic_masking(bpe_dataset, tmp_path):
    tokenizer, dataset = bpe_dataset
    batch = next(iter(dataset))
    ids = batch["input_ids"].numpy()
    assert (ids[:, 0] == tokenizer.token_to_id("<s>")).all()
    # No NSP: the pretrainer trains on dicts without next_sentence_labels.
    dataset = dataset.map(lambda f: {k: v for k, v in f.items() if k != "next_sentence_labels"}).take(2)
    backbone = RobertaBackbone(**{**TINY, "vocabulary_size": tokenizer.vocabulary_size()})
    pretrainer = RobertaPretrainer(backbone)
    fixed = {"token_ids": ids, "padding_mask": batch["input_mask"].numpy(),
             "masked_lm_positions": batch["masked_lm_positions"].numpy()}
    history = run_task_test(pretrainer, dataset, tmp_path, predict_data=fixed)
    # One output: Keras names the metrics without the "mlm_" prefix.
    assert "accuracy" in history.history and "nsp_loss" not in history.history
    assert set(pretrainer.output) == {"mlm"}


def test_classifier(tmp_path):
    data = encoder_inputs(8, 10)
    labels = np.arange(8) % 3
    classifier = RobertaClassifier(RobertaBackbone(**TINY), num_classes=3)
    run_task_test(classifier, tf.data.Dataset.from_tensor_slices((data, labels)).batch(4), tmp_path,
                  predict_data=data)
    assert classifier.predict(data, verbose=0).shape == (8, 3)
    features = {"input_ids": data["token_ids"], "input_mask": data["padding_mask"], "label": labels}
    classifier.fit(tf.data.Dataset.from_tensor_slices(features).batch(4), verbose=0)


@pytest.mark.tf_only
def test_preset_parameter_counts():
    """HF layout (514 positions, 1 token type); the spec's no-pooler figures are keras-hub's layout."""
    base = RobertaBackbone.from_preset("roberta_base_en")
    assert base.count_params() == 124_055_040
    assert RobertaBackbone.from_preset("roberta_base_en", use_pooler=True).count_params() == 124_645_632
    keras_hub_base = keras_hub.models.RobertaBackbone(
        vocabulary_size=50265, num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072)
    assert keras_hub_base.count_params() == 124_052_736 == base.count_params() - 3 * 768
    del base, keras_hub_base


@pytest.mark.tf_only
@pytest.mark.large
def test_large_preset_parameter_counts():
    assert RobertaBackbone.from_preset("roberta_large_en").count_params() == 354_310_144
    assert RobertaBackbone.from_preset("roberta_large_en", use_pooler=True).count_params() == 355_359_744
    assert 354_310_144 - 3 * 1024 == 354_307_072
