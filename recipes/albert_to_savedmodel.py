"""Convert a published ALBERT archive into TF-Hub-style SavedModels.

    python -m recipes.albert_to_savedmodel --tarball albert_base_v2.tar.gz --out DIR

writes `DIR/encoder` (called with a dict of `input_word_ids`, `input_mask`,
`input_type_ids`; returns `pooled_output`, `sequence_output`,
`encoder_outputs`, `default`; an `mlm` sub-object adds `masked_lm_positions`
-> `mlm_logits` and `sop_logits`) and `DIR/preprocessor` (strings -> encoder
inputs, `tokenize`, `bert_pack_inputs`). See keras_pretrain.export.savedmodel.
`--tarball` also accepts an extracted folder or a TF1 hub-module folder.
The export runs on the TensorFlow backend (set here before Keras loads).
Errors in the input (bad archive, missing variables, ...) print one line and
exit with status 2.
"""

import argparse
import os
import sys

from recipes import common


def build_parser():
    parser = common.ArgumentParser(
        prog="python -m recipes.albert_to_savedmodel",
        description="Convert a published ALBERT checkpoint (albert_*_v2 / albert_*_zh "
        ".tar.gz, extracted folder or TF1 hub module) into TF-Hub-style encoder "
        "and preprocessor SavedModels.",
        formatter_class=common.HelpFormatter,
    )
    parser.add_argument("--tarball", required=True, help="the .tar.gz archive, or its extracted folder")
    parser.add_argument("--out", required=True, help="output folder (gets encoder/ and preprocessor/)")
    parser.add_argument("--seq-length", type=int, default=None,
                        help="preprocessor output length (default 128, or the model's max positions if fewer)")
    parser.add_argument("--no-mlm", action="store_true", help="export the encoder without the mlm sub-object")
    parser.add_argument("--overwrite", action="store_true", help="replace existing encoder/ and preprocessor/")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                        help="the vocabulary's casing (default: from the archive name, else uncased as every published ALBERT)")
    parser.add_argument("--max-extract-bytes", type=int, default=None,
                        help="most bytes the archive may expand to (default: max(100x its size, 1 GB), or "
                             "KERAS_PRETRAIN_MAX_EXTRACT_BYTES; 0: no limit)")
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def fail(message):
    print(f"albert_to_savedmodel: error: {message}", file=sys.stderr)
    return 2


def main(argv=None):
    args = parse_args(argv)
    from keras_pretrain.errors import KerasPretrainError

    if not os.path.exists(args.tarball):
        return fail(f"{args.tarball}: no such file or folder.")
    if args.seq_length is not None and args.seq_length < 3:
        return fail(f"--seq-length must be at least 3; found {args.seq_length}.")
    targets = [os.path.join(args.out, name) for name in ("encoder", "preprocessor")]
    existing = [t for t in targets if os.path.exists(t) and os.listdir(t)]
    if existing and not args.overwrite:
        return fail(f"{existing[0]} exists and is not empty (use --overwrite).")
    try:
        from keras_pretrain.export import export_encoder
        from keras_pretrain.export import export_preprocessor
        from keras_pretrain.models.albert import load_albert

        model, tokenizer = load_albert(args.tarball, pretrainer=not args.no_mlm, lowercase=args.lowercase,
                                       max_extract_bytes=args.max_extract_bytes)
        if tokenizer is None:
            return fail(
                f"{args.tarball}: no vocabulary found (30k-clean.model, vocab_chinese.txt or vocab.txt)."
            )
        backbone = getattr(model, "backbone", model)
        seq_length = args.seq_length or min(128, backbone.max_sequence_length)
        if seq_length > backbone.max_sequence_length:
            return fail(
                f"--seq-length {seq_length} exceeds the model's {backbone.max_sequence_length} positions."
            )
        export_encoder(model, targets[0], include_mlm=not args.no_mlm)
        export_preprocessor(tokenizer, targets[1], seq_length=seq_length)
    except KerasPretrainError as e:
        return fail(str(e))
    print(f"wrote {targets[0]} and {targets[1]}")
    return 0


if __name__ == "__main__":
    os.environ["KERAS_BACKEND"] = "tensorflow"  # SavedModels hold TF graphs (set before Keras loads)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
