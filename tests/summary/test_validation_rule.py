"""The validation rule ("if refining gains at most X % on validation, expect no test gain"):
its threshold, its leave-one-dataset-out judgement and its verdict, on tables whose answer is
written out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabbench.summary.claims import (
    CLAIM_COLUMNS,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    claims_markdown,
)
from tabbench.summary.validation_rule import (
    choose_threshold,
    judge_rule,
    leave_one_dataset_out,
    rule_cells,
    rule_claim_row,
)


def test_the_threshold_is_the_smallest_that_predicts_the_most():
    # |val gain| 0, 0.1, 0.5, 2, 3; no test gain on the first three
    v = np.array([0.0, -0.1, -0.5, -2.0, -3.0])
    assert choose_threshold(v, np.array([True, True, True, False, False])) == 0.5
    # X = 0.1 and X = 0.5 both get 4 of 5 right: the smaller wins
    assert choose_threshold(v, np.array([True, True, False, False, True])) == 0.1
    assert np.isnan(choose_threshold(np.array([]), np.array([], dtype=bool)))


def _table(cells: list[tuple[str, float, float]], large: bool = True) -> pd.DataFrame:
    return pd.DataFrame([{"model": "xgboost", "regime": "default", "dataset": d,
                          "val_gain": v, "test_gain": t, "large": large}
                         for d, v, t in cells])


def test_each_dataset_is_judged_with_the_threshold_chosen_without_it():
    """d4's own cell would move the threshold (alone it is "no gain" at |val gain| 4): left
    out, the others' threshold (0.2) calls it a gain, and it is a miss."""
    table = _table([("d0", 0.0, 0.1), ("d1", -0.2, -0.3), ("d2", -5.0, -8.0),
                    ("d3", -6.0, -3.0), ("d4", -4.0, 0.2)])
    judged = leave_one_dataset_out(rule_cells(table, rope=1.0)).set_index("dataset")
    assert judged.loc["d4", "threshold"] == 0.2
    assert not judged.loc["d4", "predicted_no_gain"] and not judged.loc["d4", "hit"]
    assert judged.loc[["d0", "d1", "d2", "d3"], "hit"].all()
    assert choose_threshold(table["val_gain"], table["test_gain"].abs() <= 1.0) == 4.0
    # ignoring validation: the outcome most common on the other four, "no gain" on a tie
    assert not judged.loc["d2", "base_hit"]  # three of the others had no gain; d2 had one
    assert judged.loc["d4", "base_hit"]  # two and two: "no gain", which d4 had


def _many(n: int, informative: bool) -> pd.DataFrame:
    """n datasets; a gain (−5 %) on every third. Informative: validation gains 3 % there and
    0.01 % elsewhere; not: validation gains alike everywhere, unrelated to the test."""
    rng = np.random.default_rng(0)
    cells = []
    for d in range(n):
        gain = d % 3 == 0
        v = (-3.0 if gain else -0.01) if informative else -float(rng.uniform(0, 3))
        cells.append((f"d{d}", v, -5.0 if gain else 0.1))
    return _table(cells)


def test_informative_validation_gains_reproduce_the_rule():
    r = judge_rule(_many(15, informative=True), rope=1.0)
    assert r.verdict == REPRODUCED
    assert r.hit_rate == 100.0 and r.base_rate < 100.0 and r.diff_low > 0
    assert 0.01 <= r.threshold < 3.0
    assert r.no_gain_predicted == r.no_gain_right == 10
    assert (r.n, r.n_datasets, r.n_unknown) == (15, 15, 0)


def test_uninformative_validation_gains_cannot_tell():
    r = judge_rule(_many(15, informative=False), rope=1.0)
    assert r.verdict == NOT_REPRODUCED and r.hit_rate <= r.base_rate


def test_too_few_datasets_or_unknown_validation_gains_are_inconclusive():
    assert judge_rule(_many(4, informative=True), rope=1.0).verdict == INCONCLUSIVE
    table = _many(15, informative=True)
    table.loc[0, "val_gain"] = np.nan  # a selected file without val_ts_ref
    r = judge_rule(table, rope=1.0)
    assert r.n_unknown == 1 and r.n == 14 and r.verdict == INCONCLUSIVE
    small = _many(15, informative=True).assign(large=False)
    assert judge_rule(small, rope=1.0).n == 0  # the headline's subset: large datasets


def test_the_rule_is_a_claims_row_that_renders():
    r = judge_rule(_many(15, informative=True), rope=1.0)
    row = rule_claim_row(r)
    assert set(row) == set(CLAIM_COLUMNS)
    assert f"at most {r.threshold:.2g} %" in row["statement"]
    text = claims_markdown(pd.DataFrame([row], columns=CLAIM_COLUMNS), 10_000, 1.0)
    assert "hit 100 % vs 67 %" in text and "**reproduced**" in text
    assert row["median"] == pytest.approx(100.0)


def test_the_page_text_says_the_rule_its_hit_rates_and_why_a_verdict_stays_open():
    from tabbench.summary.heterogeneity_fit import fit_table
    from tabbench.summary.heterogeneity_text import heterogeneity_markdown

    table = _many(15, informative=True).assign(n_classes=2)
    for predictor in ("val_gain_bound", "epoch_gap", "beta_logloss", "learnability",
                      "minority_share", "n_rows"):
        table[predictor] = table["val_gain"]
    r = judge_rule(table, rope=1.0)
    text = heterogeneity_markdown(fit_table(table, n_boot=50), r.as_meta())
    assert f"at most {r.threshold:.2g} % on validation" in text
    assert "right on 100 % of the cells" in text and "right on 67 %" in text
    assert "Verdict: **reproduced**" in text and "all (pooled)" in text
    table.loc[0, "val_gain"] = np.nan
    unknown = heterogeneity_markdown(fit_table(table, n_boot=50), judge_rule(table).as_meta())
    assert "unknown on 1 more large cells" in unknown and "**inconclusive**" in unknown
