"""Stopping a training job by a signal: SIGINT (Ctrl-C) and SIGTERM (``scancel``, a SLURM time
limit) become :class:`TrainInterrupted` at the next Python instruction, within a boosting round
or a mini-batch, i.e. at once on the time scale of a job."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator, Sequence
from typing import Any


class TrainInterrupted(BaseException):
    """A training job was asked to stop by a signal. A BaseException, like KeyboardInterrupt, so
    that a trainer's ``except Exception`` does not record it as a failed config."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"stopped by {self.signal_name}")

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name


@contextlib.contextmanager
def stop_on_signals(
    signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM),
) -> Iterator[None]:
    """Turn ``signals`` into :class:`TrainInterrupted` inside the block (main thread only).
    After the first one the default actions are back, so a second signal ends the process at
    once, whatever it is doing.

    A signal that is ignored when the block starts stays ignored (the Unix convention, which
    Python and so Snakemake follow): a non-interactive shell starts ``cmd &`` with SIGINT
    ignored, and a Snakemake started so does not stop on SIGINT. Its jobs inherit the ignore;
    if they stopped on the same SIGINT, Snakemake would see a failed job, retry it or go on
    with the next ones, and a Ctrl-C would restart work instead of stopping it."""

    def stop(signum: int, frame: Any) -> None:
        for s in caught:
            signal.signal(s, signal.SIG_DFL)
        raise TrainInterrupted(signum)

    caught = [s for s in signals if signal.getsignal(s) != signal.SIG_IGN]
    previous = {s: signal.signal(s, stop) for s in caught}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
