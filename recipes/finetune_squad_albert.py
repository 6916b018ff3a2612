"""`recipes.finetune --task squad-v1.1` for ALBERT's SentencePiece vocabularies: albert-tensorflow's
`squad_utils` pipeline (`run_squad.py` of google-research/albert, v1.1 model), as `recipes.finetune_squad` runs it.

The examples are albert's reader's (`keras_pretrain.tasks.question_answering.squad.read_squad_examples`), the
features `keras_pretrain.tasks.question_answering.features_sentencepiece`'s (its `preprocess_text`,
SentencePiece pieces aligned to the raw context character by character, `p_mask`; equal to `squad_utils` record
for record), the answers `keras_pretrain.tasks.question_answering.predictions.write_predictions_sentencepiece`
(its `accumulate_predictions_v1` + `write_predictions_v1`: text sliced from the raw context). The model is the
same `SpanQuestionAnswering` (albert's `create_v1_model` is a dense layer of 2 on the token states). SQuAD v2.0
uses albert's answer-class model (`create_v2_model`): `recipes.finetune_squad_beam`.
"""


def sentencepiece_processor(tokenizer):
    """A `sentencepiece.SentencePieceProcessor` of our SentencePiece tokenizer's model (ALBERT's, XLNet's)."""
    import sentencepiece as spm

    proto = tokenizer.proto
    if isinstance(proto, str):
        with open(proto, "rb") as f:
            proto = f.read()
    return spm.SentencePieceProcessor(model_proto=proto)


def sentencepiece_functions(tokenizer):
    """albert's `encode_pieces`, `PieceToId`, `IdToPiece` of our `AlbertTokenizer`'s SentencePiece model."""
    from keras_pretrain.tasks.question_answering.features_sentencepiece import sentencepiece_functions as functions

    return functions(sentencepiece_processor(tokenizer))


def check(parser, args, tokenizer, v2=False):
    if args.task != "squad-v1.1" and not v2:
        parser.error(f"--task {args.task}: ALBERT's SQuAD v2.0 uses its answer-class model (albert squad_utils "
                     "create_v2_model: recipes.finetune_squad_beam)")
    for piece in ("[CLS]", "[SEP]"):
        if tokenizer.token_to_id(piece) in (None, tokenizer.token_to_id("<unk>")):
            parser.error(f"--task {args.task}: the SentencePiece model has no {piece} piece (ALBERT's have)")


def read(parser, args):
    """(train examples, predict examples) with albert's reader (the files already checked by the caller)."""
    from keras_pretrain.errors import CorpusFormatError
    from keras_pretrain.tasks.question_answering import squad

    try:
        train = squad.read_squad_examples(args.train_file, is_training=True)
        predict = squad.read_squad_examples(args.predict_file, is_training=False)
    except CorpusFormatError as e:
        parser.error(str(e))
    return train, predict


def features(examples, tokenizer, args, seq_length, is_training):
    from keras_pretrain.tasks.question_answering import features_sentencepiece

    encode_pieces, piece_to_id, id_to_piece = sentencepiece_functions(tokenizer)
    return features_sentencepiece.convert_examples_to_features(
        examples, encode_pieces, piece_to_id, seq_length, args.doc_stride, args.max_query_length,
        is_training=is_training, do_lower_case=bool(getattr(tokenizer, "lowercase", True)),
        id_to_piece=id_to_piece)


def write_features(features, path, is_training):
    from keras_pretrain.tasks.question_answering import features_sentencepiece

    return features_sentencepiece.write_features(features, path, is_training)


def predictions(examples, features, results, args):
    """(predictions, nbest, null odds {}) as albert's write_predictions_v1."""
    from keras_pretrain.tasks.question_answering.predictions import write_predictions_sentencepiece

    predicted, nbest = write_predictions_sentencepiece(examples, features, results, args.n_best_size,
                                                       args.max_answer_length)
    return predicted, nbest, {}
