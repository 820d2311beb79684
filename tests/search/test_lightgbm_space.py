"""LightGBM search space: config 0 is LightGBM's defaults, draws follow pytabkit's LGBM-HPO
ranges and scales, and every draw is a config LightGBM trains."""

import math

import numpy as np
import optuna

from tabbench.search import lightgbm as space


def _draws(n: int, seed: int = 0) -> list[dict]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return [space.suggest(optuna.create_study(
        sampler=optuna.samplers.RandomSampler(seed=seed + i)).ask()) for i in range(n)]


def test_default_is_library_defaults_and_epoch_keys_follow_xgboost():
    assert space.DEFAULT_CONFIG == {}
    from tabbench.models.registry import get_model, get_search_space

    spec = get_model("lightgbm")  # through its entry point, like a third-party model
    assert spec.epochs_keys == ("lightgbm_default", "lightgbm_tuned")
    assert spec.paper_epochs == {"lightgbm_default": 100, "lightgbm_tuned": 1000}
    assert not spec.network and get_search_space("lightgbm") is space


def test_draws_follow_pytabkits_lgbm_hpo_space():
    draws = _draws(400)
    floats = {"learning_rate": (math.exp(-7), 1.0), "feature_fraction": (0.5, 1.0),
              "bagging_fraction": (0.5, 1.0),
              "min_sum_hessian_in_leaf": (math.exp(-16), math.exp(5))}
    ints = {"num_leaves": (2, 1097), "min_data_in_leaf": (1, 403)}
    for d in draws:
        assert set(d) == set(floats) | set(ints) | {"bagging_freq", "lambda_l1", "lambda_l2"}
        assert d["bagging_freq"] == 1  # else bagging_fraction would do nothing
        for k, (lo, hi) in floats.items():
            assert lo <= d[k] <= hi, k
        for k, (lo, hi) in ints.items():
            assert isinstance(d[k], int) and lo <= d[k] <= hi, k
        for k in ("lambda_l1", "lambda_l2"):
            assert d[k] == 0.0 or math.exp(-16) <= d[k] <= math.exp(2)
    # log scales: about half the draws below the geometric midpoint of the range
    for k, (lo, hi) in {"learning_rate": (math.exp(-7), 1.0), "num_leaves": (2, 1097),
                        "min_sum_hessian_in_leaf": (math.exp(-16), math.exp(5))}.items():
        assert 0.4 < np.mean([d[k] < math.sqrt(lo * hi) for d in draws]) < 0.6, k
    # lambdas: zero about half the time, independently
    zero = np.array([[d["lambda_l1"] == 0.0, d["lambda_l2"] == 0.0] for d in draws])
    assert (0.4 < zero.mean(axis=0)).all() and (zero.mean(axis=0) < 0.6).all()
    assert 0.15 < np.mean(zero[:, 0] & zero[:, 1]) < 0.35
