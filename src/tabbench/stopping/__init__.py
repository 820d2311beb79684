"""Early stopping on refinement ("refine, then calibrate") in your own training code.

The paper's recipe: stop (and tune) on the *refinement* loss of the validation set — the loss
left after re-calibrating the model on that set — instead of its plain log loss, then
temperature-scale the chosen model (:mod:`tabbench.calibration`). Validation log loss is
refinement plus calibration error, and the two rarely bottom out together (typically the model
grows over-confident while refinement still improves, and log loss stops too early); the
calibration error is what the temperature removes afterwards, so refinement picks the epoch
whose *calibrated* model is best.

Refinement kinds (all lower is better; exactly the metrics of :mod:`tabbench.metrics`), each
with a fast path here:

* ``"ts_ref"`` (default, the paper's choice): log loss after temperature scaling fit on the
  same set, with Laplace smoothing;
* ``"ts_ref_brier"``: Brier score of that same temperature-scaled output;
* ``"ts_ref_cv5"``: temperature fit on 4/5 of the set, log loss on the held-out 1/5
  (stratified 5-fold); NaN for fewer than 5 samples;
* ``"ir_ref"``: log loss after isotonic calibration (+ smoothing).

Every registered stopping metric (the entry points ``tabbench.stopping_metrics``,
:mod:`tabbench.metrics.registry`: the built-in ``logloss``, ``brier``, ``error``, ``auroc`` and
any installed package's) is accepted as a ``kind`` too, evaluated by its single-epoch
``reference`` (else its ``batched`` with one epoch); :func:`stopping_kinds` lists them all.

What is provided:

* :func:`refinement_loss` — the loss of one set of scores;
* :func:`xgboost_metric`, :func:`lightgbm_metric`, :func:`catboost_metric` — custom eval
  metrics for the libraries' own early stopping (``best_iteration``, model slicing and
  ``use_best_model`` work unchanged);
* :class:`EarlyStopping` — a framework-free helper for PyTorch (or any) training loops;
* :func:`refinement_scorer` — a scikit-learn scorer (``scoring=``) for tuning on refinement.

The package: the losses (:mod:`~tabbench.stopping.loss`; TS-refinement round after round in
:mod:`~tabbench.stopping.ts_rounds`), the library adapters (:mod:`~tabbench.stopping.adapters`)
and :class:`EarlyStopping` (:mod:`~tabbench.stopping.early_stopping`); every public name is
importable from ``tabbench.stopping`` itself. Importing it imports neither PyTorch nor
XGBoost, LightGBM or CatBoost.

Layer 3 of docs/design.md §2: part of the public API, it may import ``metrics``, ``_scores``
and ``core``'s light modules only (what ``pip install tabbench`` installs).
"""

from tabbench.stopping.adapters import (
    CatBoostMetric,
    LightGBMMetric,
    RefinementScorer,
    XGBoostMetric,
    catboost_metric,
    lightgbm_metric,
    refinement_scorer,
    xgboost_metric,
)
from tabbench.stopping.early_stopping import EarlyStopping
from tabbench.stopping.loss import REFINEMENT_KINDS, check_kind, refinement_loss, stopping_kinds

__all__ = [
    "REFINEMENT_KINDS",
    "CatBoostMetric",
    "EarlyStopping",
    "LightGBMMetric",
    "RefinementScorer",
    "XGBoostMetric",
    "catboost_metric",
    "check_kind",
    "lightgbm_metric",
    "refinement_loss",
    "refinement_scorer",
    "stopping_kinds",
    "xgboost_metric",
]
