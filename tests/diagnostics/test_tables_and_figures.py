"""The diagnostic tables of a results folder (runs + replay files) and the figures drawn from
them: stale replays are left out, TS is the calibrators' reference, the figures show the
tables' numbers, and an empty folder still renders every figure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fixtures.replay_fixtures import write_fake_replay
from fixtures.synthetic import SyntheticDataset, write_synthetic_results

from tabbench.cli import main
from tabbench.core.layout import ResultsLayout, replay_sidecar
from tabbench.diagnostics.collect import discover_tasks
from tabbench.diagnostics.paths import DIAGNOSTIC_FIGURE_STEMS
from tabbench.diagnostics.selection_bias import MAIN_TARGET
from tabbench.diagnostics.summaries import POOLED
from tabbench.diagnostics.tables import diagnose, read_diagnostics
from tabbench.plots.diagnostics import make_diagnostic_figures
from tabbench.summary.comparisons import describe

MODELS = ["xgboost", "mlp"]
DATASETS = [SyntheticDataset("bin_a", 2_000, 2), SyntheticDataset("multi_b", 2_500, 4)]
N_SPLITS = 2


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    write_synthetic_results(root, DATASETS, MODELS, N_SPLITS, n_configs=4,
                            epochs={"xgboost": (12, 20), "mlp": (10, 10)})
    for model in MODELS:
        for ds in DATASETS:
            for split in range(N_SPLITS):
                write_fake_replay(root, model, ds.name, split)
    return root


@pytest.fixture(scope="module")
def tables(results, tmp_path_factory):
    out = tmp_path_factory.mktemp("diag")
    diagnose(results, out, jobs=1)
    return read_diagnostics(out)


def test_every_split_is_diagnosed_and_every_replay_used(tables):
    meta = tables["meta"]
    n = len(MODELS) * len(DATASETS) * N_SPLITS
    assert meta["n_splits"] == n and meta["replay"] == {"used": n, "stale": 0, "missing": 0}
    sel = tables["selection"]
    assert len(sel) == n * 2 * 8  # regimes x stopping metrics
    scores = tables["scores"]
    assert len(scores) == n * 2 * 8 * 4  # x calibrators
    assert set(scores["calibrator"]) == {"none", "ts", "isotonic", "platt_vector"}


def test_ts_is_the_reference_of_the_calibrators(tables):
    rel = tables["calibrators_relative"]
    assert (rel.loc[rel["calibrator"] == "ts", "rel_diff"] == 0).all()
    # one value per (model, dataset, regime, stopping, calibrator, metric): a mean over splits
    assert not rel.duplicated(["model", "dataset", "regime", "stopping", "calibrator",
                               "metric"]).any()
    s = tables["scores"]
    one = s[(s["model"] == "mlp") & (s["dataset"] == "bin_a") & (s["regime"] == "default")
            & (s["stopping"] == "logloss") & (s["calibrator"] == "isotonic")]
    r = rel[(rel["model"] == "mlp") & (rel["dataset"] == "bin_a")
            & (rel["regime"] == "default") & (rel["stopping"] == "logloss")
            & (rel["calibrator"] == "isotonic") & (rel["metric"] == "brier")]
    assert r["value"].item() == pytest.approx(one["brier"].mean())


def test_reliability_diagrams_are_normalised_and_the_example_is_one_dataset(tables):
    diag = tables["reliability"]
    mass = diag.groupby(["scope", "model", "regime", "stopping", "calibration"])["weight"].sum()
    np.testing.assert_allclose(mass, 1.0)
    example = tables["meta"]["example_dataset"]
    assert example in {d.name for d in DATASETS}
    assert set(diag["scope"]) == {POOLED, example}
    assert (diag.loc[diag["scope"] == example, "n_datasets"] == 1).all()


def test_stale_and_missing_replays_are_left_out(results, tmp_path):
    side_path = replay_sidecar(ResultsLayout(results).replay("mlp", "bin_a", 1))
    original = side_path.read_text()
    side = json.loads(original)
    entry = next(iter(side["selections"].values()))
    entry["epoch"] += 1  # as if the runs file had been retrained since
    side_path.write_text(json.dumps(side))
    try:
        tasks = discover_tasks(results, ["mlp/bin_a", "xgboost/bin_a"], n_splits=1)
        assert [t.split for t in tasks] == [0, 0]
        out = diagnose(results, tmp_path / "d", jobs=1)
    finally:
        side_path.write_text(original)
    assert out["meta"]["replay"]["stale"] == 1
    assert out["meta"]["stale_replays"] == ["mlp/bin_a/split1"]
    assert not ((out["scores"]["dataset"] == "bin_a") & (out["scores"]["model"] == "mlp")
                & (out["scores"]["split"] == 1)).any()
    # the records-only diagnostics do not need the replay
    assert ((out["selection"]["dataset"] == "bin_a") & (out["selection"]["split"] == 1)).any()


#: stopping metrics drawn in these tests (all eight make the figures slow to render here)
DRAWN = ("logloss", "ts_ref", "ir_ref")


@pytest.fixture(scope="module")
def few(tables):
    """The tables restricted to :data:`DRAWN`."""
    return {k: v[v["stopping"].isin(DRAWN)] if isinstance(v, pd.DataFrame)
            and "stopping" in v else v for k, v in tables.items()}


@pytest.fixture(scope="module")
def drawn(few, tmp_path_factory):
    out = tmp_path_factory.mktemp("figs")
    return make_diagnostic_figures(few, out), out


def test_every_figure_is_written(drawn):
    figs, out = drawn
    assert tuple(figs) == DIAGNOSTIC_FIGURE_STEMS
    for stem in DIAGNOSTIC_FIGURE_STEMS:
        for ext in ("pdf", "png"):
            assert (out / f"{stem}.{ext}").stat().st_size > 1000


def test_regret_boxes_are_the_per_dataset_regrets(drawn, few):
    figs, _ = drawn
    per_ds = few["selection_datasets"]
    boxes = figs["diag_regret"]["boxes"]
    assert boxes
    for b in boxes:
        sub = per_ds[(per_ds["regime"] == b["regime"]) & (per_ds["model"] == b["model"])
                     & (per_ds["stopping"] == b["stopping"])].sort_values("dataset")
        want = sub[f"rel_regret_{MAIN_TARGET}"].to_numpy()
        np.testing.assert_allclose(b["values"], want)
        assert b["median"] == pytest.approx(describe(want)["median"])
        assert min(b["values"]) >= 0  # nothing beats the test oracle


def test_winners_curse_lines_are_the_curve_summary(drawn, few):
    figs, _ = drawn
    cs = few["curve_summary"]
    lines = figs["diag_winners_curse"]["lines"]
    assert len(lines) == len(MODELS) * len(DRAWN)
    for line in lines:
        g = cs[(cs["model"] == line["model"]) & (cs["stopping"] == line["stopping"])]
        g = g.sort_values("k")
        assert line["k"] == g["k"].tolist()
        np.testing.assert_allclose(line["mean"], g["mean"])


def test_reliability_panels_show_the_tables(drawn, few):
    figs, _ = drawn
    panels = figs["diag_reliability"]["panels"]
    ece = few["reliability_ece"]
    assert len(panels) == len(MODELS) * len(DRAWN) * 2
    assert {p["calibration"] for p in panels} == {"raw", "ts"}
    for p in panels:
        row = ece[(ece["scope"] == POOLED) & (ece["model"] == p["model"])
                  & (ece["regime"] == p["regime"]) & (ece["stopping"] == p["stopping"])
                  & (ece["calibration"] == p["calibration"])]
        assert p["ece_mean"] == pytest.approx(row["ece_mean"].item())
        assert p["smece_mean"] == pytest.approx(row["smece_mean"].item())
        assert 0 <= p["smece_mean"] < 1
        assert p["regime"] == "tuned"  # both models have tuned configs here
        # each bin's band holds its accuracy; the histogram is the bins' share of samples
        lo, acc, hi = (np.array(p[c]) for c in ("acc_lo", "accuracy", "acc_hi"))
        assert len(lo) == len(acc) > 0 and np.all((lo <= acc + 1e-12) & (acc <= hi + 1e-12))
        assert sum(p["hist_weight"]) == pytest.approx(1.0)
    assert figs["diag_reliability_example"]["scope"] == few["meta"]["example_dataset"]


def test_calibrator_boxes_exclude_the_reference(drawn):
    figs, _ = drawn
    assert {b["calibrator"] for b in figs["diag_calibrators"]["boxes"]} == {
        "none", "isotonic", "platt_vector"}


def test_an_empty_results_folder_renders_every_figure(tmp_path):
    """Through the two commands the workflow's diagnostics rules call."""
    (tmp_path / "results" / "runs").mkdir(parents=True)
    assert main(["diagnose", "--results", str(tmp_path / "results"), "--out",
                 str(tmp_path / "diag"), "--jobs", "1"]) == 0
    assert main(["diagnostics-figures", "--tables", str(tmp_path / "diag"), "--out",
                 str(tmp_path / "figs")]) == 0
    tables = read_diagnostics(tmp_path / "diag")
    figs = make_diagnostic_figures(tables, tmp_path / "figs2")
    assert tuple(figs) == DIAGNOSTIC_FIGURE_STEMS
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == sorted(
        p.name for p in (tmp_path / "figs2").iterdir())
    assert tables["meta"]["replay"] == {"used": 0, "stale": 0, "missing": 0}
    assert isinstance(tables["selection"], pd.DataFrame)


def test_the_regenerate_job_reads_and_uses_the_replays_a_folder_holds(tmp_path):
    """What the workflow's regenerate job does with a folder where one pair has its replay
    files: they are among the job's inputs (so Snakemake redraws when one changes), and the
    diagnostics drawn from the folder use them and count the other splits as missing."""
    from tabbench.report.drawing_state import regenerate_inputs
    from tabbench.report.redraw import regenerate_diagnostics

    root = tmp_path / "results"
    write_synthetic_results(root, DATASETS, MODELS, N_SPLITS, n_configs=2,
                            epochs={"xgboost": (6, 8), "mlp": (5, 5)})
    for split in range(N_SPLITS):
        write_fake_replay(root, "mlp", "bin_a", split)
    npz = [ResultsLayout(root).replay("mlp", "bin_a", s) for s in range(N_SPLITS)]
    inputs = set(map(str, regenerate_inputs(root)))
    assert {str(p) for p in npz} | {str(replay_sidecar(p)) for p in npz} <= inputs
    assert not any("/replay/" in p for p in inputs - {str(p) for p in npz}
                   - {str(replay_sidecar(p)) for p in npz})
    out = tmp_path / "out"
    counts = regenerate_diagnostics(root, out, jobs=1, draw=False)
    n = len(MODELS) * len(DATASETS) * N_SPLITS
    want = {"used": N_SPLITS, "stale": 0, "missing": n - N_SPLITS}
    assert {k: counts[f"replay_{k}"] for k in want} == want
    meta = json.loads((Path(ResultsLayout(out).diagnostics_dir) / "meta.json").read_text())
    assert meta["replay"] == want
