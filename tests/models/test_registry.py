import pytest

from tabbench.models.registry import epochs_key, get_trainer, n_epochs_for

EPOCHS = {"xgboost_default": 100, "xgboost_tuned": 1000, "mlp": 256, "realmlp": 128}


@pytest.mark.parametrize("name", ["xgboost", "mlp"])
def test_get_trainer(name):
    trainer = get_trainer(name)
    assert trainer.name == name and callable(trainer.train)


def test_unknown_model():
    with pytest.raises(ValueError, match="unknown model"):
        get_trainer("lightgbm")
    with pytest.raises(ValueError, match="unknown model"):
        epochs_key("lightgbm", 0)


def test_epochs_per_config():
    assert n_epochs_for("xgboost", 0, EPOCHS) == 100
    assert n_epochs_for("xgboost", 7, EPOCHS) == 1000
    assert n_epochs_for("mlp", 0, EPOCHS) == n_epochs_for("mlp", 3, EPOCHS) == 256
    assert n_epochs_for("realmlp", 2, EPOCHS) == 128
    with pytest.raises(ValueError, match="epochs.mlp"):
        n_epochs_for("mlp", 1, {"xgboost_default": 1})
