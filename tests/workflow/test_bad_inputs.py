"""Bad input end to end: a suite of broken datasets next to good ones, in the bundled
format and in TALENT's layout (tests/fixtures/bad_datasets.py), run through the workflow with
--keep-going. Good datasets complete; every broken one ends in a clear message and a row in a
report (data/datasets.csv, data/unavailable.csv, the train failures sidecar); nothing is
silently dropped.

The fast test runs the data stage's jobs (fetch, filter, the checkpoint, splits) of the whole
suite as Snakemake plans them, in the test's process; the slow ones run it through Snakemake,
and train all three models on every kept dataset.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fixtures import bad_datasets as bad
from workspace import Workspace, run_planned_in_process

from tabbench.models.mlp import MAX_ONE_HOT_LEVELS, MLPPreprocessor

MODELS = ("xgboost", "mlp", "realmlp")
EPOCHS = "epochs: {mlp: 2, realmlp: 2, xgboost_default: 3, xgboost_tuned: 3}\n"


def _suite(tmp_path: Path) -> tuple[Workspace, dict, list[str]]:
    ws = Workspace(tmp_path / "wf")
    expected = bad.write_bad_suite(ws.root / "data" / "demo", ws.root / "talent")
    (ws.root / "extra.yaml").write_text(EPOCHS)
    suite = "[" + ",".join(expected) + "]"
    args = [
        "--cores",
        "2",
        "--keep-going",
        "--configfile",
        "extra.yaml",
        "--config",
        "preset=smoke",
        f"suite={suite}",
        "sources=[talent,bundled]",
        f"talent_dir={ws.root / 'talent'}",
        "max_rows=100000",
        "models=[" + ",".join(MODELS) + "]",
    ]
    return ws, expected, args


def _check_data_reports(ws: Workspace, expected: dict) -> list[str]:
    """Every dataset of the suite has its row, status and message; returns the kept names."""
    data = ws.root / "data"
    summary = pd.read_csv(data / "datasets.csv", keep_default_na=False).set_index("dataset")
    assert sorted(summary.index) == sorted(expected)  # nothing silently dropped
    for name, exp in expected.items():
        row = summary.loc[name]
        assert row["status"] == exp.status, (name, row.to_dict())
        text = row["reason"] if exp.status != "kept" else row["notes"]
        assert exp.message in text, (name, text)
        if exp.source:
            assert row["source"] == exp.source, (name, row.to_dict())
    unavailable = pd.read_csv(data / "unavailable.csv").set_index("dataset")
    unav = sorted(n for n, e in expected.items() if e.status == "unavailable")
    assert sorted(unavailable.index) == unav
    for name in unav:  # every source tried is named with its own reason
        reasons = unavailable.loc[name, "reasons"]
        assert "talent: " in reasons and "bundled: " in reasons, reasons
        assert expected[name].message in reasons, reasons

    kept = sorted((data / "kept.txt").read_text().split())
    assert kept == sorted(n for n, e in expected.items() if e.status == "kept")
    for name in kept:
        assert (data / "splits" / f"{name}.parquet").is_file()

    # the repairs really happened in the processed data
    def processed(name):
        return pd.read_parquet(data / "processed" / f"{name}.parquet")

    def report(name):
        return json.loads((data / "processed" / f"{name}.json").read_text())

    assert "all_nan" not in processed("all_nan_column").columns
    num = processed("inf_values").select_dtypes("number").drop(columns="__label__")
    assert np.isfinite(num.to_numpy()).all() and len(num) == bad.N - 60
    assert report("stray_whitespace_labels")["class_names"] == ["k0", "k1"]
    assert report("talent_whitespace_labels")["class_names"] == ["class_0", "class_1"]
    hc = report("high_cardinality")
    assert hc["kept"] and hc["max_categories"] == bad.HIGH_CARDINALITY
    return kept


def test_broken_datasets_are_reported_by_the_data_stage(tmp_path):
    """The jobs Snakemake plans for the data stage, run in this process (the same commands:
    workspace.run_planned_in_process); data problems are statuses, not failed jobs: every job
    exits 0. Through Snakemake itself: test_broken_datasets_are_reported_by_snakemakes_run."""
    ws, expected, args = _suite(tmp_path)
    commands = run_planned_in_process(ws, "data", *args)
    jobs = [c[2] for c in commands]
    assert jobs.count("fetch") == jobs.count("filter") == len(expected), jobs
    assert jobs.count("collect") == 1 and jobs.count("split") == sum(
        e.status == "kept" for e in expected.values()), jobs
    _check_data_reports(ws, expected)


@pytest.mark.slow
def test_broken_datasets_are_reported_by_snakemakes_run(tmp_path):
    """Slow (some 40 jobs, each a Python process); in the fast suite its jobs run in process:
    test_broken_datasets_are_reported_by_the_data_stage."""
    ws, expected, args = _suite(tmp_path)
    res = ws.snakemake("data", *args)
    # data problems are statuses, not failed jobs: the data stage succeeds
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    _check_data_reports(ws, expected)


@pytest.mark.slow
def test_broken_datasets_through_training(tmp_path):
    ws, expected, args = _suite(tmp_path)
    res = ws.snakemake("data", *args)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    kept = _check_data_reports(ws, expected)
    targets = [f"results/selected/{m}/{d}.parquet" for m in MODELS for d in kept]
    res = ws.snakemake(*targets, *args)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    runs = ws.root / "results" / "runs"
    for model in MODELS:
        for name in kept:
            records = pd.read_parquet(runs / model / name / "split0.parquet")
            failures = json.loads((runs / model / name / "split0.failures.json").read_text())
            selected = pd.read_parquet(ws.root / "results" / "selected" / model / f"{name}.parquet")
            if (model, name) == ("mlp", "constant_features"):
                # no usable feature for the MLP: each config fails with a clear error, recorded
                assert records.empty and selected.empty
                assert [f["config"] for f in failures] == [0, 1]
                assert all(
                    f["error_type"] == "ValueError" and "no usable features" in f["message"]
                    for f in failures
                ), failures
            else:
                assert failures == [], (model, name, failures)
                assert sorted(records["config"].unique()) == [0, 1]
                assert np.isfinite(records["val_logloss"]).all(), (model, name)
                assert not selected.empty
    logs = ws.root / "results" / "logs" / "train"
    log = (logs / "mlp" / "high_cardinality" / "split0.log").read_text()
    assert f"one-hot encoding only the {MAX_ONE_HOT_LEVELS} most frequent" in log, log


# --- the MLP's one-hot cap for high-cardinality categoricals (library level) ----------------


def _frame(n_levels: int, n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    levels = np.array([f"v{i}" for i in range(n_levels)], dtype=object)
    # level i occurs about (n_levels - i) times more often than the last one
    p = np.arange(n_levels, 0, -1, dtype=float)
    values = np.concatenate([levels, rng.choice(levels, size=n - n_levels, p=p / p.sum())])
    return pd.DataFrame({"x": rng.normal(size=n), "c": pd.Categorical(values)})


def test_mlp_one_hot_is_capped_at_the_most_frequent_levels(caplog):
    X = _frame(3000, 20_000)
    with caplog.at_level("WARNING", logger="tabbench.models.mlp"):
        pre = MLPPreprocessor().fit(X)
    assert pre.n_features == 1 + MAX_ONE_HOT_LEVELS
    counts = X["c"].value_counts()
    vocab = pre.cat_vocab["c"]
    assert counts[vocab].min() >= counts.drop(vocab).max()  # the most frequent ones
    out = pre.transform(X)
    rare = ~X["c"].isin(vocab).to_numpy()
    assert rare.any() and (out[rare, 1:] == 0).all()  # rare levels: like an unseen value
    assert (out[~rare, 1:].sum(axis=1) == 1).all()
    assert "has 3000 categories in train; one-hot encoding only the 1000" in caplog.text


def test_mlp_one_hot_unchanged_below_the_cap():
    X = _frame(50, 2_000)
    pre = MLPPreprocessor().fit(X)
    assert pre.cat_vocab["c"] == list(X["c"].cat.categories)
    assert pre.n_features == 1 + 50


def test_mlp_one_hot_cap_is_configurable_and_none_lifts_it(caplog):
    X = _frame(50, 2_000)
    pre = MLPPreprocessor(max_one_hot_levels=5).fit(X)
    counts = X["c"].value_counts()
    assert pre.n_features == 1 + 5
    assert sorted(pre.cat_vocab["c"]) == sorted(counts.index[:5])  # the 5 most frequent
    X = _frame(3000, 20_000)
    caplog.clear()
    with caplog.at_level("WARNING", logger="tabbench.models.mlp"):
        pre = MLPPreprocessor(max_one_hot_levels=None).fit(X)
    assert pre.n_features == 1 + 3000  # docs/design.md's literal one column per category
    assert "one-hot encoding only" not in caplog.text
    with pytest.raises(ValueError, match="mlp_max_one_hot_levels"):
        MLPPreprocessor(max_one_hot_levels=1)
