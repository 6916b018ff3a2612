"""The labelled data of `recipes.finetune`: a table, a GLUE task folder, SWAG or RACE.

The reading and the checks are `keras_pretrain.tasks.classification.tables` (see its docstring for the tables'
columns); its names stay importable from here. The readers below take the recipe's parser: bad input
(`TaskDataError`) stops with exit 2 and one line naming the flag, the file, the line and the problem
(`parser.error`).
"""

import contextlib
import functools
import inspect

from keras_pretrain.errors import TaskDataError
from keras_pretrain.tasks.classification import tables
from keras_pretrain.tasks.classification.tables import CHOICE  # noqa: F401 (the names of recipes.finetune_data)
from keras_pretrain.tasks.classification.tables import CHOICE_TASKS  # noqa: F401
from keras_pretrain.tasks.classification.tables import GLUE_TASKS  # noqa: F401
from keras_pretrain.tasks.classification.tables import LABEL_SEPARATOR  # noqa: F401
from keras_pretrain.tasks.classification.tables import MULTI  # noqa: F401
from keras_pretrain.tasks.classification.tables import REGRESSION  # noqa: F401
from keras_pretrain.tasks.classification.tables import SINGLE  # noqa: F401
from keras_pretrain.tasks.classification.tables import TABLE_TASKS
from keras_pretrain.tasks.classification.tables import TASKS  # noqa: F401
from keras_pretrain.tasks.classification.tables import TaskData  # noqa: F401
from keras_pretrain.tasks.classification.tables import is_class_id  # noqa: F401
from keras_pretrain.tasks.classification.tables import is_number  # noqa: F401
from keras_pretrain.tasks.classification.tables import label_array  # noqa: F401
from keras_pretrain.tasks.classification.tables import split_validation  # noqa: F401


@contextlib.contextmanager
def usage_errors(parser):
    """The library's `TaskDataError` as a usage error: `parser.error("--<argument>: <message>")`, exit 2."""
    try:
        yield
    except TaskDataError as e:
        parser.error(f"--{e.argument.replace('_', '-')}: {e}")


def argument(flag):
    return flag.removeprefix("--").replace("-", "_")


def taking_parser(function):
    """`function(parser, ..., flag="--data")` of the library's `function(..., argument="data")`: its
    `TaskDataError` a usage error (`usage_errors`)."""
    at = list(inspect.signature(function).parameters).index("argument")

    @functools.wraps(function)
    def with_parser(parser, *args, flag="--data"):
        args, flag = (args[:at], args[at]) if len(args) > at else (args, flag)
        with usage_errors(parser):
            return function(*args, argument(flag))

    return with_parser


read_rows = taking_parser(tables.read_rows)
text_columns = taking_parser(tables.text_columns)
read_table = taking_parser(tables.read_table)
check_classification_labels = taking_parser(tables.check_classification_labels)
check_scores = taking_parser(tables.check_scores)
check_multi_labels = taking_parser(tables.check_multi_labels)


def label_names(parser, data, path, valid_path=None, held_out=""):
    with usage_errors(parser):
        return tables.label_names(data, path, valid_path, held_out)


def read_table_task(parser, args):
    with usage_errors(parser):
        return tables.read_table_task(args.task, args.data, args.validation_data,
                                      getattr(args, "validation_fraction", 0.2), getattr(args, "seed", 0))


def read_glue_task(parser, args):
    with usage_errors(parser):
        return tables.read_glue_task(args.task, args.data_dir)


def read_choice_task(parser, args):
    with usage_errors(parser):
        return tables.read_choice_task(args.task, args.data_dir)


def read_task(parser, args):
    """The `TaskData` of `--task` (`keras_pretrain.tasks.classification.tables.read_task`)."""
    if args.task in TABLE_TASKS:
        return read_table_task(parser, args)
    if not args.data_dir:
        parser.error(f"--task {args.task} reads a task folder: give --data-dir")
    with usage_errors(parser):
        return tables.read_task(args.task, data_dir=args.data_dir)
