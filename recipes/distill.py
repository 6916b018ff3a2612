"""Distil a BERT teacher into a DistilBERT student (Sanh et al., 2019) on a text corpus.

With no arguments it pretrains a tiny BERT teacher (masked LM) briefly on the bundled corpus
(`corpus/pretrain.txt`), initialises a DistilBERT student with half the layers from teacher layers,
distils it with the triple loss (KL at temperature T, masked LM, cosine of hidden states), and
prints teacher vs student masked-LM accuracy on held-out data and their parameter counts. About
three minutes on 2 CPU cores. Run `python -m recipes.distill --help` for every option.
"""

import sys
import tempfile
import time

from keras_pretrain.pretraining.masked_lm import learn_vocabulary
from recipes import common
from recipes.pretrain import DEFAULT_CORPUS


def build_parser():
    parser = common.ArgumentParser(
        prog="python -m recipes.distill",
        description=__doc__,
        formatter_class=common.HelpFormatter,
    )
    parser.add_argument("--corpus", nargs="+", default=[DEFAULT_CORPUS], help="corpus files, folders or globs")
    parser.add_argument("--vocab-size", type=int, default=2000, help="WordPiece vocabulary learned from the corpus")
    parser.add_argument("--hidden-dim", type=int, default=128, help="hidden size of teacher and student")
    parser.add_argument("--num-heads", type=int, default=2, help="attention heads of teacher and student")
    parser.add_argument("--teacher-layers", type=int, default=4, help="transformer layers of the BERT teacher")
    parser.add_argument("--student-layers", type=int, default=2, help="transformer layers of the DistilBERT student")
    parser.add_argument("--copy-layers", type=int, nargs="+", default=None,
                        help="teacher layers copied into the student (default: every other one, as DistilBERT)")
    parser.add_argument("--seq-length", type=int, default=64, help="tokens per instance")
    parser.add_argument("--max-predictions", type=int, default=10, help="at most this many masked positions per instance")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size of teacher pretraining and distillation")
    parser.add_argument("--teacher-steps", type=int, default=400, help="masked-LM pretraining steps of the teacher")
    parser.add_argument("--distill-steps", type=int, default=200, help="distillation steps")
    parser.add_argument("--learning-rate", type=float, default=2e-3, help="peak learning rate (warmup, then linear decay)")
    parser.add_argument("--temperature", type=float, default=2.0, help="softmax temperature T of the KL term (scaled by T^2)")
    parser.add_argument("--alpha-ce", type=float, default=5.0, help="weight of the KL (soft-target) loss")
    parser.add_argument("--alpha-mlm", type=float, default=2.0, help="weight of the masked-LM loss on the true tokens")
    parser.add_argument("--alpha-cos", type=float, default=1.0, help="weight of the cosine loss between hidden states")
    parser.add_argument("--eval-batches", type=int, default=8, help="held-out batches for the accuracies")
    parser.add_argument("--seed", type=int, default=0, help="seeds the data and the weights")
    parser.add_argument("--verbose", type=int, default=0, help="Keras progress: 0 silent, 1 bar, 2 one line per epoch")
    return parser


def check_args(parser, args):
    paths = common.corpus_paths(parser, args.corpus)
    common.check_corpus(parser, paths, "--corpus")
    for name in ("vocab_size", "hidden_dim", "num_heads", "teacher_layers", "student_layers", "seq_length",
                 "max_predictions", "batch_size", "teacher_steps", "distill_steps", "eval_batches"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if args.hidden_dim % args.num_heads:
        parser.error("--hidden-dim must be a multiple of --num-heads")
    if args.temperature <= 0:
        parser.error("--temperature must be positive")
    if args.student_layers > args.teacher_layers:
        parser.error("--student-layers cannot exceed --teacher-layers")
    if args.copy_layers is None:
        step = args.teacher_layers / args.student_layers
        args.copy_layers = [int(i * step) for i in range(args.student_layers)]
    if len(args.copy_layers) != args.student_layers or not all(
            0 <= i < args.teacher_layers for i in args.copy_layers):
        parser.error(f"--copy-layers: need {args.student_layers} indices in [0, {args.teacher_layers})")
    return paths


def accuracy(metrics):
    return metrics.get("mlm_accuracy", metrics.get("accuracy"))


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    paths = check_args(parser, args)

    import keras

    from keras_pretrain.data import pretraining_dataset
    from keras_pretrain.distill import Distiller
    from keras_pretrain.distill import initialize_student_from_teacher
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.models.bert import BertPretrainer
    from keras_pretrain.models.bert import BertTokenizer
    from keras_pretrain.models.distil_bert import DistilBertBackbone
    from keras_pretrain.models.distil_bert import DistilBertPretrainer
    from keras_pretrain.optimizers import make_optimizer

    keras.utils.set_random_seed(args.seed)
    started = time.time()
    print(f"keras_pretrain: distilling BERT -> DistilBERT on {len(paths)} file(s), backend {keras.config.backend()}")
    with tempfile.TemporaryDirectory() as folder:
        vocab = learn_vocabulary(paths, args.vocab_size, True, folder)
        tokenizer = BertTokenizer(vocabulary=vocab, lowercase=True)
    common = dict(objective="full_sentences", seq_length=args.seq_length, max_predictions=args.max_predictions,
                  batch_size=args.batch_size)
    train = pretraining_dataset(paths, tokenizer, dynamic=True, seed=args.seed, drop_remainder=True, **common)
    held_out = pretraining_dataset(paths, tokenizer, seed=args.seed + 1, **common).take(args.eval_batches).cache()
    vocabulary_size = tokenizer.vocabulary_size()
    size = dict(vocabulary_size=vocabulary_size, hidden_dim=args.hidden_dim, num_heads=args.num_heads,
                intermediate_dim=4 * args.hidden_dim, max_sequence_length=args.seq_length)

    teacher = BertPretrainer(BertBackbone(num_layers=args.teacher_layers, **size), sentence_head=False)
    teacher.compile(optimizer=make_optimizer("adamw", args.learning_rate, args.teacher_steps))
    teacher.fit(train.repeat(), epochs=1, steps_per_epoch=args.teacher_steps, verbose=args.verbose)
    teacher_metrics = teacher.evaluate(held_out, verbose=0, return_dict=True)

    student = DistilBertPretrainer(DistilBertBackbone(num_layers=args.student_layers, **size))
    initialize_student_from_teacher(teacher, student, layers=args.copy_layers)
    student.compile()
    initial_metrics = student.evaluate(held_out, verbose=0, return_dict=True)
    distiller = Distiller(teacher, student, temperature=args.temperature, alpha_ce=args.alpha_ce,
                          alpha_mlm=args.alpha_mlm, alpha_cos=args.alpha_cos)
    distiller.compile(optimizer=make_optimizer("adamw", args.learning_rate, args.distill_steps, warmup_ratio=0.05,
                                               clipnorm=5.0))
    before = distiller.evaluate(held_out, verbose=0, return_dict=True)
    distiller.fit(train.repeat(), epochs=1, steps_per_epoch=args.distill_steps, verbose=args.verbose)
    after = distiller.evaluate(held_out, verbose=0, return_dict=True)
    student_metrics = student.evaluate(held_out, verbose=0, return_dict=True)

    summary = {
        "teacher_params": teacher.backbone.count_params(),
        "student_params": student.backbone.count_params(),
        "teacher_mlm_accuracy": accuracy(teacher_metrics),
        "student_initial_mlm_accuracy": accuracy(initial_metrics),
        "student_mlm_accuracy": accuracy(student_metrics),
        "distillation_loss_before": before["loss"],
        "distillation_loss_after": after["loss"],
        "copied_layers": list(args.copy_layers),
        "seconds": round(time.time() - started, 1),
    }
    print(f"teacher: {summary['teacher_params']:,} parameters ({args.teacher_layers} layers), "
          f"masked-LM accuracy {summary['teacher_mlm_accuracy']:.3f}")
    print(f"student: {summary['student_params']:,} parameters ({args.student_layers} layers from teacher layers "
          f"{args.copy_layers}), masked-LM accuracy {summary['student_initial_mlm_accuracy']:.3f} at "
          f"initialisation, {summary['student_mlm_accuracy']:.3f} after distillation")
    print(f"distillation loss {before['loss']:.3f} -> {after['loss']:.3f} "
          f"(KL*T^2 {after['ce_loss']:.3f}, MLM {after['mlm_loss']:.3f}, cosine {after['cos_loss']:.3f})")
    print(f"done in {summary['seconds']:.0f}s")
    return summary


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
