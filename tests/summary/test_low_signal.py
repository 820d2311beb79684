"""The headline without the low-signal datasets (summary/low_signal.parquet, claims.md's
section): the rule on learnability, the table judged by the claims' own code, the threshold
as a redraw setting, and the text a page embeds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabbench.report.page_tables import TABLES, PageInputs
from tabbench.settings.table import SETTINGS, VIEW_KEYS, Effect
from tabbench.summary.aggregate import aggregate_frames
from tabbench.summary.claims import check_claims
from tabbench.summary.heterogeneity import heterogeneity_table
from tabbench.summary.low_signal import (
    ALL_LARGE,
    LOW_SIGNAL_COLUMNS,
    NOT_LOW_SIGNAL,
    low_signal_datasets,
    low_signal_markdown,
    low_signal_table,
)
from tabbench.summary.select import SELECTED_COLUMNS, TEST_COLUMNS
from tabbench.summary.view import SummaryView, ViewError, view_from_config, view_from_meta

LARGE = 10_000


def _het(rows: list[tuple[str, str, float, bool]]) -> pd.DataFrame:
    """(dataset, model, learnability, large) rows of a heterogeneity table."""
    return pd.DataFrame([{"model": m, "regime": "default", "dataset": d, "learnability": v,
                          "large": large} for d, m, v, large in rows])


def test_a_dataset_is_low_signal_when_no_model_learns_below_the_threshold():
    het = _het([("flat", "xgboost", 0.95, True), ("flat", "mlp", 0.92, True),
                ("one_learns", "xgboost", 0.97, True), ("one_learns", "mlp", 0.5, True),
                ("at", "xgboost", 0.9, True),
                ("unknown", "xgboost", np.nan, True), ("unknown", "mlp", np.nan, True),
                ("half_known", "xgboost", np.nan, True), ("half_known", "mlp", 0.99, True),
                ("small", "xgboost", 0.99, False)])
    low, unknown = low_signal_datasets(het, 0.9)
    assert low == ["at", "flat", "half_known"]  # ≥ the threshold; small datasets are not judged
    assert unknown == ["unknown"]
    assert low_signal_datasets(het, 0.93)[0] == ["half_known"]  # flat's mlp is at 0.92


def _row(dataset: str, split: int, stopping: str, test: float, val: float) -> dict:
    row = dict.fromkeys(TEST_COLUMNS, 1.0)
    row.update(model="xgboost", dataset=dataset, split=split, regime="default",
               stopping=stopping, rule="best", patience=None, config=0,
               epoch=10 if stopping == "logloss" else 30, stop_epoch=100, val=val,
               val_ts_ref=val, n_candidates=1, n_skipped=0, test_logloss_ts=test, beta=1.0,
               fit_seconds=1.0, params="{}", n_train=1, n_val=1, n_test=1, n_classes=2,
               n_rows=20_000, epochs_trained=100, epochs_recorded=100, oracle_logloss_ts=0.1)
    return row


def _study() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Eight large datasets where TS-Ref.+TS gains 5 % on test (validation logloss 0.3 of a
    prior entropy of ln 2) and eight where it is a tie (validation logloss 0.68: learnability
    0.98), two splits each; the class balance of every dataset."""
    rows, balance = [], []
    for i in range(8):
        for name, gain, val in ((f"signal{i}", 0.95 - 0.002 * i, 0.3),
                                (f"flat{i}", 1.0, 0.68)):
            for s in range(2):
                rows += [_row(name, s, "logloss", 1.0 + 0.01 * s, val),
                         _row(name, s, "ts_ref", gain * (1.0 + 0.01 * s), val)]
            balance.append([name, 0.5, float(np.log(2))])
    selected = pd.DataFrame(rows)[list(SELECTED_COLUMNS)]
    selected["patience"] = selected["patience"].astype("Int64")
    return selected, pd.DataFrame(balance, columns=["dataset", "minority_share",
                                                    "prior_entropy"])


def test_the_headline_is_judged_again_without_the_low_signal_datasets_by_the_claims_code():
    selected, balance = _study()
    het = heterogeneity_table(selected, LARGE, balance)
    claims = check_claims(selected, LARGE)
    table = low_signal_table(selected, claims, het, LARGE, threshold=0.9)
    assert list(table.columns) == LOW_SIGNAL_COLUMNS
    every = table[table["datasets"] == ALL_LARGE].iloc[0]
    kept = table[table["datasets"] == NOT_LOW_SIGNAL].iloc[0]
    headline = claims[claims["claim"] == "ts_ref_beats_logloss"].iloc[0]
    assert (every["n"], every["median"], every["verdict"]) == (
        headline["n"], headline["median"], headline["verdict"])
    flat = [f"flat{i}" for i in range(8)]
    alone = check_claims(selected[~selected["dataset"].isin(flat)], LARGE)
    alone = alone[alone["claim"] == "ts_ref_beats_logloss"].iloc[0]
    assert (kept["n"], kept["n_low_signal"], kept["n_unknown"]) == (8, 8, 0)
    assert kept["low_signal"] == ", ".join(sorted(flat))
    for column in ("median", "p_better", "p_equivalent", "p_worse", "verdict"):
        assert kept[column] == alone[column], column
    # the ties pulled the median to the ROPE; without them the gain decides
    assert kept["verdict"] == "reproduced" and every["verdict"] != "reproduced"
    assert (table["threshold"] == 0.9).all()
    # a threshold above every learnability leaves every dataset in
    none = low_signal_table(selected, claims, het, LARGE, threshold=0.99)
    assert (none["n"] == 16).all() and (none["n_low_signal"] == 0).all()


def test_a_cell_left_without_datasets_is_inconclusive_and_unknown_learnability_is_counted():
    selected, _ = _study()
    het = heterogeneity_table(selected, LARGE, None)  # no class counts: all unknown
    claims = check_claims(selected, LARGE)
    table = low_signal_table(selected, claims, het, LARGE)
    kept = table[table["datasets"] == NOT_LOW_SIGNAL].iloc[0]
    assert (kept["n"], kept["n_low_signal"], kept["n_unknown"]) == (16, 0, 16)
    every_flat = heterogeneity_table(selected, LARGE, pd.DataFrame(
        {"dataset": sorted(set(selected["dataset"])), "minority_share": 0.5,
         "prior_entropy": 0.1}))  # learnability ≥ 3 everywhere: all low-signal
    empty = low_signal_table(selected, claims, every_flat, LARGE)
    left = empty[empty["datasets"] == NOT_LOW_SIGNAL].iloc[0]
    assert (left["n"], left["n_low_signal"], left["verdict"]) == (0, 16, "inconclusive")
    assert "n = 0: **inconclusive**" in low_signal_markdown(empty, 0.9)


def test_the_threshold_is_a_redraw_setting_of_the_view_recorded_in_meta():
    setting = SETTINGS["low_signal_learnability"]
    assert setting.default == 0.9 and setting.effect is Effect.REDRAW
    assert "low_signal_learnability" in VIEW_KEYS
    assert view_from_config({}).low_signal == 0.9
    view = view_from_config({"low_signal_learnability": 0.8})
    assert view.low_signal == 0.8
    assert view_from_meta(view.as_meta()) == view
    for bad in (0, -1, "high", True):
        with pytest.raises(ViewError, match="low_signal_learnability"):
            view_from_config({"low_signal_learnability": bad})


def test_the_summary_writes_the_table_and_claims_md_its_section_as_a_page_embeds_it():
    selected, balance = _study()
    frames = aggregate_frames(selected, large_rows=LARGE, balance=balance,
                              view=SummaryView(low_signal=0.95))
    meta = frames["meta"]
    assert meta["low_signal_learnability"] == 0.95
    table = frames["low_signal"]
    assert (table["threshold"] == 0.95).all()
    assert (table.loc[table["datasets"] == NOT_LOW_SIGNAL, "n_low_signal"] == 8).all()
    text = low_signal_markdown(table, 0.95)
    assert "at least 0.95 of the prior's entropy" in text
    assert "Low-signal here: " + ", ".join(f"flat{i}" for i in range(8)) in text
    every, kept = (table[table["datasets"] == d].iloc[0] for d in (ALL_LARGE, NOT_LOW_SIGNAL))
    assert (f"the verdict changes for XGBoost default ({every['verdict']} → reproduced)"
            in text)
    claims_md = frames["claims_markdown"]
    assert "## The headline without the low-signal datasets" in claims_md
    assert text in claims_md
    inputs = PageInputs(frames, selected, LARGE)
    assert TABLES["low_signal"](inputs) == text


def test_the_docs_give_the_settings_default():
    """The prose that names the threshold's default names the settings table's."""
    from pathlib import Path

    docs = Path(__file__).resolve().parents[2] / "docs"
    value = SETTINGS["low_signal_learnability"].default
    usage = " ".join((docs / "usage.md").read_text().split())
    assert f"(at least `low_signal_learnability`, {value:g} by default, of their entropy)" in usage
    design = " ".join((docs / "design.md").read_text().split())
    assert f"`low_signal_learnability` (a redraw setting, default {value:g})" in design
