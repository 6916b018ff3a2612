"""keras_pretrain.training.signals: SIGTERM / SIGINT raised as `Interrupted` inside the block, the previous
handlers back after it, and the exit code of a stopped run (128 + the signal's number)."""

import signal
import threading

import pytest

from keras_pretrain import training


@pytest.mark.one_backend
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_block_and_the_handlers_are_restored(signum):
    before = signal.getsignal(signum)
    cleaned = []
    with pytest.raises(training.Interrupted) as info:
        with training.stop_on_signals():
            try:
                signal.raise_signal(signum)
            finally:
                cleaned.append(True)  # the run's `finally` blocks run (the lock is released)
    assert cleaned == [True]
    assert info.value.signum == signum and info.value.name == signal.Signals(signum).name
    assert isinstance(info.value, KeyboardInterrupt)
    assert training.interrupted_exit_code(info.value) == 128 + signum
    assert signal.getsignal(signum) is before


@pytest.mark.one_backend
def test_outside_the_main_thread_signals_are_left_alone():
    seen = []

    def worker():
        with training.stop_on_signals():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [before]

