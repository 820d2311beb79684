"""tabbench's own stopping metrics (docs/design.md §4), registered through entry points like any
other (``pyproject.toml``, group ``tabbench.stopping_metrics``, in this order: it is the column
order of the runs files).

Each is an output of the fused kernel :func:`tabbench.metrics.batched.fused_stopping_metrics`
(:class:`~tabbench.metrics.registry.FusedOutput`), with its clear single-epoch float64
definition of :mod:`tabbench.metrics.losses` / :mod:`tabbench.metrics.refinement` as the
reference. Both are referred to lazily: reading the registry imports neither. Labels are the
paper's method names (Fig. 5, G.2).
"""

from __future__ import annotations

from tabbench.metrics.registry import FusedOutput, Lazy, StoppingMetric

LOGLOSS = StoppingMetric(
    "logloss", "Logloss", FusedOutput("logloss"), Lazy("tabbench.metrics.losses:logloss"),
    description="validation log loss", raw_method=True, test_counterpart="logloss",
)
BRIER = StoppingMetric(
    "brier", "Brier", FusedOutput("brier"), Lazy("tabbench.metrics.losses:brier"),
    description="multiclass Brier score (sum over classes)", test_counterpart="brier",
)
ERROR = StoppingMetric(
    "error", "Accuracy", FusedOutput("error"), Lazy("tabbench.metrics.losses:error"),
    description="classification error, 1 − accuracy", test_counterpart="error",
)
AUROC = StoppingMetric(
    "auroc", "AUROC", FusedOutput("auroc"), Lazy("tabbench.metrics.losses:one_minus_auroc"),
    description="1 − AUROC (one-vs-rest for multiclass)", test_counterpart="auroc",
)
TS_REF = StoppingMetric(
    "ts_ref", "TS-Ref.", FusedOutput("ts_ref"), Lazy("tabbench.metrics.refinement:ts_ref"),
    description="TS-refinement: log loss after temperature scaling fit on validation "
    "(+ Laplace smoothing)",
    test_counterpart="logloss_ts",  # the same TS fit on validation, scored on test
)
TS_REF_BRIER = StoppingMetric(
    "ts_ref_brier", "Brier-Ref.", FusedOutput("ts_ref_brier"),
    Lazy("tabbench.metrics.refinement:ts_ref_brier"),
    description="Brier-refinement: Brier score after temperature scaling (+ smoothing)",
    test_counterpart="brier_ts",
)
TS_REF_CV5 = StoppingMetric(
    "ts_ref_cv5", "TS-Ref.-5CV", FusedOutput("ts_ref_cv5"),
    Lazy("tabbench.metrics.refinement:ts_ref_cv5"),
    description="TS-refinement with the temperature fit by 5-fold cross-validation",
    test_counterpart="logloss_ts",
)
IR_REF = StoppingMetric(
    "ir_ref", "IR-Ref.", FusedOutput("ir_ref"), Lazy("tabbench.metrics.refinement:ir_ref"),
    description="isotonic-regression refinement: log loss after isotonic calibration "
    "(+ smoothing)",
    # the records hold no isotonic calibration of the test set: the closest recorded quantity
    test_counterpart="logloss_ts", counterpart_is_exact=False,
)
