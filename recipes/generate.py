"""Generate text with a GPT language model.

Reads a model folder (a Hugging Face `openai-gpt` folder, or one written by
`recipes.pretrain --model gpt`: a `.keras` model with `vocab.json` and
`merges.txt`), continues each `--prompt` to `--max-length` tokens with the
chosen sampler (a key/value cache makes each new token one step) and prints
one continuation per prompt.

Example: python -m recipes.generate --from runs/gpt-demo --prompt "the cat" --sampler top_p --p 0.9
"""

import os
import sys

from recipes import common

SAMPLERS = ("greedy", "top_k", "top_p", "random")


def build_parser():
    parser = common.ArgumentParser(
        prog="python -m recipes.generate",
        description=__doc__,
        formatter_class=common.HelpFormatter,
    )
    parser.add_argument("--from", dest="source", required=True, help="model folder")
    parser.add_argument("--prompt", action="append", required=True, help="prompt text (repeat for several)")
    parser.add_argument("--max-length", type=int, default=32, help="total tokens, prompt included")
    parser.add_argument("--sampler", default="greedy", choices=SAMPLERS, help="decoding: greedy, or sampling with top-k / top-p")
    parser.add_argument("--k", type=int, default=None, help="top-k: keep the k most likely tokens (default 10)")
    parser.add_argument("--p", type=float, default=None, help="top-p: smallest set of tokens with probability >= p (default 0.9)")
    parser.add_argument("--temperature", type=float, default=1.0, help="divide the logits by this before the softmax")
    parser.add_argument("--seed", type=int, default=0, help="seeds the sampler")
    return parser


def check_args(parser, args):
    if not os.path.isdir(args.source):
        parser.error(f"--from: no such folder {args.source!r}")
    if args.max_length <= 0:
        parser.error("--max-length must be positive")
    if args.temperature <= 0:
        parser.error("--temperature must be positive")
    if args.k is not None and args.k < 1:
        parser.error("--k must be at least 1")
    if args.p is not None and not 0.0 < args.p <= 1.0:
        parser.error("--p must be in (0, 1]")
    if args.k is not None and args.sampler not in ("top_k", "top_p"):
        parser.error("--k applies to --sampler top_k or top_p")
    if args.p is not None and args.sampler != "top_p":
        parser.error("--p applies to --sampler top_p")
    if any(not p.strip() for p in args.prompt):
        parser.error("--prompt must not be empty")


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)

    common.start_tensorflow()
    import keras

    from keras_pretrain.errors import ConfigError
    from keras_pretrain.errors import CheckpointFormatError
    from keras_pretrain.models.gpt.gpt_causal_lm import make_sampler
    from keras_pretrain.pretraining.causal_lm import load_for_generation
    from keras_pretrain.pretraining.causal_lm import sample_text

    keras.utils.set_random_seed(args.seed)
    try:
        model, tokenizer = load_for_generation(args.source)
    except (ConfigError, CheckpointFormatError) as e:
        parser.error(f"--from: {e}")
    limit = model.backbone.max_sequence_length
    if args.max_length > limit:
        parser.error(f"--max-length {args.max_length} exceeds the model's {limit} positions")
    too_long = [p for p in args.prompt if len(tokenizer.tokenize(p)) >= args.max_length]
    if too_long:
        parser.error(f"--prompt {too_long[0]!r} already has --max-length tokens or more")
    sampler = make_sampler(args.sampler, k=args.k, p=args.p, temperature=args.temperature, seed=args.seed)
    texts = sample_text(model, tokenizer, args.prompt, args.max_length, sampler=sampler)
    for text in texts:
        print(text)
    return texts


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
