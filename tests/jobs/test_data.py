"""The data rules' checks, inputs and start hook (:mod:`tabbench.jobs.data`), without
Snakemake: a dataset no source knows, one the data stage did not keep and one outside the
study are refused in one line."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest

from tabbench.cli import build_parser
from tabbench.jobs.data import DataJobs
from tabbench.jobs.refusal import Refused
from tabbench.jobs.triggers import NotARerunTrigger

DEMO = str(Path(__file__).resolve().parents[2] / "data" / "demo")


def _jobs(config, settings_file=None):
    return DataJobs(config, DEMO, config["results_dir"], settings_file)


def test_the_suite_and_a_name_the_data_jobs_cannot_take(settled):
    jobs = _jobs(settled())
    assert jobs.datasets == ["segment", "kc1"]
    with pytest.raises(Refused, match="^tabbench: invalid configuration: .*exclude"):
        _jobs(settled(exclude=["nosuch"]))


def test_inputs_and_targets_follow_the_layout(config):
    jobs = _jobs(config)
    w = SimpleNamespace(dataset="kc1")
    data = config["data_dir"]
    assert jobs.fetch_input(w) == []
    assert jobs.filter_input(w) == {"parquet": f"{data}/raw/kc1.parquet",
                                    "json": f"{data}/raw/kc1.json"}
    assert jobs.split_input(w) == f"{data}/processed/kc1.parquet"
    assert jobs.targets(["kc1"]) == [f"{data}/datasets.csv", f"{data}/splits/kc1.parquet"]


def test_an_unknown_dataset_is_refused_with_the_known_names(config):
    with pytest.raises(Refused, match=r"^tabbench: .*'segmnt'.*segment"):
        _jobs(config).check("segmnt")
    with pytest.raises(Refused, match="^tabbench: dataset name .-x. starts with"):
        _jobs(config).check("-x")


def test_a_dataset_the_filter_did_not_keep_is_refused_for_a_split(config):
    jobs = _jobs(config)
    report = Path(jobs.layout.processed_json("kc1"))
    report.parent.mkdir(parents=True)
    report.write_text(json.dumps({"status": "dropped", "reason": "too few rows"}))
    jobs.check("kc1")  # fetching and filtering it is fine
    with pytest.raises(Refused, match="'kc1' was not kept .*too few rows"):
        jobs.check("kc1", trained=True)


def test_a_known_dataset_outside_the_study_is_refused_for_its_results(config):
    jobs = _jobs(config, settings_file="results/run_config.yaml")
    outside = sorted(jobs.known - jobs.suite)[0]
    jobs.check(outside)  # its data may be made
    with pytest.raises(Refused, match=f"{outside!r} is not a dataset of the study"):
        jobs.check(outside, study=True)


def test_unknown_suite_names_stop_only_a_run_that_writes_its_settings(settled):
    jobs = _jobs(settled(suite=["segment", "nosuchdata"]))
    jobs.refuse_unknown_suite_names(writes_settings=False)
    with pytest.raises(Refused, match="nosuchdata"):
        jobs.refuse_unknown_suite_names(writes_settings=True)


def test_openml_is_probed_once_where_a_fetch_job_will_ask_it(settled):
    asked: list[str] = []
    _jobs(settled()).probe_openml(lambda: True, asked.append)  # smoke: bundled only
    jobs = _jobs(settled(sources=["openml", "bundled"]))
    jobs.probe_openml(lambda: False, asked.append)
    assert asked == []

    def unknown() -> bool:
        raise RuntimeError("the DAG cannot tell")

    jobs.probe_openml(unknown, asked.append)
    assert len(asked) == 1 and asked[0].startswith("tabbench data probe-openml --openml-state-dir ")
    assert asked[0].endswith("--openml-timeout 10")
    # the command is one the CLI takes, its folder under the fetch jobs' option name
    args = build_parser().parse_args(shlex.split(asked[0])[1:])
    assert str(args.state_dir) == jobs.openml_state_dir


def _recorded(params) -> list[str]:
    """What Snakemake records of a job's params for its params rerun trigger: the
    builtin-typed values by repr; a NotARerunTrigger is not recorded."""
    return sorted(repr(v) for v in params.values() if not isinstance(v, NotARerunTrigger))


def test_splitting_by_groups_is_recorded_only_when_true(settled):
    """With the default (false) a split job records n_splits, seed and stratify alone, what a
    data folder made without the option recorded, so a finished data folder draws no split
    again; true is another study (every split job reruns); back to false, the records are the
    first ones again."""
    base = {"n_splits": 2, "seed": 0, "stratify": False}
    default = _recorded(_jobs(settled(**base)).split_params())
    assert default == sorted([repr(2), repr(0), repr(False)])
    grouped = _recorded(_jobs(settled(**base, split_by_groups=True)).split_params())
    assert grouped != default and repr(" --split-by-groups true") in grouped
    assert _recorded(_jobs(settled(**base, split_by_groups=False)).split_params()) == default
