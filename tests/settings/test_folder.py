"""tabbench.settings.folder: a results folder opened once, the one reader (and writer) of its
``run_config.yaml``: defaults for a partial file, one error line for a missing or unreadable
one, its data folder, its provenance, each model's configs and epochs; and no other module of
the library or the workflow reads the file."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tabbench.core.layout import ResultsLayout
from tabbench.models.registry import get_models
from tabbench.settings.folder import FolderError, ResultsFolder
from tabbench.settings.presets import PRESETS, resolve_config
from tabbench.settings.table import defaults

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "docs" / "results"
SHIPPED_COPIES = sorted(p.name for p in SHIPPED.iterdir() if (p / "run_config.yaml").is_file())


def _write(results: Path, text: str) -> Path:
    results.mkdir(parents=True, exist_ok=True)
    path = Path(ResultsLayout(results).run_config)
    path.write_text(text)
    return path


def test_a_partial_settings_file_reads_with_the_defaults_of_what_it_lacks(tmp_path):
    """A hand-written (or older) file with a preset and models only: every other setting is
    the preset's or the table's, as the run that made it used them."""
    _write(tmp_path / "results", yaml.safe_dump({"preset": "demo", "models": ["xgboost"]}))
    folder = ResultsFolder.open(tmp_path / "results")
    demo = PRESETS["demo"]
    assert folder.has_settings and folder.settings == {"preset": "demo", "models": ["xgboost"]}
    assert folder.config["n_splits"] == demo["n_splits"] == folder.n_splits
    assert folder.config["epoch_ties"] == defaults()["epoch_ties"]
    assert folder.redraw_settings.epoch_ties == defaults()["epoch_ties"]
    assert folder.redraw_settings.source == folder.settings_file
    run = folder.model_run("xgboost")
    spec = get_models()["xgboost"]
    epochs = resolve_config({"preset": "demo"})["epochs"]
    assert (run.n_random, run.default_epochs, run.random_epochs) == (
        demo["n_configs"], epochs[spec.epochs_keys[0]], epochs[spec.epochs_keys[1]])
    assert run.epochs("default") == run.default_epochs
    assert run.epochs("tuned") == run.random_epochs
    assert folder.models == ("xgboost",)
    assert folder.written is None  # a hand-written file says nothing of who wrote it


def test_n_configs_per_model_and_epochs_per_model(tmp_path):
    _write(tmp_path / "r", yaml.safe_dump({
        "preset": "paper", "models": ["xgboost", "mlp"],
        "n_configs": {"xgboost": 7, "mlp": 0}, "epochs": {"xgboost_tuned": 12, "mlp": 5}}))
    folder = ResultsFolder.open(tmp_path / "r")
    xgb, mlp = folder.model_run("xgboost"), folder.model_run("mlp")
    paper_default = get_models()["xgboost"].paper_epochs["xgboost_default"]
    assert (xgb.n_random, xgb.default_epochs, xgb.random_epochs) == (7, paper_default, 12)
    assert (mlp.n_random, mlp.default_epochs, mlp.random_epochs) == (0, 5, 5)
    assert xgb.epoch_name == "boosting round" and mlp.epoch_name == "epoch"


def test_a_missing_settings_file_is_none_where_asked_and_one_line_where_needed(tmp_path):
    folder = ResultsFolder.open(tmp_path / "results")  # need not exist yet
    assert not folder.has_settings
    assert folder.recorded is None and folder.settings is None and folder.config is None
    assert folder.model_run("xgboost").n_random is None
    with pytest.raises(FolderError) as err:
        folder.required_config("the seed comes from it")
    message = str(err.value)
    assert message == f"{tmp_path / 'results' / 'run_config.yaml'} is missing: the seed comes " \
                      "from it"
    assert "\n" not in message


@pytest.mark.parametrize("text, problem", [
    ("preset: [demo\n", "not YAML"),
    ("- a list\n- of settings\n", "expected a mapping of settings, found list"),
])
def test_an_unreadable_settings_file_is_one_line_naming_it(tmp_path, text, problem):
    path = _write(tmp_path / "results", text)
    with pytest.raises(FolderError) as err:
        ResultsFolder.open(tmp_path / "results")
    message = str(err.value)
    assert message.startswith(f"cannot read {path}: {problem}") and "\n" not in message


def test_the_data_folder_is_the_recorded_one_else_beside_the_results_folder(tmp_path):
    results = tmp_path / "a" / "results"
    _write(results, yaml.safe_dump({"preset": "demo", "data_dir_from_results": "../../b/data",
                                    "data_dir": "ignored"}))
    folder = ResultsFolder.open(results)
    assert folder.data_dir == tmp_path / "b" / "data"
    assert folder.data.kept == os.fspath(tmp_path / "b" / "data" / "kept.txt")
    assert "data_dir_from_results" not in folder.settings  # a record, not a setting
    _write(results, yaml.safe_dump({"preset": "demo", "data_dir": "data_x"}))
    assert ResultsFolder.open(results).data_dir == tmp_path / "a" / "data_x"
    assert ResultsFolder.open(tmp_path / "c" / "results").data_dir == tmp_path / "c" / "data"


def test_the_splits_required_are_the_settings_else_the_most_any_pair_has(tmp_path):
    results = tmp_path / "results"
    layout = ResultsLayout(results)
    for split in (0, 1):
        path = Path(layout.runs("xgboost", "d", split))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    assert ResultsFolder.open(results).n_splits == 2
    assert [r.dataset for r in ResultsFolder.open(results).complete_results()] == ["d"]
    _write(results, "preset: demo\nn_splits: 3\n")
    assert ResultsFolder.open(results).n_splits == 3
    assert ResultsFolder.open(results).complete_results() == []  # split 2 missing


def test_remember_writes_once_and_the_folder_says_who_wrote_it(tmp_path):
    results = tmp_path / "results"
    config = resolve_config({"preset": "smoke", "models": ["xgboost"], "data_dir": "data"})
    assert ResultsFolder.open(results).remember(config)
    folder = ResultsFolder.open(results)
    assert folder.settings["preset"] == "smoke" and folder.settings["models"] == ["xgboost"]
    assert folder.recorded["data_dir_from_results"] == os.path.relpath(
        os.path.abspath("data"), os.path.abspath(results))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\S+", folder.written["when"])
    assert folder.written["tabbench"]
    assert not folder.remember({**config, "preset": "paper"})  # never over an existing file
    assert ResultsFolder.open(results).settings["preset"] == "smoke"


def test_copy_settings_keeps_the_file_unless_clean_changes_a_value(tmp_path):
    source = tmp_path / "study"
    _write(source, "# the header\npreset: demo\ncache: /home/me/cache\n")
    folder = ResultsFolder.open(source)
    assert folder.copy_settings(tmp_path / "same", lambda v: v)
    assert (tmp_path / "same" / "run_config.yaml").read_text() == folder.text

    def cut(value):
        return {k: (Path(v).name if isinstance(v, str) and v.startswith("/") else v)
                for k, v in value.items()}

    assert folder.copy_settings(tmp_path / "cut", cut)
    copied = ResultsFolder.open(tmp_path / "cut")
    assert copied.text.startswith("# the header\n")
    assert copied.settings == {"preset": "demo", "cache": "cache"}
    assert not ResultsFolder.open(tmp_path / "none").copy_settings(tmp_path / "x", cut)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("copy", SHIPPED_COPIES)
def test_each_shipped_copy_reads_each_models_configs_and_epochs(copy):
    """The shipped copies record ``n_configs`` per model or as one number: each model of
    their study gets its own, and its two epochs keys' values."""
    recorded = yaml.safe_load((SHIPPED / copy / "run_config.yaml").read_text())
    folder = ResultsFolder.open(SHIPPED / copy)
    assert folder.written is not None
    for model in recorded["models"]:
        spec = get_models()[model]
        n = recorded["n_configs"]
        run = folder.model_run(model)
        assert run.n_random == (n[model] if isinstance(n, dict) else n)
        assert (run.default_epochs, run.random_epochs) == tuple(
            recorded["epochs"][k] for k in spec.epochs_keys)
    selected = pd.concat([pd.read_parquet(p, columns=["model", "regime", "n_candidates"])
                          for p in (SHIPPED / copy / "selected").glob("*/*.parquet")])
    for (model, regime), rows in selected.groupby(["model", "regime"]):
        # what the selections compared agrees with the settings read
        run = folder.model_run(model)
        assert set(rows["n_candidates"]) == {1 if regime == "default" else run.n_random}


# --- nothing else reads run_config.yaml --------------------------------------------------------

#: where the file is named as a path (not in prose): the layout's attribute or constant, the
#: file name as a string of its own, or a reader of its own
_READS = re.compile(r"(?<!settings)\.run_config\b|\bRUN_CONFIG\b|read_run_config"
                    r"|[\"']run_config\.yaml[\"']")
#: the module that owns the file, and the layout that names its path
_OWNERS = {"src/tabbench/settings/folder.py", "src/tabbench/core/layout.py"}


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of the lines of ``path`` that are code, not a comment."""
    return [(i, line) for i, line in enumerate(path.read_text().splitlines(), 1)
            if not line.lstrip().startswith("#")]


def test_only_the_results_folder_module_reads_run_config():
    files = [*sorted((REPO / "src").rglob("*.py")), *sorted((REPO / "workflow").rglob("*.smk")),
             REPO / "Snakefile"]
    assert len(files) > 50  # the search found the sources
    offenders = [f"{path.relative_to(REPO)}:{i}: {line.strip()}"
                 for path in files if path.relative_to(REPO).as_posix() not in _OWNERS
                 for i, line in _code_lines(path) if _READS.search(line)]
    assert offenders == []


@pytest.mark.parametrize("line", [
    "    path = Path(ResultsLayout(results).run_config)",
    "    settings = read_run_config(results)",
    '    if (tmp / "run_config.yaml").is_file():',
    "from tabbench.core.layout import RUN_CONFIG",
])
def test_the_search_for_readers_finds_each_way_of_reading(line):
    """The search of :func:`test_only_the_results_folder_module_reads_run_config` finds the
    ways the file was read before the folder object, and not its mentions in prose or the
    settings package's ``run_config`` module."""
    assert _READS.search(line)


@pytest.mark.parametrize("line", [
    "from tabbench.settings.run_config import settle",
    "    #: the folder's settings (``run_config.yaml``), if it has them",
    '    notes.append(f"no run_config.yaml: the settings are unknown")',
])
def test_the_search_for_readers_leaves_prose_alone(line):
    assert not _READS.search(line)


def test_an_opened_folder_is_its_path_and_is_not_opened_again(tmp_path):
    """A caller that opened the folder passes it down where a path is taken: the functions
    below open it again for free (the same object, the file read once)."""
    _write(tmp_path / "results", "preset: demo\n")
    folder = ResultsFolder.open(tmp_path / "results")
    assert ResultsFolder.open(folder) is folder
    assert os.fspath(folder) == str(folder) == os.fspath(tmp_path / "results")
    assert Path(folder) / "runs" == tmp_path / "results" / "runs"
    assert ResultsLayout(folder).run_config == folder.settings_file
