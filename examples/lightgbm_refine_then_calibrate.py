"""Refine, then calibrate with LightGBM: early-stop on validation TS-refinement, then
temperature-scale on the same validation set.

Two models are trained with ``lightgbm.early_stopping``, once on validation log loss (LightGBM's
``binary_logloss``/``multi_logloss``) and once on TS-refinement
(``tabbench.stopping.lightgbm_metric``); both are then temperature-scaled
(``tabbench.calibration.TemperatureScaledClassifier``).

    python examples/lightgbm_refine_then_calibrate.py            # adult, ~1 min on 2 cores
    python examples/lightgbm_refine_then_calibrate.py --small    # seconds (what CI runs)
"""

from __future__ import annotations

import argparse
import inspect

import lightgbm as lgb
from _demo_data import load_demo, report
from sklearn.metrics import accuracy_score, log_loss

from tabbench.calibration import TemperatureScaledClassifier
from tabbench.stopping import lightgbm_metric


def eval_kwargs(X_val, y_val) -> dict:
    """LightGBM 4.7 renamed eval_set to eval_X/eval_y (eval_set warns there)."""
    if "eval_X" in inspect.signature(lgb.LGBMClassifier.fit).parameters:
        return {"eval_X": X_val, "eval_y": y_val}
    return {"eval_set": [(X_val, y_val)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="adult", help="a name from data/demo/MANIFEST.csv")
    parser.add_argument("--small", action="store_true", help="3,000 rows, 200 rounds (CI)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    data = load_demo(args.dataset, max_rows=3000 if args.small else None)
    labels = range(len(data.classes))
    rows = []
    for stopping in ("logloss", "ts_ref"):
        clf = lgb.LGBMClassifier(
            n_estimators=200 if args.small else 2000,
            learning_rate=0.05,
            num_leaves=31,
            # "None": only eval_metric is evaluated. Otherwise LightGBM adds the objective's
            # log loss, and early_stopping stops as soon as *any* metric stops improving.
            metric=None if stopping == "logloss" else "None",
            n_jobs=args.threads,
            random_state=0,
            verbose=-1,
        )
        clf.fit(
            data.X_train, data.y_train, **eval_kwargs(data.X_val, data.y_val),
            eval_metric=None if stopping == "logloss" else lightgbm_metric("ts_ref"),
            callbacks=[lgb.early_stopping(50 if args.small else 200, verbose=False)],
        )
        # predict/predict_proba use best_iteration_ rounds; calibrate that model on val
        calibrated = TemperatureScaledClassifier(clf).fit(data.X_val, data.y_val)
        rows.append({
            "stopping": stopping,
            "best": clf.best_iteration_ - 1,  # LightGBM counts rounds from 1; 0-based here
            "logloss": log_loss(data.y_test, clf.predict_proba(data.X_test), labels=labels),
            "logloss_ts": log_loss(data.y_test, calibrated.predict_proba(data.X_test),
                                   labels=labels),
            "accuracy": accuracy_score(data.y_test, calibrated.predict(data.X_test)),
        })
    print(f"LightGBM on {args.dataset} ({len(data.y_train)} train, {len(data.y_val)} val, "
          f"{len(data.y_test)} test rows)")
    report(rows)


if __name__ == "__main__":
    main()
