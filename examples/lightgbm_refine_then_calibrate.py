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

import inspect

import lightgbm as lgb
from _demo_data import load, parse_args, report, test_row
from sklearn.frozen import FrozenEstimator

from tabbench.calibration import TemperatureScaledClassifier
from tabbench.stopping import lightgbm_metric


def eval_kwargs(X_val, y_val) -> dict:
    """LightGBM 4.7 renamed eval_set to eval_X/eval_y (eval_set warns there)."""
    if "eval_X" in inspect.signature(lgb.LGBMClassifier.fit).parameters:
        return {"eval_X": X_val, "eval_y": y_val}
    return {"eval_set": [(X_val, y_val)]}


def main() -> None:
    args = parse_args(__doc__)
    data = load(args)
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
        calibrated = TemperatureScaledClassifier(FrozenEstimator(clf)).fit(data.X_val, data.y_val)
        # LightGBM counts rounds from 1; 0-based here
        rows.append(test_row(stopping, clf.best_iteration_ - 1, data,
                             clf.predict_proba(data.X_test), calibrated.predict_proba(data.X_test)))
    report(f"LightGBM on {args.dataset}", data, rows)


if __name__ == "__main__":
    main()
