"""Proper losses, temperature scaling and refinement estimators (DESIGN.md §4).

Inputs are logits (N, K) — binary problems as K = 2 — and integer labels 0..K−1 (classes may
be absent). Everything is "lower is better".

Single epoch (clear float64 definitions; raise ``ValueError`` on NaN/inf logits):
    logloss, brier, error, auroc (plain AUROC), one_minus_auroc, ece,
    ts_ref, ts_ref_brier, ts_ref_cv5, ir_ref, stopping_metrics, fit_temperature,
    TemperatureScaling, laplace_smooth, STOPPING_METRICS (id → StoppingMetric(fn, direction)).
Many epochs at once (fast path of the recorder; NaN metrics for a non-finite epoch, never an
exception):
    fit_temperature_batched, stopping_metrics_batched, test_metrics_batched.
"""

from tabbench.metrics.batched import cv_folds, stopping_metrics_batched, test_metrics_batched
from tabbench.metrics.losses import (
    auroc,
    brier,
    ece,
    error,
    laplace_smooth,
    log_softmax,
    logloss,
    one_minus_auroc,
    softmax,
)
from tabbench.metrics.refinement import ir_ref, ts_ref, ts_ref_brier, ts_ref_cv5
from tabbench.metrics.registry import STOPPING_METRICS, StoppingMetric, stopping_metrics
from tabbench.metrics.temperature import (
    TemperatureScaling,
    fit_temperature,
    fit_temperature_batched,
    fit_temperature_bisection,
)

__all__ = [
    "STOPPING_METRICS",
    "StoppingMetric",
    "TemperatureScaling",
    "auroc",
    "brier",
    "cv_folds",
    "ece",
    "error",
    "fit_temperature",
    "fit_temperature_batched",
    "fit_temperature_bisection",
    "ir_ref",
    "laplace_smooth",
    "log_softmax",
    "logloss",
    "one_minus_auroc",
    "softmax",
    "stopping_metrics",
    "stopping_metrics_batched",
    "test_metrics_batched",
    "ts_ref",
    "ts_ref_brier",
    "ts_ref_cv5",
]
