"""Fine-tuning a sequence task (classification, regression, multi-label, multiple choice) on a `TaskData`
(`keras_pretrain.tasks.classification.tables`): its inputs, the model, predictions, the task's metrics, the
trivial baseline, the best epoch, the GLUE features and submission files.

Defaults follow the papers for base-sized models (BERT section 4 / A.3: AdamW, peak rate 2e-5..5e-5 with 10%
linear warmup and linear decay, 3 epochs, batch 32, length 128) and stay as they were for the tiny models of
the bundled corpus (rate 1e-3, length 64): a backbone with `hidden_dim` under 256 is "tiny".
"""

import dataclasses
import math
import os

import numpy as np

from keras_pretrain.tasks.classification import metrics
from keras_pretrain.tasks.classification.tables import CHOICE
from keras_pretrain.tasks.classification.tables import MULTI
from keras_pretrain.tasks.classification.tables import REGRESSION
from keras_pretrain.tasks.classification.tables import SINGLE

TINY_HIDDEN = 256


def is_tiny(backbone):
    return (getattr(backbone, "hidden_dim", None) or 0) < TINY_HIDDEN


def default_learning_rate(backbone):
    return 1e-3 if is_tiny(backbone) else 3e-5


def default_seq_length(backbone):
    return 64 if is_tiny(backbone) else 128


# === The family's text side ===


def preprocessor(family, tokenizer):
    """The family's text preprocessor (`keras_pretrain.models.text_preprocessor`): tokenizer + packing."""
    from keras_pretrain import families

    family = families.get(family)
    return family.preprocessor_class(family, tokenizer)


def pack(family, segments, special, seq_length):
    """One row: (token ids, segment ids) in the family's packing, unpadded (segments trimmed round-robin, as
    the serving SavedModel does)."""
    from keras_pretrain import families

    return families.get(family).packing.pack_lists(segments, *special, seq_length=seq_length)


def attach_keras_preprocessor(model, family, tokenizer, seq_length):
    """Gives `model` the family's keras-hub preprocessor layer (strings -> inputs, packed as for training), so the
    saved `.keras` predicts from strings; False where there is none (GPT-1, whose BPE is Python and whose special
    tokens were added for the task, and multiple choice)."""
    from keras_pretrain import families

    spec = families.get(family)
    if not spec.keras_preprocessor or not preprocessor(family, tokenizer).takes_strings or not hasattr(model, "num_classes"):
        return False
    cls = spec.keras_preprocessor_class
    model.preprocessor = cls(sequence_length=seq_length) if tokenizer is None else cls(tokenizer, sequence_length=seq_length)
    return True


# === The model and its inputs ===


def num_outputs(data):
    """Outputs of the head: the label count, 1 for regression (None for multiple choice: one per choice)."""
    return {REGRESSION: 1, CHOICE: None}.get(data.problem_type, len(data.labels or []))


def build_model(preprocessor, backbone, data, seed):
    """(model, special ids for the encoders) of the task."""
    if data.problem_type == CHOICE:
        model = preprocessor.build_multiple_choice(backbone, seed)
        return model, None
    return preprocessor.build_classifier(backbone, num_outputs(data), data.pair, seed, problem_type=data.problem_type)


def encode(preprocessor, data, examples, seq_length, special):
    """Model inputs (NumPy) of `examples`."""
    if data.problem_type == CHOICE and data.task == "race" and preprocessor.name == "xlnet":
        return xlnet_race_inputs(preprocessor, examples, seq_length)
    if data.problem_type == CHOICE:
        return preprocessor.encode_choices([e.context for e in examples], [e.choices for e in examples],
                                           seq_length, special)
    columns = [[e.text_a for e in examples]]
    if data.pair:
        columns.append([e.text_b for e in examples])
    return preprocessor.encode(columns, seq_length, special)


def xlnet_race_inputs(preprocessor, examples, seq_length):
    """XLNet on RACE: xlnet-tensorflow `run_race.py`'s features (`keras_pretrain.tasks.multiple_choice.data`, style
    "xlnet": the question+option's last tokens kept, the article's head; its 128 of 512 as a quarter of
    `seq_length`)."""
    from keras_pretrain.models.text_preprocessor import token_ids
    from keras_pretrain.tasks.multiple_choice import data as choice

    texts = sorted({t for e in examples for t in (e.context, *e.choices)})
    ids = dict(zip(texts, token_ids(preprocessor.tokenizer, texts)))
    special = {key: preprocessor.special_ids()[key] for key in ("cls", "sep")}  # padding id 0, as run_race.py
    features = choice.convert_choice_examples(examples, seq_length, ids.__getitem__, "xlnet", special,
                                              max_qa_length=min(128, seq_length // 4))
    arrays = choice.to_arrays(features)
    return {name: arrays[name] for name in ("token_ids", "segment_ids", "padding_mask")}


def authors_style(family):
    """"bert" / "xlnet": the GLUE features of the authors' scripts apply to the family's packing; else None."""
    from keras_pretrain import families
    from keras_pretrain.data import packing

    packed = families.get(family).packing
    return {id(packing.BERT): "bert", id(packing.XLNET): "xlnet"}.get(id(packed))


def glue_features(family, tokenizer, data, examples, seq_length):
    """The authors' GLUE features of `examples` (`keras_pretrain.tasks.classification.features`) for our tokenizer."""
    from keras_pretrain.models.text_preprocessor import token_ids
    from keras_pretrain.tasks.classification import features

    texts = sorted({t for e in examples for t in (e.text_a, e.text_b) if t})
    ids = dict(zip(texts, token_ids(tokenizer, texts)))
    special = preprocessor(family, tokenizer).special_ids()
    return features.convert_examples_to_features(examples, data.glue_task, seq_length, ids.__getitem__,
                                                 authors_style(family), special)


def model_inputs(records, style):
    """Our inputs (`token_ids`, `segment_ids`, `padding_mask`) and the labels of the authors' features."""
    from keras_pretrain.tasks.classification import features

    arrays = features.to_arrays(records)
    mask = arrays["input_mask"]
    return {"token_ids": arrays["input_ids"].astype("int32"), "segment_ids": arrays["segment_ids"].astype("int32"),
            "padding_mask": (mask if style == "bert" else 1 - mask).astype("int32")}, np.asarray(arrays["label_ids"])


def task_inputs(family, tokenizer, text, data, examples, seq_length, special, style=None):
    """Model inputs (NumPy) of `examples`: the authors' GLUE features (their truncation) in `style` ("bert" /
    "xlnet", `authors_style`), else `encode`'s."""
    if style:
        return model_inputs(glue_features(family, tokenizer, data, examples, seq_length), style)[0]
    return encode(text, data, examples, seq_length, special)


def write_glue_features(family, tokenizer, data, seq_length, out):
    """`train.tf_record` and `eval.tf_record` in `out`: the authors' GLUE features of the training and validation
    examples (`authors_style(family)` must not be None); returns {"train": count, "eval": count}."""
    from keras_pretrain.tasks.classification import features

    os.makedirs(out, exist_ok=True)
    counts = {}
    for name, examples in (("train", data.train), ("eval", data.valid)):
        path = os.path.join(out, f"{name}.tf_record")
        counts[name] = features.write_features(glue_features(family, tokenizer, data, examples, seq_length), path)
    return counts


# === Predictions and scores ===


def logits_of(outputs):
    return np.asarray(outputs["logits"] if isinstance(outputs, dict) else outputs, "float32")


def predictions(data, logits, threshold=0.5):
    """Class ids [N], scores [N], multi-hot [N, C] (probability >= threshold) or choice ids [N]."""
    if data.problem_type == REGRESSION:
        return logits[:, 0]
    if data.problem_type == MULTI:
        return (1.0 / (1.0 + np.exp(-logits)) >= threshold).astype("int32")
    return np.argmax(logits, axis=-1).astype("int32")


def task_metrics(data, predicted, targets):
    """The task's numbers: GLUE's for a GLUE task; accuracy (classification, multiple choice); Pearson,
    Spearman and MSE (regression); micro-F1, exact match and per-label accuracy (multi-label)."""
    if data.glue_task:
        return metrics.glue_metrics(data.glue_task, predicted, targets)
    if data.problem_type == REGRESSION:
        return {"pearson": metrics.pearson(predicted, targets), "spearman": metrics.spearman(predicted, targets),
                "mse": float(np.mean((predicted - targets) ** 2))}
    if data.problem_type == MULTI:
        targets = targets.astype("int32")
        tp = int(np.sum(predicted * targets))
        wrong = int(np.sum(predicted != targets))
        return {"f1": 2 * tp / (2 * tp + wrong) if tp + wrong else 0.0,
                "exact_match": float(np.mean(np.all(predicted == targets, axis=-1))),
                "accuracy": float(np.mean(predicted == targets))}
    return {"accuracy": metrics.accuracy(predicted, targets)}


def selection_metric(data):
    """The value that picks the best epoch (GLUE: the one the papers report)."""
    if data.glue_task:
        return metrics.GLUE_METRIC[data.glue_task]
    return {REGRESSION: "pearson", MULTI: "f1"}.get(data.problem_type, "accuracy")


BASELINE = {SINGLE: "the majority class", REGRESSION: "the mean score", MULTI: "the labels of most rows",
            CHOICE: "always the first choice"}


def baseline(data, train_targets, valid_targets):
    """The task's metrics of the trivial predictor: the training majority class (the mean score, whose
    correlations count as 0; the labels seen in most training rows; choice 0)."""
    n = len(valid_targets)
    if data.problem_type == REGRESSION:
        guess = np.full(n, float(np.mean(train_targets)), "float32")
        scores = task_metrics(data, guess, valid_targets)
        # A constant is uncorrelated with anything (SciPy: undefined, nan): 0 here; the MSE is the mean's.
        return {k: (0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else v) for k, v in scores.items()}
    elif data.problem_type == MULTI:
        guess = np.tile((np.mean(train_targets, axis=0) >= 0.5).astype("int32"), (n, 1))
    else:
        guess = np.full(n, np.bincount(train_targets).argmax() if data.problem_type == SINGLE else 0, "int32")
    return task_metrics(data, guess, valid_targets)


def evaluate(model, data, x, y, batch_size, threshold=0.5):
    """The task's metrics of `model` on inputs `x` and targets `y`."""
    logits = logits_of(model.predict(x, batch_size=batch_size, verbose=0))
    return task_metrics(data, predictions(data, logits, threshold), y)


# === Training ===


def total_steps(num_examples, batch_size, epochs):
    return max(1, math.ceil(num_examples / batch_size) * epochs)


def optimizer(model, learning_rate, num_examples, batch_size, epochs, warmup_ratio=0.1, weight_decay=0.01,
              layer_decay=None):
    """AdamW, linear warmup and decay, no decay on LayerNorm and biases; optional layer-wise rate decay."""
    from keras_pretrain.optimizers import layer_decay_arguments
    from keras_pretrain.optimizers import make_optimizer

    steps = total_steps(num_examples, batch_size, epochs)
    return make_optimizer("adamw", learning_rate, steps, warmup_ratio=warmup_ratio, weight_decay=weight_decay,
                          clipnorm=1.0, **layer_decay_arguments(model, layer_decay))


def best_epoch_callback(model, x, y, data, threshold, batch_size, patience, verbose):
    """A Keras callback that scores the validation set with the task's metrics after each epoch, keeps the
    weights of the best epoch (restored when training ends) and stops after `patience` epochs without one."""
    import keras

    name = selection_metric(data)

    class BestEpoch(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.best, self.best_epoch, self.weights, self.wait, self.history = -math.inf, None, None, 0, []

        def on_epoch_end(self, epoch, logs=None):
            scores = task_metrics(data, predictions(data, logits_of(model.predict(x, batch_size=batch_size,
                                                                                   verbose=0)), threshold), y)
            self.history.append(scores)
            value = scores[name]
            value = -math.inf if value != value else value  # NaN (a constant prediction) is never best
            if logs is not None:
                logs.update({f"val_{k}": v for k, v in scores.items()})
            if verbose:
                print(f"epoch {epoch + 1}: validation {name} {scores[name]:.4f}")
            if value > self.best:
                self.best, self.best_epoch, self.wait = value, epoch + 1, 0
                self.weights = [np.array(w) for w in model.get_weights()]
            else:
                self.wait += 1
                if patience is not None and self.wait >= patience:
                    model.stop_training = True

        def on_train_end(self, logs=None):
            if self.weights is not None:
                model.set_weights(self.weights)

    return BestEpoch()


@dataclasses.dataclass
class FitResult:
    """What `fit` measured: the task's metrics on the validation set before and after training (the best epoch's
    weights), the trivial baseline's, the selection metric, the best epoch (1-based) and each epoch's scores."""

    before: dict
    after: dict
    baseline: dict
    metric: str
    best_epoch: int
    history: list


def fit(model, data, train, valid, epochs, batch_size, seed=0, threshold=0.5, patience=None, verbose=0):
    """Trains the compiled `model` on `train` = (x, y) (shuffled with `seed`), scoring `valid` = (x, y) after each
    epoch, and keeps the best epoch's weights (`best_epoch_callback`); returns a `FitResult`."""
    import tensorflow as tf

    (x, y), (x_valid, y_valid) = train, valid
    rows = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(y), seed=seed).batch(batch_size)
    valid_rows = tf.data.Dataset.from_tensor_slices((x_valid, y_valid)).batch(batch_size)
    before = evaluate(model, data, x_valid, y_valid, batch_size, threshold)
    trivial = baseline(data, y, y_valid)
    best = best_epoch_callback(model, x_valid, y_valid, data, threshold, batch_size, patience, verbose)
    model.fit(rows, validation_data=valid_rows, epochs=epochs, verbose=verbose, callbacks=[best])
    after = evaluate(model, data, x_valid, y_valid, batch_size, threshold)
    return FitResult(before, after, trivial, selection_metric(data), best.best_epoch, best.history)


# === The GLUE submission ===

SUBMISSION_NAMES = {"mnli": "MNLI-m", "mnli-mm": "MNLI-mm"}


def write_test_predictions(model, data, x, out, batch_size):
    """The GLUE submission file of the test split's inputs `x` in `out` (`<TASK>.tsv`, `index<TAB>prediction`);
    returns its path."""
    from keras_pretrain.tasks.classification import glue
    from keras_pretrain.tasks.classification.submission import write_submission

    x = {n: x[n] for n in model.input}
    logits = logits_of(model.predict(x, batch_size=batch_size, verbose=0))
    path = os.path.join(out, SUBMISSION_NAMES.get(data.task, glue.get_task(data.task).folder) + ".tsv")
    write_submission(path, predictions(data, logits), data.task)
    return path
