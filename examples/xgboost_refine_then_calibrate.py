"""Refine, then calibrate with XGBoost: early-stop on validation TS-refinement, then
temperature-scale on the same validation set.

Two models are trained with XGBoost's own early stopping, once on validation log loss (the
usual way) and once on TS-refinement (``tabbench.stopping.xgboost_metric``); both are then
temperature-scaled (``tabbench.calibration.TemperatureScaledClassifier``). Printed: the round
each stopped at and the test log loss before/after scaling, and the accuracy (which scaling
does not change).

    python examples/xgboost_refine_then_calibrate.py             # adult, ~1 min on 2 cores
    python examples/xgboost_refine_then_calibrate.py --small     # seconds (what CI runs)
"""

from __future__ import annotations

from _demo_data import load, parse_args, report, test_row
from sklearn.frozen import FrozenEstimator
from xgboost import XGBClassifier

from tabbench.calibration import TemperatureScaledClassifier
from tabbench.stopping import xgboost_metric


def main() -> None:
    args = parse_args(__doc__)
    data = load(args)
    rows = []
    builtin_logloss = "logloss" if len(data.classes) == 2 else "mlogloss"
    for stopping, metric in [("logloss", builtin_logloss), ("ts_ref", xgboost_metric("ts_ref"))]:
        clf = XGBClassifier(
            n_estimators=200 if args.small else 2000,
            learning_rate=0.1,
            max_depth=6,
            early_stopping_rounds=50 if args.small else 200,
            eval_metric=metric,  # the last eval_set and metric drive the early stopping
            disable_default_eval_metric=True,  # no default log loss beside a custom metric
            enable_categorical=True,
            tree_method="hist",
            n_jobs=args.threads,
            random_state=0,
        )
        clf.fit(data.X_train, data.y_train, eval_set=[(data.X_val, data.y_val)], verbose=False)
        # predict/predict_proba use rounds 0..best_iteration; calibrate that model on val
        calibrated = TemperatureScaledClassifier(FrozenEstimator(clf)).fit(data.X_val, data.y_val)
        rows.append(test_row(stopping, clf.best_iteration, data, clf.predict_proba(data.X_test),
                             calibrated.predict_proba(data.X_test)))
    report(f"XGBoost on {args.dataset}", data, rows)


if __name__ == "__main__":
    main()
