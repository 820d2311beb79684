"""The RealMLP search space (Table G.2) and its weighted-choice mapping."""

import optuna
import pytest

from tabbench.models.realmlp.config import RealMLPConfig
from tabbench.search import realmlp as space


def test_default_config_is_realmlp_td_without_label_smoothing():
    cfg = RealMLPConfig.from_params(space.DEFAULT_CONFIG)
    assert cfg == RealMLPConfig()
    assert space.DEFAULT_CONFIG["ls_eps"] == 0.0
    assert space.DEFAULT_CONFIG["num_emb_type"] == "pbld"
    assert space.DEFAULT_CONFIG["hidden_sizes"] == [256, 256, 256]
    assert (space.DEFAULT_CONFIG["lr"], space.DEFAULT_CONFIG["wd"]) == (0.04, 0.02)
    assert space.DEFAULT_CONFIG["p_drop"] == 0.15 and space.DEFAULT_CONFIG["act"] == "selu"


@pytest.mark.parametrize(
    ("u", "expected"), [(0.0, "a"), (0.29, "a"), (0.3, "b"), (0.79, "b"), (0.8, "c"), (1.0, "c")]
)
def test_weighted_pick_is_inverse_cdf(u, expected):
    assert space._pick(u, ["a", "b", "c"], [0.3, 0.5, 0.2]) == expected


def test_weighted_pick_rejects_bad_weights():
    with pytest.raises(ValueError):
        space._pick(0.5, ["a", "b"], [0.5, 0.6])


def test_public_names():
    public = {n for n in vars(space) if not n.startswith("_")} - {
        "annotations",
        "itertools",
        "Sequence",
        "Any",
        "optuna",
        "RealMLPConfig",
    }
    assert public == {"DEFAULT_CONFIG", "suggest"}


def test_random_draws_stay_in_table_g2():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    draws = [space.suggest(study.ask()) for _ in range(300)]
    for d in draws:
        RealMLPConfig.from_params(d)  # valid and complete
        assert set(d) == set(space.DEFAULT_CONFIG)
        assert d["num_emb_type"] in {"none", "pbld", "pl", "plr"}
        assert 2e-2 <= d["lr"] <= 3e-1 and 0.05 <= d["plr_sigma"] <= 0.5
        assert d["p_drop"] in {0.0, 0.15, 0.3} and d["wd"] in {0.0, 2e-3, 2e-2}
        assert d["act"] in {"relu", "selu", "mish"} and d["ls_eps"] in {0.0, 0.1}
        assert d["hidden_sizes"] in ([256] * 3, [64] * 5, [512])
    front = sum(d["add_front_scale"] for d in draws) / len(draws)
    wide = sum(d["hidden_sizes"] == [256] * 3 for d in draws) / len(draws)
    mid_drop = sum(d["p_drop"] == 0.15 for d in draws) / len(draws)
    assert abs(front - 0.6) < 0.09 and abs(wide - 0.6) < 0.09 and abs(mid_drop - 0.5) < 0.09
