"""ERNIE backbone, pretrainer on knowledge-masked data, ERNIE 2.0 continual multi-task learning."""

import numpy as np
import pytest

from keras_pretrain.data import pretraining_dataset
from keras_pretrain.models.bert import BertTokenizer
from keras_pretrain.models.ernie import ErnieBackbone
from keras_pretrain.models.ernie import ErniePretrainer
from keras_pretrain.models.ernie import MultiTask
from keras_pretrain.models.ernie import continual_multitask_training
from tests.testing import random_encoder_inputs
from tests.testing import run_backbone_test
from tests.testing import run_task_test
from tests.testing import to_numpy

TINY = dict(vocabulary_size=60, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
            max_sequence_length=16)


def test_backbone_with_task_ids(tmp_path):
    data = random_encoder_inputs(2, 10, 60, pad_from=6)
    data["task_type_ids"] = np.array([[0] * 10, [2] * 10], "int32")
    backbone = run_backbone_test(ErnieBackbone, {**TINY, "use_task_id": True}, data, tmp_path,
                                 expected_output_shape={"sequence_output": (2, 10, 16), "pooled_output": (2, 16)})
    # The task embedding changes the output.
    other = dict(data, task_type_ids=np.zeros((2, 10), "int32"))
    assert not np.allclose(to_numpy(backbone(data)["pooled_output"])[1],
                           to_numpy(backbone(other)["pooled_output"])[1])
    assert ErnieBackbone(**TINY).count_params() + 3 * 16 == backbone.count_params()


WORDS = ["new", "york", "is", "a", "big", "city", "baidu", "was", "founded", "in", "beijing", "by", "robin", "li"]
CORPUS = "new york is a big city\nbaidu was founded in beijing\n\nrobin li founded baidu\nbeijing is a big city\n\n"


@pytest.fixture(scope="module")
def knowledge_dataset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ernie")
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS) + "\n")
    corpus = folder / "corpus.txt"
    corpus.write_text(CORPUS * 4)
    tokenizer = BertTokenizer(vocabulary=str(vocab), lowercase=True)
    masking_kwargs = {"phrases": ["a big city"], "entities": ["new york", "robin li"], "level": "entity"}
    return tokenizer, pretraining_dataset([str(corpus)], tokenizer, objective="nsp", masking="knowledge",
                                          seq_length=16, max_predictions=4, batch_size=4, seed=0,
                                          masking_kwargs=masking_kwargs)


def test_pretrainer_on_knowledge_masked_data(knowledge_dataset, tmp_path):
    tokenizer, dataset = knowledge_dataset
    batches = list(dataset)
    # Entities are masked as one unit: "new york" is masked whole or not at all.
    new, york = tokenizer.token_to_id("new"), tokenizer.token_to_id("york")
    pairs = 0
    for batch in batches:
        for row, positions, labels, weights in zip(
                batch["input_ids"].numpy(), batch["masked_lm_positions"].numpy(),
                batch["masked_lm_ids"].numpy(), batch["masked_lm_weights"].numpy()):
            original = row.copy()
            masked = set()
            for p, label, w in zip(positions, labels, weights):
                if w > 0:
                    original[p] = label
                    masked.add(int(p))
            for i in range(len(original) - 1):
                if original[i] == new and original[i + 1] == york:
                    pairs += 1
                    assert (i in masked) == (i + 1 in masked)
    assert pairs > 0
    pretrainer = ErniePretrainer(ErnieBackbone(**{**TINY, "vocabulary_size": tokenizer.vocabulary_size()}))
    fixed = batches[0]
    predict = {"token_ids": fixed["input_ids"].numpy(), "segment_ids": fixed["segment_ids"].numpy(),
               "padding_mask": fixed["input_mask"].numpy(),
               "masked_lm_positions": fixed["masked_lm_positions"].numpy()}
    history = run_task_test(pretrainer, dataset, tmp_path, predict_data=predict)
    assert "mlm_accuracy" in history.history and "nsp_accuracy" in history.history


def synthetic_task(n, relevant, seed):
    """Label = whether token `relevant` (3 or 4) occurs; both tokens occur at random in every task."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 30, (n, 8)).astype("int32")
    ids[:, 0] = 2
    present = {3: rng.integers(0, 2, n), 4: rng.integers(0, 2, n)}
    ids[present[3] == 1, 1] = 3
    ids[present[4] == 1, 2] = 4
    for row in ids:
        rng.shuffle(row[1:])
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    return x, present[relevant].astype("int32")


@pytest.mark.tf_only  # an algorithm-level demonstration; once is enough
@pytest.mark.large  # 27 s on 2 cores
def test_continual_multitask_keeps_task_one_sequential_forgets():
    tasks = [MultiTask("has_3", 2, synthetic_task(256, 3, 1), synthetic_task(128, 3, 2)),
             MultiTask("has_4", 2, synthetic_task(256, 4, 3), synthetic_task(128, 4, 4))]
    results = {}
    for sequential in (False, True):
        backbone = ErnieBackbone(vocabulary_size=32, num_layers=1, num_heads=4, hidden_dim=32,
                                 intermediate_dim=64, max_sequence_length=8, dropout=0.0, activation="gelu",
                                 use_task_id=True, task_type_vocab_size=2)
        _, accuracies = continual_multitask_training(backbone, tasks, epochs_per_stage=20, batch_size=32,
                                                     learning_rate=2e-3, sequential=sequential,
                                                     shared_head=True)
        results[sequential] = accuracies
    print(results)
    continual, sequential = results[False], results[True]
    assert continual[0]["has_3"] >= 0.9 and sequential[0]["has_3"] >= 0.9  # task 1 learnt
    assert continual[1]["has_4"] >= 0.9  # task 2 learnt alongside task 1
    # Task 1 after adding task 2: kept by continual multi-task learning, forgotten by sequential
    # training (chance is 0.5; with 128 test examples the standard error is 0.044).
    assert continual[1]["has_3"] >= 0.9
    assert sequential[1]["has_3"] <= 0.7
