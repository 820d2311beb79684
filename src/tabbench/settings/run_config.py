"""The settings of one invocation, settled against its results folder's (validation, with short
errors, is :mod:`tabbench.settings.schema`'s; its :class:`ConfigError` is raised here too).

**The folder's settings** (``results/run_config.yaml``, read and written by
:class:`tabbench.settings.folder.ResultsFolder`). A results folder is only meaningful
with the settings that produced it (preset, datasets, splits, configs, epochs...). The first
Snakemake run that starts jobs on a folder writes the resolved settings there
(:meth:`~tabbench.settings.folder.ResultsFolder.remember`, atomically, never over an existing
file). From then on, on that folder (:func:`settle`):

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

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabbench.core.layout import PathLike
from tabbench.settings.folder import FolderError, ResultsFolder
from tabbench.settings.presets import coerce_cli_strings, resolve_config
from tabbench.settings.schema import ConfigError, check_config, load_schema, short
from tabbench.settings.table import INVOCATION_KEYS, legacy_values
from tabbench.settings.table import defaults as table_defaults

__all__ = ["INVOCATION_KEYS", "ConfigError", "Settled", "deep_merge", "settle"]


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
    try:
        folder = ResultsFolder.open(results)
    except FolderError as e:  # a hand edit gone wrong
        raise ConfigError(f"tabbench: {e}") from e
    where = folder.settings_file
    stored = folder.settings

    if stored is None:
        cfg = _resolve(base, "config.yaml and the command line")
        notes = []
        large = folder.summary_large_rows
        if (large is not None and base.get("figures_large_rows") is None
                and not {"figures_large_rows", "preset"} & set(overrides)
                and large != cfg["figures_large_rows"]):
            cfg["figures_large_rows"] = large
            notes.append(f"tabbench: {results}/ has no {Path(where).name}; its "
                         f"figures keep the 'large' threshold of its last summary ({large} "
                         "rows)")
        return Settled(cfg, None, where, notes)

    merged = deep_merge(deep_merge(defaults, stored), {"results_dir": results})
    merged.update(legacy_values(stored, merged))
    check_config(merged, schema, where=where)
    reference = _resolve(merged, where)
    candidate = _resolve(deep_merge(merged, overrides), "config.yaml and the command line")
    differing = [k for k in overrides
                 if k not in INVOCATION_KEYS and candidate.get(k) != reference.get(k)]
    if differing:
        raise ConfigError(_mismatch_message(folder, differing, reference, candidate))
    ignored = [k for k, v in defaults.items()
               if k not in overrides and k not in INVOCATION_KEYS and v not in (None, {}, [])
               and k in stored and v != stored[k]]
    note = (f"tabbench: using {where}, the settings this results folder was "
            f"produced with (preset {reference['preset']})")
    if ignored:
        note += "; config.yaml's " + ", ".join(f"{k}={short(defaults[k])}" for k in ignored)
        note += " not used for it"
    return Settled(candidate, stored, where, [note])


def _mismatch_message(results: ResultsFolder, keys: list[str], folder: Mapping[str, Any],
                      asked: Mapping[str, Any]) -> str:
    lines = [f"tabbench: this command's --config disagrees with {results.settings_file}, the "
             f"settings {results.layout.root}/ was produced with:"]
    def shown(cfg: Mapping[str, Any], k: str) -> str:
        return short(cfg[k]) if k in cfg else "(not set: the code's default)"

    lines += [f"  {k}: folder {shown(folder, k)}, asked {shown(asked, k)}" for k in keys]
    lines += [
        "Nothing was run. On this folder, drop those --config values (its settings apply "
        "without them);",
        "for another study, give it its own folders (--config results_dir=... data_dir=...);",
        f"to change this study on purpose, edit {results.settings_file} (Snakemake then reruns "
        "what the change affects).",
    ]
    return "\n".join(lines)
