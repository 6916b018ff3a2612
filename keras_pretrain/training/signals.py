"""SIGTERM and SIGINT during a run: raised as `Interrupted` where the run is, so that its `finally` blocks
release the lock (checkpoints are atomic); the process then exits with 128 + the signal's number."""

import contextlib
import signal


class Interrupted(KeyboardInterrupt):
    """SIGTERM / SIGINT received: the run stops where it is."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name


@contextlib.contextmanager
def stop_on_signals():
    """SIGTERM and SIGINT raise `Interrupted` in the main thread (the run's
    `finally` blocks release its lock; checkpoints are atomic), restored after."""

    def handler(signum, frame):
        raise Interrupted(signum)

    previous = {}
    try:
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread: leave signals alone
        pass
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def interrupted_exit_code(error):
    """The exit code of a run stopped by `error` (an `Interrupted`): 128 + the signal's number, as shells say."""
    return 128 + error.signum
