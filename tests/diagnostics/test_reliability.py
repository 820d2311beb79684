"""Reliability bins: the ECE of one split's bins is tabbench.metrics' ECE; hand-computed bins;
pooling gives every dataset the same weight."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from tabbench.diagnostics.reliability import (
    N_BINS,
    bin_sums,
    clopper_pearson,
    ece_from_sums,
    pool,
)
from tabbench.metrics import softmax
from tabbench.metrics.losses import ece_proba, smece_proba


def test_bins_of_one_split_give_the_metrics_ece():
    rng = np.random.default_rng(0)
    p = softmax(rng.normal(size=(1000, 4)) * 2)
    y = rng.integers(0, 4, 1000)
    sums = bin_sums(p, y)
    assert sums.shape == (N_BINS, 3) and sums[:, 0].sum() == 1000
    assert ece_from_sums(sums) == pytest.approx(ece_proba(p, y), rel=1e-12)


def test_bins_hand_computed():
    # top-label confidences 0.95, 0.96 (bin 14) and 0.55 (bin 8); correct: yes, no, yes
    p = np.array([[0.95, 0.05], [0.04, 0.96], [0.55, 0.45]])
    y = np.array([0, 0, 0])
    sums = bin_sums(p, y)
    np.testing.assert_allclose(sums[14], [2, 1.91, 1])
    np.testing.assert_allclose(sums[8], [1, 0.55, 1])
    assert sums[[b for b in range(N_BINS) if b not in (8, 14)]].sum() == 0
    assert ece_from_sums(sums) == pytest.approx((0.91 + 0.45) / 3)


def test_pooling_weighs_datasets_equally():
    def rows(dataset, split, n, conf, correct):
        return {"model": "m", "dataset": dataset, "split": split, "bin": 14, "n": n,
                "conf_sum": conf * n, "correct_sum": correct}

    # dataset A: one split, 2 samples at conf 0.95, both correct (accuracy 1)
    # dataset B: two splits of 10 samples at conf 0.95 with 5 and 3 correct (accuracy 0.4)
    bins = pd.DataFrame([rows("A", 0, 2, 0.95, 2), rows("B", 0, 10, 0.95, 5),
                         rows("B", 1, 10, 0.95, 3)])
    diag, ece = pool(bins, ["model"])
    (d,) = diag.itertuples()
    assert d.accuracy == pytest.approx((1.0 + 0.4) / 2)  # not (2 + 8) / 22
    assert d.confidence == pytest.approx(0.95) and d.weight == pytest.approx(1.0)
    assert d.n == 22 and d.n_datasets == 2
    assert ece["ece_pooled"].item() == pytest.approx(abs(0.7 - 0.95))
    assert ece["n_datasets"].item() == 2


def test_clopper_pearson_is_scipys_exact_interval():
    for k, n in [(0, 10), (3, 10), (10, 10), (1, 1), (57, 200)]:
        lo, hi = clopper_pearson(np.array([k]), np.array([n]))
        ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        assert lo[0] == pytest.approx(ref.low, abs=1e-12)
        assert hi[0] == pytest.approx(ref.high, abs=1e-12)
    assert np.isnan(clopper_pearson(np.array([0.0]), np.array([0.0]))[0][0])


def test_bands_use_the_effective_sample_size():
    """One split: n_eff = n and the exact interval of its counts; pooling two datasets of
    very different sizes with equal weight leaves fewer effective samples than raw ones."""
    rows = [{"model": "m", "dataset": "a", "split": 0, "bin": 14, "n": 40, "conf_sum": 38.0,
             "correct_sum": 30.0},
            {"model": "m", "dataset": "b", "split": 0, "bin": 14, "n": 400, "conf_sum": 380.0,
             "correct_sum": 360.0}]
    one, _ = pool(pd.DataFrame(rows[:1]), ["model"])
    r = one.iloc[0]
    assert r.n_eff == pytest.approx(40)
    ref = binomtest(30, 40).proportion_ci(method="exact")
    assert (r.acc_lo, r.acc_hi) == (pytest.approx(ref.low), pytest.approx(ref.high))
    both, _ = pool(pd.DataFrame(rows), ["model"])
    r = both.iloc[0]
    # weights 1/40 and 1/400 per sample: n_eff = (Σw)²/Σw² = 2² / (40/40² + 400/400²)
    assert r.n == 440 and r.n_eff == pytest.approx(4 / (1 / 40 + 1 / 400), rel=1e-12)
    assert r.n_eff < 440 and r.acc_lo < r.accuracy < r.acc_hi


def test_smooth_ece_is_small_when_calibrated_and_the_gap_when_not():
    rng = np.random.default_rng(0)
    n = 20_000
    conf = rng.uniform(0.5, 1.0, n)
    correct = rng.uniform(size=n) < conf  # calibrated top-label confidences
    pred = rng.integers(0, 2, n)
    y = np.where(correct, pred, 1 - pred)
    p = np.where(pred[:, None] == np.arange(2), conf[:, None], 1 - conf[:, None])
    assert smece_proba(p, y) < 0.01
    # constant confidence 0.9 with accuracy 0.7: the gap is 0.2
    y_bad = np.where(rng.uniform(size=n) < 0.7, 1, 0)
    p_bad = np.tile([0.1, 0.9], (n, 1))
    assert smece_proba(p_bad, y_bad) == pytest.approx(0.2, abs=0.01)
