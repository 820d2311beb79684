"""summary/heterogeneity_fit.parquet: Spearman's correlation of each predictor with the test gain
and its bootstrap interval over datasets, on synthetic tables whose answer is known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from tabbench.summary.heterogeneity import PREDICTORS
from tabbench.summary.heterogeneity_fit import (
    ALL,
    FIT_COLUMNS,
    bootstrap_spearman,
    fit_table,
    spearman_rows,
)


def test_spearman_rows_is_scipys_with_ties_and_absent_values():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, size=(4, 30)).astype(float)  # many ties
    y = x + rng.normal(size=(4, 30))
    x[1, :7] = np.nan
    y[2, 3] = np.inf
    got = spearman_rows(x, y)
    for i in range(4):
        ok = np.isfinite(x[i]) & np.isfinite(y[i])
        assert got[i] == pytest.approx(spearmanr(x[i, ok], y[i, ok]).statistic)
    assert np.isnan(spearman_rows([[1.0, 1.0, 1.0]], [[1.0, 2.0, 3.0]])[0])  # no spread
    assert np.isnan(spearman_rows([[1.0, 2.0]], [[1.0, 2.0]])[0])  # too few pairs


def test_the_bootstrap_resamples_datasets_and_is_seeded():
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(12), 4)
    x = rng.normal(size=48)
    monotone = bootstrap_spearman(x, 2 * x + 1, groups)
    assert monotone == (pytest.approx(1.0), pytest.approx(1.0), pytest.approx(1.0))
    noise = bootstrap_spearman(x, rng.normal(size=48), groups)
    assert noise[1] < noise[0] < noise[2] and noise[1] < 0 < noise[2]
    y = x + rng.normal(size=48)
    assert bootstrap_spearman(x, y, groups, seed=5) == bootstrap_spearman(x, y, groups, seed=5)
    assert bootstrap_spearman(x, y, groups, seed=5) != bootstrap_spearman(x, y, groups, seed=6)


def test_a_dataset_repeated_in_every_row_does_not_narrow_the_interval():
    """Four rows of one dataset are one piece of evidence: the interval of the same points
    counted as four independent datasets each is narrower."""
    rng = np.random.default_rng(1)
    x = np.repeat(rng.normal(size=10), 4) + rng.normal(scale=0.01, size=40)
    y = np.repeat(rng.normal(size=10), 4) * 0.5 + x
    _, lo_d, hi_d = bootstrap_spearman(x, y, np.repeat(np.arange(10), 4))
    _, lo_r, hi_r = bootstrap_spearman(x, y, np.arange(40))
    assert hi_d - lo_d > hi_r - lo_r


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    rows = []
    for model in ("xgboost", "mlp"):
        for regime in ("default", "tuned"):
            for d in range(8):
                gain = -float(d)  # larger datasets index, larger gain
                rows.append({"model": model, "regime": regime, "dataset": f"d{d}",
                             "large": d < 6, "test_gain": gain,
                             **{p: rng.normal() for p in PREDICTORS},
                             "val_gain": gain * 0.3 - rng.uniform(0, 0.01),
                             "n_classes": 2})
    return pd.DataFrame(rows)


def test_the_fit_is_per_model_then_pooled_over_the_large_datasets():
    fit = fit_table(_table(), n_boot=200)
    assert list(fit.columns) == FIT_COLUMNS
    assert list(dict.fromkeys(fit["model"])) == ["xgboost", "mlp", ALL]
    assert set(fit["predictor"]) == set(PREDICTORS)
    val = fit[fit["predictor"] == "val_gain"].set_index("model")
    assert val.loc["xgboost", "n"] == 12 and val.loc[ALL, "n"] == 24  # 6 large datasets each
    assert (val["n_datasets"] == 6).all()
    assert val.loc[ALL, "spearman"] > 0.9 and val.loc[ALL, "ci_low"] > 0.5
    constant = fit[fit["predictor"] == "n_classes"]
    assert constant["spearman"].isna().all() and (constant["n"] > 0).all()
    again = fit_table(_table(), n_boot=200)
    pd.testing.assert_frame_equal(fit, again)
