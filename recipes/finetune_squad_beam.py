"""`recipes.finetune --task squad-v1.1 | squad-v2.0` for XLNet and `--task squad-v2.0` for ALBERT: the authors'
answer-class model (`keras_pretrain.tasks.BeamQuestionAnswering`: xlnet `function_builder.get_qa_outputs`,
albert `squad_utils.create_v2_model`) with their own features and post-processing.

- XLNet: xlnet-tensorflow `run_squad.py`'s features (`keras_pretrain.data.squad_xlnet`: `P <sep> Q <sep> <cls>`,
  inverted `input_mask`, `cls_index`) and its `write_predictions` (`keras_pretrain.squad_predictions_beam`,
  `layout="xlnet"`: the prediction is always the best span; v2.0's `null_odds.json` holds the smallest
  `cls_logits`, which the evaluation's `best_*` thresholds).
- ALBERT v2.0: albert `squad_utils`' features (`keras_pretrain.data.squad_sentencepiece`) and its
  `accumulate_predictions_v2` + `write_predictions_v2` (`layout="albert"`: "" when the null odds reach
  `--null-score-diff-threshold`).

`raw_results.jsonl` holds, per window, the head's beam (`unique_id`, `start_top_log_probs`, `start_top_index`,
`end_top_log_probs`, `end_top_index`, `cls_logits`), what those `write_predictions` read. The runs write the
serving SavedModel `qa/1` (unless `--no-export`; `keras_pretrain.export.qa_serving_sentencepiece`, ALBERT's
and XLNet's layouts: the same answers as `predictions.json`; XLNet's v2.0 answer is always the best span, its
`no_answer_score` the `null_odds.json` value to threshold).
"""

import collections
import json
import os

from recipes import common

BEAM_FIELDS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index", "cls_logits")
RawBeamResult = collections.namedtuple("RawBeamResult", ("unique_id",) + BEAM_FIELDS)


def beam_layout(family, args, tokenizer):
    """Whose answer-class pipeline the run takes: "xlnet" (XLNet's packing, `<cls>` last: xlnet run_squad.py,
    v1.1 and v2.0), "albert" (ALBERT's SentencePiece model under v2.0: albert squad_utils), else None (the span
    head; an ALBERT run with a WordPiece vocabulary, as the albert_zh releases, takes run_squad.py's)."""
    from keras_pretrain import families
    from recipes.finetune_squad import is_sentencepiece

    if families.get(family).packing.cls_last:
        return "xlnet"
    if args.task == "squad-v2.0" and is_sentencepiece(tokenizer):
        return "albert"
    return None


def sentencepiece_processor(tokenizer):
    import sentencepiece as spm

    proto = tokenizer.proto
    if isinstance(proto, str):
        with open(proto, "rb") as f:
            proto = f.read()
    return spm.SentencePieceProcessor(model_proto=proto)


def features(layout, examples, tokenizer, args, seq_length, is_training):
    from keras_pretrain.data import squad_xlnet
    from recipes import finetune_squad_albert

    if layout == "albert":
        return finetune_squad_albert.features(examples, tokenizer, args, seq_length, is_training)
    processor = sentencepiece_processor(tokenizer)
    encode_pieces = squad_xlnet.sentencepiece_functions(processor)[0]
    return squad_xlnet.convert_examples_to_features(
        examples, encode_pieces, processor.PieceToId, seq_length, args.doc_stride, args.max_query_length,
        is_training=is_training, uncased=bool(tokenizer.lowercase))


def to_arrays(layout, features):
    """The head's inputs (`padding_mask` 1 = real token: XLNet's `input_mask` inverted) and its labels."""
    import numpy as np

    def column(name, dtype="int32"):
        return np.asarray([getattr(f, name) for f in features], dtype)

    mask = column("input_mask")
    x = {"token_ids": column("input_ids"), "segment_ids": column("segment_ids"),
         "padding_mask": 1 - mask if layout == "xlnet" else mask, "p_mask": column("p_mask", "float32")}
    if layout == "xlnet":
        x["cls_index"] = column("cls_index")
    y = None
    if features and features[0].start_position is not None:
        y = {"start_positions": column("start_position"), "end_positions": column("end_position"),
             "is_impossible": column("is_impossible", "float32")}
    return x, y, column("unique_id", "int64")


def write_raw_results(path, results):
    with open(path, "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps(r._asdict()) + "\n")


def main(parser, args, out, family, backbone, tokenizer, seq_length, check_lengths, layout):
    """The run (see the module docstring) in `layout` ("xlnet", "albert": `beam_layout`); returns its summary."""
    import numpy as np
    import tensorflow as tf

    from keras_pretrain import squad_eval
    from keras_pretrain import squad_predictions
    from keras_pretrain import squad_predictions_beam
    from keras_pretrain.data import squad_sentencepiece
    from keras_pretrain.data import squad_xlnet
    from keras_pretrain.tasks import BeamQuestionAnswering
    from recipes import finetune_squad_albert
    from recipes import finetune_tasks
    from recipes.finetune_squad import TASKS
    from recipes.finetune_squad import read_examples

    _, _, dataset = read_examples(parser, args)  # run_squad's checks of the files (v2.0 data under v1.1, ...)
    if layout == "albert":
        finetune_squad_albert.check(parser, args, tokenizer, v2=True)
    train, predict = finetune_squad_albert.read(parser, args)  # the reader both authors share
    check_lengths(parser, args, seq_length)
    train_features = features(layout, train, tokenizer, args, seq_length, True)
    predict_features = features(layout, predict, tokenizer, args, seq_length, False)
    version = TASKS[args.task]
    print(f"SQuAD {version} ({layout}'s run_squad, answer-class model): {len(train)} training questions -> "
          f"{len(train_features)} windows, {len(predict)} questions to predict -> {len(predict_features)} windows "
          f"(length {seq_length}, stride {args.doc_stride})")
    os.makedirs(out, exist_ok=True)
    if args.features_only:
        write = squad_xlnet.write_features if layout == "xlnet" else squad_sentencepiece.write_features
        counts = {"train": write(train_features, os.path.join(out, "train.tf_record"), True),
                  "eval": write(predict_features, os.path.join(out, "eval.tf_record"), False)}
        print(f"wrote {counts['train']} train and {counts['eval']} eval records to {out}")
        summary = {"family": family, "task": args.task, "features": counts, "seq_length": seq_length}
        common.write_json(os.path.join(out, "summary.json"), summary)
        return summary

    model = BeamQuestionAnswering(backbone)
    x, y, _ = to_arrays(layout, train_features)
    model.compile(optimizer=finetune_tasks.optimizer(model, args, len(train_features)))
    print(f"fine-tuning {family} ({type(backbone).__name__}) with the answer-class head; rate "
          f"{args.learning_rate:g}")
    rows = tf.data.Dataset.from_tensor_slices({**x, **y}).shuffle(len(train_features), seed=args.seed)
    model.fit(rows.batch(args.batch_size), epochs=args.epochs, verbose=args.verbose)

    x, _, unique_ids = to_arrays(layout, predict_features)
    outputs = model.predict(x, batch_size=args.batch_size, verbose=0)
    results = [RawBeamResult(int(u), *[np.asarray(outputs[name][i]).tolist() for name in BEAM_FIELDS])
               for i, u in enumerate(unique_ids)]
    write_raw_results(os.path.join(out, "raw_results.jsonl"), results)
    predictions, nbest, null_odds = squad_predictions_beam.write_predictions(
        predict, predict_features, results, args.n_best_size, args.max_answer_length, model.start_n_top,
        model.end_n_top, layout=layout, null_score_diff_threshold=args.null_score_diff_threshold)
    null_odds = null_odds if version == "v2.0" else None
    squad_predictions.write_prediction_files(out, predictions, nbest, null_odds)
    scores = squad_eval.evaluate(dataset, predictions, null_odds)
    common.write_json(os.path.join(out, "eval_results.json"), scores)
    print("eval results: " + json.dumps(scores))
    keras_path = os.path.join(out, "qa.keras")
    model.save(keras_path)
    print(f"saved: {keras_path}; predictions.json, nbest_predictions.json"
          + (", null_odds.json" if null_odds else "") + f", raw_results.jsonl in {out}")
    serving = None
    if not args.no_export:
        from recipes.finetune_squad import export_serving

        serving = export_serving(model, out, tokenizer, args, seq_length, version)
    summary = {"family": family, "task": args.task, "eval": scores, "seq_length": seq_length,
               "train_windows": len(train_features), "predict_windows": len(predict_features),
               "learning_rate": args.learning_rate, "serving": serving, "head": "answer_class"}
    common.write_json(os.path.join(out, "summary.json"), summary)
    return summary
