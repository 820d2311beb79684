"""LightGBM search space: LightGBM's defaults, and pytabkit's LGBM-HPO random-search space.

Registration: :data:`tabbench.models.builtin.LIGHTGBM` (model name ``"lightgbm"``, this module as
its search space, epoch keys ``lightgbm_default`` for config 0 and ``lightgbm_tuned`` for
configs >= 1, 100 and 1000 rounds under the paper's protocol; not a network).

Default (config 0): ``{}``, every parameter at LightGBM's default (``learning_rate`` 0.1,
``num_leaves`` 31, no bagging, ...), trained for ``epochs.lightgbm_default`` rounds (100 is also
LightGBM's own default ``num_iterations``) — an empty dict, so that ``params`` says exactly
"nothing changed".

Tuned configs: the space below, trained for ``epochs.lightgbm_tuned`` rounds without early
stopping. Names are LightGBM's native parameter names, passed through unchanged.

===========================  =================================================================
``learning_rate``            log-uniform on [e^-7, 1] (9.1e-4 .. 1)
``num_leaves``               log-uniform integer on [2, 1097]
``feature_fraction``         uniform on [0.5, 1]
``bagging_fraction``         uniform on [0.5, 1], with ``bagging_freq`` = 1 (fixed)
``min_data_in_leaf``         log-uniform integer on [1, 403]
``min_sum_hessian_in_leaf``  log-uniform on [e^-16, e^5] (1.1e-7 .. 148)
``lambda_l1``                0 with probability 1/2, else log-uniform on [e^-16, e^2] (.. 7.4)
``lambda_l2``                the same, drawn independently
===========================  =================================================================

**Source.** pytabkit (Holzmüller et al., "Better by Default: Strong Pre-Tuned MLPs and Boosted
Trees on Tabular Data", NeurIPS 2024; github.com/dholzmueller/pytabkit), the random-search space
of its ``LGBM_HPO_Classifier`` ("LGBM-HPO" in that paper): ``RandomParamsLGBMAlgInterface.
_sample_params`` in ``pytabkit/models/alg_interfaces/lightgbm_interfaces.py`` (space ``"cqb"``,
the default; pytabkit 1.8.0), which pytabkit adapted from the CatBoost quality benchmarks
(github.com/catboost/benchmarks, ``quality_benchmarks/lightgbm_experiment.py``). pytabkit draws
``exp(U(a, b))`` and rounds the integer ones; ``bagging_freq`` = 1 is its interface's default
(LightGBM's default 0 would switch bagging off and make ``bagging_fraction`` inert); it trains
1000 rounds (``n_estimators``), which is our tuned round count.

Why this space: the paper's XGBoost space (Table G.1, :mod:`tabbench.search.xgboost`) is
pytabkit's random-search XGBoost space (``hpo_space_name="probclass"``, same ranges) with a fixed
1000 rounds; this is pytabkit's LightGBM counterpart, also a fixed 1000 rounds over wide ranges.
TabArena's LightGBM space (pytabkit's ``hpo_space_name="tabarena"``) is made for 10,000 rounds
with early stopping (``learning_rate`` >= 5e-3, 300 rounds patience in pytabkit's rendering);
cut at 1000 rounds without early stopping, its slow learning rates would be measured unfinished.

Differences from pytabkit's draws (same ranges and scales, not the same random numbers):
optuna's log-uniform integers sample ``[low - 0.5, high + 0.5]`` in log space and round, where
pytabkit rounds ``exp(U)``; and pytabkit's ``num_leaves`` draws of 1 (clipped to 2 by its LightGBM
interface, since LightGBM needs >= 2) are drawn within [2, 1097] here. The zero-or-positive
``lambda_l1``/``lambda_l2`` are a categorical choice plus a conditional float in optuna.
"""

from __future__ import annotations

import math
from typing import Any

import optuna

DEFAULT_CONFIG: dict[str, Any] = {}


def suggest(trial: optuna.Trial) -> dict[str, Any]:
    """One draw of pytabkit's LGBM-HPO space (module docstring)."""
    params: dict[str, Any] = {
        "learning_rate": trial.suggest_float("learning_rate", math.exp(-7), 1.0, log=True),
        "num_leaves": trial.suggest_int("num_leaves", 2, 1097, log=True),
        "feature_fraction": trial.suggest_float("feature_fraction", 0.5, 1.0),
        "bagging_fraction": trial.suggest_float("bagging_fraction", 0.5, 1.0),
        "bagging_freq": 1,
        "min_data_in_leaf": trial.suggest_int("min_data_in_leaf", 1, 403, log=True),
        "min_sum_hessian_in_leaf": trial.suggest_float(
            "min_sum_hessian_in_leaf", math.exp(-16), math.exp(5), log=True),
    }
    for name in ("lambda_l1", "lambda_l2"):
        if trial.suggest_categorical(f"{name}_is_zero", [True, False]):
            params[name] = 0.0
        else:
            params[name] = trial.suggest_float(name, math.exp(-16), math.exp(2), log=True)
    return params
