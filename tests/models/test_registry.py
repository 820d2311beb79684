import pytest

from tabbench.models.mlp_config import MAX_ONE_HOT_LEVELS as MLP_MAX_ONE_HOT_LEVELS
from tabbench.models.registry import (
    epochs_key,
    get_trainer,
    n_epochs_for,
    non_default_options,
    resolve_trainer_options,
)

EPOCHS = {"xgboost_default": 100, "xgboost_tuned": 1000, "mlp": 256, "realmlp": 128}


@pytest.mark.parametrize("name", ["xgboost", "mlp"])
def test_get_trainer(name):
    trainer = get_trainer(name)
    assert trainer.name == name and callable(trainer.train)


def test_unknown_model():
    with pytest.raises(ValueError, match="unknown model"):
        get_trainer("nosuchmodel")
    with pytest.raises(ValueError, match="unknown model"):
        epochs_key("nosuchmodel", 0)


def test_epochs_per_config():
    assert n_epochs_for("xgboost", 0, EPOCHS) == 100
    assert n_epochs_for("xgboost", 7, EPOCHS) == 1000
    assert n_epochs_for("mlp", 0, EPOCHS) == n_epochs_for("mlp", 3, EPOCHS) == 256
    assert n_epochs_for("realmlp", 2, EPOCHS) == 128
    with pytest.raises(ValueError, match="epochs.mlp"):
        n_epochs_for("mlp", 1, {"xgboost_default": 1})


def test_trainer_options_reach_the_trainer_and_are_checked():
    assert get_trainer("mlp", max_one_hot_levels=5).max_one_hot_levels == 5
    assert get_trainer("mlp", max_one_hot_levels=None).max_one_hot_levels is None
    assert get_trainer("mlp").max_one_hot_levels == MLP_MAX_ONE_HOT_LEVELS
    with pytest.raises(ValueError, match=r"model 'xgboost' takes no trainer option"):
        get_trainer("xgboost", max_one_hot_levels=5)
    for bad in (1, -3, "abc", 2.5, True):
        with pytest.raises(ValueError, match="mlp_max_one_hot_levels.*integer >= 2"):
            get_trainer("mlp", max_one_hot_levels=bad)


def test_non_default_options():
    assert non_default_options("mlp", {}) == {}
    assert non_default_options("mlp", {"max_one_hot_levels": MLP_MAX_ONE_HOT_LEVELS}) == {}
    assert non_default_options("mlp", {"max_one_hot_levels": None}) == {
        "max_one_hot_levels": None}
    assert resolve_trainer_options("xgboost", {}) == {}


def test_a_model_says_what_its_epochs_are_called():
    """Figures label an epoch by the model's registration (a boosting round for the boosted
    trees), not by its name; a model the registry does not know gets "epoch"."""
    from tabbench.models.registry import epoch_name

    assert epoch_name("xgboost") == epoch_name("lightgbm") == "boosting round"
    assert epoch_name("mlp") == epoch_name("realmlp") == "epoch"
    assert epoch_name("not-installed-here") == "epoch"
