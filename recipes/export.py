"""Export a model to another ecosystem: one entry point for every exporter.

    python -m recipes.export --from runs/bert-20261201-1200 --to huggingface --out hf/my_bert
    python -m recipes.export --from bert-base-sst2/ --to huggingface --out hf/again     # a fine-tuned HF folder
    python -m recipes.export --from runs/elmo-20261201-1200 --to bilm --out bilm/my_elmo
    python -m recipes.export --from uncased_L-12_H-768_A-12.zip --to tfhub --out modules/bert_base
    python -m recipes.export --from runs/bert-20261201-1200/finetune/model.keras --to savedmodel --out serving/1

`--from` takes a pretraining run folder, a `.keras` file (a fine-tuned task keeps its head) or a published
release in any format `keras_pretrain.convert.load` reads (a Hugging Face folder's `architectures` choose the
head it brings). `--to`:

- `huggingface`: `config.json`, `model.safetensors` and the tokenizer files, for
  `transformers.AutoModel*.from_pretrained` (`keras_pretrain.convert.to_huggingface`); every family but ELMo.
- `bilm`: ELMo's `options.json` + `weights.hdf5` as bilm-tf writes them (`keras_pretrain.convert.to_bilm`).
- `tfhub`: a module folder with TF-Hub-style encoder and preprocessor SavedModels (`python -m hub_modules`).
- `savedmodel`: a fine-tuned classifier's serving SavedModel (strings in, TensorFlow Serving's `NAME/1`).

The output folder must be new or empty; nothing is written through a symbolic link. Bad input prints one
line naming the file and the problem and exits with status 2.
"""

import contextlib
import os
import shutil
import sys

from recipes import common

TARGETS = ("huggingface", "bilm", "tfhub", "savedmodel")


def build_parser():
    parser = common.ArgumentParser(prog="python -m recipes.export", description=__doc__,
                                   formatter_class=common.HelpFormatter)
    parser.add_argument("--from", dest="source", required=True,
                        help="a pretraining run folder, a .keras file, or a published release in any format "
                             "keras_pretrain.convert.load reads")
    parser.add_argument("--to", dest="target", required=True, choices=TARGETS, help="the format to write")
    parser.add_argument("--out", required=True, help="the folder to create (new or empty)")
    parser.add_argument("--pretrainer", action="store_true",
                        help="a release: also convert its pretraining heads (exported as *ForPreTraining / "
                             "*ForMaskedLM / *LMHeadModel)")
    parser.add_argument("--seq-length", type=int, default=128, help="tfhub / savedmodel: the packed length")
    return parser


def read_source(parser, source, pretrainer):
    """`(model, tokenizer)` from a run folder, a `.keras` file or a release."""
    from keras_pretrain import convert
    from keras_pretrain import families
    from keras_pretrain.errors import CheckpointFormatError
    from keras_pretrain.errors import ConfigError

    run = os.path.isdir(source) and any(os.path.exists(os.path.join(source, n))
                                        for n in ("pretrainer.keras", "model.keras"))
    try:
        if run or (os.path.isfile(source) and source.endswith(".keras")):
            from hub_modules.exporting import read_model

            model, _ = read_model(source)
            family = families.family_of(model)
            tokenizer = getattr(getattr(model, "preprocessor", None), "tokenizer", None)
            if tokenizer is None and run and not family.vocabulary.characters:
                from recipes.finetune import run_tokenizer

                tokenizer = run_tokenizer(parser, source, family.name, None)
            return model, tokenizer
        return convert.load(source, pretrainer=pretrainer)
    except (CheckpointFormatError, ConfigError, FileNotFoundError) as e:
        parser.exit(2, f"recipes.export: error: --from {source}: {e}\n")


def remove_partial(out, created):
    """Removes what a failed export wrote: the folder it created, or the files it wrote into the empty one."""
    if created:
        shutil.rmtree(out, ignore_errors=True)
        return
    for name in os.listdir(out) if os.path.isdir(out) and not os.path.islink(out) else ():
        path = os.path.join(out, name)
        with contextlib.suppress(OSError):
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if os.path.exists(args.out) and (os.path.islink(args.out) or not os.path.isdir(args.out) or os.listdir(args.out)):
        parser.exit(2, f"recipes.export: error: --out {args.out}: exists and is not an empty folder "
                       "(nothing was written)\n")
    existing = os.path.abspath(args.out)  # writable? checked before the (slow) reading of --from
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing) or not os.access(existing, os.W_OK | os.X_OK):
        problem = "is a file" if not os.path.isdir(existing) else "is read-only or not permitted"
        parser.exit(2, f"recipes.export: error: --out {args.out}: cannot be created ({existing} {problem}; "
                       "nothing was written)\n")
    created = not os.path.exists(args.out)
    model, tokenizer = read_source(parser, args.source, args.pretrainer)

    common.start_tensorflow()
    from keras_pretrain import convert
    from keras_pretrain.errors import ConfigError
    from keras_pretrain.errors import ExportError

    try:
        if args.target == "huggingface":
            convert.to_huggingface(model, args.out, tokenizer=tokenizer)
        elif args.target == "bilm":
            convert.to_bilm(model, args.out)
        elif args.target == "tfhub":
            import hub_modules

            hub_modules.export(model, args.out, tokenizer=tokenizer, seq_length=args.seq_length)
        else:
            from hub_modules.exporting import export_serving

            if not hasattr(model, "num_classes"):
                raise ExportError(f"{type(model).__name__}: --to savedmodel writes a fine-tuned classifier's "
                                  "serving model; use --to tfhub for a backbone or pretrainer.")
            export_serving(model, args.out, tokenizer=tokenizer, seq_length=args.seq_length)
    except (ExportError, ConfigError) as e:
        parser.exit(2, f"recipes.export: error: {e}\n")
    except Exception as e:  # a full disk: one line; the half-written export is removed, --from is untouched
        e = common.as_os_error(e)
        if e is None:
            raise
        remove_partial(args.out, created)
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        parser.exit(1, f"recipes.export: error: --out {args.out}: {where}{common.os_error_reason(e)}; the partial "
                       "export was removed (nothing else was written)\n")
    print(f"{args.target} export written: {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
