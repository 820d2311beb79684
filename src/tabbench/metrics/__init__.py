"""Proper losses, temperature scaling, refinement estimators (docs/design.md §4) and the registry of
stopping metrics.

Inputs are logits (N, K) — binary problems as K = 2 — and integer labels 0..K−1 (classes may
be absent). Everything is "lower is better".

Registry (:mod:`tabbench.metrics.registry`): StoppingMetric, get_stopping_metrics,
stopping_metric_ids, get_stopping_metric — which stopping metrics exist (entry points).
Single epoch (clear float64 definitions; raise ``ValueError`` on NaN/inf logits):
    logloss, brier, error, auroc (plain AUROC), one_minus_auroc, ece,
    ts_ref, ts_ref_brier, ts_ref_cv5, ir_ref, fit_temperature, TemperatureScaling,
    laplace_smooth, stopping_metrics (every registered metric's reference), cv_folds.
Many epochs at once (what the recorder calls; NaN metrics for a non-finite epoch, never an
exception):
    stopping_metrics_batched (every registered metric, built-ins in one fused pass),
    metrics_on_test_batched, fit_temperature_batched.

Names are imported on first access (PEP 562), so that reading the registry — which the workflow
does when it parses — does not import scikit-learn and the numerical kernels.

Layer 2 of docs/design.md §2: it may import only ``core`` and ``_scores`` (layer 1, both in
the light install); the public API and the pipeline's packages stand on it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "GROUP": "registry",
    "FusedOutput": "registry",
    "Lazy": "registry",
    "StoppingMetric": "registry",
    "get_stopping_metric": "registry",
    "get_stopping_metrics": "registry",
    "stopping_metric_ids": "registry",
    "stopping_metrics": "registry",
    "stopping_metrics_batched": "registry",
    "metrics_on_test_batched": "batched",
    "cv_folds": "folds",
    "auroc": "losses",
    "brier": "losses",
    "ece": "losses",
    "error": "losses",
    "laplace_smooth": "losses",
    "log_softmax": "losses",
    "logloss": "losses",
    "one_minus_auroc": "losses",
    "softmax": "losses",
    "ir_ref": "refinement",
    "ts_ref": "refinement",
    "ts_ref_brier": "refinement",
    "ts_ref_cv5": "refinement",
    "TemperatureScaling": "temperature_scaling",
    "fit_temperature": "temperature",
    "fit_temperature_batched": "temperature",
    "fit_temperature_bisection": "temperature",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
