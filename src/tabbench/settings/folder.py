"""A results folder, opened once from its path: the one reader (and writer) of its settings.

A results folder is only meaningful with the settings that produced it (``run_config.yaml``,
:data:`tabbench.core.layout.RUN_CONFIG`); the CLI, the workflow, the study tools and the
report each ask the same questions of it: what the study is (its settings, with defaults for
a key the file lacks), where its data folder is, how many splits a complete (model, dataset)
has, which pairs are complete, what each model trained (configs, epochs), who wrote the file
and when. :class:`ResultsFolder` answers them from one reading of the file, so that no two
readers can fall back differently; where its files lie stays
:class:`tabbench.core.layout.ResultsLayout`'s (:attr:`ResultsFolder.layout`).

- **Settings as recorded** (:attr:`~ResultsFolder.recorded`): the file's mapping, with the
  records written beside the settings (:data:`RECORD_KEYS`: where the data folder is, seen
  from the results folder).
- **Settings** (:attr:`~ResultsFolder.settings`): the recorded ones less those records; with
  the value of every key it lacks (:meth:`~ResultsFolder.settings_with_defaults`: a file
  written by hand, by an older tabbench, or a copy published from an older run); resolved,
  preset keys filled (:attr:`~ResultsFolder.config`).
- A folder without ``run_config.yaml`` (not started yet, or made without one) reads as None
  where a setting is asked for; :meth:`~ResultsFolder.required_config` is the one error line
  for a reader that cannot go on without it. An unreadable file is a :class:`FolderError`
  in one line, naming the file.

The workflow writes the file once, when its first run starts jobs
(:meth:`ResultsFolder.remember`); how an invocation's settings are settled against it is
:mod:`tabbench.settings.run_config`'s.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as _dt
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from tabbench.core.layout import (
    META,
    CachedResult,
    DataLayout,
    PathLike,
    ResultsLayout,
    complete_results,
    runs_files_by_pair,
)
from tabbench.models.registry import get_models
from tabbench.settings.presets import PRESETS, n_configs_for, resolve_config
from tabbench.settings.schema import ConfigError
from tabbench.settings.table import INVOCATION_KEYS, VIEW_KEYS, folder_defaults
from tabbench.settings.table import defaults as table_defaults

#: where the folder's data folder is, seen from the folder (relative to it, or absolute):
#: written beside the settings by :meth:`ResultsFolder.remember`, since ``data_dir`` is
#: relative to the directory Snakemake ran in, which a reader of the folder (``tabbench
#: status``, ``restop``) does not know. A record of the run, not a setting: never compared nor
#: validated.
DATA_FOLDER_KEY = "data_dir_from_results"

#: what :meth:`ResultsFolder.remember` writes beside the settings (not settings themselves)
RECORD_KEYS = ("results_dir", DATA_FOLDER_KEY)

#: the comment line :meth:`ResultsFolder.remember` ends the file's header with (its provenance)
_WRITTEN = re.compile(r"^# Written (?P<when>\S+) by tabbench (?P<version>\S+?)\.?$", re.M)


class _FolderSetting:
    """The default of a setting argument: the results folder's own value (run_config.yaml),
    where None is a value of its own (e.g. ``patience``: each model's defaults)."""

    def __repr__(self) -> str:
        return "FOLDER"


#: "use the folder's setting" (:func:`tabbench.report.redraw.collect_selected`,
#: :func:`tabbench.report.redraw.regenerate`, the CLI's ``--patience`` default)
FOLDER = _FolderSetting()


class FolderError(ValueError):
    """A results folder's settings cannot be read, or are needed and missing; ``str()`` is
    the whole message, one line naming the file (a command prefixes its own name)."""


def with_defaults(stored: Mapping[str, Any]) -> dict[str, Any]:
    """``stored`` (a folder's settings) with the table's value of every key it lacks: a
    ``run_config.yaml`` without a key (written by hand, or by a tabbench without the key) was
    produced with its default, or with the old behaviour where the key changed it
    (:func:`tabbench.settings.table.folder_defaults`: e.g. ``leakage``, whose check did not
    exist, so every dataset was kept: ``report``)."""
    return {**folder_defaults(), **stored}


def data_folder_record(results: PathLike, data_dir: PathLike) -> str:
    """``data_dir`` (relative to the working directory, as the workflow uses it) as seen from
    the results folder ``results``: relative to it, or absolute where ``data_dir`` is."""
    if Path(data_dir).is_absolute():
        return os.fspath(data_dir)
    return os.path.relpath(os.path.abspath(data_dir), os.path.abspath(results))


def _read(path: Path) -> dict[str, Any] | None:
    """The mapping ``path`` holds (None: no such file); anything else is a :class:`FolderError`
    in one line."""
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise FolderError(f"cannot read {path}: {e.strerror or e}") from e
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        raise FolderError(f"cannot read {path}: not YAML ({problem}{where})") from e
    if not isinstance(data, dict):
        raise FolderError(f"cannot read {path}: expected a mapping of settings, "
                          f"found {type(data).__name__}")
    return data


@dataclass(frozen=True)
class FolderSettings:
    """What a results folder says about how to redraw it (``tabbench figures --results``, the
    workflow's regenerate job)."""

    #: datasets with at least this many rows are "large" (None: the folder does not say)
    large_rows: int | None
    #: splits a (model, dataset) must have to be complete (None: inferred from the folder)
    n_splits: int | None
    #: the file it came from, or None
    source: str | None
    #: the Bayesian tests' region of practical equivalence in % (None: the folder does not say)
    rope_percent: float | None = None
    #: what the summary compares: the config keys of :mod:`tabbench.summary.view` the folder
    #: sets (figures_baseline, figures_methods, comparisons)
    view: dict[str, Any] = field(default_factory=dict)
    #: which of tied epochs its selections keep (config ``epoch_ties``,
    #: :mod:`tabbench.summary.select`)
    epoch_ties: str = field(default_factory=lambda: table_defaults()["epoch_ties"])
    #: the stopping rules' patiences (config ``patience``: None = each model's defaults, a
    #: list, or a mapping model -> list; :func:`tabbench.summary.stopping_rules.patiences_for`)
    patience: Any = None


@dataclass(frozen=True)
class ModelRun:
    """What one model of a study trains per (dataset, split), from the folder's settings; None
    where they do not say (no ``run_config.yaml``, or a model not registered here)."""

    model: str
    #: random configs besides the default config 0 (``n_configs``, one number or per model)
    n_random: int | None
    #: epochs (boosting rounds) of the default config, and of each random config
    default_epochs: int | None
    random_epochs: int | None
    #: what one epoch is called (``"boosting round"`` for boosted trees)
    epoch_name: str = "epoch"

    def epochs(self, regime: str) -> int | None:
        """The epochs of the configs a selection of ``regime`` compares: the default config
        alone (``default``), or the random ones (``tuned``)."""
        return self.default_epochs if regime == "default" else self.random_epochs


@dataclass(frozen=True)
class ResultsFolder:
    """A results folder and its settings, read once (module docstring). Open one with
    :meth:`open`; what it read does not follow later writes to the file. It is a path (its
    root, ``os.fspath``), so a function that takes a results folder's path takes the opened
    folder too, and a caller that opened it passes it down instead of its path: the file is
    read once, whatever the functions below ask of it."""

    #: where each of its files is
    layout: ResultsLayout
    #: ``run_config.yaml`` as written (records included); None: the folder has none
    recorded: Mapping[str, Any] | None
    #: the file's text (its header says who wrote it and when); None without one
    text: str | None = field(default=None, repr=False)

    @classmethod
    def open(cls, path: PathLike | ResultsFolder) -> ResultsFolder:
        """The folder at ``path`` (which need not exist yet: a study about to start), its
        settings read now; ``path`` itself where it is an opened folder already. Raises
        :class:`FolderError` for an unreadable settings file."""
        if isinstance(path, ResultsFolder):
            return path
        layout = ResultsLayout(path)
        file = Path(layout.run_config)
        recorded = _read(file)
        return cls(layout, recorded, file.read_text() if recorded is not None else None)

    # --- where -------------------------------------------------------------------------------

    def __fspath__(self) -> str:
        return self.layout.root

    def __str__(self) -> str:  # in a message, the folder is its path
        return self.layout.root

    @property
    def root(self) -> Path:
        return Path(self.layout.root)

    @property
    def settings_file(self) -> str:
        """Where its settings are (or will be) kept, for a message naming the file."""
        return self.layout.run_config

    @property
    def has_settings(self) -> bool:
        return self.recorded is not None

    @property
    def data_dir(self) -> Path:
        """Where its data folder is, from its settings alone, whatever the working directory:
        the recorded place (:data:`DATA_FOLDER_KEY`), else its ``data_dir`` setting as is if
        absolute, else beside the folder (a folder without the record, made with
        ``results_dir`` and ``data_dir`` side by side, the shipped config's layout)."""
        recorded = self.recorded or {}
        kept = recorded.get(DATA_FOLDER_KEY)
        if kept:
            return Path(os.path.normpath(self.root.absolute() / kept))
        setting = Path(recorded.get("data_dir") or "data")
        return Path(os.path.normpath(self.root.absolute().parent / setting))

    @property
    def data(self) -> DataLayout:
        """Its data folder's layout (:attr:`data_dir`)."""
        return DataLayout(self.data_dir)

    # --- its settings ------------------------------------------------------------------------

    @property
    def settings(self) -> dict[str, Any] | None:
        """The settings as recorded, less the records (:data:`RECORD_KEYS`)."""
        if self.recorded is None:
            return None
        return {k: copy.deepcopy(v) for k, v in self.recorded.items() if k not in RECORD_KEYS}

    def settings_with_defaults(self) -> dict[str, Any] | None:
        """:attr:`settings` with the value of every key the file lacks (:func:`with_defaults`);
        preset keys stay as recorded (null: the preset's)."""
        settings = self.settings
        return None if settings is None else with_defaults(settings)

    @cached_property
    def config(self) -> dict[str, Any] | None:
        """The settings resolved (preset keys filled, :func:`tabbench.settings.presets.
        resolve_config`), a key the file lacks at its default; None without
        ``run_config.yaml``. A model registered where the folder was made but not here leaves
        the registry's checks out: the preset's values under the recorded ones."""
        filled = self.settings_with_defaults()
        if filled is None:
            return None
        try:
            return resolve_config(filled)
        except ValueError:  # e.g. a model registered where the folder was made, not here
            preset = PRESETS.get(filled.get("preset") or "paper", PRESETS["paper"])
            return {**copy.deepcopy(preset), **{k: v for k, v in filled.items() if v is not None}}

    def required_config(self, why: str) -> dict[str, Any]:
        """:attr:`config`, or a :class:`FolderError` in one line naming the missing file and
        ``why`` the caller needs it."""
        if self.config is None:
            raise FolderError(f"{self.settings_file} is missing: {why}")
        return self.config

    @property
    def written(self) -> dict[str, str] | None:
        """Its provenance: when the settings file was written and by which tabbench
        (``{"when": ..., "tabbench": ...}``, from the header :meth:`remember` writes); None
        without the file or that line."""
        found = _WRITTEN.search(self.text or "")
        return None if found is None else {"when": found["when"], "tabbench": found["version"]}

    def _summary_large_rows(self) -> int | None:
        path = Path(self.layout.summary(META))
        try:
            value = json.loads(path.read_text()).get("large_rows")
        except (OSError, ValueError, AttributeError):
            return None
        return int(value) if isinstance(value, int | float) else None

    @property
    def redraw_settings(self) -> FolderSettings:
        """How to redraw it: from its settings, else (a folder without them) the "large"
        threshold of its last summary's ``meta.json``."""
        cfg = self.config
        if cfg is None:
            large = self._summary_large_rows()
            return FolderSettings(large, None,
                                  self.layout.summary(META) if large is not None else None)
        large, rope = cfg.get("figures_large_rows"), cfg.get("rope_percent")
        return FolderSettings(None if large is None else int(large),
                              int(cfg["n_splits"]) if cfg.get("n_splits") else None,
                              self.settings_file, None if rope is None else float(rope),
                              {k: cfg[k] for k in VIEW_KEYS if cfg.get(k) is not None},
                              cfg.get("epoch_ties") or table_defaults()["epoch_ties"],
                              cfg.get("patience"))

    @property
    def summary_large_rows(self) -> int | None:
        """The "large" threshold its last summary was drawn with (``meta.json``), if any."""
        return self._summary_large_rows()

    # --- what it holds -----------------------------------------------------------------------

    @cached_property
    def n_splits(self) -> int | None:
        """The splits a (model, dataset) of this folder must have to be complete: its
        ``n_splits`` setting, else (no settings) the most splits any pair has (None: no
        runs)."""
        cfg = self.config
        if cfg is not None and isinstance(cfg.get("n_splits"), int):
            return int(cfg["n_splits"])
        found = runs_files_by_pair(self.root)
        return max((max(s) + 1 for s in found.values()), default=None)

    def complete_results(self) -> list[CachedResult]:
        """Every complete (model, dataset) it holds (:func:`tabbench.core.layout.
        complete_results`, with :attr:`n_splits`)."""
        return complete_results(self.root, self.n_splits)

    @property
    def models(self) -> tuple[str, ...]:
        """The models its study trains (its settings; empty without them)."""
        return tuple((self.config or {}).get("models") or ())

    def model_run(self, model: str) -> ModelRun:
        """What ``model`` trains per (dataset, split) under its settings: the random configs
        besides the default, and the epochs of each (the model's ``epochs`` keys, from its
        registry entry)."""
        cfg = self.config
        spec = get_models().get(model)
        if cfg is None:
            return ModelRun(model, None, None, None, spec.epoch_name if spec else "epoch")
        try:
            n_random: int | None = n_configs_for(cfg, model)
        except (KeyError, TypeError, ValueError):  # a mapping without the model
            n_random = None
        epochs = cfg.get("epochs") if isinstance(cfg.get("epochs"), Mapping) else {}
        if spec is None:
            return ModelRun(model, n_random, None, None)
        first, rest = (epochs.get(k) for k in spec.epochs_keys)
        return ModelRun(model, n_random, None if first is None else int(first),
                        None if rest is None else int(rest), spec.epoch_name)

    # --- writing its settings ----------------------------------------------------------------

    def remember(self, config: Mapping[str, Any]) -> bool:
        """Write ``config`` (resolved) as the folder's ``run_config.yaml`` unless it has one;
        atomic (temp file + hard link, which fails rather than replace a file written
        meanwhile). True if written; a folder that cannot be written (read-only) is a
        :class:`tabbench.settings.schema.ConfigError` in one line. This object keeps what it
        read when opened: open the folder again to read what was written."""
        target = Path(self.settings_file)
        if target.exists():
            return False
        body = {k: v for k, v in config.items() if k not in RECORD_KEYS}
        body[DATA_FOLDER_KEY] = data_folder_record(self.root, config.get("data_dir") or "data")
        try:
            # lazy: only a writer of the file asks for the version
            from importlib.metadata import version

            tb = version("tabbench")
        except Exception:  # not installed (e.g. run from a source tree)
            tb = "unknown"
        stamp = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
        header = (
            "# The settings this results folder was produced with (resolved: preset values "
            "filled\n"
            "# in), written by tabbench when the first Snakemake run started jobs on it.\n"
            "# On this folder they take config.yaml's place: `snakemake figures`, `report`, a "
            "resume\n"
            "# or a single-dataset rerun use them without repeating --config. A --config that "
            "changes\n"
            "# one of them is refused; these may differ per run:\n"
            "#   " + ", ".join(sorted(INVOCATION_KEYS)) + ".\n"
            "# To change this study on purpose, edit this file (Snakemake then reruns what "
            "the\n"
            "# change affects); for another study use another results_dir and data_dir.\n"
            f"# Written {stamp} by tabbench {tb}.\n"
        )
        text = header + yaml.safe_dump(body, sort_keys=False, default_flow_style=None)
        # a unique name (not mkstemp: its 0600 mode would make the file unreadable to colleagues)
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text)
        except OSError as e:  # a read-only folder, a full disk: one line, before any job
            with contextlib.suppress(OSError):  # a partly written file (a full disk)
                tmp.unlink(missing_ok=True)
            raise ConfigError(f"tabbench: cannot write {target} ({e.strerror or e}): the "
                              f"results folder {self.layout.root}/ must be writable "
                              "(results_dir); nothing was run") from e
        try:
            try:
                os.link(tmp, target)
            except FileExistsError:
                return False
            except OSError:  # a file system without hard links
                if target.exists():
                    return False
                os.replace(tmp, target)
            return True
        finally:
            tmp.unlink(missing_ok=True)

    def copy_settings(self, dest: PathLike, clean: Callable[[Any], Any]) -> bool:
        """Write its settings file into the folder ``dest`` (a copy of it being published),
        each value passed through ``clean`` (e.g. machine paths cut); the header that says
        what the file is, is kept, and the settings are rewritten only where ``clean``
        changed one. False (nothing written) where it has no settings file."""
        if self.recorded is None or self.text is None:
            return False
        target = Path(ResultsLayout(dest).run_config)
        target.parent.mkdir(parents=True, exist_ok=True)
        cleaned = clean(dict(self.recorded))
        if cleaned == dict(self.recorded):
            shutil.copy2(self.settings_file, target)
            return True
        header = "".join(line for line in self.text.splitlines(keepends=True)
                         if line.startswith("#"))
        target.write_text(header + yaml.safe_dump(cleaned, sort_keys=False,
                                                  default_flow_style=None, width=100))
        return True
