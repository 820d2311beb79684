"""summary/heterogeneity.parquet: the headline's per-dataset gain beside what validation shows,
checked against numbers written out by hand, against the claims' own differences, and on a
regenerated folder and its published copy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fixtures.synthetic import DEMO_DATASETS, write_synthetic_results

from tabbench.data.class_balance import balance_of, class_balance
from tabbench.report.publish import publish
from tabbench.report.redraw import Redraw, regenerate
from tabbench.summary.aggregate import read_summary
from tabbench.summary.claims import check_claims
from tabbench.summary.heterogeneity import HETEROGENEITY_COLUMNS, heterogeneity_table
from tabbench.summary.select import SELECTED_COLUMNS, TEST_COLUMNS, select_files, write_selected


def _row(dataset: str, split: int, stopping: str, *, val: float, at: float | None,
         test: float, config: int = 0, epoch: int = 10, beta: float = 1.0,
         regime: str = "default", n_rows: int = 20_000) -> dict:
    row = dict.fromkeys(TEST_COLUMNS, 1.0)
    row.update(model="xgboost", dataset=dataset, split=split, regime=regime, stopping=stopping,
               rule="best", patience=None, config=config, epoch=epoch, stop_epoch=100, val=val,
               val_ts_ref=np.nan if at is None else at, n_candidates=1, n_skipped=0,
               test_logloss_ts=test, beta=beta, fit_seconds=1.0, params="{}", n_train=1,
               n_val=1, n_test=1, n_classes=3, n_rows=n_rows, epochs_trained=100,
               epochs_recorded=100, oracle_logloss_ts=0.1)
    return row


def _frame(rows: list[dict]) -> pd.DataFrame:
    out = pd.DataFrame(rows)[list(SELECTED_COLUMNS)]
    out["patience"] = out["patience"].astype("Int64")
    return out


def _two_splits() -> pd.DataFrame:
    """Dataset d: logloss stops at epoch 10 (val logloss 0.70, 0.80; val TS-refinement there
    0.60, 0.70), TS-Ref. at 30 (0.50, 0.60); test logloss after TS 1.0/1.2 vs 0.9/1.0."""
    return _frame([
        _row("d", 0, "logloss", val=0.70, at=0.60, test=1.0, beta=0.9),
        _row("d", 1, "logloss", val=0.80, at=0.70, test=1.2, beta=0.7),
        _row("d", 0, "ts_ref", val=0.50, at=0.50, test=0.9, epoch=30),
        _row("d", 1, "ts_ref", val=0.60, at=0.60, test=1.0, epoch=40),
    ])


def test_the_gains_are_means_over_splits_then_the_ratio():
    t = heterogeneity_table(_two_splits(), large_rows=10_000).iloc[0]
    assert t["test_gain"] == pytest.approx(100 * (1.9 / 2.2 - 1))
    assert t["val_gain"] == pytest.approx(100 * (1.1 / 1.3 - 1))
    assert t["val_gain_bound"] == pytest.approx(100 * (1.1 / 1.5 - 1))
    assert t["val_gain_bound"] <= t["val_gain"] <= 0
    assert t["epoch_gap"] == pytest.approx(np.mean([20 / 100, 30 / 100]))
    assert t["beta_logloss"] == pytest.approx(0.8)
    assert (t["n_splits"], t["n_classes"], bool(t["large"])) == (2, 3, True)
    assert np.isnan(t["learnability"]) and np.isnan(t["minority_share"])


def test_the_test_gain_is_the_headline_claims_own_difference():
    sel = _frame([_row(f"d{i}", s, m, val=0.5, at=0.5, test=t)
                  for i in range(6) for s in range(2)
                  for m, t in (("logloss", 1.0 + 0.1 * i + 0.01 * s),
                               ("ts_ref", 0.95 + 0.12 * i))])
    table = heterogeneity_table(sel, large_rows=10_000)
    claim = check_claims(sel, 10_000)
    headline = claim[claim["claim"] == "ts_ref_beats_logloss"].iloc[0]
    assert table["test_gain"].median() == pytest.approx(headline["median"])
    assert (int((table["test_gain"] < 0).sum()), int((table["test_gain"] > 0).sum())) == (
        headline["wins"], headline["losses"])


def test_class_balance_gives_learnability_and_minority_share():
    balance = pd.DataFrame({"dataset": ["d"], "minority_share": [0.2],
                            "prior_entropy": [0.5]})
    t = heterogeneity_table(_two_splits(), 10_000, balance).iloc[0]
    assert t["learnability"] == pytest.approx(0.75 / 0.5)
    assert t["minority_share"] == 0.2
    share, entropy = balance_of([30, 10])
    assert share == 0.25
    assert entropy == pytest.approx(-(0.75 * np.log(0.75) + 0.25 * np.log(0.25)))


def test_a_selection_without_val_ts_ref_knows_the_validation_gain_only_where_choices_agree():
    """Where logloss and TS-Ref. chose the same (config, epoch) on every split the gain is 0;
    one split that chose apart leaves it unknown (a mean over fewer splits is another
    quantity), while the bound, from the ``val`` column, is known everywhere."""
    same = [_row("same", s, m, val=v, at=None, test=1.0, epoch=7)
            for s in range(2) for m, v in (("logloss", 0.7), ("ts_ref", 0.6))]
    apart = [_row("apart", 0, "logloss", val=0.7, at=None, test=1.0, epoch=7),
             _row("apart", 0, "ts_ref", val=0.6, at=None, test=1.0, epoch=7),
             _row("apart", 1, "logloss", val=0.7, at=None, test=1.0, epoch=7),
             _row("apart", 1, "ts_ref", val=0.5, at=None, test=0.9, epoch=9)]
    t = heterogeneity_table(_frame(same + apart), 10_000).set_index("dataset")
    assert t.loc["same", "val_gain"] == 0.0
    assert np.isnan(t.loc["apart", "val_gain"])
    assert t.loc["apart", "val_gain_bound"] == pytest.approx(100 * (1.1 / 1.4 - 1))


def test_the_validation_gain_is_never_positive_on_synthetic_runs(tmp_path):
    datasets = [d for d in DEMO_DATASETS if d.name in ("adult", "segment")]
    runs = write_synthetic_results(tmp_path, datasets, ["xgboost", "mlp"], n_splits=2,
                                   n_configs=3, epochs={"xgboost": (9, 9), "mlp": (6, 6)})
    by_pair: dict[tuple[str, str], list[Path]] = {}
    for p in runs:
        by_pair.setdefault((p.parent.parent.name, p.parent.name), []).append(p)
    sel = pd.concat([select_files(sorted(p)) for p in by_pair.values()], ignore_index=True)
    table = heterogeneity_table(sel, large_rows=10_000)
    assert len(table) == 8 and table["val_gain"].notna().all()
    assert (table["val_gain"] <= 0).all()
    assert (table["val_gain_bound"] <= table["val_gain"] + 1e-12).all()


def _data_folder(root: Path, shares: dict[str, list[int]]) -> Path:
    for name, counts in shares.items():
        path = root / "processed" / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"dataset": name, "class_counts": counts}))
    return root


def test_a_regenerated_folder_and_its_published_copy_hold_both_files(tmp_path):
    """The two files appear in a regenerated folder; the class balance read from its data
    folder is kept by its published copy, which has no data folder, when the copy is redrawn."""
    datasets = [d for d in DEMO_DATASETS if d.name in ("adult", "phoneme", "segment")]
    study = tmp_path / "results"
    write_synthetic_results(study, datasets, ["xgboost"], n_splits=2, n_configs=2,
                            epochs={"xgboost": (8, 10)})
    for ds in datasets:
        write_selected(sorted((study / "runs" / "xgboost" / ds.name).glob("split*.parquet")),
                       study / "selected" / "xgboost" / f"{ds.name}.parquet")
    # not where the folder's settings put it (``data`` beside it): named with ``data=``
    data = _data_folder(tmp_path / "elsewhere", {"adult": [75, 25], "phoneme": [70, 30]})
    assert class_balance(data, ["adult", "segment"])["dataset"].tolist() == ["adult"]
    regenerate(study, study, Redraw(large_rows=10_000), jobs=1, draw=False)
    drawn = read_summary(study / "summary")
    table, fit = drawn["heterogeneity"], drawn["heterogeneity_fit"]
    assert list(table.columns) == HETEROGENEITY_COLUMNS
    assert len(table) == 2 * len(datasets) and table["minority_share"].isna().all()
    assert {"model", "predictor", "spearman", "ci_low", "ci_high", "n"} <= set(fit.columns)
    assert set(fit["model"]) == {"xgboost", "all"}
    assert drawn["meta"]["validation_rule"]["n"] >= 0
    assert "validation_tells_refining_gain" in set(drawn["claims"]["claim"])
    regenerate(study, study, Redraw(large_rows=10_000), jobs=1, draw=False, data=data)
    with_data = read_summary(study / "summary")["heterogeneity"].set_index("dataset")
    assert with_data.loc["adult", "minority_share"].tolist() == [0.25, 0.25]
    assert with_data.loc["segment", "minority_share"].isna().all()
    copy = tmp_path / "copy"
    publish(study, copy)
    shutil.rmtree(data)  # nothing left to read the balance from but the copy's summary
    regenerate(copy, copy, jobs=1, draw=False)
    redrawn = read_summary(copy / "summary")["heterogeneity"].set_index("dataset")
    pd.testing.assert_series_equal(redrawn["minority_share"], with_data["minority_share"])
    pd.testing.assert_series_equal(redrawn["learnability"], with_data["learnability"])
