"""The GPU-claim config keys (allow_cpu_fallback, gpu_lock_dir, gpu_claim_timeout) reach the
NN train jobs' command lines under device: cuda, and only theirs (issue 7)."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_train_rules import SRC, _jobs, make_project, snakemake  # noqa: E402


def torch_has_cuda():
    import torch

    return torch.cuda.is_available()


def test_gpu_claim_flags_reach_nn_jobs_only(tmp_path):
    project = make_project(
        tmp_path,
        device="cuda",
        allow_cpu_fallback=True,
        gpu_lock_dir="/var/tmp/my locks",
        gpu_claim_timeout=120,
    )
    res = snakemake(project, "-n", "-p", "--resources", "gpu=1")
    assert res.returncode == 0, res.stderr + res.stdout
    jobs = _jobs(res)
    assert len(jobs) == 8
    for _, cmd in jobs:
        if "--model mlp" in cmd:
            assert (
                "--device cuda --allow-cpu-fallback true --gpu-lock-dir '/var/tmp/my locks'"
                " --gpu-claim-timeout 120 --mlp-max-one-hot-levels 1000 > "
            ) in cmd, cmd
        else:
            assert "--device cpu > " in cmd, cmd


def test_cpu_runs_carry_no_gpu_flags(tmp_path):
    res = snakemake(make_project(tmp_path), "-n", "-p")
    assert res.returncode == 0, res.stderr + res.stdout
    cmds = [cmd for _, cmd in _jobs(res)]
    assert cmds and all("--device cpu " in c and "--gpu-" not in c for c in cmds)


@pytest.mark.slow
@pytest.mark.skipif(torch_has_cuda(), reason="checks the CPU fallback on a machine without CUDA")
def test_cuda_config_on_a_cpu_machine_falls_back_and_claim_settings_do_not_rerun(
    tmp_path, monkeypatch
):
    project = make_project(
        tmp_path,
        device="cuda",
        allow_cpu_fallback=True,
        models=["mlp"],
        n_splits=1,
        gpu_lock_dir=str(tmp_path / "locks"),
    )
    launcher = tmp_path / "bin" / "tabbench"
    launcher.parent.mkdir()
    launcher.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {SRC!r})\n"
        "from tabbench import cli\nsys.exit(cli.main())\n"
    )
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", f"{launcher.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    res = snakemake(project, "--resources", "gpu=1")
    assert res.returncode == 0, res.stderr[-3000:] + res.stdout[-3000:]
    for ds in ("toy", "toy2"):
        log = (project / "results" / "logs" / "train" / "mlp" / ds / "split0.log").read_text()
        assert "WARNING tabbench.gpu: device 'cuda' requested but CUDA is not available" in log
        assert "device=cpu" in log and "done: 2 configs recorded" in log
    # how a GPU is claimed does not change the records: no rerun when those settings change
    again = snakemake(
        project,
        "-n",
        "--resources",
        "gpu=1",
        "--config",
        "gpu_claim_timeout=5",
        f"gpu_lock_dir={tmp_path / 'other'}",
    )
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout[-3000:]
