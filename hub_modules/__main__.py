"""Export a module folder from a published release, a `.keras` file or a pretraining run.

    python -m hub_modules xlnet_cased_L-12_H-768_A-12.zip modules/xlnet_base
    python -m hub_modules roberta.base modules/roberta_base --pretrainer
    python -m hub_modules runs/bert-20261201-1200 modules/my_bert

A release in any format `keras_pretrain.convert.load` reads (Hugging Face folder, Google TF1 BERT / ALBERT /
XLNet, bilm-tf ELMo, OpenAI GPT-1, fairseq RoBERTa) is detected, its family and format printed, converted
with its tokenizer and written by `hub_modules.export`.
"""

import argparse
import os
import sys


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m hub_modules", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", help="a release (folder, archive, checkpoint prefix), a .keras file or a run folder")
    parser.add_argument("out", help="the module folder to create (must be new or empty)")
    parser.add_argument("--pretrainer", action="store_true", help="also convert the pretraining heads (masked-LM families: the encoder's mlm signature)")
    parser.add_argument("--seq-length", type=int, default=128, help="packed length of the preprocessor's default call")
    parser.add_argument("--no-savedmodels", action="store_true", help="skip encoder/ and preprocessor/ (the module still loads with hub_modules.load)")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if os.path.exists(args.out) and os.listdir(args.out):
        parser.error(f"out: {args.out!r} already holds files; choose a new folder (nothing is overwritten)")
    if args.seq_length <= 0:
        parser.error("--seq-length must be positive")

    import hub_modules
    from hub_modules.exporting import read_model
    from keras_pretrain.errors import CheckpointFormatError
    from keras_pretrain.errors import ConfigError

    try:
        model, tokenizer = read_model(args.source, pretrainer=args.pretrainer)
    except (CheckpointFormatError, ConfigError, FileNotFoundError) as e:
        parser.error(f"source: {e}")
    hub_modules.export(model, args.out, tokenizer=tokenizer, seq_length=args.seq_length,
                       savedmodels=not args.no_savedmodels)
    print(f"module written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
