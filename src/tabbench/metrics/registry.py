"""Registry of stopping metrics (DESIGN.md §4): id → function and direction.

The ids are exactly ``tabbench.records.STOPPING_METRIC_IDS`` (checked at import), so trainers,
recorder and selection agree on names. All are "lower is better".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tabbench.metrics import losses, refinement
from tabbench.metrics._checks import check_single
from tabbench.records import STOPPING_METRIC_IDS


@dataclass(frozen=True)
class StoppingMetric:
    fn: Callable[[np.ndarray, np.ndarray], float]  # (logits (N, K), y) -> value
    direction: str  # "minimize" for all stopping metrics of DESIGN.md §4
    description: str


STOPPING_METRICS: dict[str, StoppingMetric] = {
    "logloss": StoppingMetric(losses.logloss, "minimize", "mean −log softmax(z)_y"),
    "brier": StoppingMetric(losses.brier, "minimize", "multiclass Brier (sum over classes)"),
    "error": StoppingMetric(losses.error, "minimize", "1 − accuracy"),
    "auroc": StoppingMetric(losses.one_minus_auroc, "minimize", "1 − AUROC (one-vs-rest)"),
    "ts_ref": StoppingMetric(refinement.ts_ref, "minimize", "log loss after TS + smoothing"),
    "ts_ref_brier": StoppingMetric(
        refinement.ts_ref_brier, "minimize", "Brier after TS + smoothing"
    ),
    "ts_ref_cv5": StoppingMetric(
        refinement.ts_ref_cv5, "minimize", "TS fit on 4/5, log loss on 1/5 (5-fold)"
    ),
    "ir_ref": StoppingMetric(
        refinement.ir_ref, "minimize", "log loss after isotonic calibration + smoothing"
    ),
}

if tuple(STOPPING_METRICS) != STOPPING_METRIC_IDS:  # pragma: no cover - import-time contract
    raise RuntimeError("STOPPING_METRICS ids differ from records.STOPPING_METRIC_IDS")


def stopping_metrics(logits: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Every stopping metric of one epoch's logits (N, K). Raises ValueError on NaN/inf logits
    (use :func:`stopping_metrics_batched` to get NaN instead). Single-class ``y`` gives
    ``auroc`` = NaN."""
    z, labels = check_single(logits, y)
    return {m: float(metric.fn(z, labels)) for m, metric in STOPPING_METRICS.items()}
