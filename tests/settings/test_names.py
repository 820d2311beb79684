"""Names a user types are checked while the configuration is read (tabbench.settings.names,
tabbench.settings.presets.check_registered_names): one line, naming the key, with the closest
known name; nothing is fetched or written for a name nobody has."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures import data_fixtures

from tabbench.core.suggest import did_you_mean
from tabbench.settings.names import dataset_name_error, suite_datasets, unknown_suite_names
from tabbench.settings.presets import check_registered_names

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def _config(suite, sources=("bundled",), exclude=(), talent_dir=None, preset="demo") -> dict:
    return {"suite": suite, "sources": list(sources), "exclude": list(exclude),
            "talent_dir": talent_dir, "preset": preset}


def _refusal(config: dict) -> str:
    with pytest.raises(ValueError) as e:
        suite_datasets(config, DEMO)
    text = str(e.value)
    assert "\n" not in text, text
    return text


def _unknown(config: dict, demo_dir: Path = DEMO) -> str:
    text = unknown_suite_names(config, demo_dir)
    assert text is not None and "\n" not in text, text
    assert text.startswith("invalid configuration: config key 'suite': "), text
    return text


def test_a_typo_in_an_explicit_suite_is_refused_with_the_close_name():
    config = _config(["segment", "kc11"])
    text = _unknown(config)
    assert text.endswith("no source of sources=['bundled'] has dataset 'kc11' (did you mean "
                         "'kc1'?)"), text
    assert suite_datasets(config, DEMO) == ["segment", "kc11"]  # a valid name, just unknown


def test_every_unknown_name_is_counted_and_a_far_one_lists_the_known_names():
    text = _unknown(_config(["zzzz", "segment", "qqqq"]))
    assert "'zzzz' (and 1 more: qqqq)" in text and "did you mean" not in text
    assert "known: " in text and "segment" in text and "kc1" in text


def test_a_name_only_another_source_has_is_refused_for_the_chosen_ones():
    assert unknown_suite_names(_config(["kc1"], sources=("openml",)), DEMO) is None
    text = _unknown(_config(["banknote-authentication"], sources=("bundled",)))
    assert "no source of sources=['bundled']" in text


def test_a_talent_folder_counts_as_known(tmp_path):
    data_fixtures.make_talent_folder(tmp_path / "talent", "toy", sizes=(300, 100, 100))
    config = _config(["toy", "kc1"], sources=("talent", "bundled"),
                     talent_dir=str(tmp_path / "talent"))
    assert unknown_suite_names(config, DEMO) is None
    assert suite_datasets(config, DEMO) == ["toy", "kc1"]


def test_named_suites_and_a_presets_own_list_are_not_checked_against_the_sources(tmp_path):
    """ye2024 has datasets no bundled copy has, and smoke's list needs data/demo: the data
    stage reports what no source has unavailable (a checkout without data/demo included)."""
    assert unknown_suite_names(_config("ye2024"), DEMO) is None
    assert len(suite_datasets(_config("ye2024"), DEMO)) == 200
    assert unknown_suite_names(_config(["segment", "kc1"], preset="smoke"),
                               tmp_path / "no_demo") is None
    assert "has dataset 'segment'" in _unknown(_config(["segment"], preset="smoke"),
                                               tmp_path / "no_demo")


@pytest.mark.parametrize(("key", "name", "says"), [
    ("suite", "-segment", "starts with '-'"),
    ("suite", "../segment", "path separator"),
    ("suite", " ", "cannot be empty"),
    ("exclude", "--dataset", "starts with '-'"),
])
def test_a_name_the_data_jobs_cannot_take_is_refused(key, name, says):
    config = _config(["segment", name]) if key == "suite" else _config("demo", exclude=[name])
    text = _refusal(config)
    assert text.startswith(f"config key {key!r}: ") and says in text, text


def test_dataset_name_error_accepts_real_names():
    for name in ("kc1", "kr-vs-k", "MagicTelescope", "acs-employment-ma", "a.b_c"):
        assert dataset_name_error(name) is None, name


def test_an_excluded_typo_gets_the_close_name_too():
    text = _refusal(_config("demo", exclude=["segmnet"]))
    assert "config key 'exclude': segmnet not in the suite" in text
    assert "did you mean 'segment'" in text


@pytest.mark.parametrize(("config", "says"), [
    ({"models": ["xgbost"]}, "config key 'models': unknown model 'xgbost' (did you mean "
                             "'xgboost'?)"),
    ({"n_configs": {"realmpl": 3}}, "config key 'n_configs': unknown model 'realmpl' (did you "
                                    "mean 'realmlp'?)"),
    ({"patience": {"lightgmb": [2]}}, "config key 'patience': unknown model 'lightgmb' (did "
                                      "you mean 'lightgbm'?)"),
    ({"epochs": {"xgboost_defualt": 3}}, "config key 'epochs': unknown key 'xgboost_defualt' "
                                         "(did you mean 'xgboost_default' or 'xgboost_tuned'?)"),
])
def test_model_names_and_epochs_keys_get_the_close_name(config, says):
    with pytest.raises(ValueError) as e:
        check_registered_names(config)
    assert str(e.value).startswith(says), str(e.value)


def test_did_you_mean_says_nothing_without_a_close_name():
    assert did_you_mean("tabnet", ["xgboost", "mlp"]) == ""
    assert did_you_mean("mpl", ["xgboost", "mlp"]) == " (did you mean 'mlp'?)"
