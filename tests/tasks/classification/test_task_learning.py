"""Learning is real (issue 40, item 8): a tiny randomly initialised model learns, through the families' task
classes and preprocessors (text in), a synthetic task that only a working pipeline can learn, on every backend,
far above the trivial baseline on held-out examples. Also: the losses of the problem types equal transformers'
`problem_type` heads on the same logits and labels (item 1)."""

import keras
import numpy as np
import pytest

from keras_pretrain import families
from keras_pretrain.tasks.classification import metrics
from keras_pretrain.losses import problem_loss
from tests.hub_modules.fixtures import WORDPIECE

# Words that are single WordPiece tokens of the fixture vocabulary.
WORDS = ["the", "cat", "sat", "on", "mat", ".", "!", "猫", "坐", "在", "垫", "子", "上"]
HELD_OUT = 256


def preprocessor():
    from keras_pretrain.models.bert import BertTokenizer

    family = families.get("bert")
    return family.preprocessor_class(family, BertTokenizer(vocabulary=WORDPIECE, lowercase=True))


def backbone(hidden=64):
    from keras_pretrain.models.bert import BertBackbone

    return BertBackbone(vocabulary_size=len(WORDPIECE), max_sequence_length=16, num_layers=2, num_heads=4,
                        hidden_dim=hidden, intermediate_dim=2 * hidden, dropout=0.0)


def sentences(rng, count, length=8):
    return [list(rng.choice(WORDS, length)) for _ in range(count)]


def fit_and_predict(model, x, y, epochs):
    model.compile(optimizer=keras.optimizers.AdamW(1e-3))
    train = {k: v[:-HELD_OUT] for k, v in x.items()}
    model.fit(train, y[:-HELD_OUT], epochs=epochs, batch_size=32, shuffle=True, verbose=0)
    outputs = model.predict({k: v[-HELD_OUT:] for k, v in x.items()}, batch_size=64, verbose=0)
    return np.asarray(outputs["logits"] if isinstance(outputs, dict) else outputs, "float32"), y[-HELD_OUT:]


def test_regression_learns_a_score_computed_from_the_text():
    """The score is the share of the words that are "cat": Pearson on held-out texts far above 0."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    rows = sentences(rng, 768)
    y = np.array([r.count("cat") / len(r) for r in rows], "float32")
    text = preprocessor()
    model, special = text.build_classifier(backbone(), 1, False, 0, problem_type="regression")
    x = text.encode([[" ".join(r) for r in rows]], 12, special)
    logits, targets = fit_and_predict(model, {n: x[n] for n in model.input}, y, epochs=25)
    assert logits.shape == (HELD_OUT, 1)
    pearson = metrics.pearson(logits[:, 0], targets)
    print(f"regression: held-out Pearson {pearson:.3f}")
    assert pearson > 0.9, pearson


def test_multi_label_learns_which_words_occur():
    """Three labels, each "this word occurs" (about half the texts each): micro-F1 far above predicting all."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(1)
    rows = sentences(rng, 768)
    marks = ["cat", "mat", "猫"]
    y = np.array([[float(m in r) for m in marks] for r in rows], "float32")
    text = preprocessor()
    model, special = text.build_classifier(backbone(), len(marks), False, 0,
                                           problem_type="multi_label_classification")
    x = text.encode([[" ".join(r) for r in rows]], 12, special)
    logits, targets = fit_and_predict(model, {n: x[n] for n in model.input}, y, epochs=25)
    predicted = (logits > 0).astype("int32")  # probability >= 0.5
    targets = targets.astype("int32")
    f1 = 2 * np.sum(predicted * targets) / (np.sum(predicted) + np.sum(targets))
    all_positive = 2 * np.sum(targets) / (targets.size + np.sum(targets))
    print(f"multi-label: held-out micro-F1 {f1:.3f}, all-positive baseline {all_positive:.3f}")
    assert 0.5 < all_positive < 0.8
    assert f1 > 0.9 and f1 > all_positive + 0.2, (f1, all_positive)


def test_multiple_choice_learns_the_ending_that_repeats_the_context():
    """Three one-word endings; the right one repeats a word of the four-word context: accuracy far above 1/3."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(2)
    contexts, endings, labels = [], [], []
    for _ in range(2048 + HELD_OUT):
        words = list(rng.permutation(WORDS))
        context, others = words[:4], words[4:]
        label = int(rng.integers(3))
        row = others[:2]
        row.insert(label, context[rng.integers(4)])
        contexts.append(" ".join(context))
        endings.append(row)
        labels.append(label)
    text = preprocessor()
    model = text.build_multiple_choice(backbone(), 0)
    x = text.encode_choices(contexts, endings, 10)
    assert x["token_ids"].shape == (len(labels), 3, 10)
    logits, targets = fit_and_predict(model, {n: x[n] for n in model.input}, np.array(labels, "int32"), epochs=16)
    accuracy = float(np.mean(np.argmax(logits, -1) == targets))
    print(f"multiple choice: held-out accuracy {accuracy:.3f}, chance 0.333")
    assert accuracy > 0.7, accuracy


@pytest.mark.parametrize("problem", ["single_label_classification", "regression", "multi_label_classification"])
def test_losses_equal_transformers_problem_type_heads(problem):
    """transformers' `*ForSequenceClassification` loss, from its own logits and labels, equals ours on them
    (every backend: the loss runs on the backend's ops)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    num_labels = {"regression": 1, "multi_label_classification": 4}.get(problem, 3)
    config = transformers.BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, num_labels=num_labels, problem_type=problem)
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config).eval()
    rng = np.random.default_rng(0)
    ids = torch.tensor(rng.integers(0, 30, (6, 7)))
    labels = {"regression": rng.normal(size=(6,)).astype("float32"),
              "multi_label_classification": rng.integers(0, 2, (6, 4)).astype("float32")}.get(
        problem, rng.integers(0, 3, (6,)))
    with torch.no_grad():
        out = model(input_ids=ids, labels=torch.tensor(labels))
    ours = problem_loss(problem)(labels, out.logits.numpy())
    assert abs(float(keras.ops.convert_to_numpy(ours)) - float(out.loss)) <= 1e-5
