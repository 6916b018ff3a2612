"""Run management: what a training run needs around `fit` to be stopped, resumed and never overwrite anything.

- `runs`: the output folder (`prepare_output`: created and locked, or an interrupted run of the same settings
  recognised and resumed), `run.json` and its finished marker (`mark_finished`).
- `locks`: the folder's `.lock` (a live run refuses the next, a dead one's lock is taken over).
- `checkpoints`: the epoch checkpoints (weights, optimizer and random states) and the checked resume from them.
- `random_state`: the random states a checkpoint saves (seed generators; torch's global generator).
- `files`: atomic JSON writes and reads that never leave the run folder.
- `signals`: SIGTERM / SIGINT as `Interrupted`, and the exit code of a stopped run.
- `history`: `history.csv` trimmed on resume and plotted.
- `file_errors`: file-system errors (Python's and TensorFlow's) in a few words.

Problems are exceptions, never exits: `RunFolderError` for a folder that cannot be used as asked (nothing
written; a usage error), `RunError` for a run that cannot go on (one line naming the file). Nothing here
imports Keras, NumPy or TensorFlow until a function needs it.
"""

from keras_pretrain.errors import RunError  # noqa: F401
from keras_pretrain.errors import RunFolderError  # noqa: F401
from keras_pretrain.training.checkpoints import CHECKPOINT_DIR  # noqa: F401
from keras_pretrain.training.checkpoints import CHECKPOINT_NAME  # noqa: F401
from keras_pretrain.training.checkpoints import STATE_FILE  # noqa: F401
from keras_pretrain.training.checkpoints import check_checkpoint  # noqa: F401
from keras_pretrain.training.checkpoints import checkpoint_bytes  # noqa: F401
from keras_pretrain.training.checkpoints import checkpoint_epoch  # noqa: F401
from keras_pretrain.training.checkpoints import checkpoint_files  # noqa: F401
from keras_pretrain.training.checkpoints import complete_checkpoints  # noqa: F401
from keras_pretrain.training.checkpoints import epoch_checkpoint  # noqa: F401
from keras_pretrain.training.checkpoints import read_state  # noqa: F401
from keras_pretrain.training.checkpoints import restore_checkpoint  # noqa: F401
from keras_pretrain.training.checkpoints import resume_epoch  # noqa: F401
from keras_pretrain.training.checkpoints import resume_hint  # noqa: F401
from keras_pretrain.training.checkpoints import write_checkpoint  # noqa: F401
from keras_pretrain.training.file_errors import as_os_error  # noqa: F401
from keras_pretrain.training.file_errors import os_error_reason  # noqa: F401
from keras_pretrain.training.files import check_links  # noqa: F401
from keras_pretrain.training.files import inside  # noqa: F401
from keras_pretrain.training.files import leading_out  # noqa: F401
from keras_pretrain.training.files import read_json_object  # noqa: F401
from keras_pretrain.training.files import read_small_file  # noqa: F401
from keras_pretrain.training.files import write_json  # noqa: F401
from keras_pretrain.training.history import plot_history  # noqa: F401
from keras_pretrain.training.history import trim_history  # noqa: F401
from keras_pretrain.training.locks import LOCK_FILE  # noqa: F401
from keras_pretrain.training.locks import acquire_lock  # noqa: F401
from keras_pretrain.training.locks import release_lock  # noqa: F401
from keras_pretrain.training.random_state import rng_state  # noqa: F401
from keras_pretrain.training.random_state import set_rng_state  # noqa: F401
from keras_pretrain.training.runs import RUN_FILE  # noqa: F401
from keras_pretrain.training.runs import mark_finished  # noqa: F401
from keras_pretrain.training.runs import prepare_output  # noqa: F401
from keras_pretrain.training.signals import Interrupted  # noqa: F401
from keras_pretrain.training.signals import interrupted_exit_code  # noqa: F401
from keras_pretrain.training.signals import stop_on_signals  # noqa: F401
