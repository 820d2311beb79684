"""What an installed extension package gets without any edit of tabbench: a stopping metric
recorded, selected on and reported as a method; a model trained, sampled, validated in the
config and offered by the CLI.

The package is the shipped example ``examples/plugin/``, installed from its own files into the
``site`` folder on sys.path (conftest.py, fixtures/plugin_dists.py), with its metric entry point
only, its model entry point only, or both; tabbench reads it through its entry-point groups.
tests/workflow/test_extension_dag.py runs the same package through the real smoke DAG.
"""

from __future__ import annotations

import configparser
import io
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
import yaml
from fixtures.plugin_dists import (
    EXAMPLE,
    METRIC_GROUP,
    METRIC_ID,
    METRIC_LABEL,
    MODEL_EPOCHS,
    MODEL_GROUP,
    MODEL_NAME,
    PACKAGE,
    example_project,
    install_example_plugin,
)

from tabbench.metrics.registry import (
    get_stopping_metric,
    stopping_metrics,
    stopping_metrics_batched,
)
from tabbench.models.base import EpochChunk
from tabbench.models.recorder import EpochRecorder, Labels, RunKey, check_records
from tabbench.models.runs_schema import record_columns, val_column
from tabbench.summary.aggregate import aggregate_frames
from tabbench.summary.methods import method_names
from tabbench.summary.select import select_table

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def metric_site(site: Path) -> Path:
    return install_example_plugin(site, [METRIC_GROUP])


@pytest.fixture
def model_site(site: Path) -> Path:
    return install_example_plugin(site, [MODEL_GROUP])


def _logits(rng, n_epochs: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n_epochs, n, k)).astype(np.float32)
    z[:, np.arange(n), y] += np.linspace(0.2, 2.0, n_epochs)[:, None].astype(np.float32)
    return z, y


def test_the_metric_is_computed_by_its_own_batched_next_to_the_builtins(metric_site):
    z, y = _logits(np.random.default_rng(0), 4, 300, 3)
    out = stopping_metrics_batched(z, y)
    metric = get_stopping_metric(METRIC_ID)
    np.testing.assert_array_equal(out[METRIC_ID], metric.batched(z, y))
    assert np.all(np.diff(out[METRIC_ID]) < 0)  # more confident epochs: lower gap
    assert stopping_metrics(z[1].astype(np.float64), y)[METRIC_ID] == pytest.approx(
        out[METRIC_ID][1], rel=1e-6)
    assert {"logloss", "ts_ref", "beta"} <= set(out)  # the fused built-ins are still there


def test_the_metric_is_a_column_of_every_record_and_selected_on(metric_site):
    assert record_columns()[record_columns().index("val_ir_ref") + 1] == val_column(METRIC_ID)
    rng = np.random.default_rng(1)
    frames = []
    for config in (0, 1):
        val, y_val = _logits(rng, 5, 200, 2)
        test, y_test = _logits(rng, 5, 150, 2)
        rec = EpochRecorder(RunKey("mlp", "toy", 0, config), {},
                            Labels(y_val, y_test, n_train=500, n_classes=2), 5)
        rec.add(EpochChunk(1, val, test, np.arange(1.0, 6.0)))
        frames.append(rec.frame())
    runs = pd.concat(frames, ignore_index=True)
    check_records(runs, {0: 5, 1: 5})
    assert runs[val_column(METRIC_ID)].notna().all()
    sel = select_table(runs)
    mine = sel[sel["stopping"] == METRIC_ID]
    assert set(mine["regime"]) == {"default", "tuned"}
    # and it becomes a method of the summary, after the built-ins, with TS only
    assert method_names()[-1] == f"{METRIC_LABEL}+TS" and METRIC_LABEL not in method_names()
    rel = aggregate_frames(sel)["relative"]
    assert f"{METRIC_LABEL}+TS" in set(rel["method"])


def test_runs_written_before_the_metric_was_installed_are_still_selected(site, caplog):
    """Installing a metric package must not break cached results: runs files written without
    it lack its column, selection goes on with the others and says why the new one is
    missing."""
    rng = np.random.default_rng(2)
    val, y_val = _logits(rng, 3, 100, 2)
    test, y_test = _logits(rng, 3, 100, 2)
    rec = EpochRecorder(RunKey("mlp", "toy", 0, 0), {},
                        Labels(y_val, y_test, n_train=300, n_classes=2), 3)
    rec.add(EpochChunk(1, val, test, np.arange(1.0, 4.0)))
    old = rec.frame()
    install_example_plugin(site, [METRIC_GROUP])
    from tabbench.metrics.registry import reload_registry

    reload_registry()
    assert val_column(METRIC_ID) not in old.columns
    sel = select_table(old)
    assert METRIC_ID not in set(sel["stopping"]) and "ts_ref" in set(sel["stopping"])
    assert METRIC_ID in caplog.text


def test_the_model_trains_samples_and_validates_through_its_registration(model_site, tmp_path):
    from fixtures.jobs import train_job

    from tabbench.models.registry import epochs_key, get_model, get_trainer, paper_epochs
    from tabbench.search import sample_config
    from tabbench.settings.presets import resolve_config

    assert get_model(MODEL_NAME).label == "Toy" and not get_model(MODEL_NAME).network
    assert get_trainer(MODEL_NAME).scale == 1.0
    assert get_trainer(MODEL_NAME, scale=2).scale == 2.0
    with pytest.raises(ValueError, match="positive"):
        get_trainer(MODEL_NAME, scale=-1)
    assert sample_config(MODEL_NAME, 0, seed=0, dataset="d", split=0) == {"strength": 0.5}
    tuned = sample_config(MODEL_NAME, 1, seed=0, dataset="d", split=0)
    assert set(tuned) == {"strength"} and 0.1 <= tuned["strength"] <= 2.0
    assert epochs_key(MODEL_NAME, 0) == epochs_key(MODEL_NAME, 7) == MODEL_NAME
    assert paper_epochs()[MODEL_NAME] == MODEL_EPOCHS

    # the config: no schema or preset edit; its epochs come from the registration
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    config.update(preset="demo", models=["xgboost", MODEL_NAME], n_configs={MODEL_NAME: 1})
    jsonschema.validate(config, schema)
    resolved = resolve_config(config)
    assert resolved["epochs"][MODEL_NAME] == MODEL_EPOCHS
    assert resolved["epochs"]["mlp"] == 24  # the preset still scales the built-ins
    config["epochs"] = {MODEL_NAME: 2}
    jsonschema.validate(config, schema)
    assert resolve_config(config)["epochs"][MODEL_NAME] == 2

    # a training job, end to end, with a non-default trainer option
    from test_train_job import write_dataset

    processed, splits = write_dataset(tmp_path / "data", n=300)
    out = tmp_path / "runs" / "split0.parquet"
    runs = train_job(MODEL_NAME, "toy", 0, processed, splits, out, n_configs=1,
                     epochs={MODEL_NAME: 3}, seed=0, trainer_options={"scale": 2.0},
                     progress=io.StringIO())
    check_records(runs, {0: 3, 1: 3})
    assert set(runs["model"]) == {MODEL_NAME}
    assert json.loads((tmp_path / "runs" / "split0.failures.json").read_text()) == []


def test_the_cli_offers_the_model_and_its_options(model_site, capsys):
    from tabbench.cli import build_parser

    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "--help"])
    text = capsys.readouterr().out
    assert MODEL_NAME in text and f"--{MODEL_NAME}-scale" in text
    args = parser.parse_args(["train", "--model", MODEL_NAME, "--dataset", "d", "--split", "0",
                              "--processed", "p", "--splits", "s", "--out", "o",
                              "--n-configs", "0", "--epochs", f"{MODEL_NAME}=2", "--seed", "0",
                              f"--{MODEL_NAME}-scale", "3"])
    assert args.model == MODEL_NAME
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "--model", MODEL_NAME, "--dataset", "d", "--split", "0",
                           "--processed", "p", "--splits", "s", "--out", "o", "--n-configs",
                           "0", "--epochs", "x=2", "--seed", "0", f"--{MODEL_NAME}-scale", "-1"])
    assert "scale must be a positive number" in capsys.readouterr().err


def test_the_example_builds_with_the_entry_points_installed_here(tmp_path):
    """`pip install examples/plugin` must give what the tests install: a real build (setuptools,
    from a copy of the example so the checkout gets no build/ folder) has the same name,
    version, entry points and modules as :func:`install_example_plugin`'s distribution."""
    src = shutil.copytree(EXAMPLE, tmp_path / "plugin",
                          ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index",
                          "--no-build-isolation", "-q", "-w", str(tmp_path / "wheel"), str(src)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    installed = install_example_plugin(tmp_path / "site")
    (info,) = installed.glob("*.dist-info")

    def groups(text: str) -> dict[str, dict[str, str]]:
        parser = configparser.ConfigParser(delimiters=("=",))
        parser.optionxform = str  # entry-point names are case-sensitive
        parser.read_string(text)
        return {g: dict(parser[g]) for g in parser.sections()}

    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        built_eps = whl.read(f"{info.name}/entry_points.txt").decode()
        metadata = whl.read(f"{info.name}/METADATA").decode()
    assert groups(built_eps) == groups((info / "entry_points.txt").read_text())
    assert set(groups(built_eps)) == {METRIC_GROUP, MODEL_GROUP}
    project = example_project()
    assert f"Name: {project['name']}\n" in metadata
    assert f"Version: {project['version']}\n" in metadata
    modules = {n for n in names if n.endswith(".py")}
    assert modules == {f"{PACKAGE.name}/{p.name}" for p in PACKAGE.glob("*.py")}
    assert modules == {p.relative_to(installed).as_posix()
                       for p in installed.glob(f"{PACKAGE.name}/*.py")}
