"""Print the top predictions for each [MASK] in one or more sentences.

    python -m recipes.fill_mask --from runs/albert-.../module "The [MASK] had only ceased" "床前明[MASK]光"

`--from` is a module folder written by `hub_modules.export` (or a pretraining
run folder holding `module/`). The exported SavedModels are reloaded from disk
and run in TensorFlow, whatever the Keras backend.
"""

import argparse
import os
import sys

from recipes import common

MASK = "[MASK]"


def build_parser():
    parser = common.ArgumentParser(prog="python -m recipes.fill_mask", description=__doc__,
                                   formatter_class=common.HelpFormatter)
    parser.add_argument("--from", dest="source", required=True, help="module folder or run folder with module/")
    parser.add_argument("--top-k", type=int, default=5, help="predictions shown per mask")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                        help="override the module's casing (default: as exported)")
    parser.add_argument("texts", nargs="+", help=f"sentences, each with at least one {MASK}")
    return parser


def module_folder(path):
    if os.path.isdir(os.path.join(path, "module")):
        return os.path.join(path, "module")
    return path


def fill_mask(module, texts, top_k=5, lowercase=None):
    """[(text, [[(token, probability), ...] per mask])] from an exported module."""
    import numpy as np
    import tensorflow as tf

    import hub_modules
    from hub_modules.loading import load_savedmodel
    from keras_pretrain.errors import ConfigError

    module, metadata = hub_modules.read_metadata(module)
    if not (metadata.get("has_mlm") and metadata.get("preprocessor")):
        raise ConfigError(
            f"{module}: fill-mask needs a module with a masked-LM head and a preprocessor (exported from a "
            f"BERT, ALBERT, ERNIE, RoBERTa or DistilBERT pretrainer with its tokenizer); this "
            f"{metadata.get('family')} module has {'no masked-LM head' if not metadata.get('has_mlm') else 'no preprocessor'}."
        )
    max_length = metadata["config"].get("max_sequence_length")
    # load_savedmodel loads tensorflow_text first: the preprocessor's ops
    # (RoundRobinTrim, WordPiece, SentencePiece) are registered by it.
    preprocessor = load_savedmodel(os.path.join(module, "preprocessor"))
    encoder = load_savedmodel(os.path.join(module, "encoder"))
    tokenizer = hub_modules.load_tokenizer(module, lowercase=lowercase)
    if lowercase is None:
        tokenize = lambda part: preprocessor.tokenize(tf.constant([part])).merge_dims(1, 2).to_list()[0]  # noqa: E731
    else:  # the module's preprocessor has its casing built in
        tokenize = lambda part: list(tokenizer([part])[0])  # noqa: E731
    cls_id, sep_id = int(preprocessor.cls_id.numpy()), int(preprocessor.sep_id.numpy())
    mask_id = int(preprocessor.mask_id.numpy())
    results = []
    for text in texts:
        parts = text.split(MASK)
        ids = [cls_id]
        for i, part in enumerate(parts):
            if part.strip():
                ids += [int(t) for t in tokenize(part)]
            if i < len(parts) - 1:
                ids.append(mask_id)
        ids.append(sep_id)
        if max_length and len(ids) > max_length:
            raise ConfigError(f"{text!r}: {len(ids)} tokens, more than the model's {max_length} positions.")
        positions = [i for i, t in enumerate(ids) if t == mask_id]
        inputs = {
            "input_word_ids": tf.constant([ids], tf.int32),
            "input_mask": tf.ones((1, len(ids)), tf.int32),
            "input_type_ids": tf.zeros((1, len(ids)), tf.int32),
            "masked_lm_positions": tf.constant([positions], tf.int32),
        }
        logits = encoder.mlm(inputs)["mlm_logits"].numpy()[0]
        probabilities = np.exp(logits - logits.max(-1, keepdims=True))
        probabilities /= probabilities.sum(-1, keepdims=True)
        per_mask = []
        for row in probabilities:
            best = np.argsort(-row)[:top_k]
            per_mask.append([(str(tokenizer.id_to_token(int(i))), float(row[i])) for i in best])
        results.append((text, per_mask))
    return results


def print_predictions(results):
    for text, per_mask in results:
        print(f"  {text}")
        for k, predictions in enumerate(per_mask):
            shown = ", ".join(f"{token} ({p:.2f})" for token, p in predictions)
            print(f"    [MASK] {k + 1}: {shown}")


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.top_k < 1:
        parser.error("--top-k must be positive")
    module = module_folder(args.source)
    if not os.path.isdir(module):
        parser.error(f"--from: no such folder {args.source!r}")
    for text in args.texts:
        if MASK not in text:
            parser.error(f"no {MASK} in {text!r}")
    common.start_tensorflow()
    from keras_pretrain.errors import KerasPretrainError

    try:
        results = fill_mask(module, args.texts, args.top_k, args.lowercase)
    except KerasPretrainError as e:
        parser.error(str(e))
    print_predictions(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
