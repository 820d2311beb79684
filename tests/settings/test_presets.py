from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from tabbench.settings.presets import (
    PRESET_KEYS,
    PRESETS,
    default_value,
    resolve_config,
    scale_note,
)
from tabbench.settings.table import SETTINGS, default

ROOT = Path(__file__).resolve().parents[2]


def _config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def _schema() -> dict:
    return yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())


def test_shipped_config_is_valid_and_defaults_to_the_paper() -> None:
    cfg = _config()
    jsonschema.validate(cfg, _schema())
    resolved = resolve_config(cfg)
    assert resolved["preset"] == "paper"
    assert resolved["suite"] == "ye2024"
    assert resolved["n_splits"] == 5 and resolved["n_configs"] == 30
    assert resolved["max_rows"] == 100_000
    assert resolved["epochs"] == {
        "xgboost_default": 100,
        "xgboost_tuned": 1000,
        "mlp": 256,
        "realmlp": 256,
        "lightgbm_default": 100,  # an extension: XGBoost's convention
        "lightgbm_tuned": 1000,
    }


def test_every_preset_sets_every_scale_key_and_is_valid() -> None:
    for name, preset in PRESETS.items():
        assert set(preset) == set(PRESET_KEYS), name
        resolved = resolve_config({**_config(), "preset": name})
        jsonschema.validate(resolved, _schema())


def test_explicit_values_win_over_the_preset() -> None:
    cfg = {**_config(), "preset": "demo", "n_splits": 4, "epochs": {"mlp": 7}}
    resolved = resolve_config(cfg)
    assert resolved["n_splits"] == 4
    assert resolved["epochs"]["mlp"] == 7
    # other epoch keys still come from the preset
    assert resolved["epochs"]["realmlp"] == PRESETS["demo"]["epochs"]["realmlp"]
    assert resolved["suite"] == "demo"


@pytest.mark.parametrize(
    ("bad", "key", "value"),
    [({"models": ["xgboost", "catboost"]}, "models", "catboost"),
     ({"n_configs": {"catboost": 3}}, "n_configs", "catboost"),
     ({"epochs": {"mlp": 8, "lgbm": 3}}, "epochs", "lgbm")],
)
def test_unregistered_model_names_and_epochs_keys_are_named(bad, key, value) -> None:
    """The schema cannot list models (packages may add some): the registry checks them, naming
    the key, the value and what is registered."""
    cfg = {**_config(), **bad}
    jsonschema.validate(cfg, _schema())  # fine for the schema
    with pytest.raises(ValueError) as exc:
        resolve_config(cfg)
    text = str(exc.value)
    assert f"config key {key!r}" in text and repr(value) in text
    assert "xgboost" in text and "mlp" in text and "realmlp" in text  # the allowed values


def test_unknown_preset_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown preset 'huge'; choose one of"):
        resolve_config({"preset": "huge"})  # nothing close: no guess
    with pytest.raises(ValueError, match=r"unknown preset 'bundle' \(did you mean 'bundled'\?\)"):
        resolve_config({"preset": "bundle"})


@pytest.mark.parametrize(
    "bad",
    [{"n_splits": 0}, {"models": []}, {"models": [""]}, {"epochs": {"mlp": 0}},
     {"typo_key": 1}, {"sources": []}, {"device": "tpu"}],
)
def test_schema_rejects_bad_values(bad: dict) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**_config(), **bad}, _schema())


@pytest.mark.parametrize(
    ("value", "why"),
    [(1, "1 is less than the minimum of 2"), (-3, "-3 is less than the minimum of 2"),
     ("abc", "'abc' is not of type 'integer', 'null'"), (2.5, "2.5 is not of type"),
     (True, "True is not of type")],
)
def test_schema_rejects_bad_one_hot_caps_naming_the_key(value, why) -> None:
    with pytest.raises(jsonschema.ValidationError) as exc:
        jsonschema.validate({**_config(), "mlp_max_one_hot_levels": value}, _schema())
    assert list(exc.value.path) == ["mlp_max_one_hot_levels"]
    assert why in exc.value.message


def test_one_hot_cap_default_and_null() -> None:
    from tabbench.models.mlp_config import MAX_ONE_HOT_LEVELS as MLP_MAX_ONE_HOT_LEVELS

    assert _config()["mlp_max_one_hot_levels"] == MLP_MAX_ONE_HOT_LEVELS  # config = library
    for ok in (None, 2, 50_000):
        jsonschema.validate({**_config(), "mlp_max_one_hot_levels": ok}, _schema())


def test_nested_cli_strings_become_ints_and_bad_ones_still_fail() -> None:
    from tabbench.settings.presets import coerce_cli_strings

    cfg = coerce_cli_strings({**_config(), "epochs": {"mlp": "8", "realmlp": "null"}})
    assert cfg["epochs"] == {"mlp": 8, "realmlp": None}
    jsonschema.validate(cfg, _schema())
    bad = coerce_cli_strings({**_config(), "epochs": {"mlp": "eight"}})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, _schema())


def test_top_level_cli_null_becomes_none() -> None:
    """``--config mlp_max_one_hot_levels=null`` arrives as the string 'null'."""
    from tabbench.settings.presets import coerce_cli_strings

    for text in ("null", "None", "~"):
        cfg = coerce_cli_strings({**_config(), "mlp_max_one_hot_levels": text})
        assert cfg["mlp_max_one_hot_levels"] is None
        jsonschema.validate(cfg, _schema())
    kept = coerce_cli_strings({**_config(), "talent_dir": "nullable/dir", "preset": "demo"})
    assert kept["talent_dir"] == "nullable/dir" and kept["preset"] == "demo"


def test_bundled_preset_is_the_paper_protocol_on_the_shipped_data() -> None:
    from tabbench.models.registry import paper_epochs

    resolved = resolve_config({**_config(), "preset": "bundled"})
    paper = resolve_config(_config())
    assert resolved["suite"] == "demo" and resolved["sources"] == ["bundled"]
    for key in ("n_splits", "n_configs", "max_rows", "figures_large_rows", "models"):
        assert resolved[key] == paper[key], key
    assert resolved["epochs"] == paper_epochs()
    jsonschema.validate(resolved, _schema())


def test_n_configs_per_model_fills_left_out_models_from_the_preset() -> None:
    from tabbench.settings.presets import n_configs_for

    cfg = {**_config(), "preset": "bundled", "n_configs": {"xgboost": 10, "mlp": 0}}
    jsonschema.validate(cfg, _schema())
    resolved = resolve_config(cfg)
    assert n_configs_for(resolved, "xgboost") == 10
    assert n_configs_for(resolved, "mlp") == 0
    assert n_configs_for(resolved, "realmlp") == 30  # left out: the preset's
    flat = resolve_config({**_config(), "preset": "demo", "n_configs": 5})
    assert all(n_configs_for(flat, m) == 5 for m in ("xgboost", "mlp", "realmlp"))


def test_n_configs_mapping_from_the_command_line_is_coerced() -> None:
    from tabbench.settings.presets import coerce_cli_strings

    cfg = coerce_cli_strings({**_config(), "n_configs": {"xgboost": "30", "mlp": "0"}})
    assert cfg["n_configs"] == {"xgboost": 30, "mlp": 0}
    jsonschema.validate(cfg, _schema())
    for bad in ({"mlp": -1}, {"mlp": "ten"}, {}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(coerce_cli_strings({**_config(), "n_configs": bad}), _schema())


def test_max_rows_null_is_the_presets_cap_and_unlimited_is_no_cap() -> None:
    """``max_rows: null`` takes the preset's cap like every preset key; "no cap" has its own
    word; 0, which could be read either way, is rejected."""
    from tabbench.settings.presets import row_cap

    for preset, cap in (("paper", 100_000), ("demo", 3_000), ("smoke", 1_500)):
        cfg = {**_config(), "preset": preset, "max_rows": None}
        jsonschema.validate(cfg, _schema())
        assert row_cap(resolve_config(cfg)) == cap
    cfg = {**_config(), "max_rows": "unlimited"}
    jsonschema.validate(cfg, _schema())
    assert row_cap(resolve_config(cfg)) is None
    assert row_cap(resolve_config({**_config(), "max_rows": 250})) == 250
    for bad in ("None_", 0, -5, "all"):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**_config(), "max_rows": bad}, _schema())
    # `none` is one of the null spellings (tabbench.core.nulls.is_null): the preset's cap
    from tabbench.settings.presets import coerce_cli_strings

    coerced = coerce_cli_strings({**_config(), "max_rows": "none"})
    assert coerced["max_rows"] is None and row_cap(resolve_config(coerced)) == 100_000


def test_excluded_datasets_leave_the_suite_and_a_typo_is_an_error(tmp_path):
    from pathlib import Path

    import pytest

    from tabbench.data.manifest import suite_names

    demo = Path(__file__).resolve().parents[2] / "data" / "demo"
    every = suite_names("demo", demo)
    left = suite_names("demo", demo, exclude=["adult", "letter"])
    assert left == [n for n in every if n not in ("adult", "letter")]
    assert suite_names(["kc1", "pc1"], demo, exclude=["pc1"]) == ["kc1"]
    with pytest.raises(ValueError, match="'exclude': adlt not in the suite"):
        suite_names("demo", demo, exclude=["adlt"])


@pytest.mark.parametrize("preset", ["paper", "bundled", "large"])
def test_a_run_at_the_papers_scale_has_no_scale_note(preset):
    assert scale_note(resolve_config({"preset": preset})) is None
    # fewer random configs alone (the bundled study tunes with 10) is a smaller search, not a
    # reduced run; nor is a model trained at its default config only
    assert scale_note(resolve_config({"preset": preset, "n_configs": 10})) is None
    assert scale_note(resolve_config({"preset": preset, "n_configs": {"xgboost": 30, "mlp": 0,
                                                                       "realmlp": 0}})) is None


@pytest.mark.parametrize(("preset", "says"), [
    ("demo", "a reduced-scale run (preset demo: 2 splits instead of 5; fewer epochs "
             "(xgboost_tuned 200 of 1000, mlp 24 of 256, realmlp 24 of 256); rows capped at "
             "3,000 instead of 100,000; 2 random configs instead of 30) cannot judge the "
             "paper's claims"),
    ("smoke", "a reduced-scale run (preset smoke: 1 split instead of 5; fewer epochs "
              "(xgboost_default 10 of 100, "),
])
def test_the_demo_and_smoke_presets_say_they_cannot_judge_the_paper(preset, says):
    assert scale_note(resolve_config({"preset": preset})).startswith(says)


def test_one_reduction_of_the_papers_protocol_is_a_reduced_run():
    note = scale_note(resolve_config({"preset": "paper", "n_splits": 1}))
    assert note.startswith("a reduced-scale run (preset paper: 1 split instead of 5)")
    assert "rows capped at 5,000" in scale_note(resolve_config({"preset": "paper",
                                                                "max_rows": 5000}))


def test_a_keys_fallback_is_the_tables_default_else_the_default_presets():
    """What a command falls back on where nothing gives a key (``tabbench aggregate
    --large-rows``, a summary of a folder that says nothing): declared once, in the table or
    the default preset, never again in a signature."""
    assert default_value("rope_percent") == SETTINGS["rope_percent"].default
    assert default_value("seed") == SETTINGS["seed"].default
    assert SETTINGS["figures_large_rows"].default is None
    large = default_value("figures_large_rows")
    assert large == PRESETS[default("preset")]["figures_large_rows"] and large >= 1
    assert resolve_config({})["figures_large_rows"] == large
