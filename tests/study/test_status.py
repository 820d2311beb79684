"""tabbench status: on a partly finished folder trained by real (tiny) train jobs, the jobs
done / running / left per model, the configs recorded and failed, a prediction where enough
jobs finished and the fallback where not; the data folder found or said missing."""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fixtures.data_fixtures import write_processed_toy
from fixtures.jobs import train_job

from tabbench import cli
from tabbench.core.layout import DataLayout, ResultsLayout, part_configs
from tabbench.data.pipeline import SUMMARY_COLUMNS
from tabbench.models.mlp import MLPTrainer
from tabbench.models.registry import get_trainer
from tabbench.settings.folder import ResultsFolder
from tabbench.settings.presets import resolve_config
from tabbench.study import cost_model
from tabbench.study import status as status_module
from tabbench.study.status import (
    MIN_FIT_DATASETS,
    StatusError,
    dataset_sizes,
    find_data_dir,
    jobs_in_flight,
    render,
    study_status,
)

#: rows of each toy dataset (different sizes, so the fit has something to fit)
ROWS = {"d600": 600, "d800": 800, "d1000": 1000, "d1400": 1400}
EPOCHS = {"xgboost_default": 3, "xgboost_tuned": 4, "mlp": 2}
#: every config takes at least this long, so that its wall shows in the train log's 0.1 s steps
#: (a tiny job's configs take ~0 s there, and a job without a measurable wall is no fit point)
PAUSE_S = 0.15
N_CONFIGS = {"xgboost": 2, "mlp": 1}
N_SPLITS = 2


def remember(results, config) -> bool:
    """Write the folder's settings as the workflow's start hook does."""
    return ResultsFolder.open(results).remember(config)


class _Paused:
    """A trainer that pauses :data:`PAUSE_S` before its first chunk."""

    def __init__(self, inner) -> None:
        self.inner, self.name = inner, inner.name

    def train(self, params, data, ctx):
        time.sleep(PAUSE_S)
        yield from self.inner.train(params, data, ctx)


def _paused(name: str) -> _Paused:
    return _Paused(get_trainer(name))


class _Raise:
    """A trainer that fails the way it is told, after nothing."""

    def __init__(self, name: str, err: BaseException) -> None:
        self.name, self.err = name, err

    def train(self, params, data, ctx):
        raise self.err
        yield  # a generator, as trainers are


def _train(results: Path, processed: dict, model: str, dataset: str, split: int,
           factory=_paused) -> None:
    layout = ResultsLayout(results)
    log = Path(layout.log("train", model, dataset, f"split{split}"))
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as stream:
        train_job(model, dataset, split, *processed[dataset],
                  layout.runs(model, dataset, split), n_configs=N_CONFIGS[model],
                  epochs=EPOCHS, seed=0, progress=stream, trainer_factory=factory)


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    """``root/results`` beside ``root/data`` (run_config.yaml records ``../data``):

    - xgboost: d600, d800, d1000 both splits done (6 jobs, 3 datasets); d1400 split 0 killed
      after config 0 (recorded) and config 1 (failed), split 1 left;
    - mlp: d600 split 0 done with config 1 failed; the 7 others left."""
    root = tmp_path_factory.mktemp("study")
    data, results = root / "data", root / "results"
    processed = {ds: write_processed_toy(data / "toy" / ds, n=n, n_classes=2, n_splits=N_SPLITS)
                 for ds, n in ROWS.items()}
    # the kept list and the summary table, as the data stage writes them
    Path(DataLayout(data).kept).write_text("".join(f"{ds}\n" for ds in ROWS))
    pd.DataFrame([{"dataset": ds, "status": "kept", "rows_final": n, "n_num": 2, "n_cat": 1,
                   "n_classes": 2} for ds, n in ROWS.items()],
                 columns=SUMMARY_COLUMNS).to_csv(DataLayout(data).datasets_csv, index=False)
    with contextlib.chdir(root):  # as Snakemake run in root/ records it
        remember("results", resolve_config({"preset": "smoke", "models": ["xgboost", "mlp"],
                                            "n_splits": N_SPLITS, "n_configs": N_CONFIGS,
                                            "epochs": EPOCHS, "data_dir": "data"}))
    for ds in ("d600", "d800", "d1000"):
        for split in range(N_SPLITS):
            _train(results, processed, "xgboost", ds, split)
    calls = []

    def killed(name):  # config 0 trains, config 1 fails, the job is killed in config 2
        calls.append(name)
        if len(calls) == 2:
            return _Raise(name, RuntimeError("config 1 fails"))
        if len(calls) == 3:
            return _Raise(name, KeyboardInterrupt())
        return _paused(name)

    with pytest.raises(KeyboardInterrupt):
        _train(results, processed, "xgboost", "d1400", 0, killed)
    mlp_calls = []

    def one_failure(name):
        mlp_calls.append(name)
        return (_Raise(name, ValueError("config 1 fails")) if len(mlp_calls) == 2
                else _Paused(MLPTrainer(chunk_epochs=1)))

    _train(results, processed, "mlp", "d600", 0, one_failure)
    return results


def test_counts_done_running_left_configs_and_failures(study):
    parts = ResultsLayout(study).part("xgboost", "d1400", 0)
    assert part_configs(parts) == [0, 1]  # the killed job's finished configs
    status = study_status(study, workers=1)
    assert status.data_dir == str(study.parent / "data")  # data_dir: data, beside the results
    assert (status.n_datasets, status.n_splits) == (4, N_SPLITS)
    xgb, mlp = status.models
    assert (xgb.model, xgb.planned, xgb.done, xgb.running, xgb.left) == ("xgboost", 8, 6, 1, 1)
    assert xgb.configs_recorded == 6 * 3 + 1  # 3 configs a finished job, config 0 of the killed
    assert (xgb.configs_failed, xgb.failure_reasons) == (1, {"RuntimeError": 1})
    assert (mlp.model, mlp.planned, mlp.done, mlp.running, mlp.left) == ("mlp", 8, 1, 0, 7)
    assert (mlp.configs_recorded, mlp.configs_failed) == (1, 1)
    assert mlp.failure_reasons == {"ValueError": 1}


def test_prediction_where_enough_jobs_finished_and_the_fallback_where_not(study):
    status = study_status(study, workers=2)
    xgb, mlp = status.models
    assert (xgb.fit_jobs, xgb.fit_datasets) == (6, 3) and xgb.no_prediction is None
    # what is left: config 2 of the killed job, all 3 configs of d1400 split 1, predicted by
    # the cost model fit on the folder's finished jobs
    sizes = {"n_train": int(dataset_sizes(study.parent / "data").loc["d1400", "n_train"]),
             "n_features": 3, "n_classes": 2}
    coefs = cost_model.fit_costs(cost_model.measurements(study, {ds: 3 for ds in ROWS}))

    def cost(regime: str, epochs: int) -> float:
        return float(cost_model.seconds_per_epoch(coefs[("xgboost", regime)], **sizes)[0]
                     * epochs)

    tuned, default = EPOCHS["xgboost_tuned"], EPOCHS["xgboost_default"]
    expected = cost("tuned", tuned) + cost("default", default) + 2 * cost("tuned", tuned)
    assert xgb.seconds_left == pytest.approx(expected, rel=1e-9) and expected > 0
    assert mlp.seconds_left is None and mlp.fit_jobs == 1
    assert mlp.no_prediction.startswith("not enough finished jobs to predict")
    assert status.not_predicted == ["mlp"]
    assert status.seconds_left == pytest.approx(xgb.seconds_left / 2)  # 2 jobs at once
    text = render(status)
    assert "not enough finished jobs to predict" in text and "time left for xgboost ≈" in text
    assert "mlp not predicted: the study ends later" in text
    assert "6 jobs, 3 datasets" in text


def test_jobs_in_flight_from_overlapping_jobs():
    assert jobs_in_flight([(0, 10), (5, 15)]) == pytest.approx(20 / 15)
    assert jobs_in_flight([(0, 10), (0, 10), (100, 110)]) == pytest.approx(1.5)  # gap: idle
    assert jobs_in_flight([]) is None


def test_measured_jobs_in_flight_when_not_given(study):
    status = study_status(study)
    assert status.workers is not None and status.workers_from.startswith("measured")
    assert status.seconds_left == pytest.approx(status.models[0].seconds_left / status.workers)


def test_without_a_data_folder_only_what_is_on_disk_counts(study, tmp_path, monkeypatch):
    moved = tmp_path / "results"
    shutil.copytree(study, moved)  # beside no data folder
    monkeypatch.chdir(tmp_path)
    status = study_status(moved)
    assert status.data_dir is None and any("not found" in n for n in status.notes)
    xgb = status.models[0]
    assert (xgb.done, xgb.running, xgb.planned, xgb.left) == (6, 1, None, None)
    assert xgb.no_prediction and status.seconds_left is None
    # --data names it
    assert study_status(moved, data_dir=study.parent / "data").models[0].left == 1
    with pytest.raises(StatusError, match="no kept.txt"):
        study_status(moved, data_dir=tmp_path)


def _data_folder(root: Path, datasets: list[str]) -> Path:
    Path(DataLayout(root).kept).parent.mkdir(parents=True, exist_ok=True)
    Path(DataLayout(root).kept).write_text("".join(f"{d}\n" for d in datasets))
    return root


def test_status_plans_from_the_folders_own_data_whatever_the_working_directory(
        tmp_path, monkeypatch):
    """A run started in ``b/`` with ``results_dir=../a/results data_dir=data`` records where its
    data is, seen from the results folder; status, run from a directory with another data/,
    plans from the study's."""
    theirs = _data_folder(tmp_path / "b" / "data", ["x", "y"])
    results = tmp_path / "a" / "results"
    monkeypatch.chdir(tmp_path / "b")
    remember(Path("../a/results"), resolve_config({"preset": "smoke", "models": ["xgboost"],
                                                    "data_dir": "data"}))
    _data_folder(tmp_path / "c" / "data", ["z"])  # a data folder of the working directory
    monkeypatch.chdir(tmp_path / "c")
    status = study_status(results)
    assert status.data_dir == str(theirs) and status.n_datasets == 2
    assert status.models[0].planned == 2  # 2 datasets x 1 split (smoke)
    assert find_data_dir(ResultsFolder.open(results)) == (theirs, [])


def test_a_partial_run_config_takes_the_defaults_and_never_the_working_directorys_data(
        tmp_path, monkeypatch):
    """A hand-written run_config.yaml with neither data_dir nor n_configs (a fixture's, or a
    folder made before they were recorded): its data folder is looked for beside it only, and
    the missing settings take their defaults instead of a KeyError."""
    results = tmp_path / "study" / "results"
    results.mkdir(parents=True)
    Path(ResultsLayout(results).run_config).write_text(
        yaml.safe_dump({"preset": "demo", "models": ["xgboost"]}))
    _data_folder(tmp_path / "cwd" / "data", ["adult"])  # what the README's demo leaves
    monkeypatch.chdir(tmp_path / "cwd")
    status = study_status(results)
    assert status.data_dir is None and status.preset == "demo"
    assert any(str(tmp_path / "study" / "data") in n and "not found" in n for n in status.notes)
    _data_folder(tmp_path / "study" / "data", ["adult", "car"])
    status = study_status(results, workers=1)  # demo: 2 splits, n_configs from the preset
    assert status.n_datasets == 2 and status.models[0].planned == 4
    assert status.models[0].left == 4 and status.models[0].no_prediction


def test_too_few_datasets_is_the_fallback_whatever_the_jobs(study, monkeypatch):
    """The datasets threshold, not only the jobs': xgboost's 6 jobs over 3 datasets, with one
    dataset fewer than asked, are not enough."""
    monkeypatch.setattr(status_module, "MIN_FIT_DATASETS", MIN_FIT_DATASETS + 1)
    xgb = study_status(study, workers=1).models[0]
    assert xgb.seconds_left is None and "over 3 datasets" in xgb.no_prediction


def test_cli_table_and_json(study, capsys):
    assert cli.main(["status", "--results", str(study), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[2].split()[:5] == ["model", "done", "running", "left", "planned"]
    assert cli.main(["status", "--results", str(study), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [m["model"] for m in data["models"]] == ["xgboost", "mlp"]
    assert data["models"][0]["left"] == 1
    with pytest.raises(SystemExit) as exit_:  # refused by argparse (cli.args.results_folder)
        cli.main(["status", "--results", str(study / "nope")])
    assert exit_.value.code == 2
    assert "no such results folder" in capsys.readouterr().err
    assert cli.main(["status", "--results", str(study), "--workers", "0"]) == 2
    assert "--workers must be > 0" in capsys.readouterr().err


def test_sizes_come_from_the_processed_reports_where_the_data_stage_wrote_no_table(tmp_path):
    """A study trained target by target (``snakemake … -- results/runs/…``) processes its
    targets' datasets but never runs the data stage's collect step, so ``datasets.csv`` is
    missing or lacks them: the sizes come from each dataset's processed report then (a kept
    one; the table wins where both have it), and a dropped or unreadable report adds nothing.
    Without them the cost model had no feature counts and predicted nothing."""
    layout = DataLayout(tmp_path / "data")
    Path(layout.processed_dir).mkdir(parents=True)

    def report(dataset: str, rows: int, kept: bool = True) -> None:
        Path(layout.processed_json(dataset)).write_text(json.dumps(
            {"dataset": dataset, "kept": kept, "rows_final": rows, "n_num": 4, "n_cat": 2,
             "n_classes": 3}))

    report("a", 1000)
    report("b", 2000)
    report("dropped", 900, kept=False)
    Path(layout.processed_json("broken")).write_text("{not json")
    sizes = dataset_sizes(layout.root)
    assert sizes.to_dict("index") == {
        "a": {"n_train": 640, "n_features": 6, "n_classes": 3},
        "b": {"n_train": 1280, "n_features": 6, "n_classes": 3}}
    # the table, where the data stage wrote one, for the datasets it has
    pd.DataFrame([{"dataset": "a", "status": "kept", "rows_final": 500, "n_num": 1, "n_cat": 0,
                   "n_classes": 2}], columns=SUMMARY_COLUMNS).to_csv(layout.datasets_csv,
                                                                     index=False)
    sizes = dataset_sizes(layout.root)
    assert sizes.loc["a"].to_dict() == {"n_train": 320, "n_features": 1, "n_classes": 2}
    assert sizes.loc["b", "n_train"] == 1280
    assert dataset_sizes(None).empty and dataset_sizes(tmp_path / "nowhere").empty


def test_a_data_folder_without_a_kept_list_gives_sizes_but_no_plan(study, tmp_path,
                                                                    monkeypatch):
    """The study's data folder exists but its data stage never wrote kept.txt or datasets.csv
    (trained target by target): status says so (not "not found"), counts only what is on disk,
    and still fits the cost model on the finished jobs from the processed reports' sizes."""
    root = tmp_path / "root"
    shutil.copytree(study, root / "results")
    data = DataLayout(root / "data")
    Path(data.processed_dir).mkdir(parents=True)
    for ds, n in ROWS.items():
        Path(data.processed_json(ds)).write_text(json.dumps(
            {"dataset": ds, "kept": True, "rows_final": n, "n_num": 2, "n_cat": 1,
             "n_classes": 2}))
    monkeypatch.chdir(tmp_path)
    status = study_status(root / "results", workers=1)
    assert status.data_dir is None
    assert any("has no kept.txt" in n for n in status.notes)
    assert not any("not found" in n for n in status.notes)
    xgb = status.models[0]
    assert (xgb.done, xgb.running, xgb.planned, xgb.left) == (6, 1, None, None)
    assert (xgb.fit_jobs, xgb.fit_datasets) == (6, 3)  # the sizes came from the reports
    assert xgb.seconds_left is None and "unknown" in xgb.no_prediction
