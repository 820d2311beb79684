"""The model-wise jobs (:mod:`tabbench.jobs.train`): a train job's command flags, its GPU
resource, the replay given the train job's trainer, the study's targets and the models it
refuses."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tabbench.core.layout import replay_sidecar
from tabbench.jobs.refusal import Refused
from tabbench.jobs.train import TrainJobs, plans_replays
from tabbench.jobs.triggers import NotARerunTrigger


def _w(model, dataset="kc1", split="0"):
    return SimpleNamespace(model=model, dataset=dataset, split=split)


def _params(jobs, model, params=None):
    given = jobs.train_params() if params is None else params
    return {k: v(_w(model)) if callable(v) else v for k, v in given.items()}


def test_a_train_jobs_params_on_the_cpu(config):
    jobs = TrainJobs(config, None)
    xgb = _params(jobs, "xgboost")
    assert xgb["epochs"] == "xgboost_default=10 xgboost_tuned=10"
    assert (xgb["n_configs"], xgb["seed"], xgb["device"]) == (1, 0, "cpu")
    assert xgb["record_flags"] == ""
    assert xgb["run_flags"] == NotARerunTrigger(
        " --keep-for-restop true --restop-max-mb 512 --retry-failed false")
    mlp = _params(jobs, "mlp")
    assert mlp["epochs"] == "mlp=3"
    assert mlp["record_flags"].startswith(" --mlp-max-one-hot-levels ")
    assert "--network-memory-gb 4" in str(mlp["run_flags"])
    assert "--gpu" not in str(mlp["run_flags"])


def test_a_network_job_on_a_gpu_claims_it_and_may_stack(settled):
    jobs = TrainJobs(settled(device="cuda", network_members=4), None)
    mlp = _params(jobs, "mlp")
    assert mlp["device"] == "cuda" and mlp["record_flags"].endswith(" --members 4")
    assert "--gpu-claim-timeout 3600" in str(mlp["run_flags"])
    assert (jobs.gpus(_w("mlp")), jobs.gpus(_w("xgboost"))) == (1, 0)
    assert _params(jobs, "xgboost")["device"] == "cpu"
    assert TrainJobs(settled(), None).gpus(_w("mlp")) == 0


def test_the_replay_takes_the_train_jobs_options_and_triggers_nothing(settled):
    jobs = TrainJobs(settled(device="cuda", epoch_ties="last"), None)
    flags = _params(jobs, "mlp", jobs.replay_params())["flags"]
    assert isinstance(flags, NotARerunTrigger)
    text = str(flags)
    assert text.startswith(" --seed 0 --device cuda --rtol 1e-05 --epoch-ties last")
    for train_flag in (*jobs.gpu_flags("mlp").values(), *jobs.option_flags("mlp").values()):
        assert train_flag in text
    npz = jobs.layout.replay("{model}", "{dataset}", "{split}")
    assert jobs.replay_outputs == (npz, str(replay_sidecar(npz)))


def test_the_selection_takes_the_models_patiences(settled):
    jobs = TrainJobs(settled(patience={"mlp": [7, 3]}), None)
    assert _params(jobs, "mlp", jobs.select_params()) == {"ties": "first", "patience": "3 7"}
    assert _params(jobs, "xgboost", jobs.select_params())["patience"] != "3 7"
    last = TrainJobs(settled(epoch_ties="last"), None)  # the study's tie rule (--epoch-ties)
    assert _params(last, "xgboost", last.select_params())["ties"] == "last"


def test_inputs_check_the_model_and_the_dataset(config):
    jobs = TrainJobs(config, None)
    checked: list[tuple[str, dict]] = []

    def check(ds, **how):
        checked.append((ds, how))

    assert jobs.train_input(_w("mlp"), check, "p/{}".format, "s/{}".format) == {
        "processed": "p/kc1", "splits": "s/kc1"}
    runs = jobs.select_input(_w("mlp"), check)
    assert runs == [jobs.layout.runs("mlp", "kc1", 0)]
    assert checked == [("kc1", {"trained": True, "study": True})] * 2
    with pytest.raises(Refused, match="'xgbost' is not a model of the study.*xgboost"):
        jobs.train_input(_w("xgbost"), check, str, str)


def test_the_study_targets(config):
    jobs = TrainJobs(config, None)
    runs = jobs.runs_targets(["kc1", "segment"])
    assert len(runs) == len(config["models"]) * 2 * config["n_splits"]
    assert jobs.selected_targets(["kc1"]) == [jobs.layout.selected(m, "kc1")
                                              for m in config["models"]]


class _NotYet(Exception):
    pass


def test_replays_of_the_study_or_of_what_the_folder_holds(config, tmp_path):
    jobs = TrainJobs(config, None)
    assert len(jobs.replay_targets(lambda: ["kc1"], _NotYet)) == 2 * len(config["models"])

    def not_yet():
        raise _NotYet

    with pytest.raises(_NotYet):  # a fresh folder: the data stage comes first
        jobs.replay_targets(not_yet, _NotYet)
    runs = jobs.layout.runs("mlp", "kc1", 0)
    (tmp_path / "results" / "runs" / "mlp" / "kc1").mkdir(parents=True)
    open(runs, "w").close()
    assert jobs.diagnostics_pairs(not_yet, _NotYet) == [("mlp", "kc1")]


def test_replays_are_planned_only_when_asked_for():
    assert plans_replays(["diagnostics"]) and plans_replays(["x", "replay"])
    assert not plans_replays([]) and not plans_replays(["figures"])
