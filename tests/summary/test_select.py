"""Selection rules (docs/design.md §7) on hand-made per-epoch tables with known answers.

Every test column is filled with ``1000·config + epoch`` so the selected (config, epoch) can be
read off the reported test metric: this checks that the test values come from the selected row,
not just that the right indices were computed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from fixtures.synthetic import SyntheticDataset, synthetic_run

from tabbench.metrics.registry import stopping_metric_ids
from tabbench.models.runs_schema import record_columns, val_column
from tabbench.summary.select import SELECTED_COLUMNS, select_files, select_table, write_selected
from tabbench.summary.stopping_rules import best_rows

INF = np.inf
NAN = np.nan


def records(curves: dict[int, list[float]], metric: str = "logloss", split: int = 0,
            other: float = 5.0) -> pd.DataFrame:
    """Records of one split: ``curves[config]`` = val_<metric> per epoch; every other stopping
    metric is ``other`` (constant: its first epoch wins)."""
    rows = []
    for config, vals in curves.items():
        for e, v in enumerate(vals, start=1):
            row = {c: 0.0 for c in record_columns()}
            row.update(model="mlp", dataset="toy", split=split, config=config, epoch=e,
                       params=f'{{"c": {config}}}', fit_seconds=float(e), beta=1.0,
                       n_train=640, n_val=160, n_test=200, n_classes=2)
            for m in stopping_metric_ids():
                row[val_column(m)] = other
            row[val_column(metric)] = v
            for c in record_columns():
                if c.startswith("test_"):
                    row[c] = 1000.0 * config + e + (0.5 if c.endswith("_ts") else 0.0)
            rows.append(row)
    df = pd.DataFrame(rows)[record_columns()]
    for c in ("split", "config", "epoch", "n_train", "n_val", "n_test", "n_classes"):
        df[c] = df[c].astype(np.int64)
    return df


def pick(sel: pd.DataFrame, regime: str, stopping: str = "logloss", split: int = 0,
         rule: str = "best", patience: int | None = None) -> pd.Series:
    """The one selected row of (regime, stopping, split) under ``rule`` (the paper's ``best``
    by default) with parameter ``patience``."""
    same = sel["patience"].isna() if patience is None else sel["patience"] == patience
    row = sel[(sel["regime"] == regime) & (sel["stopping"] == stopping) & (sel["split"] == split)
              & (sel["rule"] == rule) & same.fillna(False).astype(bool)]
    assert len(row) == 1, row
    return row.iloc[0]


def test_first_epoch_wins_ties_and_test_values_come_from_that_row():
    sel = select_table(records({0: [3.0, 1.0, 1.0, 2.0], 1: [2.0, 2.0]}))
    r = pick(sel, "default")
    assert (r["config"], r["epoch"], r["val"]) == (0, 2, 1.0)
    assert r["test_logloss"] == 2.0 and r["test_logloss_ts"] == 2.5
    assert r["fit_seconds"] == 2.0 and r["params"] == '{"c": 0}'


def test_last_epoch_wins_ties_when_asked_configs_still_the_lowest_id():
    """pytabkit's rule (use_last_best_epoch): the last of tied epochs, in every block."""
    recs = records({0: [3.0, 1.0, 1.0, 2.0, 1.0, NAN], 1: [2.0, 0.5, 0.5], 2: [0.5, 0.7]})
    last = select_table(recs, epoch_ties="last")
    assert (pick(last, "default")["epoch"], pick(last, "default")["val"]) == (5, 1.0)
    # configs 1 and 2 tie at 0.5: the lowest id, at its last tied epoch
    assert (pick(last, "tuned")["config"], pick(last, "tuned")["epoch"]) == (1, 3)
    first = select_table(recs)
    assert pick(first, "default")["epoch"] == 2 and pick(first, "tuned")["epoch"] == 2
    with pytest.raises(ValueError, match="epoch ties"):
        select_table(recs, epoch_ties="middle")


def test_non_finite_epochs_are_never_selected():
    sel = select_table(records({0: [NAN, 2.0, -INF, 1.5, INF, NAN]}))
    r = pick(sel, "default")
    assert (r["epoch"], r["val"]) == (4, 1.5)


def test_all_nan_config_is_skipped_and_counted():
    sel = select_table(records({0: [1.0], 1: [NAN, NAN, NAN], 2: [0.9, 0.7], 3: [NAN, 0.8]}))
    r = pick(sel, "tuned")
    assert (r["config"], r["epoch"], r["val"]) == (2, 2, 0.7)
    assert (r["n_candidates"], r["n_skipped"]) == (2, 1)
    assert r["test_error_ts"] == 2002.5


def test_tuned_ties_go_to_the_lowest_config_and_never_to_config_0():
    # config 0 is best overall but is not a tuned candidate; configs 2 and 3 tie at 0.5
    sel = select_table(records({0: [0.1], 3: [0.9, 0.5], 2: [0.5, 0.6], 1: [0.7]}))
    assert (pick(sel, "tuned")["config"], pick(sel, "tuned")["epoch"]) == (2, 1)
    assert (pick(sel, "default")["config"], pick(sel, "default")["val"]) == (0, 0.1)


def test_default_is_config_0_even_when_worse_and_missing_when_all_nan():
    sel = select_table(records({0: [9.0, 8.0], 1: [1.0]}))
    assert (pick(sel, "default")["config"], pick(sel, "default")["epoch"]) == (0, 2)
    sel = select_table(records({0: [NAN, NAN], 1: [1.0]}))
    assert sel[(sel["regime"] == "default") & (sel["stopping"] == "logloss")].empty
    assert pick(sel, "tuned")["config"] == 1


def test_no_tuned_rows_without_random_configs():
    sel = select_table(records({0: [1.0, 0.5]}))
    assert set(sel["regime"]) == {"default"}
    assert len(best_rows(sel)) == len(stopping_metric_ids())


def test_each_stopping_metric_uses_its_own_column():
    df = records({0: [3.0, 2.0, 1.0]}, metric="logloss", other=5.0)
    df[val_column("ts_ref")] = [1.0, 2.0, 3.0]
    sel = select_table(df)
    assert pick(sel, "default", "logloss")["epoch"] == 3
    assert pick(sel, "default", "ts_ref")["epoch"] == 1
    assert pick(sel, "default", "brier")["epoch"] == 1  # constant column: first epoch


def test_row_order_does_not_matter_and_splits_stay_apart():
    a = records({0: [2.0, 1.0], 1: [0.5, 0.4], 2: [0.4, 0.6]}, split=0)
    b = records({0: [1.0, 2.0], 1: [0.3, 0.9], 2: [0.8, 0.2]}, split=1)
    both = pd.concat([a, b], ignore_index=True)
    shuffled = both.sample(frac=1.0, random_state=0)
    s1, s2 = select_table(both), select_table(shuffled)
    pd.testing.assert_frame_equal(s1, s2)
    assert (pick(s1, "tuned", split=0)["config"], pick(s1, "tuned", split=0)["epoch"]) == (1, 2)
    assert pick(s1, "tuned", split=0)["val"] == pytest.approx(0.4)  # tie 0.4: config 1 < 2
    assert (pick(s1, "tuned", split=1)["config"], pick(s1, "tuned", split=1)["epoch"]) == (2, 2)
    assert list(s1.columns) == list(SELECTED_COLUMNS)
    assert (s1["n_rows"] == 1000).all()


def test_duplicate_rows_are_rejected():
    df = records({0: [1.0, 2.0]})
    with pytest.raises(ValueError, match="more than once"):
        select_table(pd.concat([df, df.iloc[[0]]]).iloc[::-1])


def _naive(df: pd.DataFrame) -> pd.DataFrame:
    """Loop-based reference implementation of docs/design.md §7."""
    out = []
    for split, sdf in df.groupby("split"):
        for m in stopping_metric_ids():
            best = {}
            for config, g in sdf.groupby("config"):
                g = g.sort_values("epoch")
                v = g[val_column(m)].to_numpy()
                ok = np.isfinite(v)
                if not ok.any():
                    continue
                i = int(np.flatnonzero(ok & (v == v[ok].min()))[0])
                best[config] = (v[i], int(g["epoch"].iloc[i]))
            for regime in ("default", "tuned"):
                cands = {c: b for c, b in best.items() if (c == 0) == (regime == "default")}
                if not cands:
                    continue
                c = min(sorted(cands), key=lambda k: cands[k][0])
                out.append((split, regime, m, c, cands[c][1]))
    return pd.DataFrame(out, columns=["split", "regime", "stopping", "config", "epoch"])


def test_matches_a_loop_reference_on_synthetic_runs_with_nans_and_ties():
    ds = SyntheticDataset("toy", 1_200, 3)
    df = pd.concat([synthetic_run("mlp", ds, s, n_configs=12, epochs=(30, 30),
                                  diverge_rate=0.3, seed=7) for s in range(2)])
    assert df[val_column("logloss")].isna().any()
    assert df.duplicated(["split", "config", val_column("error")]).any()  # accuracy ties
    got = best_rows(select_table(df))[["split", "regime", "stopping", "config", "epoch"]]
    want = _naive(df)
    key = ["split", "regime", "stopping"]
    pd.testing.assert_frame_equal(got.sort_values(key, ignore_index=True),
                                  want.sort_values(key, ignore_index=True), check_dtype=False)


def test_select_files_reads_one_file_per_split(tmp_path):
    paths = []
    for s in range(2):
        p = tmp_path / f"split{s}.parquet"
        records({0: [2.0, 1.0 + s], 1: [0.5]}, split=s).to_parquet(p, index=False)
        paths.append(p)
    out = tmp_path / "sel" / "x.parquet"
    sel = write_selected(paths, out)
    assert out.exists()
    pd.testing.assert_frame_equal(pd.read_parquet(out), sel)
    assert sorted(sel["split"].unique()) == [0, 1]
    with pytest.raises(ValueError, match="several files"):
        select_files([paths[0], paths[0]])
    other = tmp_path / "other.parquet"
    records({0: [1.0]}).assign(dataset="other").to_parquet(other, index=False)
    with pytest.raises(ValueError, match="several"):
        select_files([paths[0], other])


def test_cli_select_writes_the_selection(tmp_path):
    from tabbench import cli

    run = tmp_path / "split0.parquet"
    records({0: [2.0, 1.0], 1: [0.5, 0.7]}).to_parquet(run, index=False)
    out = tmp_path / "selected" / "mlp" / "toy.parquet"
    assert cli.main(["select", "--runs", str(run), "--out", str(out)]) == 0
    sel = pd.read_parquet(out)
    assert (pick(sel, "tuned")["config"], pick(sel, "default")["epoch"]) == (1, 2)
    last = tmp_path / "last.parquet"
    records({0: [2.0, 1.0, 1.0], 1: [0.5, 0.7]}).to_parquet(run, index=False)
    assert cli.main(["select", "--runs", str(run), "--out", str(last), "--epoch-ties",
                     "last"]) == 0
    assert pick(pd.read_parquet(last), "default")["epoch"] == 3


def test_cli_select_takes_the_models_patiences(tmp_path):
    from tabbench import cli

    run = tmp_path / "split0.parquet"
    records({0: [2.0, 1.0, 3.0, 3.0, 0.5], 1: [0.5, 0.7]}).to_parquet(run, index=False)
    out = tmp_path / "selected.parquet"
    assert cli.main(["select", "--runs", str(run), "--out", str(out), "--patience", "2"]) == 0
    sel = pd.read_parquet(out)
    assert set(sel["rule"]) == {"best", "patience"} and set(sel["patience"].dropna()) == {2}
    r = pick(sel, "default", rule="patience", patience=2)
    assert (r["epoch"], r["stop_epoch"]) == (2, 4)
    assert cli.main(["select", "--runs", str(run), "--out", str(out), "--patience"]) == 0
    assert set(pd.read_parquet(out)["rule"]) == {"best"}  # none given: the whole run only
    assert cli.main(["select", "--runs", str(run), "--out", str(out)]) == 0
    defaults = pd.read_parquet(out)  # the records are an MLP's: its default patiences
    assert set(defaults["patience"].dropna()) == {8, 16, 32}


def test_every_row_keeps_the_validation_ts_refinement_of_its_own_choice():
    """Logloss's row carries val_ts_ref at the (config, epoch) logloss chose, not at TS-Ref.'s:
    how much refining gains on validation is then known from the selected rows alone."""
    df = records({0: [3.0, 2.0, 1.0, 1.5], 1: [0.5, 0.9]}, metric="logloss")
    df[val_column("ts_ref")] = [0.9, 0.7, 0.8, 0.6, 0.95, 0.85]
    sel = select_table(df)
    ll_default, ts_default = pick(sel, "default", "logloss"), pick(sel, "default", "ts_ref")
    assert (ll_default["epoch"], ll_default["val_ts_ref"]) == (3, 0.8)
    assert (ts_default["epoch"], ts_default["val_ts_ref"]) == (4, 0.6)
    assert ts_default["val_ts_ref"] == ts_default["val"]
    ll_tuned = pick(sel, "tuned", "logloss")
    assert (ll_tuned["config"], ll_tuned["epoch"], ll_tuned["val_ts_ref"]) == (1, 1, 0.95)
    assert ll_tuned["val_ts_ref"] >= pick(sel, "tuned", "ts_ref")["val"]


def test_a_cached_selection_without_the_later_columns_is_selected_again_where_runs_are(
        tmp_path):
    """A selected file without val_ts_ref is selected again from its runs (for
    the summary, and for a published copy); without runs it is used as it is."""
    import os
    import shutil

    from fixtures.synthetic import write_synthetic_results

    from tabbench.report.redraw import collect_selected
    from tabbench.summary.select import lacks_columns

    results = tmp_path / "results"
    runs = write_synthetic_results(results, [SyntheticDataset("toy", 1_200, 2)], ["xgboost"],
                                   n_splits=1, n_configs=2, epochs={"xgboost": (6, 6)})
    selected = results / "selected" / "xgboost" / "toy.parquet"
    old = write_selected(runs, selected).drop(columns="val_ts_ref")
    old.to_parquet(selected, index=False)
    later = runs[0].stat().st_mtime + 10
    os.utime(selected, (later, later))  # fresh: newer than its runs
    assert lacks_columns(old) and not lacks_columns(select_files(runs))
    sel, counts = collect_selected(results, jobs=1)
    assert (counts["reused"], counts["recomputed"]) == (0, 1)
    assert sel["val_ts_ref"].notna().all()
    shutil.rmtree(results / "runs")  # a published copy: its files as they are
    sel, counts = collect_selected(results, jobs=1)
    assert counts["reused"] == 1 and "val_ts_ref" not in sel
