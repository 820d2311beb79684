"""Parity with the reference implementation of the paper's metrics, probmetrics.

Marked ``reference``: skipped when probmetrics (extra ``reference``) is not installed, except
in CI (:mod:`fixtures.optional`).
Metric names: ``refinement_<loss>_<calibrator>_<split>`` with the TS (``ts-mix``) or
isotonic (``isotonic-mix``) calibrator mixed with the uniform distribution (= our Laplace
smoothing), fit and scored on all samples (``all``) or cross-validated (``cv-5``).
"""

from __future__ import annotations

import numpy as np
import pytest
from fixtures.optional import import_reference

import tabbench.metrics as M

pytestmark = pytest.mark.reference

OURS_TO_PROBMETRICS = {
    "ts_ref": "refinement_logloss_ts-mix_all",
    "ts_ref_brier": "refinement_brier_ts-mix_all",
    "ts_ref_cv5": "refinement_logloss_ts-mix_cv-5",
    "ir_ref": "refinement_logloss_isotonic-mix_all",
}


@pytest.fixture(scope="module")
def probmetrics_values():
    import torch

    import_reference("probmetrics")
    from probmetrics.metrics import Metrics

    metrics = Metrics.from_names(list(OURS_TO_PROBMETRICS.values()))

    def compute(z: np.ndarray, y: np.ndarray) -> dict[str, float]:
        res = metrics.compute_all_from_labels_logits(torch.as_tensor(y), torch.as_tensor(z))
        return {ours: float(res[name]) for ours, name in OURS_TO_PROBMETRICS.items()}

    return compute


def case(n, k, scale, dtype=np.float64, signal=1.0, seed=0, kind="random"):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    if kind == "constant":
        return np.zeros((n, k), dtype=dtype), y
    z = rng.normal(size=(n, k))
    if kind == "separable":  # every sample's true class wins by a margin
        z[np.arange(n), y] = z.max(1) + rng.uniform(0.1, 1.0, n)
    else:
        z[np.arange(n), y] += signal
    return (scale * z).astype(dtype), y


CASES = {
    "bin-n50": case(50, 2, 1.0),
    "bin-n1000-under-f32": case(1000, 2, 0.1, np.float32, seed=1),
    "bin-n1000-over": case(1000, 2, 5.0, seed=2),
    "bin-n100k-f32": case(100_000, 2, 2.0, np.float32, seed=3),
    "bin-separable": case(500, 2, 1.0, kind="separable", seed=4),
    "bin-constant": case(300, 2, 1.0, kind="constant", seed=5),
    "10cls-n2000-f32": case(2000, 10, 1.0, np.float32, seed=6),
    "10cls-n2000-over": case(2000, 10, 4.0, seed=7),
    "10cls-n100k-under": case(100_000, 10, 0.2, seed=8),
    "10cls-separable": case(1000, 10, 2.0, kind="separable", seed=9),
    "100cls-n5000": case(5000, 100, 1.0, signal=3.0, seed=10),
    "100cls-n5000-f32": case(5000, 100, 3.0, np.float32, signal=3.0, seed=11),
}


SLOW = {"bin-n100k-f32", "10cls-n100k-under", "100cls-n5000-f32"}  # ~15-30 s each


@pytest.mark.parametrize(
    "name", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c for c in CASES]
)
def test_refinement_metrics_agree_with_probmetrics(probmetrics_values, name):
    z, y = CASES[name]
    ours = M.stopping_metrics_batched(z[None], y)
    single = M.stopping_metrics(z, y)
    # probmetrics on the same values in float64: its float32 path hands float32 probabilities
    # to sklearn's IsotonicRegression, which merges probabilities closer than 1e-6
    theirs = probmetrics_values(z.astype(np.float64), y)
    for m, ref in theirs.items():
        rel = (ours[m][0] - ref) / ref
        assert single[m] == pytest.approx(ours[m][0], rel=2e-6), m
        if m == "ir_ref":
            # sklearn also merges float64 probabilities closer than 1e-15 (e.g. the many tiny
            # ones of very confident models) into one isotonic block; we use exact ties, a finer
            # fit, so our value may only be lower
            assert -5e-3 < rel < 1e-5, (m, rel)
        else:
            assert abs(rel) < 1e-5, (m, ours[m][0], ref)
    if z.dtype == np.float32:
        theirs32 = probmetrics_values(z, y)
        for m in ("ts_ref", "ts_ref_brier", "ts_ref_cv5"):
            assert ours[m][0] == pytest.approx(theirs32[m], rel=1e-5), m
        assert ours["ir_ref"][0] <= theirs32["ir_ref"] * (1 + 1e-7)


def test_ir_ref_exact_when_probabilities_are_resolvable(probmetrics_values):
    for seed, (n, k) in enumerate([(3000, 2), (3000, 3), (2000, 10)]):
        z, y = case(n, k, 1.0, seed=20 + seed)
        ours = M.stopping_metrics_batched(z[None], y)["ir_ref"][0]
        assert ours == pytest.approx(probmetrics_values(z, y)["ir_ref"], rel=1e-9)


def test_missing_class_like_probmetrics(probmetrics_values):
    z, y = case(1000, 4, 1.0, seed=30)
    y = np.where(y == 3, 0, y)
    ours = M.stopping_metrics_batched(z[None], y)
    theirs = probmetrics_values(z, y)
    for m, ref in theirs.items():
        assert ours[m][0] == pytest.approx(ref, rel=1e-5), m
