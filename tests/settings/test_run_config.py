"""tabbench.settings.run_config: short validation errors, and the settings a results folder
remembers.

`settle(defaults, overrides, schema)` is what the workflow runs at parse time with config.yaml
and the --config/--configfile values; these tests call it the same way.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import yaml
from fixtures.synthetic import SyntheticDataset, write_synthetic_results

from tabbench.core.layout import ResultsLayout
from tabbench.data.manifest import known_names, unknown_dataset_message, ye2024_manifest
from tabbench.report.redraw import collect_selected, summary_frames
from tabbench.settings.folder import ResultsFolder
from tabbench.settings.run_config import INVOCATION_KEYS, settle
from tabbench.settings.schema import ConfigError, check_config

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())


def remember(results, config) -> bool:
    """Write the folder's settings as the workflow's start hook does."""
    return ResultsFolder.open(results).remember(config)


def _defaults(results: Path) -> dict:
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    return {**cfg, "results_dir": str(results), "data_dir": str(results.parent / "data")}


def _error(config: dict) -> str:
    with pytest.raises(ConfigError) as e:
        check_config(config, SCHEMA)
    return str(e.value)


# --- validation ----------------------------------------------------------------------------


def test_typo_names_the_key_and_the_allowed_keys_without_the_config():
    cfg = {**yaml.safe_load((ROOT / "config.yaml").read_text()), "n_split": 2}
    msg = _error(cfg)
    lines = msg.splitlines()
    assert len(lines) == 3, msg
    assert lines[1] == "  n_split: not a setting (did you mean 'n_splits'?)"
    assert lines[2].startswith("    allowed keys: preset, suite, sources,") and "n_splits" in msg
    assert "results_dir': 'results'" not in msg and "openml_cache_dir:" not in msg


@pytest.mark.parametrize(("change", "line"), [
    # no known name is close: no guess
    ({"qwertz": 1}, "  qwertz: not a setting (a typo?)"),
    # several: each close one named beside its typo
    ({"n_split": 2, "sed": 1, "qwertz": 1},
     "  n_split, sed, qwertz: not a setting (typos?: n_split (did you mean 'n_splits'?); "
     "sed (did you mean 'seed'?))"),
    # a preset, an enum value
    ({"preset": "dmeo"}, "  preset: 'dmeo' is not one of ['paper', 'demo', 'bundled', 'large', "
                         "'smoke'] (did you mean 'demo'?)"),
    ({"preset": "Smoke"}, "  preset: 'Smoke' is not one of ['paper', 'demo', 'bundled', "
                          "'large', 'smoke'] (did you mean 'smoke'?)"),
])
def test_an_unknown_setting_or_preset_name_says_which_known_one_is_close(change, line):
    cfg = {**yaml.safe_load((ROOT / "config.yaml").read_text()), **change}
    assert line in _error(cfg).splitlines(), _error(cfg)


@pytest.mark.parametrize(("change", "key", "reason", "allowed"), [
    ({"n_splits": 0}, "n_splits", "0 is less than the minimum of 1",
     "an integer from 1 to 100 or null"),
    ({"device": "gpu"}, "device", "'gpu' does not match", "cpu, cuda (each network job claims"),
    ({"device": "cuda:x"}, "device", "'cuda:x' does not match", "or cuda:<index> (pinned"),
    ({"models": []}, "models", "[] should be non-empty", "null or a list of (a string)"),
    ({"mlp_max_one_hot_levels": "abc"}, "mlp_max_one_hot_levels",
     "'abc' is not of type 'integer', 'null'", "an integer >= 2 or null"),
    ({"epochs": {"mlp": 0}}, "epochs.mlp", "0 is less than the minimum of 1", "an integer >= 1"),
])
def test_bad_value_names_key_reason_and_allowed_values(change, key, reason, allowed):
    cfg = {**yaml.safe_load((ROOT / "config.yaml").read_text()), **change}
    msg = _error(cfg)
    first, why, what = msg.splitlines()[-3:]
    assert first.startswith("tabbench: invalid configuration"), msg
    assert why.startswith(f"  {key}: ") and reason in why, msg
    assert allowed in what, msg


@pytest.mark.parametrize(("override", "says"), [
    ({"models": ["xgboost", "catboost"]}, "config key 'models': unknown model 'catboost'"),
    ({"epochs": {"mlp": 8, "lgbm": 3}}, "config key 'epochs': unknown key 'lgbm'"),
])
def test_unregistered_names_are_short_errors_too(tmp_path, override, says):
    """Names the schema cannot list (the registries' models and epochs keys) are checked when
    the config is resolved; the error has the same short form."""
    with pytest.raises(ConfigError) as e:
        settle(_defaults(tmp_path / "results"), override, SCHEMA)
    first, why = str(e.value).splitlines()
    assert first.startswith("tabbench: invalid configuration") and why.startswith(f"  {says}")


def test_shipped_config_is_valid():
    check_config(yaml.safe_load((ROOT / "config.yaml").read_text()), SCHEMA)


# --- the folder's settings -----------------------------------------------------------------


def test_a_new_folder_takes_this_invocations_settings(tmp_path):
    res = settle(_defaults(tmp_path / "results"), {"preset": "demo"}, SCHEMA)
    assert res.stored is None and res.notes == []
    assert res.config["preset"] == "demo" and res.config["n_splits"] == 2
    assert res.config["figures_large_rows"] == 3000


def test_folder_settings_replace_config_yaml_without_repeating_config(tmp_path):
    results = tmp_path / "results"
    first = settle(_defaults(results), {"preset": "demo", "n_configs": 3}, SCHEMA)
    assert remember(results, first.config)
    later = settle(_defaults(results), {}, SCHEMA)  # e.g. `snakemake figures`, no --config
    assert later.config == first.config
    assert later.stored is not None
    assert "preset demo" in later.notes[0] and "config.yaml's preset='paper'" in later.notes[0]
    same = settle(_defaults(results), {"preset": "demo", "n_configs": 3}, SCHEMA)
    assert same.config == first.config


def test_a_config_that_disagrees_with_the_folder_is_refused_naming_keys(tmp_path):
    results = tmp_path / "results"
    remember(results, settle(_defaults(results), {"preset": "demo"}, SCHEMA).config)
    with pytest.raises(ConfigError) as e:
        settle(_defaults(results), {"preset": "paper", "n_splits": 5, "seed": 0}, SCHEMA)
    msg = str(e.value)
    assert "preset: folder 'demo', asked 'paper'" in msg
    assert "n_splits: folder 2, asked 5" in msg
    assert "seed" not in msg.split("Nothing was run")[0]  # the same value: not a difference
    assert f"edit {ResultsLayout(results).run_config}" in msg
    with pytest.raises(ConfigError, match=r"epochs: folder"):
        settle(_defaults(results), {"epochs": {"mlp": 8}}, SCHEMA)


def test_invocation_keys_may_change_without_touching_the_study(tmp_path):
    results = tmp_path / "results"
    remember(results, settle(_defaults(results), {"preset": "smoke", "device": "cuda"},
                             SCHEMA).config)
    res = settle(_defaults(results), {"train_threads": 4, "gpu_claim_timeout": 5,
                                      "figures_large_rows": 100}, SCHEMA)
    assert res.config["train_threads"] == 4 and res.config["figures_large_rows"] == 100
    assert res.config["device"] == "cuda"  # the folder's, though config.yaml says cpu
    assert {"train_threads", "gpu_claim_timeout", "results_dir"} <= INVOCATION_KEYS
    with pytest.raises(ConfigError, match="device: folder 'cuda', asked 'cpu'"):
        settle(_defaults(results), {"device": "cpu"}, SCHEMA)


def test_an_edited_run_config_is_the_way_to_change_a_study(tmp_path):
    results = tmp_path / "results"
    remember(results, settle(_defaults(results), {"preset": "smoke"}, SCHEMA).config)
    path = Path(ResultsLayout(results).run_config)
    path.write_text(path.read_text().replace("n_configs: 1", "n_configs: 4"))
    assert settle(_defaults(results), {}, SCHEMA).config["n_configs"] == 4
    path.write_text(path.read_text() + "n_split: 3\n")
    with pytest.raises(ConfigError, match=r"(?s)run_config.yaml.*n_split: not a setting"):
        settle(_defaults(results), {}, SCHEMA)


def test_a_folder_from_before_run_config_keeps_its_summarys_large_threshold(tmp_path):
    results = tmp_path / "results"
    meta = Path(ResultsLayout(results).summary("meta.json"))
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"large_rows": 3000}))
    res = settle(_defaults(results), {}, SCHEMA)
    assert res.stored is None and res.config["figures_large_rows"] == 3000 and res.notes
    assert settle(_defaults(results), {"preset": "smoke"}, SCHEMA).config[
        "figures_large_rows"] == 1500
    assert ResultsFolder.open(results).redraw_settings.large_rows == 3000


@pytest.mark.parametrize(("preset", "leakage"), [("paper", "report"), ("demo", "drop"),
                                               ("bundled", "drop"), ("large", "drop"),
                                               ("smoke", "drop")])
def test_the_leakage_check_drops_except_on_the_papers_own_suite(tmp_path, preset, leakage):
    res = settle(_defaults(tmp_path / "results"), {"preset": preset}, SCHEMA)
    assert res.config["leakage"] == leakage
    assert settle(_defaults(tmp_path / "other"), {"preset": preset, "leakage": "drop"},
                  SCHEMA).config["leakage"] == "drop"


@pytest.mark.parametrize("preset", ["paper", "bundled"])
def test_a_folder_whose_settings_lack_the_leakage_key_runs_as_it_did(tmp_path, preset):
    """A run_config.yaml without the key (docs/results/bundled's) ran its filter jobs with
    drop, whose flag is none: it keeps drop, so no filter job reruns; what it was made with
    (for a reader of the folder) is report, as without the check."""
    results = tmp_path / "results"
    remember(results, settle(_defaults(results), {"preset": preset}, SCHEMA).config)
    path = Path(ResultsLayout(results).run_config)
    stored = yaml.safe_load(path.read_text())
    del stored["leakage"]
    path.write_text(yaml.safe_dump(stored))
    assert settle(_defaults(results), {}, SCHEMA).config["leakage"] == "drop"
    assert ResultsFolder.open(results).settings_with_defaults()["leakage"] == "report"
    stored["leakage"] = "report"
    path.write_text(yaml.safe_dump(stored))
    assert settle(_defaults(results), {}, SCHEMA).config["leakage"] == "report"


def test_remember_writes_once_atomically_and_never_over_a_file(tmp_path):
    results = tmp_path / "results"
    cfg = settle(_defaults(results), {"preset": "smoke"}, SCHEMA).config
    outcomes = []
    threads = [threading.Thread(target=lambda: outcomes.append(remember(results, cfg)))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == [False] * 7 + [True]
    stored = ResultsFolder.open(results).recorded
    assert stored == {**{k: v for k, v in cfg.items() if k != "results_dir"},
                      "data_dir_from_results": cfg["data_dir"]}  # absolute: as given
    assert not remember(results, {**cfg, "preset": "paper"})
    assert ResultsFolder.open(results).recorded["preset"] == "smoke"
    assert [p.name for p in results.iterdir()] == ["run_config.yaml"]  # no temp file left


def test_a_folder_that_cannot_be_written_is_one_line(tmp_path):
    """A results folder beneath a file (as a read-only one, the write fails): a ConfigError in
    one line naming the file and the key, not an OSError's traceback."""
    (tmp_path / "file").write_text("")
    results = tmp_path / "file" / "results"
    config = settle(_defaults(results), {"preset": "smoke"}, SCHEMA).config
    with pytest.raises(ConfigError) as e:
        remember(results, config)
    text = str(e.value)
    assert "\n" not in text and text.startswith("tabbench: cannot write "), text
    assert "run_config.yaml" in text and "must be writable (results_dir)" in text


def test_folder_settings_read_run_config(tmp_path):
    results = tmp_path / "results"
    assert ResultsFolder.open(results).redraw_settings.large_rows is None
    remember(results, settle(_defaults(results), {"preset": "demo"}, SCHEMA).config)
    fs = ResultsFolder.open(results).redraw_settings
    assert (fs.large_rows, fs.n_splits) == (3000, 2)
    assert fs.source.endswith("run_config.yaml")


def test_the_tie_rule_is_a_study_setting_with_one_set_of_values(tmp_path):
    """epoch_ties: the schema's values are tabbench.summary.select's, config.yaml's is its default;
    a
    folder keeps its rule (a --config that changes it is refused) and a folder written before
    the key reads as the default rule."""
    from tabbench.summary.select import DEFAULT_EPOCH_TIES, EPOCH_TIES

    assert tuple(SCHEMA["properties"]["epoch_ties"]["enum"]) == EPOCH_TIES
    assert yaml.safe_load((ROOT / "config.yaml").read_text())["epoch_ties"] == DEFAULT_EPOCH_TIES
    assert "epoch_ties" in _error({"preset": "demo", "epoch_ties": "middle"})
    results = tmp_path / "results"
    remember(results, settle(_defaults(results), {"preset": "demo", "epoch_ties": "last"},
                             SCHEMA).config)
    assert ResultsFolder.open(results).redraw_settings.epoch_ties == "last"
    assert settle(_defaults(results), {}, SCHEMA).config["epoch_ties"] == "last"
    with pytest.raises(ConfigError, match="epoch_ties: folder 'last', asked 'first'"):
        settle(_defaults(results), {"epoch_ties": "first"}, SCHEMA)
    old = tmp_path / "old"
    old.mkdir()
    (old / "run_config.yaml").write_text(yaml.safe_dump({"preset": "demo"}))
    assert ResultsFolder.open(old).redraw_settings.epoch_ties == DEFAULT_EPOCH_TIES


def test_the_one_hot_cap_is_a_study_setting_of_the_folder(tmp_path):
    """mlp_max_one_hot_levels changes the mlp records: a folder keeps its cap, a --config that
    changes it is refused, and a cap edited in run_config.yaml is what the next run takes."""
    results = tmp_path / "results"
    asked = {"preset": "smoke", "mlp_max_one_hot_levels": 1000}
    remember(results, settle(_defaults(results), asked, SCHEMA).config)
    assert "mlp_max_one_hot_levels" not in INVOCATION_KEYS
    assert settle(_defaults(results), {"mlp_max_one_hot_levels": 1000},
                  SCHEMA).config["mlp_max_one_hot_levels"] == 1000
    with pytest.raises(ConfigError, match="mlp_max_one_hot_levels: folder 1000, asked 5"):
        settle(_defaults(results), {"mlp_max_one_hot_levels": 5}, SCHEMA)
    stored = ResultsLayout(results).run_config
    edited = {**yaml.safe_load(Path(stored).read_text()), "mlp_max_one_hot_levels": 5}
    Path(stored).write_text(yaml.safe_dump(edited))
    assert settle(_defaults(results), {}, SCHEMA).config["mlp_max_one_hot_levels"] == 5


def test_the_patiences_are_a_redraw_setting_checked_like_the_others(tmp_path):
    """patience: a list or a mapping model -> list of integers >= 1, checked by the schema and
    the registry; it may differ from the folder's (it reselects and redraws, never retrains),
    and the folder remembers its own."""
    assert "patience" in INVOCATION_KEYS
    assert "patience" in _error({"preset": "demo", "patience": [0]})
    assert "patience" in _error({"preset": "demo", "patience": "often"})
    results = tmp_path / "results"
    with pytest.raises(ConfigError, match="'patience': unknown model 'catboost'"):
        settle(_defaults(results), {"patience": {"catboost": [5]}}, SCHEMA)
    remember(results, settle(_defaults(results), {"preset": "smoke"}, SCHEMA).config)
    assert ResultsFolder.open(results).redraw_settings.patience == [1, 2]  # the smoke preset's
    asked = settle(_defaults(results), {"patience": ["10", "50"]}, SCHEMA)  # as --config
    assert asked.config["patience"] == [10, 50]
    mapping = settle(_defaults(results), {"patience": {"mlp": ["4"], "xgboost": "null"}},
                     SCHEMA)
    assert mapping.config["patience"] == {"mlp": [4], "xgboost": None}
    assert settle(_defaults(results), {}, SCHEMA).config["patience"] == [1, 2]
    paper = tmp_path / "paper"
    remember(paper, settle(_defaults(paper), {"preset": "paper"}, SCHEMA).config)
    assert ResultsFolder.open(paper).redraw_settings.patience is None  # each model's defaults


# --- dataset names -------------------------------------------------------------------------


def test_known_names_per_source(tmp_path):
    demo = ROOT / "data" / "demo"
    bundled = known_names(["bundled"], demo)
    assert "adult" in bundled and "nosuchdata" not in bundled and len(bundled) == 20
    openml = known_names(["openml"], demo)
    ye = ye2024_manifest()
    assert set(ye.loc[ye["openml_id"].notna(), "name"]) <= set(openml)
    assert "electricity" in openml and len(openml) < len(ye)  # 26 have no OpenML id
    (tmp_path / "talent" / "data" / "mine").mkdir(parents=True)
    (tmp_path / "talent" / "data" / "mine" / "info.json").write_text("{}")
    assert known_names(["talent"], demo, tmp_path / "talent") == ["mine"]
    assert known_names(["talent"], demo, None) == []
    msg = unknown_dataset_message("nosuchdata", bundled, ["bundled"])
    assert "unknown dataset 'nosuchdata'" in msg and "adult" in msg and "kc1" in msg
    assert "\n" not in msg  # one line
    # many names: the close ones and how many, still one line
    many = unknown_dataset_message("adlt", openml, ["openml"])
    assert f"{len(openml)} known datasets; close to it: adult" in many and "\n" not in many


def test_an_installed_models_trainer_option_is_a_setting_checked_by_the_option(site, tmp_path):
    """The toy model's registration declares the option ``scale``: ``toymodel_scale`` is then a
    config key like ``mlp_max_one_hot_levels``, with the option's own check, and only for a
    registered model (a typo is still refused)."""
    from fixtures.plugin_dists import MODEL_GROUP, MODEL_NAME, install_example_plugin

    from tabbench.models import registry as models_registry

    install_example_plugin(site, [MODEL_GROUP])
    models_registry.reload_registry()
    key = f"{MODEL_NAME}_scale"
    res = settle(_defaults(tmp_path / "a"), {key: 2.5, "models": ["xgboost", MODEL_NAME]},
                 SCHEMA)
    assert res.config[key] == 2.5
    # as `--config toymodel_scale=2.5` gives it: text, read as YAML like the CLI flag
    assert settle(_defaults(tmp_path / "b"), {key: "2.5"}, SCHEMA).config[key] == "2.5"
    with pytest.raises(ConfigError, match=rf"'{key}': scale must be a positive number"):
        settle(_defaults(tmp_path / "c"), {key: -1}, SCHEMA)
    with pytest.raises(ConfigError, match="not a setting"):
        settle(_defaults(tmp_path / "d"), {f"{MODEL_NAME}_scal": 1}, SCHEMA)


def test_a_trainer_option_of_no_installed_model_is_not_a_setting(tmp_path):
    with pytest.raises(ConfigError, match="not a setting"):
        settle(_defaults(tmp_path / "results"), {"toymodel_scale": 2.5}, SCHEMA)


def test_a_large_threshold_of_0_makes_every_dataset_large(tmp_path):
    """``figures_large_rows: 0`` is a threshold like any other (the schema allows it): every
    dataset has at least 0 rows, so every one is large; it is not read as "unset"."""
    results = tmp_path / "results"
    datasets = [SyntheticDataset(f"ds_{i}", 1_200 + 1_000 * i, 2) for i in range(3)]
    write_synthetic_results(results, datasets, ["xgboost"], n_splits=2, n_configs=1,
                            epochs={"xgboost": (6, 6)})
    Path(ResultsLayout(results).run_config).write_text(yaml.safe_dump(
        {"preset": "demo", "n_splits": 2, "models": ["xgboost"], "figures_large_rows": 0}))
    assert ResultsFolder.open(results).redraw_settings.large_rows == 0
    selected, _ = collect_selected(results, jobs=1)
    frames, large_rows = summary_frames(results, selected)
    assert large_rows == 0 and frames["meta"]["large_rows"] == 0
    assert frames["meta"]["n_large_datasets"] == frames["meta"]["n_datasets"] == 3
