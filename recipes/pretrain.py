"""Pretrain a model family with its own objective on a text corpus.

With no arguments (the main job, `make demo`) it pretrains a tiny ALBERT
(masked LM with n-gram masking + sentence order prediction) on the bundled
corpus (`corpus/pretrain.txt`) in a few minutes on 2 CPU cores, prints the
masked-LM accuracy before and after, saves the model (`.keras` and a keras-hub
preset folder), exports a TF-Hub-style module, reloads that module from disk
and prints fill-mask predictions for three held-out sentences.
`--model bert` pretrains BERT (masked LM + next sentence prediction) instead.
`--init PATH` continues from a published checkpoint in any format
`keras_pretrain.convert.load` reads (Hugging Face, Google TF1 BERT / ALBERT /
XLNet, bilm-tf ELMo, OpenAI GPT-1, fairseq RoBERTa): its family (printed, the
default `--model`), configuration, weights, heads and vocabulary are used.
"""

import json
import os
import sys
import time

from keras_pretrain import families
from keras_pretrain import pretraining
from keras_pretrain import training
from keras_pretrain.pretraining import METRIC_LABELS
from recipes import common

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.join(os.path.dirname(HERE), "corpus", "pretrain.txt")

DEMO_PROMPT = "the"
# Fill-mask probes: whole held-out documents of the bundled corpus (never
# trained on; see keras_pretrain.pretraining.held_out_document), each masking a word the corpus repeats
# elsewhere: the 曰 of 子曰 (386 lines), the 语 of 《论语》 (446 titles) and an
# English attribution (Carroll, 8 lines; a word the 3000-token vocabulary
# splits, so the hardest of the three).
DEMO_SENTENCES = [
    "子[MASK]：“君子成人之美，不成人之恶。小人反是。”《论语》",
    "孟武伯问孝。子曰：“父母唯其疾之忧。”《论[MASK]》",
    "The faster I go, the behinder I get. Lewis [MASK]",
]
MODELS = families.names()


def build_parser():
    parser = common.ArgumentParser(
        prog="python -m recipes.pretrain",
        description=__doc__,
        formatter_class=common.HelpFormatter,
    )
    parser.add_argument("--model", default=None, help=f"model family, one of {MODELS} (default: albert, or the family of --init)")
    parser.add_argument("--init", default=None, help="continue from a published checkpoint: a release folder, archive or checkpoint in any format keras_pretrain.convert.load reads (its configuration, weights, heads and vocabulary; the release's dropout)")
    parser.add_argument("--preset", default=None, help="a published preset name (default: a tiny demo configuration)")
    parser.add_argument("--corpus", nargs="+", default=[DEFAULT_CORPUS], help="corpus files, folders or globs (one sentence per line, blank line between documents)")
    parser.add_argument("--vocab", default=None, help="WordPiece vocab.txt (default: learn one from the corpus)")
    parser.add_argument("--vocab-size", type=int, default=3000, help="size of the vocabulary learned when --vocab is not given")
    parser.add_argument("--objective", default=None, help=f"masked-LM families' sentence objective: {', '.join(families.MASKED_LM_OBJECTIVES)} (default: the family's own)")
    parser.add_argument("--masking", default=None, choices=families.MASKINGS, help="masking strategy of the masked-LM families (default: the family's own)")
    parser.add_argument("--lexicon", default=None, help="knowledge masking: a file of phrases / entities, one per line, each masked as one unit")
    parser.add_argument("--dynamic", action="store_true", help="dynamic masking (a new mask every epoch) instead of static copies")
    parser.add_argument("--dupe-factor", type=int, default=2, help="static masked copies of each instance")
    parser.add_argument("--seq-length", type=int, default=64, help="tokens per training instance ([CLS] and [SEP] included)")
    parser.add_argument("--max-predictions", type=int, default=10, help="at most this many masked positions per instance")
    parser.add_argument("--batch-size", type=int, default=32, help="global batch size (split over the replicas of --distribution)")
    parser.add_argument("--steps", type=int, default=None, help=f"total training steps, rounded down to whole epochs of --steps-per-epoch (fewer: one epoch of exactly --steps) (default: {families.get('albert').steps} for the tiny ALBERT demo configuration, else 1000)")
    parser.add_argument("--epochs", type=int, default=None, help="train for this many epochs of --steps-per-epoch instead of --steps")
    parser.add_argument("--steps-per-epoch", type=int, default=100, help="steps between checkpoints, logs and plot points")
    parser.add_argument("--learning-rate", type=float, default=None, help="peak learning rate (default: the family's demo rate, 1e-3 for ALBERT, else 2e-3)")
    parser.add_argument("--optimizer", default="adamw", choices=["adamw", "lamb"], help="AdamW or LAMB, with warmup, linear decay and gradient clipping")
    parser.add_argument("--eval-batches", type=int, default=8, help="held-out batches for the accuracy before/after")
    parser.add_argument("--lowercase", default=True, type=common.boolean, help="lower-case the text (uncased vocabulary): true or false")
    parser.add_argument("--dropout", type=float, default=None, help="dropout of the demo configuration / override of the preset's (default: 0 for ALBERT as v2, else 0.1)")
    parser.add_argument("--mixed-precision", default=None, choices=["bf16", "fp16", "mixed_bfloat16", "mixed_float16"], help="Keras mixed-precision policy: bf16 = mixed_bfloat16, fp16 = mixed_float16 (float16 uses loss scaling); on a CPU without bfloat16 instructions bf16 is slower than float32 (benchmarks/RESULTS.md)")
    parser.add_argument("--distribution", default="auto", choices=["auto", "none", "mirrored", "multi_worker", "tpu", "data_parallel", "model_parallel", "ddp"], help="auto: TPU (TPU_NAME), all GPUs / JAX devices, or DDP under torchrun (multi_worker only when named: it reads TF_CONFIG); see keras_pretrain.distribute")
    parser.add_argument("--seed", type=int, default=0, help="seeds the data (instances, masks, order) and the weights")
    parser.add_argument("--out", default=None, help="output folder (default: runs/<model>-<time>); a new folder, or the folder of an interrupted run with the same settings to resume it")
    parser.add_argument("--resume-from", type=int, default=None, help="an interrupted run (--out): resume from the checkpoint of this epoch instead of the one checkpoint/state.json names (the newest, or the one before it, is kept); 0 starts the run over (default: the one state.json names)")
    parser.add_argument("--verbose", type=int, default=1, help="Keras progress bar: 0 silent, 1 bar, 2 one line per epoch")
    parser.add_argument("--no-export", action="store_true", help="skip the TF-Hub-style module export")
    parser.add_argument("--fill-mask", nargs="*", default=DEMO_SENTENCES, help="sentences with [MASK] to complete with the exported module at the end")
    return parser


def check_init(parser, args):
    """`--init`: the release's family (printed; the default of --model), refused with --preset / --vocab."""
    from keras_pretrain.checkpoints.formats import detect
    from keras_pretrain.errors import KerasPretrainError

    try:
        source = detect(args.init)
    except KerasPretrainError as e:
        parser.error(f"--init: {e}")
    print(f"--init: {source.describe()}")
    if args.model is not None and args.model != source.family:
        parser.error(f"--init {args.init} holds a {source.family} model, not {args.model} (drop --model or pass "
                     f"--model {source.family})")
    args.model = source.family


def check_args(parser, args):
    if args.init is not None:
        check_init(parser, args)
    args.model = args.model or "albert"
    if args.mixed_precision:  # one spelling in the run's settings (a resume compares them)
        from keras_pretrain.distribute.precision import ALIASES

        args.mixed_precision = ALIASES.get(args.mixed_precision, args.mixed_precision)
    if args.model not in MODELS:
        parser.error(f"unknown model {args.model!r}; choose one of {', '.join(MODELS)}")
    paths = common.corpus_paths(parser, args.corpus)
    if args.lexicon is not None and not os.path.isfile(args.lexicon):
        parser.error(f"--lexicon: no such file {args.lexicon!r}")
    if args.vocab is not None and not os.path.isfile(args.vocab):
        parser.error(f"--vocab: no such file {args.vocab!r}")
    if args.vocab is not None and families.get(args.model).vocabulary is families.WORDPIECE:
        common.check_vocabulary(parser, "--vocab", args.vocab)
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
    if args.resume_from is not None and args.resume_from < 0:
        parser.error(f"--resume-from must be 0 (start over) or an epoch, got {args.resume_from}")
    for problem in pretraining.check(args.model, settings_of(args)):
        parser.error(problem)
    check_preset(parser, args)
    common.check_corpus(parser, paths, "--corpus")
    family = families.get(args.model)
    if args.learning_rate is None:
        args.learning_rate = family.learning_rate
    if args.dropout is None:
        args.dropout = family.dropout
    if args.steps is None:
        args.steps = 1000 if args.preset else family.steps
    if args.epochs is None and args.steps < args.steps_per_epoch:
        args.steps_per_epoch = args.steps  # one epoch of exactly --steps, not one of --steps-per-epoch
    elif args.epochs is None and args.steps % args.steps_per_epoch:
        print(f"--steps {args.steps}: rounded down to whole epochs of --steps-per-epoch {args.steps_per_epoch}: "
              f"{total_epochs(args)} epochs = {total_epochs(args) * args.steps_per_epoch} steps")
    if args.out is None:
        args.out = os.path.join("runs", f"{args.model}-{time.strftime('%Y%m%d-%H%M%S')}")
    return paths


def check_preset(parser, args):
    """Exit 2 before anything is written unless `--preset` is a published name or a preset folder whose
    sizes are consistent, and `--seq-length` fits the model's positions (`pretraining.max_sequence_length`)."""
    from keras_pretrain.errors import ConfigError
    from keras_pretrain.models.backbone import check_sizes

    if args.preset:
        try:
            config = pretraining.preset_config(args.model, args.preset)
        except ConfigError as e:
            parser.error(f"--preset: {e}")
        if {"num_heads", "hidden_dim"} <= set(config):
            sizes = {k: config[k] for k in ("num_layers", "intermediate_dim", "vocabulary_size") if k in config}
            try:
                check_sizes(families.get(args.model).backbone, config["num_heads"], config["hidden_dim"], **sizes)
            except ConfigError as e:
                parser.error(f"--preset {args.preset}: {e}")
    limit, source = pretraining.position_limit(args.model, args.preset)
    if args.seq_length > limit:
        source = f"--preset {args.preset}" if args.preset else source
        parser.error(f"--seq-length {args.seq_length} exceeds the {limit} positions of {source}")


def total_epochs(args):
    """The epochs the run trains (of `args.steps_per_epoch` steps each)."""
    return args.epochs or max(1, args.steps // args.steps_per_epoch)


def settings_of(args):
    """The library's `PretrainingSettings` from the parsed arguments."""
    return pretraining.PretrainingSettings(**{name: getattr(args, name) for name in pretraining.PretrainingSettings.names()
                                              if hasattr(args, name)})


def run_config(args):
    """The settings that must match for a run to be resumed."""
    config = {k: v for k, v in vars(args).items() if k not in ("out", "verbose", "resume_from")}
    return json.loads(json.dumps(config))


def main(argv=None):
    """Runs the recipe; exit codes: 2 bad arguments or input (before anything
    is written), 1 an error during the run, 128 + signal number when stopped
    by SIGTERM / SIGINT (the last epoch's checkpoint stays whole: rerun the
    same command to resume)."""
    with training.stop_on_signals():
        from keras_pretrain.errors import KerasPretrainError

        parser = build_parser()
        args = parser.parse_args(argv)
        locked = False
        try:
            paths = check_args(parser, args)
            dist, start_epoch = setup(parser, args)
            locked = dist.is_chief
            return run(args, paths, dist, start_epoch)
        except training.Interrupted as e:
            if locked:
                print(f"pretrain: stopped by {e.name} (checkpoint of epoch {training.checkpoint_epoch(args.out)} "
                      f"kept; rerun the same command to resume {args.out})", file=sys.stderr)
            else:
                print(f"pretrain: stopped by {e.name} before the run started (nothing written)", file=sys.stderr)
            raise SystemExit(training.interrupted_exit_code(e)) from None
        except (training.RunError, KerasPretrainError) as e:
            print(f"pretrain: error: {e}", file=sys.stderr)
            raise SystemExit(1) from None
        finally:
            if locked:
                training.release_lock(args.out)


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
    if dist.vocabulary_multiple > 1 and not families.get(args.model).vocabulary.resizable:
        resizable = ", ".join(f.name for f in families.FAMILIES.values() if f.vocabulary.resizable
                              and not f.vocabulary.characters)
        parser.error(f"--distribution {dist.name}: {args.model}'s byte-pair vocabulary cannot be padded to a multiple "
                     f"of {dist.vocabulary_multiple}; use a WordPiece family ({resizable})")
    if args.batch_size % dist.num_replicas:
        parser.error(f"--batch-size {args.batch_size} (global) must divide by the {dist.num_replicas} replicas of {dist.name}")
    if dist.is_chief:
        start_epoch = common.prepare_output(parser, args.out, run_config(args), epochs=total_epochs(args),
                                            resume_from=args.resume_from)
    else:  # other workers only read the chief's folder (resume) and write nothing of their own
        os.makedirs(args.out, exist_ok=True)
        start_epoch = args.resume_from if args.resume_from is not None else training.checkpoint_epoch(args.out)
    return dist, start_epoch


def saved_before(out, evaluated, metric):
    """The scores before training that the interrupted run saved (`before.json`), else (missing or
    damaged: said in one line) the ones just evaluated, which the same seed makes equal."""
    path = os.path.join(out, "before.json")
    try:
        saved = training.read_json_object(out, path)
        if all(isinstance(saved.get(k), (int, float)) for k in (metric, "loss")):
            return saved
        problem = f"lacks the {metric} or loss score"
    except training.RunError as e:
        if not training.inside(out, path):
            raise
        problem = str(e).removeprefix(f"{path}: ")
    print(f"{path}: {problem}; using the scores just evaluated (the same seed gives the same)", file=sys.stderr)
    return evaluated


def run(args, paths, dist, start_epoch):
    import keras

    from keras_pretrain.distribute import set_mixed_precision
    from keras_pretrain.optimizers import make_optimizer

    keras.utils.set_random_seed(args.seed)
    set_mixed_precision(args.mixed_precision)
    started = time.time()
    print(f"keras_pretrain: pretraining {args.model} on {len(paths)} file(s), backend {keras.config.backend()}, output {args.out}")
    print(f"distribution: {dist.name}, {dist.num_replicas} replica(s) x {args.batch_size // dist.num_replicas} = global batch {args.batch_size}")
    settings = settings_of(args)
    settings.vocabulary_multiple = dist.vocabulary_multiple
    with dist.scope():
        job = pretraining.build_job(args.model, paths, settings)
    args.objective, args.masking = job.objective, job.masking
    pretrainer, train, held_out, metric = job.model, job.train, job.held_out, job.metric
    if job.stats is not None:
        print(f"corpus: {job.stats}")
    print(f"data ready in {time.time() - started:.0f}s")

    epochs = total_epochs(args)
    total_steps = epochs * args.steps_per_epoch
    print(f"training: {epochs} epoch(s) x {args.steps_per_epoch} steps = {total_steps} steps")
    with dist.scope():
        pretrainer.compile(optimizer=make_optimizer(args.optimizer, args.learning_rate, total_steps))
    print(f"model: {pretrainer.backbone.count_params():,} backbone parameters")
    before = pretrainer.evaluate(held_out, verbose=0, return_dict=True)
    if metric not in before:  # a single-output task names its metric plainly
        metric = metric.split("_", 1)[-1]
    resume = []
    if start_epoch:
        resume = [training.restore_checkpoint(pretrainer, args.out, args.steps_per_epoch, epochs)]
        print(f"resuming {args.out} at epoch {start_epoch}/{epochs} (step {start_epoch * args.steps_per_epoch})")
        before = saved_before(args.out, before, metric)
        if dist.is_chief:
            training.trim_history(args.out, start_epoch)
    elif dist.is_chief:
        training.write_json(os.path.join(args.out, "before.json"), before)
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
        training.epoch_checkpoint(args.out),
    ] if dist.is_chief else []
    history = pretrainer.fit(
        stream, epochs=epochs, initial_epoch=start_epoch, steps_per_epoch=args.steps_per_epoch,
        verbose=args.verbose, callbacks=resume + callbacks,
    )
    after = pretrainer.evaluate(held_out, verbose=0, return_dict=True)
    print(f"after:  {label} {after[metric]:.3f}, loss {after['loss']:.3f}")
    baseline = pretraining.unigram_baseline(job) if metric == "mlm_accuracy" and dist.is_chief else None
    if baseline is not None:
        print(f"unigram baseline on the same held-out positions (always {baseline[0]!r}, the most frequent "
              f"training target): {label} {baseline[1]:.3f}")
    if not dist.is_chief:  # the chief saves, exports and writes the summary
        return {"worker": dist.worker_index, "after": after}
    if job.sample is not None:
        print(f"sample: {job.sample(DEMO_PROMPT)!r}")
    plot = training.plot_history(os.path.join(args.out, "history.csv"), os.path.join(args.out, "loss.png"),
                                 f"{args.model} pretraining")

    pretrainer.save(os.path.join(args.out, "pretrainer.keras"))
    tokenizer = job.tokenizer
    preset = pretraining.save_preset(pretrainer.backbone, tokenizer, args.out)
    module = None
    if not args.no_export:
        import hub_modules

        module = hub_modules.export(pretrainer, os.path.join(args.out, "module"), tokenizer=tokenizer,
                                    seq_length=args.seq_length, overwrite=True)
        print(f"exported the TF-Hub-style module to {module}")
        if args.fill_mask and families.get(args.model).masked_lm:
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
    training.write_json(os.path.join(args.out, "summary.json"), summary)
    training.mark_finished(args.out, summary)
    print(f"saved: {args.out}/pretrainer.keras, {preset}/ (keras-hub preset folder)")
    if module:
        parts = ", ".join(f"{n}/" for n in sorted(os.listdir(module)) if os.path.isdir(os.path.join(module, n)))
        print(f"module: {module} ({parts}; hub_modules.load({module!r}))")
    print(f"logs:  {args.out}/history.csv, TensorBoard logs in {args.out}/logs, loss curve {plot}")
    print(f"done in {summary['seconds']:.0f}s")
    return summary


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
