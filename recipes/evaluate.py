"""Score predictions against gold labels, one benchmark per subcommand; prints one JSON line.

    python -m recipes.evaluate glue --task mrpc --data glue_data/MRPC/dev.tsv --predictions MRPC.tsv
    {"f1": 0.8912, "accuracy": 0.8480, "mean": 0.8696}

`glue`: `--predictions` is a GLUE submission file (`index<TAB>prediction`, one row per example of `--data`
in file order; the task's label strings, or floats for STS-B), as
`keras_pretrain.tasks.classification.submission.write_submission` writes it; `--data` is the task's dev file,
read as the authors' processors (`keras_pretrain.tasks.classification.glue.read_file`). The values are those of
`keras_pretrain.tasks.classification.metrics.glue_metrics` (a correlation that is undefined, constant
predictions, prints null).

`squad`: the official SQuAD evaluation (`keras_pretrain.tasks.question_answering.evaluation`) of
`--predictions` (a `predictions.json`: question id -> answer text, as
`keras_pretrain.tasks.question_answering.predictions` writes it) on the `--data` dev file. A v1.1 file prints
{"exact_match", "f1"}; a v2.0 file (some question "is_impossible") prints the v2.0 dict ("exact", "f1", "total",
"HasAns_*", "NoAns_*") and, with `--na-probs` (a `null_odds.json`), "best_exact", "best_f1" and their
thresholds. As the official scripts, v1.1 scores a
question without a prediction 0 and v2.0 skips it (both say so on stderr).

    python -m recipes.evaluate squad --data dev-v2.0.json --predictions predictions.json --na-probs null_odds.json

`conll`: entity-level precision, recall and F1 of a conlleval predictions file (`token gold predicted` a line,
a blank line between sentences; the last two columns are read as the gold and the predicted tag, as
`keras_pretrain.tasks.token_classification.conll.write_predictions` writes them), overall (micro-averaged) and
per entity type ("support": the type's gold entities), as fractions. The default chunking is conlleval's and equals seqeval's
default mode (an I- tag without a B- begins an entity); `--strict` counts well-formed IOB2 entities only and
equals seqeval's `mode="strict", scheme=IOB2` (E- and S- tags are then an error).

    python -m recipes.evaluate conll --predictions predictions.txt
    {"precision": 0.9112, "recall": 0.9187, "f1": 0.9149, "per_type": {"LOC": {"precision": ..., "support": 1668}, ...}}

Bad input (a missing file, a bad header, an unknown label, a score that is not a number, fewer or more
predictions than examples; for SQuAD a file that is not the expected JSON; for CoNLL a line without 3 columns,
a tag that is not an IOB tag, an E- or S- tag with `--strict`) prints one line naming the file, the line and
the problem, and exits with status 2.
"""

import functools
import json
import math
import sys

from recipes import common
from recipes.common import HelpFormatter


def add_glue(subparsers):
    from keras_pretrain.tasks.classification.glue import TASKS

    parser = subparsers.add_parser("glue", help="GLUE dev-set metrics of a submission file",
                                   description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--task", required=True, help=f"the GLUE task: {', '.join(TASKS)}")
    parser.add_argument("--data", required=True, help="the task's dev .tsv file (gold labels)")
    parser.add_argument("--predictions", required=True, help="the submission .tsv file (index<TAB>prediction)")
    parser.set_defaults(run=functools.partial(run_glue, parser))
    return parser


def add_squad(subparsers):
    parser = subparsers.add_parser("squad", help="SQuAD v1.1 / v2.0 dev-set metrics of a predictions.json",
                                   description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--data", required=True, help="the SQuAD dev .json file (gold answers)")
    parser.add_argument("--predictions", required=True, help="the predictions .json (question id -> answer)")
    parser.add_argument("--na-probs", help="v2.0: the null_odds .json (question id -> no-answer score)")
    parser.set_defaults(run=functools.partial(run_squad, parser))
    return parser


def add_conll(subparsers):
    parser = subparsers.add_parser("conll", help="entity-level P/R/F1 of a conlleval predictions file (NER)",
                                   description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--predictions", required=True,
                        help="the predictions file (token gold predicted, a blank line between sentences)")
    parser.add_argument("--strict", action="store_true",
                        help="count well-formed IOB2 entities only (seqeval's mode=\"strict\", scheme=IOB2)")
    parser.set_defaults(run=functools.partial(run_conll, parser))
    return parser


def build_parser():
    parser = common.ArgumentParser(prog="python -m recipes.evaluate", description=__doc__,
                                   formatter_class=HelpFormatter)
    subparsers = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    add_glue(subparsers)
    add_squad(subparsers)
    add_conll(subparsers)
    return parser


def read_or_exit(parser, flag, read, *args):
    """`read(*args)`; a `CorpusFormatError` (which names the file and line) exits 2 as `flag`'s error."""
    from keras_pretrain.errors import CorpusFormatError

    try:
        return read(*args)
    except CorpusFormatError as e:
        parser.error(f"{flag}: {e}")


def run_glue(parser, args):
    """The `glue_metrics` of `args.predictions` against the labels of `args.data`; errors exit 2 via `parser`."""
    from keras_pretrain.tasks.classification import glue
    from keras_pretrain.tasks.classification.metrics import glue_metrics
    from keras_pretrain.tasks.classification.submission import read_submission

    try:
        task = glue.get_task(args.task)
    except ValueError as e:
        parser.error(f"--task: {e}")
    examples = read_or_exit(parser, "--data", glue.read_file, task, args.data, "dev")
    predictions = read_or_exit(parser, "--predictions", read_submission, args.predictions, task)
    if len(predictions) < len(examples):
        parser.error(f"--predictions: {args.predictions}, line {len(predictions) + 2}: the file ends after "
                     f"{len(predictions)} predictions, but {args.data} has {len(examples)} examples")
    if len(predictions) > len(examples):  # line 1 is the header
        parser.error(f"--predictions: {args.predictions}, line {len(examples) + 2}: one prediction more than "
                     f"the {len(examples)} examples of {args.data} ({len(predictions)} predictions)")
    labels = [e.label if task.is_regression else task.labels.index(e.label) for e in examples]
    return glue_metrics(task.name, predictions, labels)


def run_squad(parser, args):
    """The official SQuAD metrics of `args.predictions` on `args.data`; errors exit 2 via `parser`."""
    from keras_pretrain.tasks.question_answering import evaluation as squad_eval

    dataset = read_or_exit(parser, "--data", squad_eval.read_dataset, args.data)
    predictions = read_or_exit(parser, "--predictions", squad_eval.read_predictions, args.predictions)
    na_probs = None
    if args.na_probs is not None:
        na_probs = read_or_exit(parser, "--na-probs", squad_eval.read_na_probs, args.na_probs)
    if not squad_eval.is_v2(dataset):
        if na_probs is not None:
            parser.error(f"--na-probs: {args.na_probs}: {args.data} is a SQuAD v1.1 file (no unanswerable "
                         "question), which has no no-answer probabilities")
        if not any(True for _ in squad_eval.questions(dataset)):
            parser.error(f"--data: {args.data}: the file has no question")
        return squad_eval.evaluate_v1(dataset, predictions)
    if not any(qa["id"] in predictions for qa in squad_eval.questions(dataset)):
        parser.error(f"--predictions: {args.predictions}: no prediction for any question of {args.data}")
    if na_probs is not None:
        lacking = [qa["id"] for qa in squad_eval.questions(dataset) if qa["id"] in predictions
                   and qa["id"] not in na_probs]
        if lacking:
            parser.error(f"--na-probs: {args.na_probs}: no no-answer probability for question {lacking[0]!r} "
                         f"({len(lacking)} predicted questions of {args.data} without one)")
    return squad_eval.evaluate_v2(dataset, predictions, na_probs)


def run_conll(parser, args):
    """The `entity_scores` of the gold and predicted tags of `args.predictions`; errors exit 2 via `parser`."""
    from keras_pretrain.tasks.token_classification.conll import read_predictions
    from keras_pretrain.tasks.token_classification.metrics import entity_scores

    _, gold, predicted = read_or_exit(parser, "--predictions", read_predictions, args.predictions, args.strict)
    return entity_scores(gold, predicted, strict=args.strict)


def _json_values(value):
    """`value` with every NaN (an undefined correlation) as None, nested dicts included."""
    if isinstance(value, dict):
        return {k: _json_values(v) for k, v in value.items()}
    return None if isinstance(value, float) and math.isnan(value) else value


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    result = args.run(args)
    print(json.dumps(_json_values(result)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
