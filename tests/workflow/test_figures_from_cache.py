"""Figures and reports from a results folder, whatever config produced it: after a run
interrupted by SIGINT (as Ctrl-C sends it; slow), `snakemake figures -n` and
`snakemake report -n` plan no data or training job, before and after the run is resumed with
the bare `snakemake --cores 2`; on a folder without results, `figures` says so in one line.

The same on the finished smoke study (a redraw with other settings, a single-dataset rerun, a
damaged input, `tabbench figures` beside `snakemake figures`) runs on that module's one run of
the whole DAG: tests/workflow/test_smoke_dag.py.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
from workspace import Workspace, assert_no_data_or_training, output_of

# --- after a SIGINT ---------------------------------------------------------------------------

EXTRA = "epochs: {mlp: 30, xgboost_default: 30, xgboost_tuned: 40}\n"


def _finished_train_jobs(log: str) -> int:
    return len(re.findall(r"Finished jobid: \d+ \(Rule: train\)", log))


@pytest.mark.slow
def test_after_sigint_and_resume_figures_plan_no_training(tmp_path):
    """Slow (a training interrupted, then the whole study resumed and drawn). In the fast
    suite: a run killed mid-training, whose folder's figures and report plan no data or
    training job and whose rerun resumes (tests/workflow/test_resume.py::
    test_sigkill_mid_training_then_rerun_resumes); a train job stopped by SIGINT keeps its
    finished configs (tests/study/test_train_job.py::
    test_signal_stops_the_job_promptly_and_keeps_finished_configs); the profile retries no job
    (tests/workflow/test_profiles.py::test_default_profile_does_not_retry); a bare command
    takes the folder's settings (tests/settings/test_run_config.py::
    test_folder_settings_replace_config_yaml_without_repeating_config)."""
    ws = Workspace(tmp_path / "wf", demo=("kc1",))
    (ws.root / "extra.yaml").write_text(EXTRA)
    log = tmp_path / "run.log"
    # The profile as users get it (no --retries): a Ctrl-C stops the run and no job is run
    # again. ws.popen starts Snakemake as a terminal's foreground job: a test process with
    # SIGINT ignored (as `pytest &` from a script has) would make Snakemake ignore the SIGINT
    # while the train job stopped on it, and a retrying profile would restart the job.
    proc = ws.popen(["--cores", "2", "--configfile", "extra.yaml", "--config",
                     "preset=smoke", "suite=[kc1]", "models=[xgboost,mlp]", "n_configs=3"], log)
    runs = ws.root / "results" / "runs"
    deadline = time.monotonic() + 300
    try:
        while True:  # one train job finished, another one mid-way
            assert proc.poll() is None, "finished before the interrupt:\n" + log.read_text()[-3000:]
            assert time.monotonic() < deadline, "timed out waiting to interrupt"
            mid_way = [p for p in runs.glob("*/*/split*.parquet.part")
                       if not Path(str(p).removesuffix(".part")).exists()]
            if _finished_train_jobs(log.read_text()) and mid_way:
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends to the terminal's process group
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.log_file.close()
    text = log.read_text()
    assert proc.returncode != 0, text[-3000:]
    # Snakemake stopped: in its job loop, or (when the interrupt lands while it evaluates an
    # input function after a finished job) with that function's KeyboardInterrupt
    assert ("Terminating processes on user request" in text
            or "KeyboardInterrupt" in text), text[-3000:]
    assert "Trying to restart job" not in text, text[-3000:]  # and ran no job again
    assert_no_data_or_training(ws)  # before resuming

    res = ws.snakemake("--cores", "2")  # resumed: the folder's settings, no --config
    assert res.returncode == 0, output_of(res)[-3000:]
    assert "using results/run_config.yaml" in output_of(res)
    for model in ("xgboost", "mlp"):
        assert (runs / model / "kc1" / "split0.parquet").is_file()
    assert_no_data_or_training(ws)


def test_figures_on_a_folder_without_results_say_so_in_one_line(tmp_path):
    ws = Workspace(tmp_path / "wf")
    cases = [  # (the folder's state, --config, the line)
        (None, [], "tabbench: results folder results/ does not exist. Run the study first"),
        ("results/runs", [], "tabbench: results/ holds no complete results to draw figures "
                             "from. Run the study first"),
        # a folder that does not exist, named with a typo of one that does
        ("results/runs", ["--config", "results_dir=reslts"],
         "tabbench: results folder reslts/ does not exist (did you mean 'results'?). Run the "
         "study first"),
    ]
    for folder, config, line in cases:
        if folder:
            (ws.root / folder).mkdir(parents=True, exist_ok=True)
        res = ws.snakemake("--cores", "1", "figures", *config)
        assert res.returncode != 0
        assert output_of(res).strip().splitlines()[-1].startswith(line), output_of(res)
        assert "Job stats" not in output_of(res)
        assert "Exception" not in output_of(res) and "Traceback" not in output_of(res)
    assert not (ws.root / "results" / "summary").exists()
