"""The data stage's leakage check: one column that predicts the label almost alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tabbench.data.datasets_page import render
from tabbench.data.leakage import (
    MIN_ACCURACY,
    NEAR_MISS_ACCURACY,
    check_leakage,
    value_codes,
    values_accuracy,
)

ROOT = Path(__file__).resolve().parents[2]


def _frame(n: int = 4000, k: int = 2, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n)
    return pd.DataFrame({"noise": rng.normal(size=n),
                         "weak": y + rng.normal(scale=3.0, size=n),
                         "colour": pd.Categorical(rng.choice(["a", "b"], size=n))}), y


def test_honest_columns_are_not_flagged():
    X, y = _frame()
    result = check_leakage(X, y, ["noise", "weak"], ["colour"])
    assert not result.flagged and result.status == "ok" and result.column == "weak"


def test_a_numerical_copy_of_a_multiclass_label_is_flagged():
    X, y = _frame(k=5)
    X["severity"] = y * 10.0 + 3  # K intervals name K classes
    result = check_leakage(X, y, ["noise", "weak", "severity"], ["colour"])
    assert result.flagged and result.column == "severity" and result.accuracy == 1.0
    assert "severity" in result.describe()


def test_a_categorical_copy_is_flagged_and_a_note_explains_it():
    X, y = _frame(k=3)
    X["outcome"] = pd.Categorical(np.array(["x", "y", "z"])[y])
    assert check_leakage(X, y, ["noise"], ["colour", "outcome"]).status == "flagged"
    assert check_leakage(X, y, ["noise"], ["colour", "outcome"], note="why").status \
        == "explained"


def test_an_id_column_is_not_flagged_since_it_is_scored_on_held_out_rows():
    X, y = _frame()
    X["row_id"] = pd.Categorical([f"r{i}" for i in range(len(y))])
    assert not check_leakage(X, y, ["noise"], ["row_id"]).flagged


def test_a_column_on_a_nearly_pure_dataset_is_flagged_only_if_it_removes_the_errors():
    rng = np.random.default_rng(1)
    y = (rng.uniform(size=20_000) < 0.004).astype(int)  # 99.6 % majority
    X = pd.DataFrame({"noise": rng.normal(size=len(y))})
    assert not check_leakage(X, y, ["noise"], []).flagged
    X["flag"] = y.astype(float)
    assert check_leakage(X, y, ["noise", "flag"], []).flagged


def test_a_label_that_is_the_parity_of_an_integer_code_is_flagged():
    """K intervals cannot name the parity of 40 codes (a threshold scores about 0.5-0.7), but
    the codes repeat: each value's majority class, learned on the fitted rows, is right on
    every held-out row."""
    rng = np.random.default_rng(2)
    code = rng.integers(0, 40, size=4000)
    y = code % 2
    X = pd.DataFrame({"code": code.astype(float), "noise": rng.normal(size=len(y))})
    result = check_leakage(X, y, ["code", "noise"], [])
    assert result.flagged and result.status == "flagged"
    assert (result.column, result.rule, result.accuracy) == ("code", "values", 1.0)
    assert "each of its values" in result.describe()


def test_an_honest_noisy_label_of_several_columns_is_neither_flagged_nor_a_near_miss():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({f"x{i}": rng.normal(size=6000) for i in range(4)})
    X["level"] = rng.integers(0, 5, size=6000).astype(float)
    logit = 2.0 * X["x0"] - 1.5 * X["x1"] + X["x2"] + 0.8 * X["level"] - 1.6
    y = (rng.uniform(size=6000) < 1 / (1 + np.exp(-logit))).astype(int)
    result = check_leakage(X, y, list(X.columns), [])
    assert result.status == "ok" and not result.flagged and not result.near_miss
    assert result.accuracy < 0.9


def test_an_all_distinct_numerical_id_is_not_flagged_by_its_values():
    """Each held-out row holds a value no fitted row holds: it predicts the majority class."""
    X, y = _frame()
    X["row_id"] = np.random.default_rng(4).permutation(len(y)).astype(float)
    result = check_leakage(X, y, ["row_id"], [])
    assert not result.flagged and not result.near_miss and result.accuracy < 0.6
    fit = np.arange(len(y)) % 2 == 0  # memorised on one half, scored on the other
    by_value = values_accuracy(value_codes(X["row_id"]), y, fit, fallback=1)
    assert by_value == np.mean(y[~fit] == 1)  # the majority guess's share, nothing more


def test_a_copy_of_the_label_with_one_percent_noise_is_a_near_miss():
    """1 % of the rows get a random class out of 3 (2/3 of them a wrong one): about 99.3 %
    held out, below the flagging threshold, above the near-miss one."""
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, size=20_000)
    copy = y.copy()
    noisy = rng.uniform(size=len(y)) < 0.01
    copy[noisy] = rng.integers(0, 3, size=int(noisy.sum()))
    X = pd.DataFrame({"copy": copy.astype(float), "noise": rng.normal(size=len(y))})
    result = check_leakage(X, y, ["copy", "noise"], [])
    assert NEAR_MISS_ACCURACY <= result.accuracy < MIN_ACCURACY, result
    assert not result.flagged and result.near_miss and result.status == "near-miss"
    assert result.to_json()["status"] == "near-miss" and result.column == "copy"


def test_a_column_no_better_than_the_majority_guess_is_no_near_miss():
    """On a 99.6 %-majority dataset every column scores >= 99 %: a near miss must remove the
    majority guess's errors as a flagged column does."""
    rng = np.random.default_rng(1)
    y = (rng.uniform(size=20_000) < 0.004).astype(int)
    X = pd.DataFrame({"noise": rng.normal(size=len(y))})
    result = check_leakage(X, y, ["noise"], [])
    assert result.accuracy >= NEAR_MISS_ACCURACY and result.status == "ok"


def test_the_datasets_page_is_generated_from_the_manifests():
    page = (ROOT / "docs" / "datasets.md").read_text()
    assert page == render(ROOT / "data" / "demo"), (
        "docs/datasets.md is stale: python -m tabbench.data.datasets_page > docs/datasets.md")
