"""The GPU-claim config keys (allow_cpu_fallback, gpu_lock_dir, gpu_claim_timeout) reach the
NN train jobs' command lines under device: cuda, and only theirs (issue 7)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_train_rules import _jobs, make_project, snakemake  # noqa: E402


def test_gpu_claim_flags_reach_nn_jobs_only(tmp_path):
    project = make_project(tmp_path, device="cuda", allow_cpu_fallback=True,
                           gpu_lock_dir="/var/tmp/my locks", gpu_claim_timeout=120)
    res = snakemake(project, "-n", "-p", "--resources", "gpu=1")
    assert res.returncode == 0, res.stderr + res.stdout
    jobs = _jobs(res)
    assert len(jobs) == 8
    for _, cmd in jobs:
        if "--model mlp" in cmd:
            assert ("--device cuda --allow-cpu-fallback true --gpu-lock-dir '/var/tmp/my locks'"
                    " --gpu-claim-timeout 120 2>") in cmd, cmd
        else:
            assert "--device cpu 2>" in cmd, cmd


def test_cpu_runs_carry_no_gpu_flags(tmp_path):
    res = snakemake(make_project(tmp_path), "-n", "-p")
    assert res.returncode == 0, res.stderr + res.stdout
    cmds = [cmd for _, cmd in _jobs(res)]
    assert cmds and all("--device cpu 2>" in c and "--gpu-" not in c for c in cmds)
