"""Pretrain a model family with its own objective on a text corpus.

With no arguments (the main job, `make demo`) it pretrains a tiny ALBERT
(masked LM with n-gram masking + sentence order prediction) on the bundled
corpus (`corpus/pretrain.txt`) in a few minutes on 2 CPU cores, prints the
masked-LM accuracy before and after, saves the model (`.keras` and a keras-hub
preset folder), exports a TF-Hub-style module, reloads that module from disk
and prints fill-mask predictions for three held-out sentences.
`--model bert` pretrains BERT (masked LM + next sentence prediction) instead.
"""

import argparse
import json
import os
import sys
import time
import types

from recipes import common

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.join(os.path.dirname(HERE), "corpus", "pretrain.txt")
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

DEMO_PROMPT = "the"
# Fill-mask probes: whole held-out documents of the bundled corpus (never
# trained on; see held_out_document), each masking a word the corpus repeats
# elsewhere: the 曰 of 子曰 (386 lines), the 语 of 《论语》 (446 titles) and an
# English attribution (Carroll, 8 lines; a word the 3000-token vocabulary
# splits, so the hardest of the three).
DEMO_SENTENCES = [
    "子[MASK]：“君子成人之美，不成人之恶。小人反是。”《论语》",
    "孟武伯问孝。子曰：“父母唯其疾之忧。”《论[MASK]》",
    "The faster I go, the behinder I get. Lewis [MASK]",
]

# Per family: default objective and masking, and a tiny configuration that
# learns something in minutes on 2 cores.
FAMILIES = {
    "gpt": {"objective": "causal_lm", "masking": None},
    "xlnet": {"objective": "permutation_lm", "masking": None},
    "elmo": {"objective": "bidirectional_lm", "masking": None},
    # ALBERT v2 trains without dropout; with it (or at 2e-3) the tiny demo
    # model stalls at unigram statistics on the bundled corpus. Two shared
    # layers take 2500 steps in the time four take 1000, and leave the unigram
    # plateau (held-out accuracy 0.158 against 0.098).
    "albert": {
        "objective": "sop",
        "masking": "ngram",
        "dropout": 0.0,
        "learning_rate": 1e-3,
        "steps": 2500,
        "demo": {"num_layers": 2, "num_groups": 1, "num_heads": 2, "hidden_dim": 128,
                 "intermediate_dim": 512, "embedding_dim": 64},
    },
    "bert": {
        "objective": "nsp",
        "masking": "token",
        "demo": {"num_layers": 2, "num_heads": 2, "hidden_dim": 128, "intermediate_dim": 512},
    },
    # RoBERTa: no NSP, FULL-SENTENCES packing, a new mask every epoch.
    "roberta": {
        "objective": "full_sentences",
        "masking": "token",
        "dynamic": True,
        "demo": {"num_layers": 2, "num_heads": 2, "hidden_dim": 128, "intermediate_dim": 512, "padding_id": 0},
    },
    "distil_bert": {
        "objective": "full_sentences",
        "masking": "token",
        "dynamic": True,
        "demo": {"num_layers": 2, "num_heads": 2, "hidden_dim": 128, "intermediate_dim": 512},
    },
    # ERNIE 1.0: knowledge masking (phrases / entities from --lexicon).
    "ernie": {
        "objective": "nsp",
        "masking": "knowledge",
        "demo": {"num_layers": 2, "num_heads": 2, "hidden_dim": 128, "intermediate_dim": 512},
    },
}
MASKED_LM = ("albert", "bert", "roberta", "distil_bert", "ernie")  # fill-mask at the end
HELD_OUT_EVERY = 25
MODELS = tuple(FAMILIES)
# The longest --seq-length without a preset (BERT's 512 positions); with a
# preset, the preset's own positions.
MAX_SEQ_LENGTH = 512
BACKBONES = {"gpt": ("keras_pretrain.models.gpt", "GPTBackbone"),
             "xlnet": ("keras_pretrain.models.xlnet", "XLNetBackbone"),
             "elmo": ("keras_pretrain.models.elmo", "ElmoBackbone")}


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m recipes.pretrain",
        description=__doc__,
        formatter_class=common.HelpFormatter,
    )
    parser.add_argument("--model", default="albert", help=f"model family, one of {MODELS}")
    parser.add_argument("--preset", default=None, help="a published preset name (default: a tiny demo configuration)")
    parser.add_argument("--corpus", nargs="+", default=[DEFAULT_CORPUS], help="corpus files, folders or globs (one sentence per line, blank line between documents)")
    parser.add_argument("--vocab", default=None, help="WordPiece vocab.txt (default: learn one from the corpus)")
    parser.add_argument("--vocab-size", type=int, default=3000, help="size of the vocabulary learned when --vocab is not given")
    parser.add_argument("--objective", default=None, help="sentence objective: nsp or sop (default: the family's own)")
    parser.add_argument("--masking", default=None, choices=["token", "whole_word", "ngram", "knowledge"], help="masking strategy (default: the family's own)")
    parser.add_argument("--lexicon", default=None, help="knowledge masking: a file of phrases / entities, one per line, each masked as one unit")
    parser.add_argument("--dynamic", action="store_true", help="dynamic masking (a new mask every epoch) instead of static copies")
    parser.add_argument("--dupe-factor", type=int, default=2, help="static masked copies of each instance")
    parser.add_argument("--seq-length", type=int, default=64, help="tokens per training instance ([CLS] and [SEP] included)")
    parser.add_argument("--max-predictions", type=int, default=10, help="at most this many masked positions per instance")
    parser.add_argument("--batch-size", type=int, default=32, help="global batch size (split over the replicas of --distribution)")
    parser.add_argument("--steps", type=int, default=None, help=f"total training steps, rounded to whole epochs (default: {FAMILIES['albert']['steps']} for the tiny ALBERT demo configuration, else 1000)")
    parser.add_argument("--epochs", type=int, default=None, help="train for this many epochs of --steps-per-epoch instead of --steps")
    parser.add_argument("--steps-per-epoch", type=int, default=100, help="steps between checkpoints, logs and plot points")
    parser.add_argument("--learning-rate", type=float, default=None, help="peak learning rate (default: the family's demo rate, 1e-3 for ALBERT, else 2e-3)")
    parser.add_argument("--optimizer", default="adamw", choices=["adamw", "lamb"], help="AdamW or LAMB, with warmup, linear decay and gradient clipping")
    parser.add_argument("--eval-batches", type=int, default=8, help="held-out batches for the accuracy before/after")
    parser.add_argument("--lowercase", default=True, type=common.boolean, help="lower-case the text (uncased vocabulary): true or false")
    parser.add_argument("--dropout", type=float, default=None, help="dropout of the demo configuration / override of the preset's (default: 0 for ALBERT as v2, else 0.1)")
    parser.add_argument("--mixed-precision", default=None, choices=["mixed_float16", "mixed_bfloat16"], help="Keras mixed-precision policy (float16 uses loss scaling)")
    parser.add_argument("--distribution", default="auto", choices=["auto", "none", "mirrored", "multi_worker", "tpu", "data_parallel", "model_parallel", "ddp"], help="auto: TPU (TPU_NAME), all GPUs / JAX devices, or DDP under torchrun (multi_worker only when named: it reads TF_CONFIG); see keras_pretrain.distribute")
    parser.add_argument("--seed", type=int, default=0, help="seeds the data (instances, masks, order) and the weights")
    parser.add_argument("--out", default=None, help="output folder (default: runs/<model>-<time>); a new folder, or the folder of an interrupted run with the same settings to resume it")
    parser.add_argument("--verbose", type=int, default=1, help="Keras progress bar: 0 silent, 1 bar, 2 one line per epoch")
    parser.add_argument("--no-export", action="store_true", help="skip the TF-Hub-style module export")
    parser.add_argument("--fill-mask", nargs="*", default=DEMO_SENTENCES, help="sentences with [MASK] to complete with the exported module at the end")
    return parser


def check_args(parser, args):
    if args.model not in MODELS:
        parser.error(f"unknown model {args.model!r}; choose one of {', '.join(MODELS)}")
    from keras_pretrain.data import expand_paths

    try:
        paths = expand_paths(args.corpus)
    except (FileNotFoundError, ValueError) as e:
        parser.error(f"corpus: {e}")
    if not paths:
        parser.error(f"corpus: no file found in {args.corpus}")
    if args.lexicon is not None and not os.path.isfile(args.lexicon):
        parser.error(f"--lexicon: no such file {args.lexicon!r}")
    if args.vocab is not None and not os.path.isfile(args.vocab):
        parser.error(f"--vocab: no such file {args.vocab!r}")
    for name in ("steps", "batch_size", "seq_length", "max_predictions", "steps_per_epoch", "epochs",
                 "vocab_size", "dupe_factor", "eval_batches"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if args.max_predictions > args.seq_length:
        parser.error(f"--max-predictions {args.max_predictions} exceeds --seq-length {args.seq_length}")
    if args.dropout is not None and not 0.0 <= args.dropout < 1.0:
        parser.error(f"--dropout must be in [0, 1), got {args.dropout}")
    if args.learning_rate is not None and not args.learning_rate > 0:
        parser.error(f"--learning-rate must be positive, got {args.learning_rate}")
    positions, source = check_preset(parser, args)
    if args.seq_length > positions:
        parser.error(f"--seq-length {args.seq_length} exceeds the {positions} positions of {source}")
    common.check_corpus(parser, paths, "--corpus")
    family = FAMILIES.get(args.model, {})
    if args.learning_rate is None:
        args.learning_rate = family.get("learning_rate", 2e-3)
    if args.dropout is None:
        args.dropout = family.get("dropout", 0.1)
    if args.steps is None:
        args.steps = 1000 if args.preset else family.get("steps", 1000)
    if args.out is None:
        args.out = os.path.join("runs", f"{args.model}-{time.strftime('%Y%m%d-%H%M%S')}")
    return paths


def backbone_class(model):
    if model in BACKBONES:
        import importlib

        module, name = BACKBONES[model]
        return getattr(importlib.import_module(module), name)
    return model_classes(model)[0]


def check_preset(parser, args):
    """(positions, what they belong to) after checking `--preset`: a published
    name or a preset folder (exit 2 otherwise, before anything is written)."""
    if not args.preset:
        return MAX_SEQ_LENGTH, f"the demo configuration (at most {MAX_SEQ_LENGTH})"
    backbone = backbone_class(args.model)
    names = sorted(backbone.preset_configs)
    if args.preset in backbone.preset_configs:
        config = backbone.preset_configs[args.preset]["config"]
    elif os.path.isdir(args.preset):
        try:
            with open(os.path.join(args.preset, "config.json")) as f:
                config = json.load(f).get("config", {})
        except (OSError, ValueError) as e:
            parser.error(f"--preset: {args.preset!r} is not a preset folder (config.json: {e})")
    else:
        parser.error(f"--preset: unknown {args.model} preset {args.preset!r}; choose one of {names} "
                     "or a preset folder written by save_to_preset")
    from keras_pretrain.models.backbone import check_sizes
    from keras_pretrain.errors import ConfigError

    if {"num_heads", "hidden_dim"} <= set(config):
        sizes = {k: config[k] for k in ("num_layers", "intermediate_dim", "vocabulary_size") if k in config}
        try:
            check_sizes(backbone.__name__, config["num_heads"], config["hidden_dim"], **sizes)
        except ConfigError as e:
            parser.error(f"--preset {args.preset}: {e}")
    return config.get("max_sequence_length") or MAX_SEQ_LENGTH, f"--preset {args.preset}"


def run_config(args):
    """The settings that must match for a run to be resumed."""
    config = {k: v for k, v in vars(args).items() if k not in ("out", "verbose")}
    return json.loads(json.dumps(config))


def learn_vocabulary(paths, size, lowercase, out):
    """A WordPiece vocabulary learned from the corpus, saved as vocab.txt."""
    import keras_hub
    import tensorflow as tf

    from keras_pretrain.data import read_documents

    lines = [s.lower() if lowercase else s for doc in read_documents(paths) for s in doc]
    if not lines:
        raise ValueError(f"no text to learn a vocabulary from in {paths}")
    vocabulary = keras_hub.tokenizers.compute_word_piece_vocabulary(
        tf.data.Dataset.from_tensor_slices(lines).batch(1000),
        size,
        lowercase=False,  # done above, with BERT's (not NFKC) lower-casing
        strip_accents=lowercase,
        split_on_cjk=True,
        reserved_tokens=SPECIAL_TOKENS,
    )
    path = os.path.join(out, "vocab.txt")
    common.write_text(path, "\n".join(vocabulary) + "\n")
    return path


def model_classes(model):
    if model == "roberta":
        from keras_pretrain.models.roberta import RobertaBackbone
        from keras_pretrain.models.roberta import RobertaPretrainer

        return RobertaBackbone, RobertaPretrainer
    if model == "distil_bert":
        from keras_pretrain.models.distil_bert import DistilBertBackbone
        from keras_pretrain.models.distil_bert import DistilBertPretrainer

        return DistilBertBackbone, DistilBertPretrainer
    if model == "ernie":
        from keras_pretrain.models.ernie import ErnieBackbone
        from keras_pretrain.models.ernie import ErniePretrainer

        return ErnieBackbone, ErniePretrainer
    if model == "albert":
        from keras_pretrain.models.albert import AlbertBackbone
        from keras_pretrain.models.albert import AlbertPretrainer

        return AlbertBackbone, AlbertPretrainer
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.models.bert import BertPretrainer

    return BertBackbone, BertPretrainer


def build_model(args, vocabulary_size):
    backbone_cls, pretrainer_cls = model_classes(args.model)
    if args.preset:
        backbone = backbone_cls.from_preset(args.preset, vocabulary_size=vocabulary_size, dropout=args.dropout)
    else:
        config = dict(FAMILIES[args.model]["demo"], dropout=args.dropout)
        # Positions beyond the training length cost little and let the
        # exported module take longer sentences (fill-mask, fine-tuning).
        # (+2: RoBERTa's positions start past the padding id.)
        backbone = backbone_cls(vocabulary_size=vocabulary_size, max_sequence_length=max(args.seq_length, 128) + 2, **config)
    return pretrainer_cls(backbone)


def held_out_document(index):
    """Every HELD_OUT_EVERY-th document is held out: never trained on, used for the accuracy and baseline."""
    return index % HELD_OUT_EVERY == HELD_OUT_EVERY - 1


def masked_lm_job(args, paths):
    """BERT / ALBERT: WordPiece, masked LM + NSP or SOP instances."""
    from keras_pretrain.data import CorpusStats
    from keras_pretrain.data import pretraining_dataset
    from keras_pretrain.errors import ConfigError
    from keras_pretrain.models.bert import BertTokenizer

    tokenizer = BertTokenizer(vocabulary=wordpiece_vocabulary(args, paths), lowercase=args.lowercase)
    args.objective = args.objective or FAMILIES[args.model]["objective"]
    args.masking = args.masking or FAMILIES[args.model]["masking"]
    stats = CorpusStats()
    masking_kwargs = None
    if args.lexicon:
        with open(args.lexicon, encoding="utf-8") as f:
            masking_kwargs = {"phrases": [line.strip() for line in f if line.strip()]}
    data_kwargs = dict(objective=args.objective, masking=args.masking, seq_length=args.seq_length,
                       max_predictions=args.max_predictions, batch_size=args.batch_size,
                       masking_kwargs=masking_kwargs)
    dynamic = args.dynamic or FAMILIES[args.model].get("dynamic", False)
    print(f"building {args.objective} instances with {args.masking} masking "
          f"({'dynamic' if dynamic else f'{args.dupe_factor} static copies'}); "
          f"1 document in {HELD_OUT_EVERY} held out ...", flush=True)
    train = pretraining_dataset(paths, tokenizer, dupe_factor=args.dupe_factor, dynamic=dynamic,
                                seed=args.seed, drop_remainder=True, stats=stats,
                                select=lambda i: not held_out_document(i), **data_kwargs)
    try:
        held_out = pretraining_dataset(paths, tokenizer, dupe_factor=1, seed=args.seed + 1, shuffle=True,
                                       select=held_out_document, **data_kwargs)
    except ConfigError:  # fewer than HELD_OUT_EVERY documents: nothing to hold out
        print(f"note: fewer than {HELD_OUT_EVERY} documents, so none is held out; "
              "the accuracy is measured on training documents")
        held_out = pretraining_dataset(paths, tokenizer, dupe_factor=1, seed=args.seed + 1, shuffle=True,
                                       **data_kwargs)
    return types.SimpleNamespace(
        tokenizer=tokenizer, train=train, held_out=held_out.take(args.eval_batches).cache(),
        model=build_model(args, tokenizer.vocabulary_size()), metric="mlm_accuracy",
        sample=None, stats=stats, vocabulary=tokenizer.get_vocabulary(),
    )


def unigram_baseline(job, max_batches=200):
    """(token, accuracy): always predicting the most frequent training target, on the held-out positions."""
    from keras_pretrain.data import target_counts
    from keras_pretrain.data import unigram_accuracy

    counts = target_counts(job.train, max_batches=max_batches)
    if not counts:
        return None
    token_id = counts.most_common(1)[0][0]
    return job.vocabulary[token_id], unigram_accuracy(job.held_out, token_id)


def wordpiece_vocabulary(args, paths):
    """The vocabulary file, or its tokens padded with `[unused{i}]` up to a
    multiple of `args.vocabulary_multiple` (model parallelism shards the
    embedding rows evenly, as large trainers pad their vocabularies)."""
    vocab = args.vocab
    if vocab is None:
        vocab = os.path.join(args.out, "vocab.txt")
        if not os.path.exists(vocab):  # learned once, kept on resume
            started = time.time()
            print(f"learning a {args.vocab_size}-token WordPiece vocabulary from the corpus ...", flush=True)
            learn_vocabulary(paths, args.vocab_size, args.lowercase, args.out)
            print(f"vocabulary: {vocab} ({time.time() - started:.0f}s)", flush=True)
    multiple = getattr(args, "vocabulary_multiple", 1)
    if multiple <= 1:
        return vocab
    with open(vocab, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f if line.rstrip("\n")]
    known, i = set(tokens), 0
    while len(tokens) % multiple:
        if f"[unused{i}]" not in known:
            tokens.append(f"[unused{i}]")
        i += 1
    return tokens


def gpt_job(args, paths):
    """GPT-1: BPE learned from the corpus, contiguous blocks, causal LM."""
    from keras_pretrain.models.gpt.gpt_pretraining import build_gpt_pretraining

    return build_gpt_pretraining(args, paths)


def xlnet_job(args, paths):
    """XLNet: permutation LM over a contiguous stream, memories carried."""
    from keras_pretrain.models.bert import BertTokenizer
    from keras_pretrain.models.xlnet.xlnet_recipe import build_xlnet_pretrainer
    from keras_pretrain.models.xlnet.xlnet_recipe import xlnet_pretraining_data

    tokenizer = BertTokenizer(vocabulary=wordpiece_vocabulary(args, paths), lowercase=args.lowercase)
    data = dict(seq_length=args.seq_length, batch_size=args.batch_size)
    train, _ = xlnet_pretraining_data(paths, tokenizer, seed=args.seed, **data)
    held_out, _ = xlnet_pretraining_data(paths, tokenizer, seed=args.seed + 1, **data)
    model = build_xlnet_pretrainer(tokenizer.vocabulary_size(), preset=args.preset, **data)
    return types.SimpleNamespace(tokenizer=tokenizer, train=train, held_out=held_out.take(args.eval_batches).cache(),
                                 model=model, metric="accuracy", sample=None, stats=None)


def elmo_job(args, paths):
    """ELMo: word vocabulary, character ids, forward + backward LMs."""
    from keras_pretrain.models.elmo import ElmoBackbone
    from keras_pretrain.models.elmo import ElmoBiLM
    from keras_pretrain.models.elmo import build_word_vocabulary
    from keras_pretrain.models.elmo import elmo_pretraining_dataset

    vocab = build_word_vocabulary(paths, max_size=args.vocab_size, lowercase=args.lowercase)
    common.write_text(os.path.join(args.out, "words.txt"), "\n".join(vocab) + "\n")
    data = dict(seq_length=args.seq_length, batch_size=args.batch_size, lowercase=args.lowercase)
    train = elmo_pretraining_dataset(paths, vocab, seed=args.seed, **data)
    held_out = elmo_pretraining_dataset(paths, vocab, seed=args.seed + 1, **data).take(args.eval_batches).cache()
    if args.preset:
        backbone = ElmoBackbone.from_preset(args.preset, dropout=args.dropout)
    else:
        backbone = ElmoBackbone(num_layers=2, hidden_dim=64, lstm_dim=256, filters=[[1, 32], [2, 32], [3, 64], [4, 128]],
                                num_highway=1, dropout=args.dropout)
    model = ElmoBiLM(backbone, vocabulary_size=len(vocab), num_sampled=min(256, len(vocab) - 1), seed=args.seed)
    return types.SimpleNamespace(tokenizer=None, train=train, held_out=held_out, model=model,
                                 metric="forward_perplexity", sample=None, stats=None)


def save_preset(backbone, tokenizer, out):
    """A keras-hub preset folder: the backbone, and the tokenizer or its files."""
    import shutil

    preset = os.path.join(out, "preset")
    backbone.save_to_preset(preset)
    if hasattr(tokenizer, "save_to_preset"):  # keras-hub tokenizers
        tokenizer.save_to_preset(preset)
    else:  # GPT's BPE files, ELMo's word list: beside the weights
        for name in ("vocab.json", "merges.txt", "words.txt"):
            if os.path.exists(os.path.join(out, name)):
                shutil.copy(os.path.join(out, name), os.path.join(preset, name))
    return preset


METRIC_LABELS = {
    "mlm_accuracy": "masked-LM accuracy",
    "accuracy": "prediction accuracy",
    "forward_perplexity": "forward-LM perplexity",
}

JOBS = {"albert": masked_lm_job, "bert": masked_lm_job, "roberta": masked_lm_job, "distil_bert": masked_lm_job,
        "ernie": masked_lm_job, "gpt": gpt_job, "xlnet": xlnet_job, "elmo": elmo_job}


def main(argv=None):
    """Runs the recipe; exit codes: 2 bad arguments or input (before anything
    is written), 1 an error during the run, 128 + signal number when stopped
    by SIGTERM / SIGINT (the last epoch's checkpoint stays whole: rerun the
    same command to resume)."""
    with common.stop_on_signals():
        from keras_pretrain.errors import KerasPretrainError

        parser = build_parser()
        args = parser.parse_args(argv)
        locked = False
        try:
            paths = check_args(parser, args)
            dist, start_epoch = setup(parser, args)
            locked = dist.is_chief
            return run(args, paths, dist, start_epoch)
        except common.Interrupted as e:
            if locked:
                print(f"pretrain: stopped by {e.name} (checkpoint of epoch {common.checkpoint_epoch(args.out)} kept; "
                      f"rerun the same command to resume {args.out})", file=sys.stderr)
            else:
                print(f"pretrain: stopped by {e.name} before the run started (nothing written)", file=sys.stderr)
            raise SystemExit(common.interrupted_exit_code(e)) from None
        except (common.RunError, KerasPretrainError) as e:
            print(f"pretrain: error: {e}", file=sys.stderr)
            raise SystemExit(1) from None
        finally:
            if locked:
                common.release_lock(args.out)


def setup(parser, args):
    """The distribution, then the output folder (created and locked last,
    once every check passed). Returns (distribution, epoch to resume from)."""
    from keras_pretrain.distribute import get_distribution
    from keras_pretrain.errors import ConfigError

    # First: MultiWorkerMirroredStrategy must exist before any other TF op.
    try:
        dist = get_distribution(args.distribution)
    except ConfigError as e:
        parser.error(f"--distribution {args.distribution}: {e}")
    if dist.vocabulary_multiple > 1 and args.model == "gpt":
        parser.error(f"--distribution {dist.name}: GPT's byte-pair vocabulary cannot be padded to a multiple of "
                     f"{dist.vocabulary_multiple}; use a WordPiece family (bert, albert, roberta, distil_bert, ernie)")
    if args.batch_size % dist.num_replicas:
        parser.error(f"--batch-size {args.batch_size} (global) must divide by the {dist.num_replicas} replicas of {dist.name}")
    if dist.is_chief:
        start_epoch = common.prepare_output(parser, args.out, run_config(args))
    else:  # other workers only read the chief's folder (resume) and write nothing of their own
        os.makedirs(args.out, exist_ok=True)
        start_epoch = common.checkpoint_epoch(args.out)
    return dist, start_epoch


def run(args, paths, dist, start_epoch):
    import keras

    from keras_pretrain.distribute import set_mixed_precision
    from keras_pretrain.optimizers import make_optimizer

    keras.utils.set_random_seed(args.seed)
    set_mixed_precision(args.mixed_precision)
    started = time.time()
    print(f"keras_pretrain: pretraining {args.model} on {len(paths)} file(s), backend {keras.config.backend()}, output {args.out}")
    print(f"distribution: {dist.name}, {dist.num_replicas} replica(s) x {args.batch_size // dist.num_replicas} = global batch {args.batch_size}")
    args.vocabulary_multiple = dist.vocabulary_multiple
    with dist.scope():
        job = JOBS[args.model](args, paths)
    args.objective = args.objective or FAMILIES[args.model]["objective"]
    pretrainer, train, held_out, metric = job.model, job.train, job.held_out, job.metric
    if job.stats is not None:
        print(f"corpus: {job.stats}")
    print(f"data ready in {time.time() - started:.0f}s")

    epochs = args.epochs or max(1, args.steps // args.steps_per_epoch)
    total_steps = epochs * args.steps_per_epoch
    with dist.scope():
        pretrainer.compile(optimizer=make_optimizer(args.optimizer, args.learning_rate, total_steps))
    print(f"model: {pretrainer.backbone.count_params():,} backbone parameters")
    before = pretrainer.evaluate(held_out, verbose=0, return_dict=True)
    if metric not in before:  # a single-output task names its metric plainly
        metric = metric.split("_", 1)[-1]
    resume = []
    if start_epoch:
        resume = [common.restore_checkpoint(pretrainer, args.out)]
        print(f"resuming {args.out} at epoch {start_epoch}/{epochs} (step {start_epoch * args.steps_per_epoch})")
        before = json.load(open(os.path.join(args.out, "before.json")))
    elif dist.is_chief:
        common.write_json(os.path.join(args.out, "before.json"), before)
    if hasattr(dist, "prepare"):  # torch DDP: same weights on every rank, averaged gradients
        dist.prepare(pretrainer)
    label = METRIC_LABELS.get(metric, metric)
    print(f"before: {label} {before[metric]:.3f}, loss {before['loss']:.3f}")

    # The same batches in the same order whether or not the run was resumed.
    # Batched with the global batch size; each worker keeps its share.
    stream = dist.shard(train.repeat().skip(start_epoch * args.steps_per_epoch))
    callbacks = [  # only the chief writes logs and checkpoints
        keras.callbacks.CSVLogger(os.path.join(args.out, "history.csv"), append=start_epoch > 0),
        keras.callbacks.TensorBoard(os.path.join(args.out, "logs")),
        common.epoch_checkpoint(args.out),
    ] if dist.is_chief else []
    history = pretrainer.fit(
        stream, epochs=epochs, initial_epoch=start_epoch, steps_per_epoch=args.steps_per_epoch,
        verbose=args.verbose, callbacks=resume + callbacks,
    )
    after = pretrainer.evaluate(held_out, verbose=0, return_dict=True)
    print(f"after:  {label} {after[metric]:.3f}, loss {after['loss']:.3f}")
    baseline = unigram_baseline(job) if metric == "mlm_accuracy" and dist.is_chief else None
    if baseline is not None:
        print(f"unigram baseline on the same held-out positions (always {baseline[0]!r}, the most frequent "
              f"training target): {label} {baseline[1]:.3f}")
    if not dist.is_chief:  # the chief saves, exports and writes the summary
        return {"worker": dist.worker_index, "after": after}
    if job.sample is not None:
        print(f"sample: {job.sample(DEMO_PROMPT)!r}")
    plot = common.plot_history(os.path.join(args.out, "history.csv"), os.path.join(args.out, "loss.png"),
                               f"{args.model} pretraining")

    pretrainer.save(os.path.join(args.out, "pretrainer.keras"))
    tokenizer = job.tokenizer
    preset = save_preset(pretrainer.backbone, tokenizer, args.out)
    module = None
    if not args.no_export:
        import hub_modules

        module = hub_modules.export(pretrainer, os.path.join(args.out, "module"), tokenizer=tokenizer,
                                    seq_length=args.seq_length, overwrite=True)
        print(f"exported the TF-Hub-style module to {module}")
        if args.fill_mask and args.model in MASKED_LM:
            from recipes.fill_mask import fill_mask
            from recipes.fill_mask import print_predictions

            print("fill-mask with the module reloaded from disk:")
            print_predictions(fill_mask(module, args.fill_mask, top_k=5))
    summary = {
        "model": args.model, "objective": args.objective, "masking": args.masking, "metric": metric,
        "backend": keras.config.backend(), "steps": int(keras.ops.convert_to_numpy(pretrainer.optimizer.iterations)),
        "before": before, "after": after,
        "unigram_baseline": {"token": baseline[0], metric: baseline[1]} if baseline else None,
        "seconds": round(time.time() - started, 1),
        "final_loss": history.history["loss"][-1] if history.history.get("loss") else None,
    }
    common.write_json(os.path.join(args.out, "summary.json"), summary)
    common.mark_finished(args.out, summary)
    print(f"saved: {args.out}/pretrainer.keras, {preset}/ (keras-hub preset folder)")
    if module:
        parts = ", ".join(f"{n}/" for n in sorted(os.listdir(module)) if os.path.isdir(os.path.join(module, n)))
        print(f"module: {module} ({parts}; hub_modules.load({module!r}))")
    print(f"logs:  {args.out}/history.csv, TensorBoard logs in {args.out}/logs, loss curve {plot}")
    print(f"done in {summary['seconds']:.0f}s")
    return summary


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
