"""What a run says at its end (:mod:`tabbench.jobs.messages`): only about this run."""

from __future__ import annotations

import os

from tabbench.core.layout import DataLayout
from tabbench.jobs.messages import DataStageMessages, interrupted_hint


def test_an_interrupted_run_says_how_to_resume(tmp_path, capsys):
    log = tmp_path / "run.log"
    log.write_text("...\nTerminating processes on user request, this might take some time.\n")
    interrupted_hint([str(log)], success=False)
    assert "tabbench: interrupted." in capsys.readouterr().err
    interrupted_hint(str(log), success=True)
    interrupted_hint([str(tmp_path / "missing.log")], success=False)
    assert capsys.readouterr().err == ""


def test_the_data_stage_repeats_only_what_this_run_wrote(tmp_path, capsys):
    layout = DataLayout(tmp_path / "data")
    messages = DataStageMessages(layout)
    os.makedirs(os.path.dirname(layout.summary_line))
    os.makedirs(os.path.dirname(layout.log("fetch", "x")), exist_ok=True)
    with open(layout.summary_line, "w") as fh:
        fh.write("data: 2 datasets: 2 kept\n")
    old = layout.log("fetch", "old")
    with open(old, "w") as fh:
        fh.write("tabbench data: error: before\n")
    os.utime(layout.summary_line, (0, 0))
    os.utime(old, (0, 0))
    messages.start()
    messages.summary(None, True)
    messages.fetch_errors(None, False)
    assert capsys.readouterr().err == ""  # nothing of this run
    with open(layout.summary_line, "w") as fh:
        fh.write("data: 2 datasets: 2 kept\n")
    with open(layout.log("fetch", "new"), "w") as fh:
        fh.write("fetching\ntabbench data: error: sha256 mismatch\n")
    later = messages.started + 1  # (a file's time may lag the clock by a tick)
    for path in (layout.summary_line, layout.log("fetch", "new")):
        os.utime(path, (later, later))
    messages.summary(None, True)
    messages.fetch_errors(None, True)  # a successful run has none to repeat
    messages.fetch_errors(None, False)
    assert capsys.readouterr().err.splitlines() == [
        "tabbench data: 2 datasets: 2 kept", "tabbench data: error: sha256 mismatch"]
