"""Snakemake's SLURM executor against a real local cluster (fixture `slurm_cluster`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from slurm_cluster import SNAKEMAKE_ARGS, SlurmCluster

pytestmark = [pytest.mark.slow, pytest.mark.slurm]

TWO_RULES = textwrap.dedent(
    """
    rule all:
        input: "b.txt"

    rule a:
        output: "a.txt"
        resources: mem_mb=200, runtime=5
        shell: "echo ${{SLURM_JOB_ID:-none}} > {output}"

    rule b:
        input: "a.txt"
        output: "b.txt"
        resources: mem_mb=200, runtime=5
        shell: "echo ${{SLURM_JOB_ID:-none}} > {output}"
    """
)


def test_cluster_is_up_with_one_idle_node(slurm_cluster: SlurmCluster) -> None:
    out = slurm_cluster.sinfo()
    assert "debug*" in out and "idle" in out, out
    print(f"SLURM harness started in {slurm_cluster.startup_seconds:.2f} s")


def test_two_rule_workflow_runs_as_slurm_jobs(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    (tmp_path / "Snakefile").write_text(TWO_RULES)
    before = {j["JobId"] for j in slurm_cluster.completed_jobs()}
    proc = subprocess.run(
        [
            "snakemake",
            "--executor",
            "slurm",
            "--jobs",
            "2",
            "--default-resources",
            "slurm_partition=debug",
            *SNAKEMAKE_ARGS,
        ],
        cwd=tmp_path,
        env=slurm_cluster.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:] + "\n" + slurm_cluster.log_tails()

    # Proof 1: each rule saw a SLURM job id, i.e. it ran inside an allocation.
    ids = [(tmp_path / f).read_text().strip() for f in ("a.txt", "b.txt")]
    assert all(i.isdigit() for i in ids), ids
    assert ids[0] != ids[1]
    # Proof 2: slurmctld's own completion log lists those jobs as COMPLETED in partition debug.
    new = {j["JobId"]: j for j in slurm_cluster.completed_jobs() if j["JobId"] not in before}
    assert set(ids) <= set(new), (ids, new)
    for i in ids:
        assert new[i]["JobState"] == "COMPLETED" and new[i]["Partition"] == "debug", new[i]


def test_failing_rule_is_reported_as_failed(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """A job that exits non-zero must fail the run, not be mistaken for success."""
    (tmp_path / "Snakefile").write_text(
        'rule bad:\n    output: "x.txt"\n'
        '    resources: mem_mb=100, runtime=2\n    shell: "exit 3"\n'
    )
    proc = subprocess.run(
        ["snakemake", "--executor", "slurm", "--jobs", "1", *SNAKEMAKE_ARGS],
        cwd=tmp_path,
        env=slurm_cluster.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "FAILED" in proc.stderr, proc.stderr[-3000:]
    assert not (tmp_path / "x.txt").exists()


REPO = Path(__file__).resolve().parents[2]

# Rule names as in the pipeline, so the profile's set-resources apply. Each job records what
# SLURM actually granted it: job id, CPUs, memory (MB) and time limit.
MOCK_PIPELINE = textwrap.dedent(
    """
    RECORD = 'echo "$SLURM_JOB_ID $(squeue -h -j $SLURM_JOB_ID -o "%C %m %l")" > {output}'

    rule all:
        input: "train.txt"

    rule fetch_dataset:
        output: "fetch.txt"
        shell: RECORD

    rule train:
        input: "fetch.txt"
        output: "train.txt"
        threads: 2
        resources: gpu=0
        shell: RECORD
    """
)


def test_slurm_profile_resources_reach_sbatch(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """profiles/slurm, used as workflow profile, is accepted by the plugin and its per-rule
    resources become the jobs' real SLURM allocation."""
    (tmp_path / "Snakefile").write_text(MOCK_PIPELINE)
    proc = subprocess.run(
        ["snakemake", "--workflow-profile", str(REPO / "profiles" / "slurm"), *SNAKEMAKE_ARGS],
        cwd=tmp_path,
        env=slurm_cluster.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:] + "\n" + slurm_cluster.log_tails()
    fetch = (tmp_path / "fetch.txt").read_text().split()
    train = (tmp_path / "train.txt").read_text().split()
    # job id, then as squeue sees the allocation: CPUs (rule threads), memory (profile mem_mb),
    # time limit (profile runtime in minutes)
    assert fetch[0].isdigit() and train[0].isdigit() and fetch[0] != train[0]
    assert fetch[1:] == ["1", "2000M", "30:00"], fetch
    assert train[1:] == ["2", "4000M", "8:00:00"], train


def _copy_workflow(dest: Path) -> None:
    """The workflow files a run needs (top-level files such as Snakefile, config.yaml and
    environment.yml, the rules, the profiles, the bundled data); the library comes from REPO/src
    via PYTHONPATH. Copying keeps the run's data/, results/ and .snakemake/ out of the repo."""
    for item in REPO.iterdir():
        if item.is_file():
            shutil.copy2(item, dest / item.name)
    for name in ("workflow", "profiles", "data/demo"):
        shutil.copytree(REPO / name, dest / name)


def test_smoke_preset_through_slurm_profile(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """The real pipeline, smoke preset, every job submitted with profiles/slurm."""
    _copy_workflow(tmp_path)
    env = dict(slurm_cluster.env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    before = {j["JobId"] for j in slurm_cluster.completed_jobs()}
    cmd = [
        "snakemake",
        "--workflow-profile",
        "profiles/slurm",
        "--config",
        "preset=smoke",
        "--slurm-keep-successful-logs",
        *SNAKEMAKE_ARGS,
    ]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr[-6000:] + "\n" + slurm_cluster.log_tails()
    print(f"smoke preset through SLURM: {elapsed:.0f} s")

    # Complete: a second dry run finds nothing left to do.
    again = subprocess.run(
        ["snakemake", "-n", "--workflow-profile", "profiles/slurm", "--config", "preset=smoke"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout[-3000:]

    # Every train job ran as its own SLURM job: one sbatch log per job, and slurmctld recorded
    # as many COMPLETED jobs (the `all` rule is local, everything else is submitted).
    train_logs = list((tmp_path / ".snakemake" / "slurm_logs" / "rule_train").rglob("*.log"))
    assert train_logs, "no SLURM logs for rule train"
    runs = list((tmp_path / "results" / "runs").rglob("*.parquet"))
    assert len(train_logs) == len(runs) > 0
    new = [j for j in slurm_cluster.completed_jobs() if j["JobId"] not in before]
    assert new and all(j["JobState"] == "COMPLETED" for j in new), new
    assert {p.stem for p in train_logs} <= {j["JobId"] for j in new}
