"""Score predictions against gold labels, one benchmark per subcommand; prints one JSON line.

    python -m recipes.evaluate glue --task mrpc --data glue_data/MRPC/dev.tsv --predictions MRPC.tsv
    {"f1": 0.8912, "accuracy": 0.8480, "mean": 0.8696}

`glue`: `--predictions` is a GLUE submission file (`index<TAB>prediction`, one row per example of `--data`
in file order; the task's label strings, or floats for STS-B), as
`keras_pretrain.data.submission.write_submission` writes it; `--data` is the task's dev file, read as the
authors' processors (`keras_pretrain.data.glue.read_file`). The values are those of
`keras_pretrain.metrics.glue_metrics` (a correlation that is undefined, constant predictions, prints null).

Bad input (a missing file, a bad header, an unknown label, a score that is not a number, fewer or more
predictions than examples) prints one line naming the file, the line and the problem, and exits with status 2.
"""

import argparse
import functools
import json
import math
import sys

from recipes.common import HelpFormatter


def add_glue(subparsers):
    from keras_pretrain.data.glue import TASKS

    parser = subparsers.add_parser("glue", help="GLUE dev-set metrics of a submission file",
                                   description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--task", required=True, help=f"the GLUE task: {', '.join(TASKS)}")
    parser.add_argument("--data", required=True, help="the task's dev .tsv file (gold labels)")
    parser.add_argument("--predictions", required=True, help="the submission .tsv file (index<TAB>prediction)")
    parser.set_defaults(run=functools.partial(run_glue, parser))
    return parser


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m recipes.evaluate", description=__doc__,
                                     formatter_class=HelpFormatter)
    subparsers = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    add_glue(subparsers)
    return parser


def run_glue(parser, args):
    """The `glue_metrics` of `args.predictions` against the labels of `args.data`; errors exit 2 via `parser`."""
    from keras_pretrain.data import glue
    from keras_pretrain.data.submission import read_submission
    from keras_pretrain.errors import CorpusFormatError
    from keras_pretrain.metrics import glue_metrics

    try:
        task = glue.get_task(args.task)
    except ValueError as e:
        parser.error(f"--task: {e}")
    try:
        examples = glue.read_file(task, args.data, "dev")
    except CorpusFormatError as e:
        parser.error(f"--data: {e}")
    try:
        predictions = read_submission(args.predictions, task)
    except CorpusFormatError as e:
        parser.error(f"--predictions: {e}")
    if len(predictions) < len(examples):
        parser.error(f"--predictions: {args.predictions}, line {len(predictions) + 2}: the file ends after "
                     f"{len(predictions)} predictions, but {args.data} has {len(examples)} examples")
    if len(predictions) > len(examples):  # line 1 is the header
        parser.error(f"--predictions: {args.predictions}, line {len(examples) + 2}: one prediction more than "
                     f"the {len(examples)} examples of {args.data} ({len(predictions)} predictions)")
    labels = [e.label if task.is_regression else task.labels.index(e.label) for e in examples]
    return glue_metrics(task.name, predictions, labels)


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    result = args.run(args)
    print(json.dumps({k: None if math.isnan(v) else v for k, v in result.items()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
