"""The `train` rule: one job per (model, dataset, split) with explicit paths/params, threads,
GPU resources for NN jobs under device: cuda, and (end to end) valid records.

The DAG is built in a temporary project: this repo's common.smk and train.smk plus a minimal
stand-in for data.smk (processed_path, splits_path, kept_datasets) over tiny files.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import tabbench
from tabbench.models.recorder import check_records

REPO = Path(__file__).resolve().parents[2]
SRC = os.path.dirname(os.path.dirname(tabbench.__file__))
sys.path.insert(0, str(REPO / "tests"))
from fixtures.data_fixtures import write_dataset  # noqa: E402

FAKE_DATA_SMK = """
def processed_path(ds):
    return f"{DATA}/processed/{ds}.parquet"

def splits_path(ds):
    return f"{DATA}/splits/{ds}.parquet"

def kept_datasets():
    return ["toy", "toy2"]

def check_dataset(ds, trained=False, study=False):
    pass
"""


def make_project(tmp_path, **config):
    for ds in ("toy", "toy2"):
        write_dataset(tmp_path / "tmpdata", n=400)
        (tmp_path / "data" / "processed").mkdir(parents=True, exist_ok=True)
        (tmp_path / "data" / "splits").mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / "tmpdata" / "toy.parquet",
                    tmp_path / "data" / "processed" / f"{ds}.parquet")
        shutil.copy(tmp_path / "tmpdata" / "toy.splits.parquet",
                    tmp_path / "data" / "splits" / f"{ds}.parquet")
    cfg = {
        "preset": "smoke", "sources": ["bundled"], "models": ["xgboost", "mlp"],
        "n_splits": 2, "n_configs": 1, "seed": 0, "device": "cpu", "train_threads": 1,
        "epochs": {"xgboost_default": 4, "xgboost_tuned": 6, "mlp": 2},
        "data_dir": "data", "results_dir": "results", **config,
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    (tmp_path / "data.smk").write_text(FAKE_DATA_SMK)
    rules = REPO / "workflow" / "rules"
    (tmp_path / "Snakefile").write_text(
        'configfile: "config.yaml"\n'
        f'include: "{rules / "common.smk"}"\n'
        'include: "data.smk"\n'
        f'include: "{rules / "train.smk"}"\n'
        "rule all:\n    default_target: True\n    input: all_targets,\n"
    )
    # the rules call `tabbench`: this checkout's, not whatever is installed
    launcher = tmp_path / "bin" / "tabbench"
    launcher.parent.mkdir(exist_ok=True)
    launcher.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {SRC!r})\n"
        "from tabbench import cli\nsys.exit(cli.main())\n"
    )
    launcher.chmod(0o755)
    return tmp_path


def snakemake(project, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]),
           "PATH": f"{project / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args],
                          cwd=project, env=env, capture_output=True, text=True)


#: the dry runs of this worker, by their arguments and config (see :func:`dry_run`)
_DRY_RUNS: dict[str, subprocess.CompletedProcess] = {}

#: device: cuda with every GPU-claim setting given (test_train_device.py reads the same plan)
CUDA = {"device": "cuda", "train_threads": 2, "allow_cpu_fallback": True,
        "gpu_lock_dir": "/var/tmp/my locks", "gpu_claim_timeout": 120}


def dry_run(tmp_path_factory, *args, **config):
    """``snakemake -n -p *args`` on ``make_project(**config)``, run once per arguments and
    config (a dry run changes nothing, and several tests read the same plan)."""
    key = repr((args, sorted(config.items())))
    if key not in _DRY_RUNS:
        project = make_project(tmp_path_factory.mktemp("dry"), **config)
        _DRY_RUNS[key] = snakemake(project, "-n", "-p", *args)
    res = _DRY_RUNS[key]
    assert res.returncode == 0, res.stderr + res.stdout
    return res


def _jobs(res):
    """(job description, shell command) of every planned train job of a dry run."""
    text = res.stdout + res.stderr
    jobs = []
    for block in text.split("rule train:")[1:]:
        cmd = block[block.index("tabbench train"):].splitlines()[0]
        jobs.append((block.split("Shell command")[0], cmd))
    return jobs


def test_dry_run_plans_one_job_per_model_dataset_split(tmp_path_factory):
    res = dry_run(tmp_path_factory)
    cmds = [cmd for _, cmd in _jobs(res)]
    assert len(cmds) == 2 * 2 * 2
    xgb = [c for c in cmds if "--model xgboost --dataset toy2 --split 1" in c]
    assert len(xgb) == 1
    assert ("--processed data/processed/toy2.parquet --splits data/splits/toy2.parquet "
            "--out results/runs/xgboost/toy2/split1.parquet --n-configs 1 "
            "--epochs xgboost_default=4 xgboost_tuned=6 --seed 0 --threads 1 --device cpu"
            in xgb[0])
    assert "> results/logs/train/xgboost/toy2/split1.log 2>&1" in xgb[0]
    mlp = [c for c in cmds if "--model mlp --dataset toy --split 0" in c]
    assert "--epochs mlp=2 " in mlp[0]


def test_nn_jobs_claim_a_gpu_under_cuda(tmp_path_factory):
    res = dry_run(tmp_path_factory, "--resources", "gpu=1", **CUDA)
    jobs = _jobs(res)
    assert len(jobs) == 8
    for desc, cmd in jobs:
        nn = "--model mlp" in cmd
        assert ("--device cuda" if nn else "--device cpu") in cmd
        assert "--threads 2" in cmd
        # resources: gpu=1 for NN jobs only (Snakemake prints them per job in a dry run)
        assert ("gpu=1" if nn else "gpu=0") in desc, desc


@pytest.mark.parametrize(("cap", "flag"), [(None, "none"), (5, "5"), ("absent", "1000")])
def test_mlp_one_hot_cap_reaches_mlp_jobs_only(tmp_path_factory, cap, flag):
    config = {} if cap == "absent" else {"mlp_max_one_hot_levels": cap}
    res = dry_run(tmp_path_factory, **config)
    cmds = [cmd for _, cmd in _jobs(res)]
    assert len(cmds) == 8
    for cmd in cmds:
        if "--model mlp" in cmd:
            assert f"--device cpu --mlp-max-one-hot-levels {flag} --network-memory-gb " in cmd, cmd
        else:
            assert "--mlp-" not in cmd, cmd


FAKE_TABBENCH = """#!/bin/sh
# stands in for `tabbench train`: writes the two outputs named by --out
while [ $# -gt 0 ]; do
  if [ "$1" = --out ]; then out=$2; fi
  shift
done
touch "$out" "${out%.parquet}.failures.json"
"""


def _stand_in_for_training(project: Path) -> None:
    """FAKE_TABBENCH as the project's `tabbench` (its bin/ comes first on the jobs' PATH)."""
    launcher = project / "bin" / "tabbench"
    launcher.write_text(FAKE_TABBENCH)
    launcher.chmod(0o755)


@pytest.mark.slow
def test_one_hot_cap_change_retrains_mlp_jobs_only(tmp_path):
    """The cap is a rerun trigger of the mlp jobs (it changes their records) and of nothing
    else; a run (with a stand-in for `tabbench train`) records it in Snakemake's metadata. Once
    the folder has its run_config.yaml, the cap is changed there (a --config that disagrees with
    the folder's settings is refused).

    Slow (nine Snakemake runs); in the fast suite the same holds piece by piece: the cap
    changes what Snakemake records of an mlp train job and not of an xgboost one
    (tests/jobs/test_triggers.py::test_each_rules_params_trigger_exactly_as_the_table_says),
    a --config that disagrees with the folder's cap is refused
    (tests/settings/test_run_config.py::test_the_one_hot_cap_is_a_study_setting_of_the_folder),
    the cap reaches the mlp commands only (test_mlp_one_hot_cap_reaches_mlp_jobs_only), and a
    setting changed in run_config.yaml retrains through real Snakemake with the profile's
    triggers (test_the_rerun_policy_retrains_for_settings_never_for_a_changed_rule)."""
    project = make_project(tmp_path / "p", mlp_max_one_hot_levels=1000)
    _stand_in_for_training(project)
    stored = project / "results" / "run_config.yaml"

    def planned(*config):
        res = snakemake(project, "-n", "-p", *(["--config", *config] if config else []))
        assert res.returncode == 0, res.stderr + res.stdout
        return sorted(cmd.split(" --dataset")[0] for _, cmd in _jobs(res))

    def set_cap(value):
        cfg = yaml.safe_load(stored.read_text())
        cfg["mlp_max_one_hot_levels"] = value
        stored.write_text(yaml.safe_dump(cfg))

    res = snakemake(project)
    assert res.returncode == 0, res.stderr[-3000:]
    assert stored.is_file()
    assert planned() == planned("mlp_max_one_hot_levels=1000") == []
    refused = snakemake(project, "-n", "--config", "mlp_max_one_hot_levels=5")
    assert refused.returncode != 0
    assert "mlp_max_one_hot_levels: folder 1000, asked 5" in refused.stderr, refused.stderr
    mlp_jobs = ["tabbench train --model mlp"] * 4
    set_cap(5)
    assert planned() == planned("mlp_max_one_hot_levels=5") == mlp_jobs
    assert snakemake(project).returncode == 0
    assert planned() == []
    set_cap(1000)
    assert planned() == mlp_jobs  # back to the default: retrain


@pytest.mark.slow
def test_end_to_end_records(tmp_path):
    project = make_project(tmp_path, n_splits=1)
    res = snakemake(project)
    assert res.returncode == 0, res.stderr + res.stdout
    for model, epochs in (("xgboost", {0: 4, 1: 6}), ("mlp", {0: 2, 1: 2})):
        for ds in ("toy", "toy2"):
            out = project / "results" / "runs" / model / ds / "split0.parquet"
            check_records(pd.read_parquet(out), epochs)
            assert (out.parent / "split0.failures.json").read_text().strip() == "[]"
            log = (project / "results" / "logs" / "train" / model / ds / "split0.log").read_text()
            assert "done: 2 configs recorded" in log


def test_the_rerun_policy_retrains_for_settings_never_for_a_changed_rule(tmp_path):
    """profiles/default's rerun triggers (the one policy, docs/design.md §6): with them, a
    changed rule (here its command reworded, as a `git pull` may bring) plans nothing on a
    finished folder, where Snakemake's own default triggers would retrain every job; a changed
    setting still retrains the jobs it affects."""
    triggers = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())[
        "rerun-triggers"]
    assert "code" not in triggers and "params" in triggers
    project = make_project(tmp_path / "p", models=["mlp"], n_splits=1)
    rules = project / "workflow" / "rules"  # the repository's layout (conda: ../../environment.yml)
    shutil.copytree(REPO / "workflow" / "rules", rules)
    shutil.copy(REPO / "environment.yml", project / "environment.yml")
    snakefile = project / "Snakefile"
    snakefile.write_text(snakefile.read_text().replace(
        str(REPO / "workflow" / "rules" / "train.smk"), str(rules / "train.smk")))
    _stand_in_for_training(project)
    assert snakemake(project).returncode == 0
    train = rules / "train.smk"
    text = train.read_text()
    assert "{params.record_flags}{params.run_flags}" in text
    train.write_text(text.replace("{params.record_flags}{params.run_flags}",
                                  "{params.record_flags} {params.run_flags}"))
    policy = ["--rerun-triggers", *triggers]

    def planned(*args):
        res = snakemake(project, "-n", "-p", *args)
        assert res.returncode == 0, res.stderr + res.stdout
        return len(_jobs(res))

    assert planned(*policy) == 0
    assert planned() == 2  # Snakemake's defaults (the code trigger) would retrain both jobs
    stored = project / "results" / "run_config.yaml"
    cfg = yaml.safe_load(stored.read_text())
    cfg["epochs"]["mlp"] = 3
    stored.write_text(yaml.safe_dump(cfg))
    assert planned(*policy) == 2  # a setting that changes the records retrains
