"""Pieces shared by the recipes' command lines: `--help`, option types, corpus and vocabulary checks.

Run management (output folders, locks, checkpoints and resume, signals, plots) lives in
`keras_pretrain.training`; its names stay importable from here (`common.prepare_output`, ...), and
`prepare_output` / `acquire_lock` keep taking the recipe's parser: a folder that cannot be used is a usage
error (`parser.error`, exit code 2) with the library's message.
"""

import argparse
import contextlib
import difflib
import importlib
import os
import re
import sys
import tempfile


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """`--help` of every recipe: the module docstring as written, and each option's default, once.

    A help line that already states its default (e.g. "(default: the family's own)") is shown as
    written; flags (default False) and options without a default show none.
    """

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)

    # An error (`parser.error`) prints the usage alone, then the one-line message: that usage is one line
    # pointing at --help, not the block of every option above the message. `--help` shows the full usage.
    _usage_only = None

    def add_usage(self, usage, actions, groups, prefix=None):
        if self._usage_only is None:
            self._usage_only = True
        super().add_usage(usage, actions, groups, prefix)

    def add_text(self, text):
        self._usage_only = False
        super().add_text(text)

    def start_section(self, heading):
        self._usage_only = False
        super().start_section(heading)

    def format_help(self):
        if self._usage_only:
            return f"usage: {self._prog} --help\n"
        return super().format_help()


def boolean(text):
    """Strict parser of boolean options: `--lowercase flase` is an error, not False."""
    value = str(text).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false (or yes/no, 1/0), got {text!r}")


def corpus_paths(parser, corpus):
    """The files of `corpus` (files, folders or globs); exit 2 when there are none."""
    from keras_pretrain.data import expand_paths

    try:
        paths = expand_paths(corpus)
    except (FileNotFoundError, ValueError) as e:
        parser.error(f"corpus: {e}")
    if not paths:
        parser.error(f"corpus: no file found in {corpus}")
    return paths


def check_corpus(parser, paths, flag, max_line_chars=None):
    """Exit 2 unless the corpus holds at least one sentence: an empty corpus,
    or one where every line is blank or skipped (invalid UTF-8, longer than
    `max_line_chars`: the recipe's own limit, else the reader's default),
    is reported before any vocabulary learning. Reads up to the first
    document with text."""
    from keras_pretrain.data import CorpusStats
    from keras_pretrain.data import read_documents
    from keras_pretrain.errors import CorpusFormatError

    import logging

    stats = CorpusStats()
    quiet = logging.getLogger("keras_pretrain.data.corpus")
    was_disabled, quiet.disabled = quiet.disabled, True  # the summary below says it once
    try:
        limit = {} if max_line_chars is None else {"max_line_chars": max_line_chars}
        for document in read_documents(paths, stats=stats, **limit):
            if any(sentence.strip() for sentence in document):
                return
    except (CorpusFormatError, OSError) as e:
        parser.error(f"{flag}: {e}")
    finally:
        quiet.disabled = was_disabled
    names = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    if not stats.lines_read:
        parser.error(f"{flag}: {names}: empty (no text to train on)")
    first = f"; first: {stats.issues[0]}" if stats.issues else ""
    parser.error(f"{flag}: {names}: no usable line ({stats.lines_read} read: {stats.blank_lines} blank, "
                 f"{stats.invalid_utf8_lines} invalid UTF-8, {stats.overlong_lines} overlong{first})")


WORDPIECE_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def vocabulary_problem(path, required=WORDPIECE_SPECIAL_TOKENS, limit=1 << 28):
    """None, or what is wrong with the WordPiece vocabulary file `path` (one token a line, as
    `BertTokenizer` reads it): unreadable, not UTF-8, empty, or lacking a special token it needs."""
    if not os.path.isfile(path):
        return "no such file"
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if len(data) > limit:
        return f"more than {limit >> 20} MB; not a vocabulary"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8 text (byte {e.start})"
    tokens = {line.rstrip() for line in text.splitlines()} - {""}
    if not tokens:
        return "empty (no token)"
    missing = [t for t in required if t not in tokens]
    if missing:
        return (f"lacks {', '.join(missing)} ({len(tokens)} tokens; a WordPiece vocabulary needs "
                f"{', '.join(required)})")
    return None


def check_vocabulary(parser, flag, path, required=WORDPIECE_SPECIAL_TOKENS):
    """Exit 2 (one line naming the file) unless `path` is a usable WordPiece vocabulary."""
    problem = vocabulary_problem(path, required)
    if problem:
        parser.error(f"{flag}: {path}: {problem}")


def wordpiece_tokenizer(vocabulary, lowercase):
    """BERT's WordPiece tokenizer (the ids of the original `FullTokenizer`), for `data.shards.ShardBuilder`.

    A function of this importable module, so Beam sends it to its workers by name; the tokenizer's module
    (and TensorFlow) is imported only where a tokenizer is built, not by the pipeline's launcher.
    """
    from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer

    return BertTokenizer(vocabulary=vocabulary, lowercase=lowercase)


# === Run management: keras_pretrain.training ===
# Resolved on first use, so that importing a recipe (its `--help`, its argument checks) does not import
# keras_pretrain, which loads Keras and TensorFlow.

_MOVED = {
    "keras_pretrain.errors": ("RunError", "RunFolderError"),
    "keras_pretrain.training.runs": ("RUN_FILE", "mark_finished"),
    "keras_pretrain.training.locks": ("LOCK_FILE", "release_lock", "_pid_alive"),
    "keras_pretrain.training.files": ("write_json", "inside", "leading_out", "check_links", "read_small_file",
                                      "read_json_object"),
    "keras_pretrain.training.checkpoints": ("CHECKPOINT_DIR", "STATE_FILE", "CHECKPOINT_NAME", "checkpoint_files",
                                            "read_state", "check_checkpoint", "complete_checkpoints", "resume_hint",
                                            "resume_epoch", "_state", "checkpoint_epoch", "restore_checkpoint",
                                            "checkpoint_bytes", "write_checkpoint", "epoch_checkpoint"),
    "keras_pretrain.training.random_state": ("rng_state", "set_rng_state", "_seed_states", "_global_seed_generator"),
    "keras_pretrain.training.history": ("trim_history", "plot_history"),
    "keras_pretrain.training.signals": ("Interrupted", "stop_on_signals", "interrupted_exit_code"),
    "keras_pretrain.training.file_errors": ("os_error_reason", "as_os_error", "_TF_FILE_ERROR"),
}
_HOME = {name: module for module, names in _MOVED.items() for name in names}


def __getattr__(name):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_HOME))


def prepare_output(parser, out, run_config, epochs=None, resume_from=None):
    """`keras_pretrain.training.prepare_output` of the recipe's `--out`: the epoch to resume from (0 for a
    new run). A folder that cannot be used as asked (`RunFolderError`: a file, another run's folder, a finished
    run, a live run's lock, not writable) stops the recipe with exit code 2 and the library's message; a damaged
    or foreign file of an interrupted run raises `RunError` (one line naming it, exit code 1).
    Call it after every other argument check: it is the first write."""
    from keras_pretrain import training

    try:
        return training.prepare_output(out, run_config, epochs=epochs, resume_from=resume_from)
    except training.RunFolderError as e:
        parser.error(str(e))


def acquire_lock(parser, out):
    """`keras_pretrain.training.acquire_lock(out)`; a folder a live run holds, or one that cannot be written,
    stops the recipe with exit code 2 (`parser.error`)."""
    from keras_pretrain import training

    try:
        return training.acquire_lock(out)
    except training.RunFolderError as e:
        parser.error(str(e))


# === The command line: one parser class, quiet start-up ===

# Set by `recipes.cli` (the `keras-pretrain` console script): the program name every recipe's usage shows
# ("keras-pretrain finetune") instead of "python -m recipes.finetune".
COMMAND_PROG = None


class ArgumentParser(argparse.ArgumentParser):
    """The recipes' parser: no abbreviated options (`--seq` is not taken for `--seq-length`), an unknown
    option gets a "did you mean" line (`--seq_length` -> `--seq-length`), `HelpFormatter` by default, and
    under `keras-pretrain <command>` the usage names that command."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", HelpFormatter)
        if COMMAND_PROG and str(kwargs.get("prog", "")).startswith("python -m "):
            kwargs["prog"] = COMMAND_PROG
        super().__init__(*args, **kwargs)

    def _option_strings(self):
        """Every `--option` of this parser and of its subcommands' parsers."""
        options = []
        for action in self._actions:
            options += [o for o in action.option_strings if o.startswith("--")]
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    options += sub._option_strings() if isinstance(sub, ArgumentParser) else []
        return options

    def suggestion(self, argument):
        """`--x-y` for `--x_y` (or the closest option), or None."""
        name = argument.split("=", 1)[0]
        if not name.startswith("--"):
            return None
        options = self._option_strings()
        kebab = name.replace("_", "-")
        if kebab in options:
            return kebab
        prefixed = sorted({o for o in options if o.startswith(kebab)})
        if len(prefixed) == 1:  # an abbreviation, which the parser does not take
            return prefixed[0]
        close = difflib.get_close_matches(kebab, options, n=1, cutoff=0.6)
        return close[0] if close else None

    def error(self, message):
        prefix = "unrecognized arguments: "
        if message.startswith(prefix):
            hints = [f"{a} -> {s}" for a in message[len(prefix):].split() if (s := self.suggestion(a))]
            if hints:
                message += f" (did you mean: {', '.join(hints)}?)"
        super().error(message)


# Lines TensorFlow's native libraries write to stderr while they load on a machine without a GPU (absl's
# pre-initialisation warning, the CUDA driver probe, the CPU-feature note, oneDNN's note, cuDNN/cuFFT/cuBLAS
# factory registration): information about the build, not about the run.
NATIVE_NOISE = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\) is called"
    r"|[IWE]\d{4} [\d:. ]+\d+ (cudart_stub|cuda_platform|cuda_executor|cpu_feature_guard|cuda_dnn|cuda_fft"
    r"|cuda_blas|computation_placer|port)\.cc:\d+\]"
    r"|To enable the following instructions: .* rebuild TensorFlow"
    r"|.*oneDNN custom operations are on"
    r"|.*TF-TRT Warning: Could not find TensorRT)"
)


@contextlib.contextmanager
def native_noise_filtered():
    """File descriptor 2 goes to a temporary file while the block runs (import TensorFlow, find the devices);
    afterwards the lines that are not `NATIVE_NOISE` are written to stderr, in order: nothing is lost, the
    start-up notes of TensorFlow's native libraries are not shown. `KERAS_PRETRAIN_NATIVE_LOGS=1` shows all."""
    if os.environ.get("KERAS_PRETRAIN_NATIVE_LOGS") == "1":
        yield
        return
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no standard error to filter
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            kept = [line for line in capture.read().decode("utf-8", "replace").splitlines(keepends=True)
                    if not NATIVE_NOISE.match(line)]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


def start_tensorflow():
    """Imports TensorFlow (every backend's preprocessing runs on it) and probes its devices, with the native
    start-up lines filtered (`native_noise_filtered`). Recipes call it after parsing their arguments."""
    with native_noise_filtered():
        import tensorflow as tf

        tf.config.list_physical_devices("GPU")
