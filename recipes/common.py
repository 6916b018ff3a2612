"""Pieces shared by the recipes' command lines: `--help`, option types, corpus and vocabulary checks.

Run management (output folders, locks, checkpoints and resume, signals, plots) lives in
`keras_pretrain.training`; its names stay importable from here (`common.prepare_output`, ...), and
`prepare_output` / `acquire_lock` keep taking the recipe's parser: a folder that cannot be used is a usage
error (`parser.error`, exit code 2) with the library's message.
"""

import argparse
import importlib
import os


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
