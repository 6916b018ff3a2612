"""ERNIE 2.0-style continual multi-task learning.

ERNIE 2.0 adds pretraining tasks one after another; when task k arrives the model is trained on
tasks 1..k together (the earlier tasks stay in the mix), and a task-type embedding tells the shared
encoder which task an input belongs to. Training only on the newest task ("sequential") instead
tends to overwrite what earlier tasks needed (catastrophic forgetting). `continual_multitask_training`
runs either schedule on an `ErnieBackbone(use_task_id=True)` and reports every task's accuracy after
every stage.
"""

import dataclasses

import keras
import numpy as np

from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.initializers import kernel_initializer
from keras_pretrain.losses import classification_loss


@dataclasses.dataclass
class MultiTask:
    """One task of the schedule: a sequence-classification problem.

    Args:
        name: str, also the name of its output head.
        num_classes: int.
        train: `(x, y)`: x a dict of int arrays `token_ids`, `segment_ids`, `padding_mask` [N, T]
            (`task_type_ids` is filled in), y int labels [N].
        test: `(x, y)` held out, for the accuracies.
    """

    name: str
    num_classes: int
    train: tuple
    test: tuple


def build_multitask_model(backbone, tasks, shared_head=False):
    """The shared encoder with one classification head per task on the pooled output.

    Args:
        backbone: an `ErnieBackbone` with `use_task_id=True`.
        tasks: list of `MultiTask`.
        shared_head: bool. One head for all tasks (they must have the same number of classes): the
            task embedding is then the only thing telling tasks apart.

    Returns:
        A functional `keras.Model` whose outputs are a dict `task name -> logits` (or the single
        shared logits).
    """
    if not getattr(backbone, "use_task_id", False):
        raise ConfigError("Continual multi-task learning needs an ErnieBackbone(use_task_id=True).")
    if len(tasks) > backbone.task_type_vocab_size:
        raise ConfigError(
            f"{len(tasks)} tasks but the backbone has task_type_vocab_size="
            f"{backbone.task_type_vocab_size}."
        )
    inputs = dict(backbone.input)
    pooled = backbone(inputs)["pooled_output"]
    init = lambda: kernel_initializer(backbone.initializer_range)  # noqa: E731
    if shared_head:
        sizes = {t.num_classes for t in tasks}
        if len(sizes) != 1:
            raise ConfigError(f"shared_head needs tasks with one number of classes, found {sorted(sizes)}.")
        outputs = keras.layers.Dense(sizes.pop(), kernel_initializer=init(), name="shared_head")(pooled)
    else:
        outputs = {
            t.name: keras.layers.Dense(t.num_classes, kernel_initializer=init(), name=t.name)(pooled)
            for t in tasks
        }
    return keras.Model(inputs, outputs, name="ernie_multitask")


def _with_task_id(x, task_id):
    x = dict(x)
    x["task_type_ids"] = np.full(np.shape(x["token_ids"]), task_id, "int32")
    return x


def _stage_data(tasks, active, shared_head):
    """Concatenate the active tasks; per-head labels with weight 0 outside a head's own task."""
    xs, ys, ws = [], {t.name: [] for t in tasks}, {t.name: [] for t in tasks}
    labels = []
    for index, task in enumerate(tasks):
        if index not in active:
            continue
        x, y = task.train
        n = len(y)
        xs.append(_with_task_id(x, index))
        labels.append(np.asarray(y))
        for other in tasks:
            own = other.name == task.name
            ys[other.name].append(np.asarray(y) if own else np.zeros(n, "int32"))
            ws[other.name].append(np.full(n, 1.0 if own else 0.0, "float32"))
    x = {k: np.concatenate([d[k] for d in xs]) for k in xs[0]}
    if shared_head:
        return x, np.concatenate(labels), None
    y = {k: np.concatenate(v) for k, v in ys.items()}
    w = {k: np.concatenate(v) for k, v in ws.items()}
    return x, y, w


def evaluate_tasks(model, tasks, shared_head=False, upto=None):
    """Accuracy of each task (its own head and task id) on its test data."""
    result = {}
    for index, task in enumerate(tasks[:upto]):
        x, y = task.test
        logits = model.predict(_with_task_id(x, index), verbose=0)
        if not shared_head:
            logits = logits[task.name]
        result[task.name] = float(np.mean(np.argmax(np.asarray(logits), -1) == np.asarray(y)))
    return result


def continual_multitask_training(
    backbone,
    tasks,
    epochs_per_stage=10,
    batch_size=32,
    learning_rate=1e-3,
    sequential=False,
    shared_head=False,
    seed=0,
    verbose=0,
):
    """Adds `tasks` one after another, ERNIE 2.0 style.

    Stage k (k = 1..len(tasks)) trains for `epochs_per_stage` epochs on the union of tasks 1..k
    (continual multi-task learning) or, with `sequential=True`, on task k alone (the baseline that
    forgets). Each input carries its task's id in `task_type_ids`.

    Args:
        backbone: an `ErnieBackbone(use_task_id=True)`, `task_type_vocab_size >= len(tasks)`.
        tasks: list of `MultiTask`.
        epochs_per_stage: int.
        batch_size: int.
        learning_rate: float (Adam; a fresh optimizer per stage).
        sequential: bool. Train on the newest task only.
        shared_head: bool. See `build_multitask_model`.
        seed: int, shuffling.
        verbose: Keras verbosity.

    Returns:
        `(model, accuracies)`: the multi-task model and a list, one dict per stage, of the test
        accuracy of every task seen so far.
    """
    model = build_multitask_model(backbone, tasks, shared_head)
    if shared_head:
        loss = classification_loss()
    else:
        loss = {t.name: classification_loss(f"{t.name}_loss") for t in tasks}
    accuracies = []
    for stage in range(1, len(tasks) + 1):
        active = {stage - 1} if sequential else set(range(stage))
        x, y, w = _stage_data(tasks, active, shared_head)
        model.compile(optimizer=keras.optimizers.Adam(learning_rate), loss=loss)
        keras.utils.set_random_seed(seed + stage)
        model.fit(x, y, sample_weight=w, epochs=epochs_per_stage, batch_size=batch_size,
                  shuffle=True, verbose=verbose)
        accuracies.append(evaluate_tasks(model, tasks, shared_head, upto=stage))
    return model, accuracies
