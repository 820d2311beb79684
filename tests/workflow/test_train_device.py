"""The GPU-claim config keys (allow_cpu_fallback, gpu_lock_dir, gpu_claim_timeout,
gpu_jobs_per_device) and the stacked path's (network_members, network_memory_gb) reach the NN
train jobs' command lines under device: cuda, and only theirs."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_train_rules import CUDA, _jobs, dry_run, make_project, snakemake  # noqa: E402


def torch_has_cuda():
    import torch

    return torch.cuda.is_available()


def test_gpu_claim_flags_reach_nn_jobs_only(tmp_path_factory):
    assert {"allow_cpu_fallback", "gpu_lock_dir", "gpu_claim_timeout"} <= set(CUDA)
    res = dry_run(tmp_path_factory, "--resources", "gpu=1", **CUDA)
    jobs = _jobs(res)
    assert len(jobs) == 8
    for _, cmd in jobs:
        if "--model mlp" in cmd:
            # on a GPU the networks train stacked (network_members null = auto)
            for flag in ("--device cuda ", "--allow-cpu-fallback true ",
                         "--gpu-lock-dir '/var/tmp/my locks' ", "--gpu-claim-timeout 120 ",
                         "--gpu-jobs-per-device 1 ", "--mlp-max-one-hot-levels 1000 ",
                         "--members auto ", "--network-memory-gb 4 "):
                assert flag in cmd, (flag, cmd)
        else:
            assert "--device cpu " in cmd and "--gpu-" not in cmd, cmd
            assert "--allow-cpu-fallback" not in cmd, cmd


def test_cpu_runs_carry_no_gpu_flags(tmp_path_factory):
    res = dry_run(tmp_path_factory)
    cmds = [cmd for _, cmd in _jobs(res)]
    assert cmds and all("--device cpu " in c and "--gpu-" not in c for c in cmds)
    # auto on the CPU is the measured default: no --members unless it stacks there
    from tabbench.models.stacked.plan import AUTO_CPU_MEMBERS

    mlp = [c for c in cmds if "--model mlp" in c]
    assert mlp and all(("--members" in c) == (AUTO_CPU_MEMBERS > 1) for c in mlp)


def test_network_members_reach_the_cpu_jobs(tmp_path_factory):
    res = dry_run(tmp_path_factory, network_members=8, network_memory_gb=2.5)
    for _, cmd in _jobs(res):
        if "--model mlp" in cmd:
            assert "--members 8 --network-memory-gb 2.5 " in cmd, cmd
        else:
            assert "--members" not in cmd and "--network-memory-gb" not in cmd, cmd


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
    res = snakemake(project, "--resources", "gpu=1")  # (make_project's launcher: this checkout)
    assert res.returncode == 0, res.stderr[-3000:] + res.stdout[-3000:]
    for ds in ("toy", "toy2"):
        log = (project / "results" / "logs" / "train" / "mlp" / ds / "split0.log").read_text()
        assert "WARNING tabbench.core.gpu: device 'cuda' requested but CUDA is not available" in log
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
        "gpu_jobs_per_device=3",
        "network_memory_gb=9",
    )
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout[-3000:]


def test_a_stacked_study_records_every_epoch_and_switching_the_path_retrains(tmp_path):
    """network_members: 3 trains the MLP jobs stacked through the real rule (every epoch of every
    config recorded, the path in the provenance); the memory budget may change without a rerun,
    switching the folder to one config at a time retrains the network jobs."""
    import yaml

    from tabbench.core.provenance import read_runs_provenance
    from tabbench.models.recorder import check_records

    project = make_project(tmp_path, models=["mlp"], n_splits=1, n_configs=3,
                           network_members=3)
    res = snakemake(project)
    assert res.returncode == 0, res.stderr[-3000:] + res.stdout[-3000:]
    import pandas as pd

    for ds in ("toy", "toy2"):
        runs = project / "results" / "runs" / "mlp" / ds / "split0.parquet"
        check_records(pd.read_parquet(runs), {c: 2 for c in range(4)})
        prov = read_runs_provenance(runs)
        assert prov["training"] == "stacked" and prov["members"] == 3
        log = (project / "results" / "logs" / "train" / "mlp" / ds / "split0.log").read_text()
        assert "configs 0,1,2 (group 1/2, 3 members)" in log, log
    again = snakemake(project, "-n", "--config", "network_memory_gb=1")
    assert again.returncode == 0 and "rule train:" not in again.stdout + again.stderr
    stored = project / "results" / "run_config.yaml"
    cfg = yaml.safe_load(stored.read_text())
    cfg["network_members"] = 1
    stored.write_text(yaml.safe_dump(cfg))
    switched = snakemake(project, "-n", "-p")
    assert switched.returncode == 0, switched.stderr
    cmds = [cmd for _, cmd in _jobs(switched)]
    assert len(cmds) == 2 and all("--members" not in c for c in cmds)


def test_a_pinned_gpu_is_a_setting_and_counts_as_a_gpu_job(tmp_path_factory):
    """device: cuda:1 (gpu.py and the CLI accept it; the config schema did not): network jobs
    are pinned to that GPU (no claiming) and still declare the gpu resource."""
    res = dry_run(tmp_path_factory, "--resources", "gpu=1", device="cuda:1")
    for desc, cmd in _jobs(res):
        nn = "--model mlp" in cmd
        assert ("--device cuda:1" if nn else "--device cpu") in cmd, cmd
        assert ("gpu=1" if nn else "gpu=0") in desc, desc
