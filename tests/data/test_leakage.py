"""The data stage's leakage check: one column that predicts the label almost alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tabbench.data.datasets_page import render
from tabbench.data.leakage import check_leakage

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


def test_the_datasets_page_is_generated_from_the_manifests():
    page = (ROOT / "docs" / "datasets.md").read_text()
    assert page == render(ROOT / "data" / "demo"), (
        "docs/datasets.md is stale: python -m tabbench.data.datasets_page > docs/datasets.md")
