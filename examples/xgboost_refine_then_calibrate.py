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

import argparse

from _demo_data import load_demo, report
from sklearn.metrics import accuracy_score, log_loss
from xgboost import XGBClassifier

from tabbench.calibration import TemperatureScaledClassifier
from tabbench.stopping import xgboost_metric


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="adult", help="a name from data/demo/MANIFEST.csv")
    parser.add_argument("--small", action="store_true", help="3,000 rows, 200 rounds (CI)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    data = load_demo(args.dataset, max_rows=3000 if args.small else None)
    labels = range(len(data.classes))
    rows = []
    builtin_logloss = "logloss" if len(data.classes) == 2 else "mlogloss"
    for stopping, metric in [("logloss", builtin_logloss), ("ts_ref", xgboost_metric("ts_ref"))]:
        clf = XGBClassifier(
            n_estimators=200 if args.small else 2000,
            learning_rate=0.1,
            max_depth=6,
            early_stopping_rounds=50 if args.small else 200,
            eval_metric=metric,  # the last eval_set and metric drive the early stopping
            enable_categorical=True,
            tree_method="hist",
            n_jobs=args.threads,
            random_state=0,
        )
        clf.fit(data.X_train, data.y_train, eval_set=[(data.X_val, data.y_val)], verbose=False)
        # predict/predict_proba use rounds 0..best_iteration; calibrate that model on val
        calibrated = TemperatureScaledClassifier(clf).fit(data.X_val, data.y_val)
        rows.append({
            "stopping": stopping,
            "best": clf.best_iteration,
            "logloss": log_loss(data.y_test, clf.predict_proba(data.X_test), labels=labels),
            "logloss_ts": log_loss(data.y_test, calibrated.predict_proba(data.X_test),
                                   labels=labels),
            "accuracy": accuracy_score(data.y_test, calibrated.predict(data.X_test)),
        })
    print(f"XGBoost on {args.dataset} ({len(data.y_train)} train, {len(data.y_val)} val, "
          f"{len(data.y_test)} test rows)")
    report(rows)


if __name__ == "__main__":
    main()
