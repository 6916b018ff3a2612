"""`recipes.finetune --task squad-v1.1 | squad-v2.0`: extractive question answering as bert's `run_squad.py`.

    python -m recipes.finetune --from RUN --task squad-v1.1 --train-file train-v1.1.json \\
        --predict-file dev-v1.1.json --out squad_run

The recipe's arguments and its run; the SQuAD code is the library's, `keras_pretrain.tasks.question_answering`
(`qa` below), and the tokenizer's SQuAD pipeline (`qa.pipelines.for_tokenizer`, the serving export's too) picks
the features, the head and the post-processing. Reads the SQuAD files as `run_squad.py` does
(`qa.squad.read_squad`: training answers that cannot be found in the context are skipped with a message), builds
its features (doc-stride windows of `qa.windows`, `_improve_answer_span`, `_check_is_max_context`, the question
cut at `--max-query-length`: `qa.features_wordpiece.convert_examples_to_features`), fine-tunes
`SpanQuestionAnswering` (start / end logits on the token states), and writes to `--out`:

- `predictions.json`, `nbest_predictions.json` and (v2.0) `null_odds.json`, as `run_squad.py`'s
  `write_predictions` on the same logits (`qa.predictions`);
- `raw_results.jsonl`, the logits used (one JSON object per feature: `unique_id`, `start_logits`,
  `end_logits`), so the original post-processing can be re-run on them;
- `eval_results.json`, the official evaluation of the predictions (`qa.evaluation`: v1.1
  `exact_match` / `f1`; v2.0 `exact`, `f1`, `HasAns_*`, `NoAns_*`, `best_*`), what `python -m recipes.evaluate
  squad` prints;
- `qa.keras`, the fine-tuned model; `summary.json`;
- `qa/1/`, the serving SavedModel (TensorFlow Serving's layout; skipped with `--no-export`): `question` and
  `context` strings in; `answer`, its character offsets `start` / `end` in the context, `score` and (v2.0)
  `no_answer_score` out, the same answers as `predictions.json` (`qa.serving`).

`--features-only` writes `train.tf_record` and `eval.tf_record` (`FeatureWriter`'s names) and stops. The
WordPiece families (BERT, ERNIE, DistilBERT, and runs whose vocabulary is WordPiece) are supported; ALBERT's
SentencePiece models for v1.1 through albert's own `squad_utils` pipeline (`recipes.finetune_squad_albert`: its
features, its `write_predictions_v1`; served from strings, its character alignment in-graph); XLNet (v1.1, v2.0)
and ALBERT v2.0 with the authors' answer-class model, features and `write_predictions`
(`recipes.finetune_squad_beam`, run by this module; both served from strings); RoBERTa's byte-level BPE with the same
algorithm on its layout (`<s> Q </s></s> D </s>`, one segment, each context word tokenized after a space as
transformers' SQuAD processor does; the span text decoded from the bytes before `get_final_text`; served from
strings as the WordPiece families).
"""

import json
import os

from recipes import common
from recipes import finetune_squad_albert as albert
from recipes import finetune_squad_beam as beam

TASKS = {"squad-v1.1": "v1.1", "squad-v2.0": "v2.0"}
DEFAULT_SEQ_LENGTH = 384


def add_arguments(parser):
    parser.add_argument("--train-file", default=None, help="SQuAD: the training JSON (train-v1.1.json, train-v2.0.json); NER: the training CoNLL file")
    parser.add_argument("--predict-file", default=None, help="SQuAD: the JSON to predict and score (dev-v1.1.json, dev-v2.0.json); NER: the CoNLL file to predict and score")
    parser.add_argument("--doc-stride", type=int, default=128, help="SQuAD: the step between context windows")
    parser.add_argument("--max-query-length", type=int, default=64, help="SQuAD: question tokens kept")
    parser.add_argument("--n-best-size", type=int, default=20, help="SQuAD: candidate answers per question")
    parser.add_argument("--max-answer-length", type=int, default=30, help="SQuAD: the longest answer, in tokens")
    parser.add_argument("--null-score-diff-threshold", type=float, default=0.0, help="SQuAD v2.0: predict no answer when the null score beats the best span by more than this")


def check_arguments(parser, args):
    if not args.train_file or not args.predict_file:
        parser.error(f"--task {args.task} needs --train-file and --predict-file (SQuAD JSON files)")
    for flag, path in (("--train-file", args.train_file), ("--predict-file", args.predict_file)):
        if not os.path.isfile(path):
            parser.error(f"{flag}: no such file {path!r}")
    for name in ("doc_stride", "max_query_length", "n_best_size", "max_answer_length"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")


def read_examples(parser, args):
    """(train examples, predict examples, the predict file's dataset for the evaluation)."""
    from keras_pretrain.errors import CorpusFormatError
    from keras_pretrain.tasks.question_answering import evaluation
    from keras_pretrain.tasks.question_answering import squad

    version = TASKS[args.task]
    try:
        train = squad.read_squad(args.train_file, version, is_training=True)
        predict = squad.read_squad(args.predict_file, version, is_training=False)
        dataset = evaluation.read_dataset(args.predict_file)
    except CorpusFormatError as e:
        parser.error(str(e))
    if not train:
        parser.error(f"--train-file: {args.train_file}: no training question with an answer found in its context")
    if not predict:
        parser.error(f"--predict-file: {args.predict_file}: no question")
    return train, predict, dataset


def special_ids(parser, args, family, tokenizer):
    """The `[CLS]`, `[SEP]`, `[PAD]` ids of a WordPiece tokenizer, RoBERTa's `<s>`, `</s>`, `<pad>` and its
    layout for byte-level BPE (as the tokenizer's SQuAD pipeline declares them); other tokenizers stop the run."""
    from keras_pretrain.tasks.question_answering import pipelines

    pipeline = pipelines.for_tokenizer(tokenizer)
    if pipeline is None or pipeline.raw_context:
        parser.error(f"--task {args.task}: {family} ({type(tokenizer).__name__}) is not wired for SQuAD yet: the "
                     "recipe builds run_squad.py's WordPiece features (BERT, ERNIE, DistilBERT, WordPiece runs)")
    ids = {name: tokenizer.token_to_id(token) for name, token in pipeline.special}
    if pipeline is pipelines.WORDPIECE:
        return ids  # run_squad's layout: the features' defaults (one [SEP] between, the doc in segment 1)
    ids.update(separators=pipeline.separators, doc_segment=pipeline.doc_segment)
    missing = [name for name, value in ids.items() if value is None]
    if missing:
        parser.error(f"--task {args.task}: the BPE vocabulary has no {', '.join(missing)} token")
    return ids


def check_lengths(parser, args, seq_length, separators=1):
    """Stops the run when the windows leave no room for the context or would skip text (`qa.windows`)."""
    from keras_pretrain.tasks.question_answering import windows

    room, problem = windows.check_lengths(seq_length, args.max_query_length, args.doc_stride, 2 + separators)
    if problem == windows.NO_ROOM:  # [CLS] question [SEP] doc [SEP]
        parser.error(f"--max-query-length {args.max_query_length} leaves no room for the context in "
                     f"--seq-length {seq_length} (at most {seq_length - 4})")
    if problem == windows.STRIDE_TOO_LONG:
        parser.error(f"--doc-stride {args.doc_stride} exceeds the {room} context tokens of a window "
                     f"(--seq-length {seq_length} - --max-query-length {args.max_query_length} - "
                     f"{2 + separators}): windows would skip text")


def features(examples, tokenizer, args, seq_length, special, is_training):
    """run_squad.py's features, their `tokens` as the vocabulary's strings (what `write_predictions` joins)."""
    import dataclasses

    from keras_pretrain.tasks.question_answering import features_wordpiece
    from keras_pretrain.tasks.question_answering import pipelines

    prefix_space = pipelines.for_tokenizer(tokenizer).prefix_space
    tokenize = features_wordpiece.word_tokenizer(tokenizer, examples, prefix_space=prefix_space)
    result = features_wordpiece.convert_examples_to_features(
        examples, tokenize, seq_length, args.doc_stride, args.max_query_length,
        is_training=is_training, special=special)
    vocabulary = id_tokens(tokenizer)
    return [dataclasses.replace(f, tokens=tuple(vocabulary[i] for i in f.tokens)) for f in result]


def id_tokens(tokenizer):
    """The token of each id, in id order (keras-hub's BPE `get_vocabulary()` is the vocabulary's key order)."""
    return [tokenizer.id_to_token(i) for i in range(tokenizer.vocabulary_size())]


def raw_results(unique_ids, start_logits, end_logits):
    """`run_squad.py`'s RawResult rows (unique_id, start_logits, end_logits as float lists)."""
    import collections

    result = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])
    return [result(int(u), [float(x) for x in s], [float(x) for x in e])
            for u, s, e in zip(unique_ids, start_logits, end_logits)]


def write_raw_results(path, results):
    with open(path, "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps({"unique_id": r.unique_id, "start_logits": r.start_logits,
                                "end_logits": r.end_logits}) + "\n")


def main(parser, args, out, family, backbone, tokenizer, seq_length):
    """The SQuAD run (see the module docstring); returns its summary."""
    from keras_pretrain.tasks.question_answering import pipelines

    pipeline = pipelines.for_tokenizer(tokenizer)
    layout = beam.beam_layout(pipeline, TASKS[args.task])
    if layout:  # XLNet, ALBERT v2.0 (SentencePiece): the authors' answer-class model and pipelines
        return answer_class_run(parser, args, out, family, backbone, tokenizer, seq_length, layout)
    return span_run(parser, args, out, family, backbone, tokenizer, seq_length, pipeline)


def span_run(parser, args, out, family, backbone, tokenizer, seq_length, pipeline):
    """The span head's run: run_squad.py's pipeline, or albert squad_utils' v1.1 one for ALBERT's SentencePiece."""
    import numpy as np

    from keras_pretrain.tasks.question_answering import features_wordpiece
    from keras_pretrain.tasks.question_answering import predictions as qa_predictions
    from keras_pretrain.tasks.question_answering.span_head import for_backbone
    from recipes import finetune_tasks

    train, predict, dataset = read_examples(parser, args)  # run_squad's reader checks the files either way
    sentencepiece = pipeline is not None and pipeline.raw_context
    if sentencepiece:  # ALBERT: albert squad_utils' reader, features and predictions
        albert.check(parser, args, tokenizer)
        train, predict = albert.read(parser, args)
    else:
        special = special_ids(parser, args, family, tokenizer)
    check_lengths(parser, args, seq_length, 1 if sentencepiece else special.get("separators", 1))
    if sentencepiece:
        train_features = albert.features(train, tokenizer, args, seq_length, True)
        predict_features = albert.features(predict, tokenizer, args, seq_length, False)
    else:
        train_features = features(train, tokenizer, args, seq_length, special, True)
        predict_features = features(predict, tokenizer, args, seq_length, special, False)
    version = TASKS[args.task]
    print(f"SQuAD {version}: {len(train)} training questions -> {len(train_features)} windows, {len(predict)} "
          f"questions to predict -> {len(predict_features)} windows (length {seq_length}, stride {args.doc_stride})")
    os.makedirs(out, exist_ok=True)
    if args.features_only:
        write = albert.write_features if sentencepiece else features_wordpiece.write_features
        return features_only(out, family, args, seq_length, write, train_features, predict_features)

    model = for_backbone(backbone)
    x, y = features_wordpiece.to_arrays(train_features)
    x = {n: x[n] for n in model.input}
    targets = {"start_logits": y["start_positions"], "end_logits": y["end_positions"]}
    model.compile(optimizer=finetune_tasks.optimizer(model, args, len(train_features)))
    print(f"fine-tuning {family} ({type(backbone).__name__}) for span QA; rate {args.learning_rate:g}")
    import tensorflow as tf

    # tf.data shuffles each epoch (keras-hub tasks turn NumPy input into an unshuffled dataset: `shuffle=True`
    # would be ignored).
    train = tf.data.Dataset.from_tensor_slices((x, targets)).shuffle(len(train_features), seed=args.seed)
    model.fit(train.batch(args.batch_size), epochs=args.epochs, verbose=args.verbose)

    inputs, _ = features_wordpiece.to_arrays(predict_features)
    outputs = model.predict({n: inputs[n] for n in model.input}, batch_size=args.batch_size, verbose=0)
    results = raw_results(inputs["unique_ids"], np.asarray(outputs["start_logits"]), np.asarray(outputs["end_logits"]))
    write_raw_results(os.path.join(out, "raw_results.jsonl"), results)
    if sentencepiece:
        predictions, nbest, null_odds = albert.predictions(predict, predict_features, results, args)
    else:
        predictions, nbest, null_odds = qa_predictions.write_predictions(
            predict, predict_features, results, args.n_best_size, args.max_answer_length,
            do_lower_case(tokenizer), version == "v2.0", args.null_score_diff_threshold, pipeline.tokens_to_text)
    return finish(out, family, args, model, tokenizer, seq_length, dataset, predictions, nbest, null_odds or None,
                  {"train_windows": len(train_features), "predict_windows": len(predict_features)})


def answer_class_run(parser, args, out, family, backbone, tokenizer, seq_length, layout):
    """The answer-class head's run in `layout` ("xlnet", "albert": `beam.beam_layout`)."""
    import tensorflow as tf

    from keras_pretrain.tasks.question_answering.beam_head import BeamQuestionAnswering
    from recipes import finetune_tasks

    _, _, dataset = read_examples(parser, args)  # run_squad's checks of the files (v2.0 data under v1.1, ...)
    if layout == "albert":
        albert.check(parser, args, tokenizer, v2=True)
    train, predict = albert.read(parser, args)  # the reader both authors share
    check_lengths(parser, args, seq_length)
    train_features = beam.features(layout, train, tokenizer, args, seq_length, True)
    predict_features = beam.features(layout, predict, tokenizer, args, seq_length, False)
    version = TASKS[args.task]
    print(f"SQuAD {version} ({layout}'s run_squad, answer-class model): {len(train)} training questions -> "
          f"{len(train_features)} windows, {len(predict)} questions to predict -> {len(predict_features)} windows "
          f"(length {seq_length}, stride {args.doc_stride})")
    os.makedirs(out, exist_ok=True)
    if args.features_only:
        def write(features, path, is_training):
            return beam.write_features(layout, features, path, is_training)

        return features_only(out, family, args, seq_length, write, train_features, predict_features)

    model = BeamQuestionAnswering(backbone)
    x, y, _ = beam.to_arrays(layout, train_features)
    model.compile(optimizer=finetune_tasks.optimizer(model, args, len(train_features)))
    print(f"fine-tuning {family} ({type(backbone).__name__}) with the answer-class head; rate "
          f"{args.learning_rate:g}")
    rows = tf.data.Dataset.from_tensor_slices({**x, **y}).shuffle(len(train_features), seed=args.seed)
    model.fit(rows.batch(args.batch_size), epochs=args.epochs, verbose=args.verbose)

    x, _, unique_ids = beam.to_arrays(layout, predict_features)
    outputs = model.predict(x, batch_size=args.batch_size, verbose=0)
    results = beam.raw_results(outputs, unique_ids)
    beam.write_raw_results(os.path.join(out, "raw_results.jsonl"), results)
    predictions, nbest, null_odds = beam.predictions(layout, predict, predict_features, results, args, model)
    null_odds = null_odds if version == "v2.0" else None
    return finish(out, family, args, model, tokenizer, seq_length, dataset, predictions, nbest, null_odds,
                  {"train_windows": len(train_features), "predict_windows": len(predict_features)},
                  {"head": "answer_class"})


def features_only(out, family, args, seq_length, write, train_features, predict_features):
    """`--features-only`: `train.tf_record` and `eval.tf_record` written by `write`; the summary."""
    counts = {"train": write(train_features, os.path.join(out, "train.tf_record"), True),
              "eval": write(predict_features, os.path.join(out, "eval.tf_record"), False)}
    print(f"wrote {counts['train']} train and {counts['eval']} eval records to {out}")
    summary = {"family": family, "task": args.task, "features": counts, "seq_length": seq_length}
    common.write_json(os.path.join(out, "summary.json"), summary)
    return summary


def finish(out, family, args, model, tokenizer, seq_length, dataset, predictions, nbest, null_odds, windows,
           extra=None):
    """The run's files after its predictions (see the module docstring) and its summary."""
    from keras_pretrain.tasks.question_answering import evaluation
    from keras_pretrain.tasks.question_answering.predictions import write_prediction_files

    version = TASKS[args.task]
    write_prediction_files(out, predictions, nbest, null_odds)
    scores = evaluation.evaluate(dataset, predictions, null_odds)
    common.write_json(os.path.join(out, "eval_results.json"), scores)
    print("eval results: " + json.dumps(scores))
    keras_path = os.path.join(out, "qa.keras")
    model.save(keras_path)
    print(f"saved: {keras_path}; predictions.json, nbest_predictions.json"
          + (", null_odds.json" if null_odds else "") + f", raw_results.jsonl in {out}")
    serving = None
    if not args.no_export:
        serving = export_serving(model, out, tokenizer, args, seq_length, version)
    summary = {"family": family, "task": args.task, "eval": scores, "seq_length": seq_length, **windows,
               "learning_rate": args.learning_rate, "serving": serving, **(extra or {})}
    common.write_json(os.path.join(out, "summary.json"), summary)
    return summary


def do_lower_case(tokenizer):
    """`get_final_text`'s `do_lower_case`: the vocabulary's casing (our `BertTokenizer` lower-cases itself,
    keras-hub's `lowercase` flag stays False; byte-level BPE is cased)."""
    from keras_pretrain.tasks.question_answering import pipelines

    if pipelines.for_tokenizer(tokenizer).cased:
        return False
    return bool(getattr(tokenizer, "bert_lowercase", getattr(tokenizer, "lowercase", True)))


def export_serving(model, out, tokenizer, args, seq_length, version):
    """The serving SavedModel `qa/1` (question and context strings in, the answer out); its description."""
    from hub_modules.exporting import export_qa_serving

    spec = export_qa_serving(model, os.path.join(out, "qa", "1"), tokenizer, seq_length=seq_length,
                             doc_stride=args.doc_stride, max_query_length=args.max_query_length,
                             n_best_size=args.n_best_size, max_answer_length=args.max_answer_length,
                             version_2_with_negative=version == "v2.0",
                             null_score_diff_threshold=args.null_score_diff_threshold)
    print(f"serving SavedModel (question, context in: {', '.join(spec['outputs'])} out): {out}/qa/1")
    return spec
