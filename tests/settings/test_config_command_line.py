"""Settings as the command line gives them: what ``--config``/``--configfile`` hand the
workflow, settled as the workflow settles them at parse time.

Snakemake parses ``--config`` values with its own rules (``n_splits=0`` is an int, a nested
``epochs={mlp: 8}`` arrives with string values, ``key=null`` as the string ``'null'``) and
merges ``--configfile`` files under them; ``workflow/rules/common.smk`` passes that dictionary
(``workflow.config_settings.overwrite_config``) to :func:`tabbench.settings.run_config.settle`
beside config.yaml and exits with the error's text. These tests build the dictionary with
Snakemake's own parser and settings class and call ``settle`` the same way, so each bad value's
message is checked without starting Snakemake; tests/workflow/test_config_faults.py runs a few of
them through the real workflow (the message is the last lines of the run, and no job ran).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from snakemake.cli import parse_config
from snakemake.settings.types import ConfigSettings

from tabbench.settings.run_config import settle
from tabbench.settings.schema import ConfigError

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"

#: --config value -> what the last lines must say: (key, reason, allowed values)
SCHEMA_CASES = {
    "n_splits": (["n_splits=0"], ("n_splits", "0 is less than the minimum of 1",
                                  "an integer from 1 to 100 or null")),
    "typo_key": (["typo_key=1"], ("typo_key", "not a setting (a typo?)",
                                  "allowed keys: preset, suite,")),
    "typo_setting": (["n_split=2"], ("n_split", "not a setting (did you mean 'n_splits'?)",
                                     "allowed keys: preset, suite,")),
    "models": (["models=[]"], ("models", "[] should be non-empty",
                               "null or a list of (a string)")),
    "sources": (["sources=[openml,s3]"], ("sources", "'s3' is not one of",
                                          "one of talent, openml, bundled")),
    "device": (["device=gpu"], ("device", "'gpu' does not match",
                                "allowed: a string (cpu, cuda (each network job claims")),
    "one_hot_1": (["mlp_max_one_hot_levels=1"],
                  ("mlp_max_one_hot_levels", "1 is less than the minimum of 2",
                   "an integer >= 2 or null")),
    "one_hot_-3": (["mlp_max_one_hot_levels=-3"],
                   ("mlp_max_one_hot_levels", "-3 is less than the minimum of 2",
                    "an integer >= 2 or null")),
    "one_hot_abc": (["mlp_max_one_hot_levels=abc"],
                    ("mlp_max_one_hot_levels", "'abc' is not of type 'integer', 'null'",
                     "an integer >= 2 or null")),
}

#: names the schema cannot know (packages may register models): checked against the registry.
#: How the bad value is given (--config values, --configfile text), what the error must say.
REGISTRY_CASES = {
    "models": (["models=[xgboost,catboost]"], None,
               ["config key 'models'", "'catboost'", "xgboost, mlp, realmlp"]),
    "n_configs": (["n_configs={catboost: 3}"], None,
                  ["config key 'n_configs'", "'catboost'", "xgboost, mlp, realmlp"]),
    "epochs": ([], "epochs: {mlp: 8, lgbm: 3}\n",
               ["config key 'epochs'", "'lgbm'", "xgboost_default, xgboost_tuned, mlp, realmlp"]),
}


def _settle(tmp_path: Path, config: list[str], configfile: str | None = None):
    """``settle`` on config.yaml (its results folder moved into ``tmp_path``) and what
    Snakemake makes of ``--config *config`` (and ``--configfile`` holding ``configfile``)."""
    defaults = yaml.safe_load((ROOT / "config.yaml").read_text())
    defaults.update(results_dir=str(tmp_path / "results"), data_dir=str(tmp_path / "data"))
    files = []
    if configfile is not None:
        files.append(tmp_path / "mine.yaml")
        files[0].write_text(configfile)
    overrides = ConfigSettings(config=parse_config(config), configfiles=files).overwrite_config
    return settle(defaults, overrides, SCHEMA)


@pytest.mark.parametrize("key", sorted(SCHEMA_CASES))
def test_a_bad_value_is_three_lines_naming_key_reason_and_allowed_values(tmp_path, key):
    config, (name, reason, allowed) = SCHEMA_CASES[key]
    with pytest.raises(ConfigError) as e:
        _settle(tmp_path, config)
    text = str(e.value)
    lines = text.strip().splitlines()
    first, why, what = lines[-3:]
    assert first.startswith("tabbench: invalid configuration"), text
    assert why.startswith(f"  {name}") and reason in why, text
    assert allowed in what, text
    assert len(lines) <= 8, text  # no config dump
    assert "'results_dir'" not in text
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("key", sorted(REGISTRY_CASES))
def test_an_unregistered_name_is_a_short_error_naming_the_registered_ones(tmp_path, key):
    config, configfile, messages = REGISTRY_CASES[key]
    with pytest.raises(ConfigError) as e:
        _settle(tmp_path, config, configfile)
    lines = str(e.value).strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("tabbench: invalid configuration"), lines
    for message in messages:
        assert message in lines[1], lines


def test_a_nested_epochs_override_is_read_as_numbers(tmp_path):
    """``--config epochs={mlp: 8}`` reaches the workflow as ``{'mlp': '8'}``."""
    cfg = _settle(tmp_path, ["preset=smoke", "epochs={mlp: 8}"]).config
    assert cfg["epochs"]["mlp"] == 8


@pytest.mark.parametrize(("value", "cap"), [("null", None), ("5", 5)])
def test_the_one_hot_cap_on_the_command_line_is_accepted(tmp_path, value, cap):
    """``mlp_max_one_hot_levels=null`` (no cap) arrives as the string 'null'; it must mean null."""
    cfg = _settle(tmp_path, ["preset=smoke", f"mlp_max_one_hot_levels={value}"]).config
    assert cfg["mlp_max_one_hot_levels"] == cap
