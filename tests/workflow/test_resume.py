"""Crash safety end to end: SIGKILL a Snakemake run of the smoke preset mid-training,
rerun the same command, and check that

- train jobs that Snakemake had reported finished are not rerun (outputs untouched, no train
  job planned for them), and before the rerun `figures` and `report` plan no data or
  training job;
- a train job caught mid-way resumes at its next config ("already done (part file), not
  retrained" for each config finished before the kill);
- the final ``results/selected/**`` of the pairs whose training was caught equal those of an
  uninterrupted run in another folder (timing columns aside; the slow test compares every
  pair).

A SIGKILL leaves Snakemake's directory lock behind (it cannot clean up), so the rerun is
preceded by ``snakemake --unlock`` — the documented way to resume after a hard kill. The
workflow profile (profiles/default, auto-loaded) sets rerun-incomplete, so the job that was
killed in flight is rerun without further options.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pandas as pd
import pytest
from workspace import Workspace, assert_no_data_or_training, descendants

MODELS = ("xgboost", "mlp")
# 4 configs per job, and enough epochs that a job runs for a few seconds: a job can be caught
# with some configs done and some not. (Nested keys go through a config file: Snakemake parses
# `--config epochs={...}` values as strings.)
EXTRA_CONFIG = "epochs: {mlp: 20, xgboost_default: 30, xgboost_tuned: 40}\n"
TIMING = ("fit_seconds",)


class Run:
    """The smoke preset with 4 configs per job on ``datasets``: targets and arguments."""

    def __init__(self, datasets: tuple[str, ...]) -> None:
        self.datasets = datasets
        self.targets = [f"results/selected/{m}/{d}.parquet" for m in MODELS for d in datasets]
        suite = "[" + ",".join(datasets) + "]"
        self.args = [
            "--cores",
            "2",
            "--configfile",
            "extra.yaml",
            "--config",
            "preset=smoke",
            f"suite={suite}",
            "n_configs=3",
        ]

    def workspace(self, root: Path) -> Workspace:
        ws = Workspace(root, demo=self.datasets)
        (ws.root / "extra.yaml").write_text(EXTRA_CONFIG)
        return ws


def _train_jobs(log_text: str) -> dict[int, str]:
    """jobid -> runs output of every train job Snakemake started (from its log)."""
    jobs = {}
    for block in log_text.split("rule train:")[1:]:
        out = re.search(r"output: (\S+?\.parquet)", block)
        jid = re.search(r"jobid: (\d+)", block)
        if out and jid:
            jobs[int(jid.group(1))] = out.group(1)
    return jobs


def _finished_train_outputs(log_text: str) -> set[str]:
    jobs = _train_jobs(log_text)
    done = {int(j) for j in re.findall(r"Finished jobid: (\d+) \(Rule: train\)", log_text)}
    return {jobs[j] for j in done if j in jobs}


def _part_configs(part: Path) -> set[int]:
    return {int(p.stem.removeprefix("config")) for p in part.glob("config*.parquet")}


def _kill_mid_training(run: Run, ws: Workspace, log: Path, min_done: int, timeout: float = 240):
    """Start the run; SIGKILL Snakemake and its jobs once one train job is reported finished
    and another has at least ``min_done`` finished configs in its part folder but no output
    yet."""
    proc = ws.popen([*run.targets, *run.args], log)
    runs = ws.root / "results" / "runs"
    deadline = time.monotonic() + timeout
    try:
        while True:
            if proc.poll() is not None:
                raise AssertionError(
                    "the run ended before it was caught mid-training:\n" + log.read_text()[-3000:]
                )
            assert time.monotonic() < deadline, "timed out waiting to kill"
            finished = _finished_train_outputs(log.read_text())
            partial = {
                part: _part_configs(part)
                for part in runs.glob("*/*/split*.parquet.part")
                if not Path(str(part).removesuffix(".part")).exists()
            }
            partial = {p: c for p, c in partial.items() if len(c) >= min_done}
            if finished and partial:
                break
            time.sleep(0.01)
        jobs = descendants(proc.pid)  # the train processes, in case they left the group
        os.killpg(proc.pid, signal.SIGKILL)
        for pid in jobs:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.log_file.close()
    # what the kill left: part folders re-read now that nothing writes any more
    partial = {p: _part_configs(p) for p in partial if p.exists()}
    return finished, partial


def _selected(targets: list[str], root: Path) -> dict[str, pd.DataFrame]:
    out = {}
    for target in targets:
        df = pd.read_parquet(root / target)
        out[target] = df.drop(columns=[c for c in TIMING if c in df.columns])
    return out


def _check_resume(
    run: Run, tmp_path: Path, reference: dict[str, pd.DataFrame] | None, min_done: int = 1
) -> None:
    ws = run.workspace(tmp_path / "killed")
    finished, partial = _kill_mid_training(run, ws, tmp_path / "run1.log", min_done)
    assert finished and partial
    print(
        f"killed with finished train jobs {sorted(finished)}, part files "
        f"{ {str(p.relative_to(ws.root)): sorted(c) for p, c in partial.items()} }"
    )
    mtimes = {out: (ws.root / out).stat().st_mtime_ns for out in finished}

    unlock = ws.snakemake("--unlock", *run.args)
    assert unlock.returncode == 0, unlock.stderr[-3000:]
    assert_no_data_or_training(ws)  # the interrupted folder can be drawn from as it is
    dry = ws.snakemake("-n", *run.targets, *run.args)
    assert dry.returncode == 0, dry.stderr[-3000:]
    planned = set(_train_jobs(dry.stdout + dry.stderr).values())
    assert not planned & finished, (planned, finished)  # finished jobs are not rerun

    rerun = ws.snakemake(*run.targets, *run.args)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    rerun_jobs = set(_train_jobs(rerun.stdout + rerun.stderr).values())
    assert rerun_jobs == planned
    for out, t in mtimes.items():
        assert (ws.root / out).stat().st_mtime_ns == t, f"{out} was rewritten"

    # the job caught mid-way resumed: configs finished before the kill were not retrained
    for part, done in partial.items():
        out = Path(str(part).removesuffix(".part"))
        assert out.is_file() and not part.exists()
        model, dataset, split = out.parent.parent.name, out.parent.name, out.stem
        logs = ws.root / "results" / "logs" / "train"
        log = (logs / model / dataset / f"{split}.log").read_text()
        for c in range(4):
            skipped = f"config {c} ({c + 1}/4) already done (part file), not retrained" in log
            trained = f"config {c} ({c + 1}/4) training" in log
            assert skipped == (c in done) and trained == (c not in done), (c, done, log)

    if reference is None:  # the pairs whose training the kill caught: trained once, whole
        caught = [f"results/selected/{p.parent.parent.name}/{p.parent.name}.parquet"
                  for p in partial]
        reference = _uninterrupted(run, tmp_path / "uninterrupted", caught)
    resumed = _selected(run.targets, ws.root)
    for target, df in reference.items():
        pd.testing.assert_frame_equal(resumed[target], df, obj=target)


def _uninterrupted(run: Run, root: Path,
                   targets: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """The selected files of ``targets`` (default: the run's) trained without a kill."""
    targets = run.targets if targets is None else targets
    ws = run.workspace(root)
    res = ws.snakemake(*targets, *run.args)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return _selected(targets, ws.root)


def test_sigkill_mid_training_then_rerun_resumes(tmp_path):
    """One dataset, both models: one train job finished, the other caught mid-way."""
    _check_resume(Run(("kc1",)), tmp_path, reference=None)


@pytest.mark.slow
def test_resume_is_independent_of_when_the_kill_lands(tmp_path):
    """The smoke preset's two datasets, killed three times, when a job has 1, 2 and 3 of its 4
    configs done; each rerun compared with the same uninterrupted run."""
    run = Run(("segment", "kc1"))
    reference = _uninterrupted(run, tmp_path / "uninterrupted")
    for done in (1, 2, 3):
        _check_resume(run, tmp_path / f"after{done}", reference, min_done=done)
