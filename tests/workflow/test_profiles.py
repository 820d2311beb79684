"""The Snakemake profiles: accepted by Snakemake, effective, and naming rules that exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PROFILES = {name: REPO / "profiles" / name for name in ("default", "slurm")}

# Rule names of the pipeline that the profiles configure, with a job that records its resources.
MOCK = textwrap.dedent(
    """
    rule all:
        input: "train.txt", "fetch.txt"

    rule fetch_dataset:
        output: "fetch.txt"
        shell: "echo {resources.mem_mb} {resources.runtime} > {output}"

    rule train:
        output: "train.txt"
        resources: gpu=0
        shell: "echo {resources.mem_mb} {resources.runtime} > {output}"
    """
)


def _snakemake(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    # the workflow imports tabbench: this checkout's, not whatever is installed
    src = str(REPO / "src")
    path = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=300,
    )


def _profile(name: str) -> dict:
    return yaml.safe_load((PROFILES[name] / "config.yaml").read_text())


def _resources_by_rule(dry_run_output: str) -> dict[str, str]:
    """rule name -> its `resources:` line, from `snakemake -n` output."""
    out, rule = {}, None
    for line in dry_run_output.splitlines():
        m = re.match(r"^(?:local)?(?:rule|checkpoint) (\w+):", line)
        if m:
            rule = m.group(1)
        elif rule and line.strip().startswith("resources:"):
            out[rule] = line.strip()
    return out


FAILS_ONCE = textwrap.dedent(
    """
    rule train:
        output: "out.txt"
        shell:
            "echo {resources.mem_mb} >> attempts.txt; "
            "test -e failed_once || (touch failed_once; exit 130); "
            "echo done > {output}"
    """
)


def test_default_profile_does_not_retry(tmp_path: Path) -> None:
    """A failed job (here: exit 130, as a train job stopped by SIGINT ends) is not run again:
    on a workstation a retry gets no more room than the first try, and a stopped job must stay
    stopped."""
    (tmp_path / "Snakefile").write_text(FAILS_ONCE)
    proc = _snakemake(tmp_path, "--workflow-profile", str(PROFILES["default"]))
    assert proc.returncode != 0
    assert (tmp_path / "attempts.txt").read_text().split() == ["4000"]
    assert "Trying to restart job" not in proc.stdout + proc.stderr


def test_default_profile_retry_when_asked_doubles_memory(tmp_path: Path) -> None:
    """With ``--retries 1`` (what the profile advises beside a memory budget) the retry gets
    attempt=2, i.e. twice the memory request."""
    (tmp_path / "Snakefile").write_text(FAILS_ONCE)
    proc = _snakemake(tmp_path, "--workflow-profile", str(PROFILES["default"]), "--retries", "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "attempts.txt").read_text().split() == ["4000", "8000"]


def test_default_profile_per_rule_resources(tmp_path: Path) -> None:
    """The jobs run with the profile's requests. A dry run prints a request that depends on
    ``attempt`` as ``<TBD>`` (Snakemake >= 9), so the memory and runtime are read from what the
    jobs themselves recorded; the constant ``downloads`` from the dry run's listing."""
    (tmp_path / "Snakefile").write_text(MOCK)
    dry = _snakemake(tmp_path, "-n", "--workflow-profile", str(PROFILES["default"]))
    assert dry.returncode == 0, dry.stderr[-3000:]
    res = _resources_by_rule(dry.stdout + dry.stderr)
    assert "downloads" not in res["train"] and "downloads=1" in res["fetch_dataset"]
    proc = _snakemake(tmp_path, "--workflow-profile", str(PROFILES["default"]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "train.txt").read_text().split() == ["4000", "60"]
    assert (tmp_path / "fetch.txt").read_text().split() == ["2000", "60"]


def test_slurm_profile_dry_run(tmp_path: Path) -> None:
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="extra `slurm` not installed")
    (tmp_path / "Snakefile").write_text(MOCK)
    proc = _snakemake(tmp_path, "-n", "--workflow-profile", str(PROFILES["slurm"]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = _resources_by_rule(proc.stdout + proc.stderr)
    assert "runtime=480" in res["train"] and "mem_mb=4000" in res["train"]
    assert "runtime=30" in res["fetch_dataset"] and "mem_mb=2000" in res["fetch_dataset"]


def test_profile_rule_names_exist_in_the_workflow() -> None:
    """Snakemake silently ignores set-resources/set-threads for unknown rules; catch renames."""
    proc = _snakemake(REPO, "--list-rules", "--workflow-profile", "none")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rules = set(proc.stdout.split())
    assert {"fetch_dataset", "filter_dataset", "train", "select"} <= rules, rules
    for name in PROFILES:
        profile = _profile(name)
        named = set(profile.get("set-resources", {})) | set(profile.get("set-threads", {}))
        assert named <= rules, f"profiles/{name} names unknown rules: {sorted(named - rules)}"
