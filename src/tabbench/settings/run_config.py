"""The settings of a run, remembered by its results folder (validation, with short errors, is
:mod:`tabbench.settings.schema`'s; its :class:`ConfigError` is raised here too).

**The folder's settings** (``results/run_config.yaml``). A results folder is only meaningful
with the settings that produced it (preset, datasets, splits, configs, epochs...). The first
Snakemake run that starts jobs on a folder writes the resolved settings there
(:func:`remember`, atomically, never over an existing file). From then on, on that folder
(:func:`settle`):

- ``run_config.yaml`` takes ``config.yaml``'s place: ``snakemake figures``, ``report``, a resume
  or a single-dataset rerun use the folder's settings without repeating any ``--config``
  (``config.yaml`` values that differ are named in a note and not used);
- a ``--config``/``--configfile`` value that changes one of them is **refused** before any job,
  naming each differing key with the folder's and the asked value. Refusing rather than
  silently reusing: a command that names a setting means it, and running it on a folder made
  with another value would either retrain finished jobs or mix two studies in one summary.
  Only the settings that change no record (:data:`tabbench.settings.table.INVOCATION_KEYS`:
  where the results folder is, threads, how a GPU is claimed, the figures' "large" threshold)
  may differ from one invocation to the next;
- to change a folder's study on purpose, edit its ``run_config.yaml`` (Snakemake then reruns
  what the change affects, as it would for a changed ``config.yaml``); for another study, give
  it its own ``results_dir`` and ``data_dir``.

A folder without ``run_config.yaml`` is read with this invocation's settings,
except that its figures keep the "large" threshold of its last summary (``summary/meta.json``)
unless ``figures_large_rows`` or ``preset`` is given; the next run that starts jobs on it writes
its ``run_config.yaml``.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as _dt
import json
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import yaml

from tabbench.core.layout import META, PathLike, ResultsLayout, read_run_config
from tabbench.settings.presets import PRESETS, coerce_cli_strings, resolve_config
from tabbench.settings.schema import ConfigError, check_config, load_schema, short
from tabbench.settings.table import INVOCATION_KEYS, VIEW_KEYS, folder_defaults, legacy_values
from tabbench.settings.table import defaults as table_defaults

#: where the folder's data folder is, seen from the folder (relative to it, or absolute):
#: written beside the settings by :func:`remember`, since ``data_dir`` is relative to the
#: directory Snakemake ran in, which a reader of the folder (``tabbench status``, ``restop``)
#: does not know. A record of the run, not a setting: never compared nor validated.
DATA_FOLDER_KEY = "data_dir_from_results"

#: what :func:`remember` writes beside the settings and :func:`settle` drops before reading them
RECORD_KEYS = ("results_dir", DATA_FOLDER_KEY)


# --- the folder's settings --------------------------------------------------------------------


def with_defaults(stored: Mapping[str, Any]) -> dict[str, Any]:
    """``stored`` (a folder's settings) with the table's value of every key it lacks: a
    ``run_config.yaml`` without a key (written by hand, or by a tabbench without the key) was
    produced with its default, or with the old behaviour where the key changed it
    (:func:`tabbench.settings.table.folder_defaults`: e.g. ``leakage``, whose check did not
    exist, so every dataset was kept: ``report``)."""
    return {**folder_defaults(), **stored}


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``over``, mappings merged key by key (as Snakemake merges --config
    into config.yaml)."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@dataclass
class Settled:
    """The configuration an invocation runs with (:func:`settle`)."""

    #: resolved (preset keys filled): what the rules use
    config: dict[str, Any]
    #: the folder's run_config.yaml as read (None: the folder has none yet)
    stored: dict[str, Any] | None
    #: where the folder's settings are (or will be) kept
    path: str
    #: lines to show the person running it (what was taken from where)
    notes: list[str] = field(default_factory=list)


def _summary_large_rows(results: PathLike) -> int | None:
    path = Path(ResultsLayout(results).summary(META))
    try:
        value = json.loads(path.read_text()).get("large_rows")
    except (OSError, ValueError, AttributeError):
        return None
    return int(value) if isinstance(value, int | float) else None


def _resolve(config: Mapping[str, Any], where: str) -> dict[str, Any]:
    """:func:`tabbench.settings.presets.resolve_config`, whose registry check (model names and
    epochs keys
    the schema cannot list) becomes a :class:`ConfigError` in the same short form."""
    try:
        return resolve_config(config)
    except ValueError as e:
        raise ConfigError(f"tabbench: invalid configuration ({where}):\n  {e}") from e


def settle(defaults: Mapping[str, Any], overrides: Mapping[str, Any],
           schema: Mapping[str, Any] | PathLike) -> Settled:
    """The configuration of one invocation (module docstring): ``defaults`` is config.yaml,
    ``overrides`` what ``--config``/``--configfile`` gave. Raises :class:`ConfigError` for a
    schema violation or an override that disagrees with the folder's ``run_config.yaml``."""
    if not isinstance(schema, Mapping):
        schema = load_schema(schema)
    defaults = {**table_defaults(), **coerce_cli_strings(defaults or {})}
    overrides = coerce_cli_strings(overrides or {})
    base = deep_merge(defaults, overrides)
    check_config(base, schema)
    results = base.get("results_dir") or "results"
    layout = ResultsLayout(results)
    try:
        stored = read_run_config(results)
    except (OSError, ValueError) as e:  # a hand edit gone wrong
        raise ConfigError(f"tabbench: cannot read {layout.run_config}: {e}") from e

    if stored is None:
        cfg = _resolve(base, "config.yaml and the command line")
        notes = []
        large = _summary_large_rows(results)
        if (large is not None and base.get("figures_large_rows") is None
                and not {"figures_large_rows", "preset"} & set(overrides)
                and large != cfg["figures_large_rows"]):
            cfg["figures_large_rows"] = large
            notes.append(f"tabbench: {results}/ has no {Path(layout.run_config).name}; its "
                         f"figures keep the 'large' threshold of its last summary ({large} "
                         "rows)")
        return Settled(cfg, None, layout.run_config, notes)

    stored = {k: v for k, v in stored.items() if k not in RECORD_KEYS}
    folder = deep_merge(deep_merge(defaults, stored), {"results_dir": results})
    folder.update(legacy_values(stored, folder))
    check_config(folder, schema, where=layout.run_config)
    reference = _resolve(folder, layout.run_config)
    candidate = _resolve(deep_merge(folder, overrides), "config.yaml and the command line")
    differing = [k for k in overrides
                 if k not in INVOCATION_KEYS and candidate.get(k) != reference.get(k)]
    if differing:
        raise ConfigError(_mismatch_message(layout, differing, reference, candidate))
    ignored = [k for k, v in defaults.items()
               if k not in overrides and k not in INVOCATION_KEYS and v not in (None, {}, [])
               and k in stored and v != stored[k]]
    note = (f"tabbench: using {layout.run_config}, the settings this results folder was "
            f"produced with (preset {reference['preset']})")
    if ignored:
        note += "; config.yaml's " + ", ".join(f"{k}={short(defaults[k])}" for k in ignored)
        note += " not used for it"
    return Settled(candidate, stored, layout.run_config, [note])


def _mismatch_message(layout: ResultsLayout, keys: list[str], folder: Mapping[str, Any],
                      asked: Mapping[str, Any]) -> str:
    lines = [f"tabbench: this command's --config disagrees with {layout.run_config}, the "
             f"settings {layout.root}/ was produced with:"]
    def shown(cfg: Mapping[str, Any], k: str) -> str:
        return short(cfg[k]) if k in cfg else "(not set: the code's default)"

    lines += [f"  {k}: folder {shown(folder, k)}, asked {shown(asked, k)}" for k in keys]
    lines += [
        "Nothing was run. On this folder, drop those --config values (its settings apply "
        "without them);",
        "for another study, give it its own folders (--config results_dir=... data_dir=...);",
        f"to change this study on purpose, edit {layout.run_config} (Snakemake then reruns "
        "what the change affects).",
    ]
    return "\n".join(lines)


def remember(results: PathLike, config: Mapping[str, Any]) -> bool:
    """Write ``config`` (resolved) as the folder's ``run_config.yaml`` unless it has one;
    atomic (temp file + hard link, which fails rather than replace a file written meanwhile).
    True if written; a folder that cannot be written (read-only) is a :class:`ConfigError`
    in one line."""
    layout = ResultsLayout(results)
    target = Path(layout.run_config)
    if target.exists():
        return False
    body = {k: v for k, v in config.items() if k not in RECORD_KEYS}
    body[DATA_FOLDER_KEY] = data_folder_record(results, config.get("data_dir") or "data")
    try:
        tb = version("tabbench")
    except Exception:  # not installed (e.g. run from a source tree)
        tb = "unknown"
    stamp = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    header = (
        "# The settings this results folder was produced with (resolved: preset values filled\n"
        "# in), written by tabbench when the first Snakemake run started jobs on it.\n"
        "# On this folder they take config.yaml's place: `snakemake figures`, `report`, a resume\n"
        "# or a single-dataset rerun use them without repeating --config. A --config that changes\n"
        "# one of them is refused; these may differ per run:\n"
        "#   " + ", ".join(sorted(INVOCATION_KEYS)) + ".\n"
        "# To change this study on purpose, edit this file (Snakemake then reruns what the\n"
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
        raise ConfigError(f"tabbench: cannot write {target} ({e.strerror or e}): the results "
                          f"folder {layout.root}/ must be writable (results_dir); nothing was "
                          "run") from e
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


def data_folder_record(results: PathLike, data_dir: PathLike) -> str:
    """``data_dir`` (relative to the working directory, as the workflow uses it) as seen from
    the results folder ``results``: relative to it, or absolute where ``data_dir`` is."""
    if Path(data_dir).is_absolute():
        return os.fspath(data_dir)
    return os.path.relpath(os.path.abspath(data_dir), os.path.abspath(results))


def folder_data_dir(results: PathLike, stored: Mapping[str, Any] | None) -> Path:
    """Where the data folder of the results folder ``results`` is, from its settings
    ``stored`` alone, whatever the working directory: the folder's record
    (:data:`DATA_FOLDER_KEY`), else its ``data_dir`` setting as is if absolute, else beside the
    folder (a folder without the record, made with ``results_dir`` and
    ``data_dir`` side by side, the shipped config's layout)."""
    stored = stored or {}
    recorded = stored.get(DATA_FOLDER_KEY)
    if recorded:
        return Path(os.path.normpath(Path(results).absolute() / recorded))
    setting = Path(stored.get("data_dir") or "data")
    return Path(os.path.normpath(Path(results).absolute().parent / setting))


def folder_config(results: PathLike) -> dict[str, Any] | None:
    """The settings of the results folder ``results`` resolved (preset keys filled), for a
    reader of the folder; None without ``run_config.yaml``. A key the file lacks (a hand-written
    or partial file) takes its default rather than failing later with a KeyError; a model
    registered where the folder was made but not here leaves the registry checks out."""
    stored = read_run_config(results)
    if stored is None:
        return None
    stored = with_defaults({k: v for k, v in stored.items() if k not in RECORD_KEYS})
    try:
        return resolve_config(stored)
    except ValueError:  # e.g. a model registered where the folder was made, not here
        preset = PRESETS.get(stored.get("preset") or "paper", PRESETS["paper"])
        return {**copy.deepcopy(preset), **{k: v for k, v in stored.items() if v is not None}}


@dataclass(frozen=True)
class FolderSettings:
    """What a results folder says about how to read it (for ``tabbench figures --results``)."""

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


def folder_settings(results: PathLike) -> FolderSettings:
    """From ``run_config.yaml``, else (a folder without one) the large threshold of
    the last summary's ``meta.json``."""
    layout = ResultsLayout(results)
    stored = read_run_config(results)
    if stored is not None:
        try:
            cfg = resolve_config(stored)
        except ValueError:  # e.g. a model registered where the folder was made, not here
            cfg = {**PRESETS.get(stored.get("preset") or "paper", {}),
                   **{k: v for k, v in stored.items() if v is not None}}
        large = cfg.get("figures_large_rows")
        rope = cfg.get("rope_percent")
        view = {k: cfg[k] for k in VIEW_KEYS if cfg.get(k) is not None}
        return FolderSettings(None if large is None else int(large),
                              int(cfg["n_splits"]) if cfg.get("n_splits") else None,
                              layout.run_config, None if rope is None else float(rope), view,
                              with_defaults(stored)["epoch_ties"],
                              cfg.get("patience"))
    large = _summary_large_rows(results)
    return FolderSettings(large, None, layout.summary(META) if large is not None else None)
