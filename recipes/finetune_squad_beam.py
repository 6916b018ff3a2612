"""`recipes.finetune --task squad-v1.1 | squad-v2.0` for XLNet and `--task squad-v2.0` for ALBERT: the authors'
answer-class model (`keras_pretrain.tasks.BeamQuestionAnswering`: xlnet `function_builder.get_qa_outputs`,
albert `squad_utils.create_v2_model`) with their own features and post-processing, as `recipes.finetune_squad`
runs it (this module holds the pieces that differ; it imports nothing of that recipe).

- XLNet: xlnet-tensorflow `run_squad.py`'s features (`keras_pretrain.tasks.question_answering.features_xlnet`:
  `P <sep> Q <sep> <cls>`, inverted `input_mask`, `cls_index`) and its `write_predictions`
  (`keras_pretrain.tasks.question_answering.predictions.write_predictions_beam`, `layout="xlnet"`: the prediction
  is always the best span; v2.0's `null_odds.json` holds the smallest `cls_logits`, which the evaluation's
  `best_*` thresholds).
- ALBERT v2.0: albert `squad_utils`' features (`keras_pretrain.tasks.question_answering.features_sentencepiece`)
  and its `accumulate_predictions_v2` + `write_predictions_v2` (`layout="albert"`: "" when the null odds reach
  `--null-score-diff-threshold`).

`raw_results.jsonl` holds, per window, the head's beam (`unique_id`, `start_top_log_probs`, `start_top_index`,
`end_top_log_probs`, `end_top_index`, `cls_logits`), what those `write_predictions` read. The runs write the
serving SavedModel `qa/1` (unless `--no-export`; `keras_pretrain.tasks.question_answering.serving_sentencepiece`,
ALBERT's and XLNet's layouts: the same answers as `predictions.json`; XLNet's v2.0 answer is always the best
span, its `no_answer_score` the `null_odds.json` value to threshold).
"""

import collections
import json

from recipes import finetune_squad_albert

BEAM_FIELDS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index", "cls_logits")
RawBeamResult = collections.namedtuple("RawBeamResult", ("unique_id",) + BEAM_FIELDS)


def beam_layout(pipeline, version):
    """Whose answer-class pipeline the run takes, as the tokenizer's SQuAD pipeline declares it
    (`keras_pretrain.tasks.question_answering.pipelines`): "xlnet" (XLNet's packing, `<cls>` last: xlnet
    run_squad.py, v1.1 and v2.0), "albert" (ALBERT's SentencePiece model under v2.0: albert squad_utils), else
    None (the span head; an ALBERT run with a WordPiece vocabulary, as the albert_zh releases, takes
    run_squad.py's)."""
    if pipeline is not None and pipeline.answer_class(version):
        return pipeline.beam_layout
    return None


def features(layout, examples, tokenizer, args, seq_length, is_training):
    from keras_pretrain.tasks.question_answering import features_xlnet

    if layout == "albert":
        return finetune_squad_albert.features(examples, tokenizer, args, seq_length, is_training)
    processor = finetune_squad_albert.sentencepiece_processor(tokenizer)
    encode_pieces = features_xlnet.sentencepiece_functions(processor)[0]
    return features_xlnet.convert_examples_to_features(
        examples, encode_pieces, processor.PieceToId, seq_length, args.doc_stride, args.max_query_length,
        is_training=is_training, uncased=bool(tokenizer.lowercase))


def write_features(layout, features, path, is_training):
    from keras_pretrain.tasks.question_answering import features_xlnet

    if layout == "xlnet":
        return features_xlnet.write_features(features, path, is_training)
    return finetune_squad_albert.write_features(features, path, is_training)


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


def raw_results(outputs, unique_ids):
    """The beam of each window (`RawBeamResult`), from the head's outputs."""
    import numpy as np

    return [RawBeamResult(int(u), *[np.asarray(outputs[name][i]).tolist() for name in BEAM_FIELDS])
            for i, u in enumerate(unique_ids)]


def write_raw_results(path, results):
    with open(path, "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps(r._asdict()) + "\n")


def predictions(layout, examples, features, results, args, model):
    """(predictions, nbest, null odds) as the authors' write_predictions on the beam."""
    from keras_pretrain.tasks.question_answering.predictions import write_predictions_beam

    return write_predictions_beam(examples, features, results, args.n_best_size, args.max_answer_length,
                                  model.start_n_top, model.end_n_top, layout=layout,
                                  null_score_diff_threshold=args.null_score_diff_threshold)
