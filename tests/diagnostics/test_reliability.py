"""Reliability bins: the ECE of one split's bins is tabbench.metrics' ECE; hand-computed bins;
pooling gives every dataset the same weight."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabbench.diagnostics.reliability import N_BINS, bin_sums, ece_from_sums, pool
from tabbench.metrics import softmax
from tabbench.metrics.losses import ece_proba


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
