"""Winner's curse and regret from the records: hand-computed optimism, regret and subset
curves, the exact subset average against seeded random draws, and the selection against
tabbench.summary.select."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from fixtures.synthetic import SyntheticDataset, synthetic_run

from tabbench.diagnostics.selection_bias import (
    REGRET_TARGETS,
    expected_over_subsets,
    needed_columns,
    pairs,
    split_selection_bias,
    winner_probabilities,
)
from tabbench.summary.select import select_table


def hand_records() -> dict[str, np.ndarray]:
    """Config 0 (default) and tuned configs 1-3, 3 epochs each; every column = a formula of
    (config, epoch) except the ones the test sets by hand."""
    config = np.repeat([0, 1, 2, 3], 3)
    epoch = np.tile([1, 2, 3], 4)
    cols = {c: np.full(12, 5.0) for c in needed_columns()}
    cols.update(split=np.zeros(12, dtype=np.int64), config=config, epoch=epoch)
    #                       c0              c1              c2              c3
    cols["val_logloss"] = np.array([.9, .7, .8, .6, .5, .55, .4, .45, .5, .6, .4, .7])
    cols["test_logloss"] = np.array([.95, .8, .85, .7, .62, .6, .7, .65, .6, .66, .5, .8])
    cols["test_logloss_ts"] = np.array([.9, .75, .8, .65, .6, .58, .55, .5, .52, .6, .45, .7])
    return cols


def test_optimism_and_regret_hand_computed():
    sel, _ = split_selection_bias(hand_records(), stoppings=["logloss"])
    sel = sel.set_index("regime")
    # default: config 0, best val 0.7 at epoch 2, test 0.8
    d = sel.loc["default"]
    assert (d["config"], d["epoch"]) == (0, 2)
    assert d["val"] == 0.7 and d["test"] == 0.8
    assert d["optimism"] == pytest.approx(0.1)
    # tuned: best per config 0.5 (c1 e2), 0.4 (c2 e1), 0.4 (c3 e2): tie -> lowest id, c2 e1
    t = sel.loc["tuned"]
    assert (t["config"], t["epoch"]) == (2, 1)
    assert t["optimism"] == pytest.approx(0.7 - 0.4)
    # regret in test logloss+TS: selection 0.55 at (2, 1); oracle over tuned rows 0.45 (c3 e2)
    assert t["test_logloss_ts"] == 0.55 and t["oracle_logloss_ts"] == 0.45
    assert t["regret_logloss_ts"] == pytest.approx(0.10)
    assert t["rel_regret_logloss_ts"] == pytest.approx(100 * 0.10 / 0.45)
    # default: selection 0.75 at (0, 2), oracle over config 0 = 0.75 -> no regret
    assert d["regret_logloss_ts"] == 0.0
    # regret in raw test logloss: tuned oracle 0.5 (c3 e2), selection 0.7
    assert t["regret_logloss"] == pytest.approx(0.2)


def test_subset_curve_hand_computed():
    _, curve = split_selection_bias(hand_records(), sizes=(1, 2, 4), stoppings=["logloss"])
    curve = curve.set_index("k")
    # tuned configs 1, 2, 3 early-stopped: (val, test) = (0.5, 0.62), (0.4, 0.7), (0.4, 0.5)
    # k = 1: each config alone
    assert curve.loc[1, "val"] == pytest.approx((0.5 + 0.4 + 0.4) / 3)
    assert curve.loc[1, "optimism"] == pytest.approx((0.12 + 0.3 + 0.1) / 3)
    # k = 2: {1,2} -> 2, {1,3} -> 3, {2,3} -> 2 (tie, lower id)
    assert curve.loc[2, "optimism"] == pytest.approx((0.3 + 0.1 + 0.3) / 3)
    assert curve.loc[2, "test"] == pytest.approx((0.7 + 0.5 + 0.7) / 3)
    # k = 4 exceeds the 3 configs trained: no point there; the curve ends at k = 3, the full
    # selection (config 2)
    assert sorted(curve.index) == [1, 2, 3]
    assert curve.loc[3, "k_used"] == 3 and curve.loc[3, "n_configs"] == 3
    assert curve.loc[3, "optimism"] == pytest.approx(0.3)


def test_winner_probabilities_hand_computed():
    np.testing.assert_allclose(winner_probabilities(3, 2), [2 / 3, 1 / 3, 0])
    np.testing.assert_allclose(winner_probabilities(4, 1), [0.25] * 4)
    np.testing.assert_allclose(winner_probabilities(5, 5), [1, 0, 0, 0, 0])
    for n, k in ((30, 8), (7, 3)):
        assert winner_probabilities(n, k).sum() == pytest.approx(1.0)


def test_expected_over_subsets_with_a_config_that_never_wins():
    best = np.array([np.nan, 1.0, 2.0])
    values = {"x": np.array([10.0, 20.0, 30.0])}
    # k = 1: {0} selects nothing, {1} -> 20, {2} -> 30
    assert expected_over_subsets(best, values, 1)["x"] == pytest.approx(25.0)
    # k = 2: {0,1} -> 20, {0,2} -> 30, {1,2} -> 20
    got = expected_over_subsets(best, values, 2)
    assert got["x"] == pytest.approx(70 / 3) and got["p_selection"] == pytest.approx(1.0)
    assert expected_over_subsets(best, values, 1)["p_selection"] == pytest.approx(2 / 3)


def test_exact_average_equals_seeded_random_draws():
    rng = np.random.default_rng(0)
    n, k, draws = 30, 8, 40_000
    best = np.round(rng.normal(size=n), 1)  # rounded: ties occur
    best[[3, 17]] = np.nan
    x = rng.normal(size=n)
    exact = expected_over_subsets(best, {"x": x}, k)["x"]
    subsets = np.sort(np.argsort(rng.random((draws, n)), axis=1)[:, :k], axis=1)
    b = np.where(np.isnan(best), np.inf, best)[subsets]
    winner = subsets[np.arange(draws), np.argmin(b, axis=1)]  # first minimum = lowest id
    mc = x[winner].mean()
    se = x[winner].std() / np.sqrt(draws)
    assert abs(mc - exact) < 4 * se


def test_the_tie_rule_is_selects():
    """epoch_ties="last" keeps the last tied epoch here too: the study's diagnostics must
    choose what its selected files and replays chose."""
    cols = hand_records()
    cols["val_logloss"] = np.array([.9, .7, .7, .6, .5, .5, .4, .45, .5, .6, .4, .4])
    first = split_selection_bias(cols, stoppings=["logloss"])[0].set_index("regime")
    last = split_selection_bias(cols, stoppings=["logloss"], epoch_ties="last")[0]
    last = last.set_index("regime")
    assert (first.loc["default", "epoch"], last.loc["default", "epoch"]) == (2, 3)
    # configs 2 and 3 tie at 0.4: the lowest id, config 2, which reaches it once
    assert tuple(first.loc["tuned", ["config", "epoch"]]) == (2, 1)
    assert tuple(last.loc["tuned", ["config", "epoch"]]) == (2, 1)
    cols["val_logloss"][6:9] = [.4, .6, .4]
    last = split_selection_bias(cols, stoppings=["logloss"], epoch_ties="last")[0]
    assert tuple(last.set_index("regime").loc["tuned", ["config", "epoch"]]) == (2, 3)


@pytest.mark.parametrize("ties", ["first", "last"])
@pytest.mark.parametrize("model", ["xgboost", "mlp"])
def test_selection_equals_tabbench_select(model, ties):
    ds = SyntheticDataset("syn", 3_000, 3)
    rec = synthetic_run(model, ds, 1, n_configs=6, epochs=(20, 30), diverge_rate=0.3)
    cols = {c: rec[c].to_numpy() for c in needed_columns()}
    sel, curve = split_selection_bias(cols, epoch_ties=ties)
    want = select_table(rec, epoch_ties=ties, patience=[])  # the diagnostics judge "best"
    merged = want.merge(sel, on=["regime", "stopping"], suffixes=("", "_bias"))
    assert len(merged) == len(want) == len(sel)
    assert (merged["config"] == merged["config_bias"]).all()
    assert (merged["epoch"] == merged["epoch_bias"]).all()
    np.testing.assert_array_equal(merged["val"], merged["val_bias"])
    for row in merged.itertuples():
        assert row.test == getattr(row, pairs()[row.stopping].test)
    # the largest subset is the full search (6 configs; no point at 8, 16, 30): its optimism is
    # the selection's
    assert curve["k"].max() == 6 and set(curve["k"]) == {1, 2, 4, 6}
    full = curve[curve["k"] == 6].set_index("stopping")["optimism"]
    tuned = sel[sel["regime"] == "tuned"].set_index("stopping")["optimism"]
    pd.testing.assert_series_equal(full.sort_index(), tuned.sort_index(), check_names=False)


def test_needed_columns_are_few():
    cols = needed_columns()
    assert "params" not in cols and "fit_seconds" not in cols
    assert {f"test_{t}" for t in REGRET_TARGETS} <= set(cols)
