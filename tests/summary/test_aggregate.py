"""Aggregation (docs/design.md §7) on hand-made selected rows with hand-computed answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabbench.settings.presets import default_value
from tabbench.summary.aggregate import aggregate, aggregate_frames, read_summary
from tabbench.summary.methods import BASELINE, method_names
from tabbench.summary.select import SELECTED_COLUMNS, TEST_COLUMNS
from tabbench.summary.tables import (
    dataset_means,
    dropped_splits,
    mean_best_epochs,
    relative_differences,
    summarise,
)


def sel_rows(rows: list[dict]) -> pd.DataFrame:
    """Selected rows; unspecified test metrics are 1.0, sizes small."""
    out = []
    for r in rows:
        row = {c: 1.0 for c in TEST_COLUMNS}
        row.update(model="mlp", regime="default", config=0, epoch=1, val=0.0, val_ts_ref=0.0,
                   n_candidates=1, n_skipped=0, beta=1.0, fit_seconds=1.0, params="{}",
                   n_train=640, n_val=160, n_test=200, n_classes=2, n_rows=1000,
                   rule="best", patience=None, stop_epoch=1, epochs_trained=1,
                   epochs_recorded=1, oracle_logloss_ts=1.0)
        row.update(r)
        out.append(row)
    return pd.DataFrame(out)[list(SELECTED_COLUMNS)]


def test_mean_over_splits_comes_before_the_ratio():
    # baseline (logloss stopping, +TS) per split: 1 and 3 -> mean 2
    # TS-Ref.+TS per split: 1.5 and 2.5 -> mean 2 -> 0 % (a mean of ratios would give +16.7 %)
    # Logloss (raw) per split: 2 and 4 -> mean 3 -> +50 %
    sel = sel_rows([
        {"dataset": "d", "split": 0, "stopping": "logloss", "test_logloss_ts": 1.0,
         "test_logloss": 2.0},
        {"dataset": "d", "split": 1, "stopping": "logloss", "test_logloss_ts": 3.0,
         "test_logloss": 4.0},
        {"dataset": "d", "split": 0, "stopping": "ts_ref", "test_logloss_ts": 1.5},
        {"dataset": "d", "split": 1, "stopping": "ts_ref", "test_logloss_ts": 2.5},
    ])
    means = dataset_means(sel)
    assert means.set_index("stopping").loc["logloss", "test_logloss_ts"] == 2.0
    assert means["n_splits"].tolist() == [2, 2]
    rel = relative_differences(sel, 10_000, metrics=["logloss"]).set_index("method")
    assert rel.loc["TS-Ref.+TS", "rel_diff"] == 0.0
    assert rel.loc["Logloss", "rel_diff"] == pytest.approx(50.0)
    assert rel.loc[BASELINE, "rel_diff"] == 0.0
    # methods of absent stopping metrics are simply not there
    assert set(rel.index) == {"Logloss", BASELINE, "TS-Ref.+TS"}


def test_a_method_and_the_baseline_are_averaged_over_the_same_splits():
    # baseline (logloss+TS) per split 0, 1, 2: 1, 2, 9 -> TS-Ref.+TS has splits 0, 1 only: its
    # mean 1.5 must be compared with the baseline over 0, 1 (1.5, i.e. 0 %), not over 0-2 (4);
    # Accuracy+TS has all three splits and is compared over all three (baseline 4)
    sel = sel_rows([
        {"dataset": "d", "split": 0, "stopping": "logloss", "test_logloss_ts": 1.0},
        {"dataset": "d", "split": 1, "stopping": "logloss", "test_logloss_ts": 2.0},
        {"dataset": "d", "split": 2, "stopping": "logloss", "test_logloss_ts": 9.0},
        {"dataset": "d", "split": 0, "stopping": "ts_ref", "test_logloss_ts": 1.0},
        {"dataset": "d", "split": 1, "stopping": "ts_ref", "test_logloss_ts": 2.0},
        {"dataset": "d", "split": 0, "stopping": "error", "test_logloss_ts": 2.0},
        {"dataset": "d", "split": 1, "stopping": "error", "test_logloss_ts": 4.0},
        {"dataset": "d", "split": 2, "stopping": "error", "test_logloss_ts": 6.0},
        # a split the baseline lacks: dropped for this method
        {"dataset": "d", "split": 3, "stopping": "error", "test_logloss_ts": 100.0},
    ])
    rel = relative_differences(sel, 10_000, metrics=["logloss"]).set_index("method")
    ts = rel.loc["TS-Ref.+TS"]
    assert (ts["value"], ts["baseline"], ts["rel_diff"], ts["n_splits"]) == (1.5, 1.5, 0.0, 2)
    acc = rel.loc["Accuracy+TS"]
    assert (acc["value"], acc["baseline"], acc["n_splits"]) == (4.0, 4.0, 3)
    assert rel.loc[BASELINE, "n_splits"] == 3
    # dropped: split 2 for TS-Ref.+TS (no selection), split 3 for Accuracy+TS (no baseline)
    dropped = dropped_splits(sel, metrics=["logloss"])
    assert dropped["total"] == 2
    assert {(r["method"], r["n"]) for r in dropped["by"]} == {("TS-Ref.+TS", 1),
                                                               ("Accuracy+TS", 1)}
    assert aggregate_frames(sel)["meta"]["dropped_splits"]["total"] == 2 * 5  # 5 test metrics


def test_a_split_with_a_non_finite_value_is_dropped_on_both_sides():
    sel = sel_rows([
        {"dataset": "d", "split": 0, "stopping": "logloss", "test_auroc_ts": 0.2},
        {"dataset": "d", "split": 1, "stopping": "logloss", "test_auroc_ts": 0.4},
        {"dataset": "d", "split": 0, "stopping": "ts_ref", "test_auroc_ts": 0.1},
        {"dataset": "d", "split": 1, "stopping": "ts_ref", "test_auroc_ts": np.nan},
    ])
    rel = relative_differences(sel, 10_000, metrics=["auroc"]).set_index("method")
    assert rel.loc["TS-Ref.+TS", "baseline"] == 0.2 and rel.loc["TS-Ref.+TS", "n_splits"] == 1
    assert rel.loc["TS-Ref.+TS", "rel_diff"] == pytest.approx(-50.0)
    assert dropped_splits(sel, metrics=["auroc"])["total"] == 1


def test_methods_follow_the_registry_with_fig5_first():
    assert method_names() == ("Logloss", "Logloss+TS", "TS-Ref.+TS", "Accuracy+TS", "Brier+TS",
                              "AUROC+TS", "Brier-Ref.+TS", "TS-Ref.-5CV+TS", "IR-Ref.+TS")


def test_methods_report_raw_or_ts_test_metrics_and_are_paired_per_model_and_regime():
    sel = sel_rows([
        {"dataset": "d", "split": 0, "stopping": "logloss", "test_error": 0.2,
         "test_error_ts": 0.2, "test_logloss_ts": 0.5},
        {"dataset": "d", "split": 0, "stopping": "error", "test_error": 0.9,
         "test_error_ts": 0.1, "test_logloss_ts": 0.75},
        # a different regime must not be compared with the default baseline
        {"dataset": "d", "split": 0, "stopping": "logloss", "regime": "tuned",
         "test_error_ts": 0.4, "test_logloss_ts": 1.0},
    ])
    rel = relative_differences(sel, 10_000, metrics=["error", "logloss"])
    r = rel.set_index(["regime", "metric", "method"])["rel_diff"]
    assert r[("default", "error", "Accuracy+TS")] == pytest.approx(-50.0)  # _ts column: 0.1/0.2
    assert r[("default", "logloss", "Accuracy+TS")] == pytest.approx(50.0)
    assert r[("tuned", "logloss", BASELINE)] == 0.0
    assert ("tuned", "logloss", "Accuracy+TS") not in r.index


def test_summary_statistics_counts_and_wilcoxon():
    # five datasets, TS-Ref.+TS relative differences -50, -25, -12.5, 0, +6.25 (%): values and
    # differences are exact binary fractions, so the magnitudes the Wilcoxon test ranks are
    # exactly what is written here (with -10 and +10 from 0.9 and 1.1 they were 9.999999999999998
    # and 10.000000000000009: a tie by construction that float rounding broke)
    rows = []
    for i, r in enumerate([-50.0, -25.0, -12.5, 0.0, 6.25]):
        rows.append({"dataset": f"d{i}", "split": 0, "stopping": "logloss", "test_logloss_ts": 1.0,
                     "n_rows": 20_000 if i < 2 else 1_000})
        rows.append({"dataset": f"d{i}", "split": 0, "stopping": "ts_ref",
                     "test_logloss_ts": 1.0 + r / 100.0, "n_rows": 20_000 if i < 2 else 1_000})
    rel = relative_differences(sel_rows(rows), 10_000, metrics=["logloss"])
    assert rel.loc[rel["method"] == "TS-Ref.+TS", "rel_diff"].tolist() == [-50, -25, -12.5, 0,
                                                                          6.25]
    s = summarise(rel).set_index(["subset", "method"])
    row = s.loc[("all", "TS-Ref.+TS")]
    assert row["n"] == 5
    assert (row["wins"], row["ties"], row["losses"]) == (3, 1, 1)
    assert row["median"] == -12.5
    assert row["mean"] == pytest.approx(-16.25)
    # linear quantiles of [-50, -25, -12.5, 0, 6.25]: q10 at position 0.4 -> -40, q90 at 3.6
    # -> 3.75
    assert (row["q10"], row["q25"], row["q75"], row["q90"]) == pytest.approx((-40, -25, 0, 3.75))
    # zeros dropped: ranks of |-50|, |-25|, |-12.5|, |6.25| = 4, 3, 2, 1 (no ties); W+ = 1. Over
    # the 2^4 equally likely sign patterns, W+ <= 1 for {} and {1}: P = 2/16, two-sided 0.25
    assert row["p_wilcoxon"] == pytest.approx(0.25)
    assert np.isnan(s.loc[("all", BASELINE), "p_wilcoxon"])
    large = s.loc[("large", "TS-Ref.+TS")]
    assert large["n"] == 2 and large["median"] == -37.5


def test_best_epochs_are_averaged_over_splits_for_default_models_only():
    sel = sel_rows([
        {"dataset": "d", "split": 0, "stopping": "ts_ref", "epoch": 10},
        {"dataset": "d", "split": 1, "stopping": "ts_ref", "epoch": 20},
        {"dataset": "d", "split": 0, "stopping": "ts_ref", "epoch": 99, "regime": "tuned"},
    ])
    t = mean_best_epochs(sel)
    assert t["epoch"].tolist() == [15.0] and t["n_splits"].tolist() == [2]


def test_aggregate_writes_readable_tables(tmp_path):
    sel = sel_rows([
        {"dataset": "d", "split": 0, "stopping": "logloss", "test_logloss_ts": 2.0},
        {"dataset": "d", "split": 0, "stopping": "ts_ref", "test_logloss_ts": 1.0},
    ])
    p = tmp_path / "sel.parquet"
    sel.to_parquet(p, index=False)
    aggregate([p], tmp_path / "summary", runs_dir=None, large_rows=500)
    s = read_summary(tmp_path / "summary")
    assert s["meta"]["n_large_datasets"] == 1 and s["meta"]["large_rows"] == 500
    rel = s["relative"].set_index(["metric", "method"])
    assert rel.loc[("logloss", "TS-Ref.+TS"), "rel_diff"] == pytest.approx(-50.0)
    assert "| mlp | default | TS-Ref.+TS | 1 | -50.00 |" in s["markdown"]
    assert s["curve"].empty


def test_empty_selection_gives_empty_tables(tmp_path):
    aggregate([], tmp_path / "summary")
    s = read_summary(tmp_path / "summary")
    assert s["relative"].empty and s["summary"].empty and s["meta"]["n_datasets"] == 0
    # no threshold given: the setting's default (the default preset's), not a copy of it
    assert s["meta"]["large_rows"] == default_value("figures_large_rows")
