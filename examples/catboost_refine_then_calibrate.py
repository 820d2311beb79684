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

import warnings

from _demo_data import load, parse_args, report, test_row
from catboost import CatBoostClassifier
from sklearn.frozen import FrozenEstimator

from tabbench.calibration import TemperatureScaledClassifier
from tabbench.stopping import catboost_metric


def main() -> None:
    args = parse_args(__doc__)
    data = load(args)
    cat = data.categorical
    for X in (data.X_train, data.X_val, data.X_test):  # CatBoost wants strings, no NaN
        X[cat] = X[cat].astype(object).fillna("missing")
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
        calibrated = TemperatureScaledClassifier(FrozenEstimator(clf)).fit(data.X_val, data.y_val)
        rows.append(test_row(stopping, clf.get_best_iteration(), data,
                             clf.predict_proba(data.X_test), calibrated.predict_proba(data.X_test)))
    report(f"CatBoost on {args.dataset}", data, rows)


if __name__ == "__main__":
    main()
