"""An extension package through the real smoke DAG: the shipped example ``examples/plugin/``,
which declares one ``tabbench.stopping_metrics`` and one ``tabbench.models`` entry point,
installed next to tabbench (on PYTHONPATH, as pip would put it on sys.path), changes what
``snakemake --config preset=smoke`` produces — no tabbench file edited.

The metric must be a ``val_<id>`` column of every runs file, a method of the summary with its
label and part of the report's captions; the model must train with the epochs its registration
gives (the smoke preset does not know it), and take its own trainer option from the config.
"""

from __future__ import annotations

import os

import pandas as pd
from fixtures.plugin_dists import (
    METRIC_ID,
    METRIC_LABEL,
    MODEL_EPOCHS,
    MODEL_NAME,
    install_example_plugin,
)
from workspace import Workspace

from tabbench.models.runs_schema import val_column


def test_smoke_dag_records_selects_and_reports_an_installed_metric_and_model(tmp_path):
    # one dataset of the smoke suite, multiclass (segment: 7 classes), so the metric and the
    # model see more than a binary task
    ws = Workspace(tmp_path / "wf", demo=["segment"])
    site = install_example_plugin(tmp_path / "site")
    ws.env["PYTHONPATH"] = os.pathsep.join([str(site), ws.env["PYTHONPATH"]])
    # the model's own trainer option, set like a built-in one (config key <model>_<option>)
    res = ws.snakemake("--cores", "2", "--config", "preset=smoke", "suite=[segment]",
                       f"models=[mlp,{MODEL_NAME}]", f"{MODEL_NAME}_scale=2.5",
                       timeout=900)
    text = res.stdout + res.stderr
    assert res.returncode == 0, text[-4000:]

    results = ws.root / "results"
    runs = sorted((results / "runs").glob("*/*/split*.parquet"))
    assert {p.parent.parent.name for p in runs} == {"mlp", MODEL_NAME}
    assert len(runs) == 2  # a built-in model and the plugin's x 1 dataset x 1 split
    for path in runs:
        df = pd.read_parquet(path)
        assert val_column(METRIC_ID) in df.columns, path
        assert df[val_column(METRIC_ID)].notna().all(), path
        assert list(df.columns).index(val_column(METRIC_ID)) == list(df.columns).index(
            val_column("ir_ref")) + 1
    # the option reached the trainer (its log lists it)
    log = results / "logs" / "train" / MODEL_NAME / "segment" / "split0.log"
    assert " scale=2.5" in log.read_text(), log.read_text()[-2000:]
    toy = pd.read_parquet(runs[[p.parent.parent.name for p in runs].index(MODEL_NAME)])
    assert toy.groupby("config").size().to_dict() == {0: MODEL_EPOCHS, 1: MODEL_EPOCHS}

    summary = pd.read_parquet(results / "summary" / "summary.parquet")
    assert f"{METRIC_LABEL}+TS" in set(summary["method"])
    assert MODEL_NAME in set(summary["model"])
    selected = pd.read_parquet(results / "selected" / "mlp" / "segment.parquet")
    assert METRIC_ID in set(selected["stopping"])

    html = (results / "report.html").read_text()
    assert f"<em>{METRIC_LABEL}</em>: one minus the mean top-class probability" in html
