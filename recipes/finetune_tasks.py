"""The task side of `recipes.finetune`: `keras_pretrain.tasks.classification.training` (inputs, the model,
predictions, the task's metrics, the baseline, the best epoch), whose names stay importable from here, and the
optimizer of the recipe's arguments."""

from keras_pretrain.tasks.classification import training
from keras_pretrain.tasks.classification.training import BASELINE  # noqa: F401 (the names of recipes.finetune_tasks)
from keras_pretrain.tasks.classification.training import TINY_HIDDEN  # noqa: F401
from keras_pretrain.tasks.classification.training import baseline  # noqa: F401
from keras_pretrain.tasks.classification.training import best_epoch_callback  # noqa: F401
from keras_pretrain.tasks.classification.training import build_model  # noqa: F401
from keras_pretrain.tasks.classification.training import default_learning_rate  # noqa: F401
from keras_pretrain.tasks.classification.training import default_seq_length  # noqa: F401
from keras_pretrain.tasks.classification.training import encode  # noqa: F401
from keras_pretrain.tasks.classification.training import is_tiny  # noqa: F401
from keras_pretrain.tasks.classification.training import logits_of  # noqa: F401
from keras_pretrain.tasks.classification.training import num_outputs  # noqa: F401
from keras_pretrain.tasks.classification.training import predictions  # noqa: F401
from keras_pretrain.tasks.classification.training import selection_metric  # noqa: F401
from keras_pretrain.tasks.classification.training import task_metrics  # noqa: F401
from keras_pretrain.tasks.classification.training import total_steps  # noqa: F401
from keras_pretrain.tasks.classification.training import xlnet_race_inputs  # noqa: F401


def optimizer(model, args, num_examples):
    """`training.optimizer` of the recipe's `--learning-rate`, `--batch-size`, `--epochs`, `--warmup-ratio`,
    `--weight-decay` and `--layer-decay`."""
    return training.optimizer(model, args.learning_rate, num_examples, args.batch_size, args.epochs,
                              warmup_ratio=args.warmup_ratio, weight_decay=args.weight_decay,
                              layer_decay=args.layer_decay)
