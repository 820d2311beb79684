"""Refine, then calibrate with CatBoost: early-stop on validation TS-refinement, then
temperature-scale on the same validation set.

Two models are trained with CatBoost's early stopping and ``use_best_model=True``, once on
validation log loss (CatBoost's default ``eval_metric``) and once on TS-refinement
(``tabbench.stopping.catboost_metric``); both are then temperature-scaled
(``tabbench.calibration.TemperatureScaledClassifier``). Needs ``pip install -e ".[catboost]"``.

    python examples/catboost_refine_then_calibrate.py            # adult, a few min on 2 cores
    python examples/catboost_refine_then_calibrate.py --small    # seconds (what CI runs)
"""

from __future__ import annotations

import argparse
import warnings

from _demo_data import load_demo, report
from catboost import CatBoostClassifier
from sklearn.metrics import accuracy_score, log_loss

from tabbench.calibration import TemperatureScaledClassifier
from tabbench.stopping import catboost_metric


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="adult", help="a name from data/demo/MANIFEST.csv")
    parser.add_argument("--small", action="store_true", help="3,000 rows, 200 rounds (CI)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    data = load_demo(args.dataset, max_rows=3000 if args.small else None)
    cat = data.categorical
    for X in (data.X_train, data.X_val, data.X_test):  # CatBoost wants strings, no NaN
        X[cat] = X[cat].astype(object).fillna("missing")
    labels = range(len(data.classes))
    rows = []
    for stopping in ("logloss", "ts_ref"):
        clf = CatBoostClassifier(
            iterations=200 if args.small else 2000,
            learning_rate=0.1,
            eval_metric=None if stopping == "logloss" else catboost_metric("ts_ref"),
            early_stopping_rounds=50 if args.small else 200,
            use_best_model=True,  # keep rounds 0..best only
            cat_features=cat,
            thread_count=args.threads,
            random_seed=0,
            verbose=0,
            allow_writing_files=False,  # no catboost_info/ folder in the working directory
        )
        with warnings.catch_warnings():  # "Failed to import numba": metric runs in Python
            warnings.filterwarnings("ignore", message=".*numba.*")
            clf.fit(data.X_train, data.y_train, eval_set=(data.X_val, data.y_val))
        calibrated = TemperatureScaledClassifier(clf).fit(data.X_val, data.y_val)
        rows.append({
            "stopping": stopping,
            "best": clf.get_best_iteration(),
            "logloss": log_loss(data.y_test, clf.predict_proba(data.X_test), labels=labels),
            "logloss_ts": log_loss(data.y_test, calibrated.predict_proba(data.X_test),
                                   labels=labels),
            "accuracy": accuracy_score(data.y_test, calibrated.predict(data.X_test)),
        })
    print(f"CatBoost on {args.dataset} ({len(data.y_train)} train, {len(data.y_val)} val, "
          f"{len(data.y_test)} test rows)")
    report(rows)


if __name__ == "__main__":
    main()
