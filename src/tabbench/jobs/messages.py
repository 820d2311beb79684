"""What a run says in the terminal at its end, last, where it is seen: after Ctrl-C what was
kept and how to go on; the data stage's summary; the error of each fetch job that failed."""

from __future__ import annotations

import glob
import os
import sys
import time
from collections.abc import Iterable
from typing import Any

from tabbench.core.layout import DataLayout

#: what Snakemake writes to its log when the user interrupts it
INTERRUPTED = "Terminating processes on user request"
#: the first words of the one line a failed data command writes to its log
DATA_ERROR = "tabbench data: error:"


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _logs(log: Any) -> Iterable[str]:
    """The run's log file(s): one path, or a list of them (Snakemake >= 8)."""
    return [log] if isinstance(log, str) else list(log or [])


def interrupted_hint(log: Any, success: bool) -> None:
    """End hook: after Ctrl-C Snakemake ends with "WorkflowError: At least one job did not
    complete successfully", which reads like a failure: say what was kept and how to go on."""
    interrupted = False
    for path in _logs(log):
        try:
            interrupted |= INTERRUPTED in open(path).read()
        except OSError:
            pass
    if interrupted and not success:
        _say("tabbench: interrupted. Finished jobs are kept, and so are the finished configs of "
             "interrupted train jobs (<output>.part/): run the same command again to resume. "
             "After a hard kill (SIGKILL, power cut) release the lock first: snakemake --unlock")


class DataStageMessages:
    """What the data stage of a run says at its end, about the files written since the run
    started (:meth:`start`, a start hook)."""

    def __init__(self, layout: DataLayout) -> None:
        self.layout = layout
        self.started: float | None = None

    def start(self) -> None:
        self.started = time.time()

    def _fresh(self, path: str) -> bool:
        try:
            return self.started is not None and os.path.getmtime(path) >= self.started
        except OSError:
            return False

    def summary(self, log: Any, success: bool) -> None:
        """End hook: where this run's data stage ran (collect_datasets wrote its summary
        during it), repeat its lines (the summary, the leakage check's findings)."""
        path = self.layout.summary_line
        try:
            lines = open(path).read().splitlines() if self._fresh(path) else []
        except OSError:
            lines = []
        for line in filter(None, lines):
            _say(f"tabbench {line}")

    def fetch_errors(self, log: Any, success: bool) -> None:
        """End hook of a failed run: the one-line error of each fetch job that failed during it
        (a checksum mismatch), which is otherwise only in the job's log."""
        if success or self.started is None:
            return
        for path in sorted(glob.glob(self.layout.log("fetch", "*"))):
            try:
                lines = open(path).read().splitlines() if self._fresh(path) else []
            except OSError:
                continue
            for line in lines:
                if line.startswith(DATA_ERROR):
                    _say(line)
