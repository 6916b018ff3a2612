"""Exception types raised by keras_pretrain.

Every message names the file, variable or line concerned, what was expected and
what was found, so that a user never has to read a traceback from TensorFlow
internals to learn what is wrong with their input.
"""


class KerasPretrainError(Exception):
    """Base class of every error raised on purpose by keras_pretrain."""


class CorpusFormatError(KerasPretrainError, ValueError):
    """A corpus file is unreadable or malformed (names the file and line)."""


class CheckpointFormatError(KerasPretrainError, ValueError):
    """A checkpoint, archive or weight file is missing, corrupt or mismatched."""


class ConfigError(KerasPretrainError, ValueError):
    """A model configuration is missing keys, malformed or inconsistent."""


class ExportError(KerasPretrainError, RuntimeError):
    """The model cannot be exported as asked (wrong backend, wrong model, a folder that is not empty)."""


class RunError(KerasPretrainError):
    """A training run cannot go on (a full disk, a damaged or foreign checkpoint, a file leading out of the
    run folder, ...): one line naming the file; the recipes exit with code 1."""


class RunFolderError(KerasPretrainError, ValueError):
    """A run's output folder cannot be used as asked (a file, another run's or a finished run's folder, one a
    live run holds, one that cannot be written, a `--resume-from` with nothing to resume): nothing was written.
    The recipes report it as a usage error (`parser.error`, exit code 2)."""


class TaskDataError(CorpusFormatError):
    """A fine-tuning task's data (a table, a GLUE / SWAG / RACE folder, CoNLL files) is missing or malformed, or
    cannot train a model (one label only, a label only in the validation rows). The message names the file (and
    the line) and the problem; `argument` names which of the task's inputs it is (`data`, `validation_data`,
    `data_dir`, `train_file`, `predict_file`: the recipes report it as `--data: <message>`, a usage error)."""

    def __init__(self, message, argument="data"):
        super().__init__(message)
        self.argument = argument
