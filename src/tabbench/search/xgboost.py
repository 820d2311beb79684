"""XGBoost search space (paper Table G.1; docs/design.md §5).

Default (config 0): the library's defaults, trained for ``epochs.xgboost_default`` rounds
(pytabkit's XGB-D) — an empty dict, so that ``params`` says exactly "nothing changed".
Tuned configs: the ranges below, trained for ``epochs.xgboost_tuned`` rounds without early
stopping. Names are XGBoost's native parameter names, passed through unchanged.
"""

from __future__ import annotations

from typing import Any

import optuna

DEFAULT_CONFIG: dict[str, Any] = {}


def suggest(trial: optuna.Trial) -> dict[str, Any]:
    """One draw of Table G.1."""
    return {
        "eta": trial.suggest_float("eta", 1e-3, 0.7, log=True),
        "max_depth": trial.suggest_int("max_depth", 1, 11),
        "min_child_weight": trial.suggest_float("min_child_weight", 1e-5, 100.0, log=True),
        "subsample": trial.suggest_float("subsample", 0.5, 1.0),
        "colsample_bytree": trial.suggest_float("colsample_bytree", 0.5, 1.0),
        "colsample_bylevel": trial.suggest_float("colsample_bylevel", 0.5, 1.0),
        "alpha": trial.suggest_float("alpha", 1e-5, 5.0, log=True),
        "lambda": trial.suggest_float("lambda", 1e-5, 5.0, log=True),
        "gamma": trial.suggest_float("gamma", 1e-5, 5.0, log=True),
    }
