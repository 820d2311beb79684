"""The recorder's fast path equals the single-epoch definitions, epoch by epoch."""

from __future__ import annotations

import numpy as np
import pytest

import tabbench.metrics as M
import tabbench.metrics.temperature as T
from tabbench.metrics.losses import auroc_scores, brier_proba, ece_proba, logloss_proba
from tabbench.metrics.registry import stopping_metric_ids
from tabbench.models.runs_schema import TEST_METRIC_IDS

RTOL = {"ts_ref_brier": 2e-6, "brier": 2e-6}  # float32 evaluation; others to 1e-6


def assert_epochwise_equal(batched: dict, z: np.ndarray, y: np.ndarray) -> None:
    for e in range(z.shape[0]):
        single = M.stopping_metrics(z[e], y)
        for m in stopping_metric_ids():
            expected = pytest.approx(single[m], rel=RTOL.get(m, 1e-6), abs=1e-9, nan_ok=True)
            assert batched[m][e] == expected, (m, e)
        assert batched["beta"][e] == pytest.approx(M.fit_temperature(z[e], y), rel=1e-6)


@pytest.mark.parametrize(
    "n, k, scale", [(300, 2, 1.0), (257, 3, 3.0), (400, 10, 0.5), (120, 2, 30.0)]
)
def test_stopping_metrics_batched_equals_single(make, n, k, scale):
    z, y = make(n, k, scale=scale, n_epochs=4, seed=n)
    out = M.stopping_metrics_batched(z, y)
    assert set(out) == set(stopping_metric_ids()) | {"beta"}
    assert all(v.shape == (4,) and v.dtype == np.float64 for v in out.values())
    assert_epochwise_equal(out, z, y)


def test_missing_classes_and_float32(make):
    z, y = make(300, 6, scale=2.0, n_epochs=3, seed=7)
    y = np.where(y == 4, 0, y)  # class 4 never occurs
    y = np.where(y == 5, 1, y)  # nor class 5
    out = M.stopping_metrics_batched(z, y)
    assert_epochwise_equal(out, z, y)
    out32 = M.stopping_metrics_batched(z.astype(np.float32), y)
    for m in stopping_metric_ids():
        np.testing.assert_allclose(out32[m], out[m], rtol=1e-5, err_msg=m)


def test_single_class_labels(make):
    z, _ = make(100, 3, n_epochs=2, seed=8)
    y = np.full(100, 2)
    out = M.stopping_metrics_batched(z, y)
    assert np.isnan(out["auroc"]).all()
    for m in set(stopping_metric_ids()) - {"auroc"}:
        assert np.isfinite(out[m]).all(), m
    assert_epochwise_equal(out, z, y)


def test_block_size_does_not_change_results(make, monkeypatch):
    z, y = make(200, 3, scale=2.0, n_epochs=9, seed=9)
    whole = M.stopping_metrics_batched(z, y)
    import tabbench.metrics.batched as B

    monkeypatch.setattr(B, "epoch_blocks", lambda shape: T.epoch_blocks(shape, 1000))
    pieces = M.stopping_metrics_batched(z, y)  # one epoch per block, warm starts between
    for m in whole:
        np.testing.assert_allclose(pieces[m], whole[m], rtol=2e-6, err_msg=m)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_epoch_gives_nan_not_exception(make, bad):
    z, y = make(150, 3, n_epochs=4, seed=10)
    clean = M.stopping_metrics_batched(z, y)
    z[2, 5, 1] = bad
    out = M.stopping_metrics_batched(z, y)
    for m in out:
        assert np.isnan(out[m][2]), m
        np.testing.assert_allclose(out[m][[0, 1, 3]], clean[m][[0, 1, 3]], rtol=1e-6)
    assert np.isnan(M.fit_temperature_batched(z, y)[2])
    test = M.metrics_on_test_batched(z, y, clean["beta"], 150)
    assert all(np.isnan(v[2]) and np.isfinite(v[[0, 1, 3]]).all() for v in test.values())
    z_all_bad = np.full_like(z, np.nan)
    assert all(np.isnan(v).all() for v in M.stopping_metrics_batched(z_all_bad, y).values())


@pytest.mark.parametrize("k", [2, 4, 26])  # 26: some classes absent from y_test
def test_test_metrics_batched_is_post_hoc_ts(make, k):
    z_val, y_val = make(300, k, scale=3.0, n_epochs=3, seed=11)
    z_test, y_test = make(200, k, scale=3.0, n_epochs=3, seed=12)
    beta = M.fit_temperature_batched(z_val, y_val)
    out = M.metrics_on_test_batched(z_test, y_test, beta, n_fit=300)
    assert set(out) == {f"{m}{s}" for m in TEST_METRIC_IDS for s in ("", "_ts")}
    for e in range(3):
        ts = M.TemperatureScaling().fit(z_val[e], y_val)
        q = ts.predict_proba(z_test[e])
        expected = {
            "logloss": M.logloss(z_test[e], y_test),
            "brier": M.brier(z_test[e], y_test),
            "error": M.error(z_test[e], y_test),
            "auroc": M.one_minus_auroc(z_test[e], y_test),
            "ece": M.ece(z_test[e], y_test),
            "logloss_ts": logloss_proba(q, y_test),
            "brier_ts": brier_proba(q, y_test),
            "error_ts": M.error(z_test[e], y_test),
            "auroc_ts": 1 - auroc_scores(np.log(q), y_test),
            "ece_ts": ece_proba(q, y_test),
        }
        for m, v in expected.items():
            assert out[m][e] == pytest.approx(v, rel=2e-6, abs=1e-9), (m, e)


def test_test_metrics_bad_beta(make):
    z, y = make(100, 3, n_epochs=3, seed=13)
    out = M.metrics_on_test_batched(z, y, np.array([1.0, np.nan, -1.0]), n_fit=50)
    assert np.isfinite(out["logloss"]).all()
    assert np.isfinite(out["logloss_ts"][0]) and np.isnan(out["logloss_ts"][1:]).all()
    with pytest.raises(ValueError, match="beta_E"):
        M.metrics_on_test_batched(z, y, np.ones(2), n_fit=50)
    with pytest.raises(ValueError, match="n_fit"):
        M.metrics_on_test_batched(z, y, np.ones(3), n_fit=0)
