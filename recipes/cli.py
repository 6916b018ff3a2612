"""`keras-pretrain <command> [options]`: one command line for every job of the library.

    keras-pretrain --help                       # the commands
    keras-pretrain pretrain --family bert --out runs/bert
    keras-pretrain finetune --from runs/bert --task sst-2 --data-dir glue/SST-2 --out runs/sst2
    keras-pretrain <command> --help             # that command's options

Each command is a recipe module and `python -m recipes.<module>` runs the same code with the same options.
Nothing here imports TensorFlow, Keras or the library: the commands list and an unknown command answer at
once, and a command imports what it needs after parsing its arguments.
"""

import difflib
import importlib
import sys

# command -> (module with a `main(argv)`, one line of what it does). Kebab case; `_` is accepted too.
COMMANDS = {
    "pretrain": ("recipes.pretrain", "pretrain a model of any family with its own objective"),
    "create-pretraining-data": ("recipes.create_pretraining_data",
                                "write BERT/ALBERT pretraining TFRecords, as Google's create_pretraining_data.py"),
    "finetune": ("recipes.finetune", "fine-tune on a task: classification, GLUE, SWAG/RACE, NER, SQuAD"),
    "evaluate": ("recipes.evaluate", "score predictions with the official GLUE, CoNLL and SQuAD metrics"),
    "distill": ("recipes.distill", "distil a teacher into a smaller student"),
    "export": ("recipes.export", "export a run or a release (SavedModel, Hugging Face, keras-hub)"),
    "fill-mask": ("recipes.fill_mask", "fill [MASK] positions with a masked-LM run"),
    "generate": ("recipes.generate", "generate text with a GPT run"),
    "albert-to-savedmodel": ("recipes.albert_to_savedmodel",
                             "turn a published ALBERT tarball into TF-Hub-style SavedModels"),
    "hub-module": ("hub_modules.__main__", "write a TF-Hub-style module folder from a release or a run"),
    "demo": ("recipes.demo", "pretrain a tiny ALBERT on the bundled corpus, fine-tune it, serve one query"),
}
PROG = "keras-pretrain"


def usage():
    width = max(len(name) for name in COMMANDS)
    lines = [f"usage: {PROG} <command> [options]", "", (__doc__ or "").split("\n\n")[0].strip(), "", "commands:"]
    lines += [f"  {name.ljust(width)}  {text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", f"`{PROG} <command> --help` lists the options of a command."]
    return "\n".join(lines) + "\n"


def version():
    from importlib import metadata

    try:
        return metadata.version("keras-pretrain")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        sys.stderr.write(usage())
        return 2
    if argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(usage())
        return 0
    if argv[0] in ("-V", "--version"):
        print(f"{PROG} {version()}")
        return 0
    command = argv[0].replace("_", "-")
    if command not in COMMANDS:
        close = difflib.get_close_matches(command, list(COMMANDS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        sys.stderr.write(f"usage: {PROG} <command> [options]\n{PROG}: error: unknown command {argv[0]!r}{hint}; "
                         f"`{PROG} --help` lists the commands\n")
        return 2
    from recipes import common

    # A recipe that imports TensorFlow at module level loads it here: its native start-up lines are filtered
    # (and the device probe, whose CUDA lines come later, is made now). The others import it after parsing.
    with common.native_noise_filtered():
        module = importlib.import_module(COMMANDS[command][0])
        if "tensorflow" in sys.modules:
            sys.modules["tensorflow"].config.list_physical_devices("GPU")
    sys.argv = [f"{PROG} {command}"] + argv[1:]
    common.COMMAND_PROG = f"{PROG} {command}"
    result = module.main(argv[1:])
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
