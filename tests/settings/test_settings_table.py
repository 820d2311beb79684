"""The settings table (tabbench.settings.table) against every copy that cannot be derived from it:
the schema's keys and types, config.yaml's keys, values and comments, the CLI flags' defaults,
the data stage's parameter defaults, and the generated reference page."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

import yaml

from tabbench.cli import build_parser
from tabbench.data.filtering import FilterParams
from tabbench.data.sources import SourceOptions
from tabbench.settings.folder import FOLDER
from tabbench.settings.presets import default_value
from tabbench.settings.reference import PAGE_PATH, SCHEMA_PATH, configuration_page
from tabbench.settings.run_config import INVOCATION_KEYS as RUN_CONFIG_INVOCATION_KEYS
from tabbench.settings.schema import check_config, with_table
from tabbench.settings.table import (
    INVOCATION_KEYS,
    SETTINGS,
    Effect,
    all_settings,
    defaults,
    trainer_option_settings,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = yaml.safe_load((ROOT / SCHEMA_PATH).read_text())
CONFIG_YAML = ROOT / "config.yaml"


def test_the_schema_types_every_key_of_the_table_and_no_other():
    listed = set(SCHEMA["properties"])
    assert listed - set(trainer_option_settings()) == set(SETTINGS)
    assert listed <= set(all_settings())


def test_the_defaults_are_a_valid_configuration_and_reach_the_schema():
    check_config(defaults(), SCHEMA)
    full = with_table(SCHEMA)["properties"]
    for key, setting in all_settings().items():
        assert full[key]["default"] == setting.default, key
        assert full[key]["description"] == setting.help, key


def test_config_yaml_has_every_key_once_at_its_default_each_under_a_comment():
    text = CONFIG_YAML.read_text()
    shipped = yaml.safe_load(text)
    assert sorted(shipped) == sorted(all_settings())
    for key, setting in all_settings().items():
        assert shipped[key] == setting.default, key
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not re.match(r"^[a-z_]+:", line):
            continue
        j = i - 1  # keys of one paragraph share the comment above its first key
        while j >= 0 and re.match(r"^[a-z_]+:", lines[j]):
            j -= 1
        assert j >= 0 and lines[j].startswith("#"), f"config.yaml: {line!r} has no comment"


def test_the_keys_that_may_change_between_runs_are_those_that_change_no_record():
    assert INVOCATION_KEYS == {k for k, s in SETTINGS.items() if s.effect is not Effect.STUDY}
    assert RUN_CONFIG_INVOCATION_KEYS is INVOCATION_KEYS
    assert {"results_dir", "train_threads", "figures_large_rows"} <= INVOCATION_KEYS
    assert not {"seed", "epochs", "device", "data_dir"} & INVOCATION_KEYS


def _actions() -> list[argparse.Action]:
    """Every option of every ``tabbench`` subcommand (nested ones included)."""
    out, todo = [], [build_parser()]
    while todo:
        parser = todo.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(action.choices.values())
            else:
                out.append(action)
    return out


def test_the_folders_own_setting_reads_as_such():
    """A help text or a message that shows the default "the folder's own" names it."""
    assert repr(FOLDER) == "FOLDER"


def test_a_cli_flag_that_takes_a_setting_defaults_to_the_tables_value():
    """Where a flag has a default of its own (not required, not "the caller decides" or "the
    results folder's own": None, FOLDER), it is the setting's: the table's default; for a
    redraw setting that a preset fills, the default preset's
    (:func:`tabbench.settings.presets.default_value`). A study setting a preset fills is left
    out: the stages that take it get it from the workflow, resolved for the run's preset."""
    by_flag = {s.cli_flag: s for s in all_settings().values()
               if s.cli_flag and (not s.preset or s.effect is Effect.REDRAW)}
    checked = set()
    for action in _actions():
        for flag in action.option_strings:
            setting = by_flag.get(flag)
            if (setting is None or action.required
                    or action.default in (None, argparse.SUPPRESS, FOLDER)):
                continue
            want = default_value(setting.key)
            assert action.default == want, (flag, action.default, want)
            checked.add(setting.key)
    assert {"keep_for_restop", "gpu_claim_timeout", "restop_max_mb", "network_memory_gb",
            "replay_rtol", "epoch_ties", "retry_failed", "openml_timeout", "rope_percent",
            "figures_large_rows"} <= checked


def test_the_data_stages_parameters_default_to_the_tables_values():
    """The data package stands below the settings and cannot import them: its defaults are
    held against the table here."""
    for cls, keys in ((FilterParams, ("min_rows", "max_classes", "all_nan_columns")),
                      (SourceOptions, ("openml_timeout", "openml_retries",
                                       "on_checksum_mismatch"))):
        fields = {f.name: f.default for f in dataclasses.fields(cls)}
        for key in keys:
            assert fields[key] == SETTINGS[key].default, (cls.__name__, key)


def test_the_reference_page_is_the_generated_one():
    """docs/configuration.md is generated: after a change of the table or the schema, rewrite
    it with ``python -m tabbench.settings.reference``."""
    assert (ROOT / PAGE_PATH).read_text() == configuration_page(SCHEMA)
