"""A training job's progress lines in its log: one per chunk of epochs, with the elapsed time
and an ETA from this process's own pace."""

from __future__ import annotations

import time
from typing import TextIO


def hms(seconds: float) -> str:
    """A duration as the progress lines write it: seconds under a minute, else h:mm:ss; ``?``
    for NaN (no pace measured yet)."""
    if seconds != seconds:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Progress:
    """``[tag] message`` lines on ``stream``; :meth:`epochs` adds elapsed time and ETA over the
    ``epochs_todo`` epochs the job has to train."""

    def __init__(self, stream: TextIO, tag: str, epochs_todo: int) -> None:
        self.stream, self.tag, self.todo = stream, tag, epochs_todo
        self.t0 = time.perf_counter()
        self.done = 0

    def line(self, msg: str) -> None:
        print(f"[{self.tag}] {msg}", file=self.stream, flush=True)

    def write(self, text: str) -> None:
        """Text as it is (a traceback), into the same log."""
        self.stream.write(text)

    def epochs(self, n: int, msg: str) -> None:
        self.done += n
        elapsed = time.perf_counter() - self.t0
        left = max(0, self.todo - self.done)
        eta = elapsed / self.done * left if self.done else float("nan")
        self.line(f"{msg} elapsed {hms(elapsed)} eta {hms(eta)}")

    def skip(self, n: int) -> None:
        """``n`` epochs that will not be trained (resumed from a part file, or a failure)."""
        self.todo -= n
