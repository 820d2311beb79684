"""One published copy from two (``tabbench publish --onto``): a study's copy extended with the
pairs another study folder of the same settings completed.

Why: a study's runs files are not shipped (:mod:`tabbench.report.publish`), so once its folder is
lost
(a machine handed back, a disk wiped) the pairs it had completed live on only in its published
copy. Training the missing pairs in a new folder with the same settings, then extending the copy
with them, gives one copy whose summary, claims and figures cover both, instead of retraining
what was already published or shipping two copies whose claims nobody can read together.

The two must be disjoint in (model, dataset) — a pair in both is refused, not silently chosen —
and agree on every setting that changes what is trained (``run_config.yaml`` apart from
:data:`tabbench.settings.run_config.INVOCATION_KEYS`).

A copy of another *scope* (another suite or sources: e.g. the bundled study, whose large
datasets belong to suite ``large`` too) may lend some of its pairs (:class:`Take`: the models
and datasets named): a pair's records depend on its dataset, the global settings (seed, splits,
filter, tie rule...) and its model's own settings (configs, epochs, options), not on which other
datasets or models its study held. So then the scope keys (:data:`SCOPE_KEYS`) may differ, the
global settings must agree, and each model taken must have the same settings in both; the
other pairs of that copy are left out, and the manifest's ``joined`` says what was taken. One
difference is allowed: a model tuned in one copy (``n_configs`` > 0) and trained at its default
config only in the other (0) lends its *default regime*: config 0 is trained and selected the
same whatever other configs its job also trains (its seed derives from the config id, and the
default regime's selection reads config 0 alone), so those pairs join with their default rows
only. Either way round: a tuned copy's pairs join a default-only study with their default rows,
and a default-only copy's pairs join a tuned study as they are (the tuned regime is then judged
on the pairs that have it; every claim row says on how many datasets).

The copy holds both selected/ folders, the run of
the Fig. 1 analogue its summary chooses, the summary computed again from all selected files
(what ``tabbench figures`` does on any copy), the diagnostics tables of both merged
(:func:`tabbench.diagnostics.tables.merged`), the datasets' class balance both summaries kept
(``heterogeneity.parquet``: a copy has no data folder to read it from), the provenance of both
(versions that differ are listed as mixed: :func:`tabbench.core.provenance.merged_provenance`)
and a ``PUBLISHED.json`` whose ``sources`` keep each study folder's own manifest: where it
came from, with which code, and how far its study was (a copy merged before contributes its
sources, so the list stays flat).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from tabbench.core.io import write_json_atomic, write_parquet_atomic
from tabbench.core.layout import META, SUMMARY, PathLike, ResultsLayout
from tabbench.core.provenance import code_commit, merged_provenance
from tabbench.data.class_balance import BALANCE_COLUMNS
from tabbench.diagnostics.tables import merged, read_diagnostics, restricted, write_diagnostics
from tabbench.report.machine_paths import without_machine_paths
from tabbench.report.publish import (
    DATASET_TABLE,
    DESCRIPTION_LEFT_OUT,
    MAX_BYTES,
    PublishError,
    is_published,
    read_manifest,
)
from tabbench.report.redraw import Redraw, regenerate
from tabbench.settings.folder import ResultsFolder
from tabbench.settings.run_config import INVOCATION_KEYS
from tabbench.summary.aggregate import SUMMARY_FILES

#: the manifest keys each source keeps in the merged copy's ``sources``
SOURCE_KEYS = ("source", "published", "published_by_commit", "status")
#: settings that say which datasets and models a study holds and where it reads the data from
#: (``leakage``: whether a flagged dataset is in it): they do not change the records of one
#: (model, dataset) pair
SCOPE_KEYS = frozenset({"preset", "suite", "exclude", "sources", "models", "data_dir",
                        "talent_dir", "openml_cache_dir", "openml_timeout", "openml_retries",
                        "leakage"})
#: settings with one value per model (a mapping, or one number for every model)
PER_MODEL_KEYS = ("n_configs", "epochs")


@dataclass(frozen=True)
class Take:
    """The pairs a copy of another scope lends: these models on these datasets."""

    models: tuple[str, ...]
    datasets: tuple[str, ...]

    def holds(self, rel: Path) -> bool:
        """Whether ``selected/<model>/<dataset>.parquet`` is one of the pairs taken."""
        return rel.parent.name in self.models and rel.stem in self.datasets


def _settings(copy: Path) -> dict[str, Any]:
    """The copy's settings that change what it holds; a key added since it was made has the
    value it was made with (:meth:`tabbench.settings.folder.ResultsFolder.
    settings_with_defaults`), so that a new tie rule is not merged into an older copy's
    unnoticed."""

    folder = ResultsFolder.open(copy)
    body = folder.settings_with_defaults()
    if body is None:
        raise PublishError(f"{copy} has no {Path(folder.settings_file).name}: its settings "
                           "cannot be checked")
    # a copy's paths are cut to their names (machine_paths): compared the same way
    return {k: v for k, v in without_machine_paths(body).items() if k not in INVOCATION_KEYS}


def model_settings(body: dict[str, Any], model: str) -> dict[str, Any]:
    """The settings of ``body`` (a run_config) that belong to ``model``: its number of configs,
    its epochs keys and its trainer options (``<model>_<option>``)."""
    n_configs = body.get("n_configs")
    own = {
        "n_configs": n_configs.get(model) if isinstance(n_configs, dict) else n_configs,
        "epochs": {k: v for k, v in (body.get("epochs") or {}).items()
                   if k == model or k.startswith(f"{model}_")},
    }
    own.update({k: v for k, v in body.items()
                if k.startswith(f"{model}_") and k not in PER_MODEL_KEYS})
    return own


def _global_settings(body: dict[str, Any], models: set[str]) -> dict[str, Any]:
    return {k: v for k, v in body.items()
            if k not in SCOPE_KEYS and k not in PER_MODEL_KEYS
            and not any(k.startswith(f"{m}_") for m in models)}


def _differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [f"{k}: {a[k]!r} vs {b[k]!r}" for k in sorted(a.keys() & b.keys()) if a[k] != b[k]]


def _check_settings(first: Path, second: Path, take: Take | None = None) -> set[str]:
    """Refuse settings that cannot be one study (module docstring); returns the models taken
    for their default regime only (tuned in one copy, default only in the other)."""
    a, b = _settings(first), _settings(second)
    if take is None:
        differ = _differences(a, b)
        if differ:
            scope = sorted(k for k in SCOPE_KEYS & a.keys() & b.keys() if a[k] != b[k])
            hint = (f"; to take some pairs of a copy of another scope ({', '.join(scope)} "
                    "differ), name them with --take-models and --take-datasets") if scope else ""
            raise PublishError(f"{first} and {second} were trained with different settings ("
                               + "; ".join(differ) + "): their pairs are not one study" + hint)
        return set()
    models = set(a.get("models") or []) | set(b.get("models") or []) | set(take.models)
    differ = _differences(_global_settings(a, models), _global_settings(b, models))
    absent = [m for m in take.models if m not in (b.get("models") or [])]
    if absent:
        raise PublishError(f"{second} does not train {', '.join(absent)}: its settings cannot "
                           "describe pairs of those models")
    default_only = set()
    for m in take.models:
        own_a, own_b = model_settings(a, m), model_settings(b, m)
        if own_a["n_configs"] != own_b["n_configs"] and 0 in (own_a["n_configs"],
                                                              own_b["n_configs"]):
            default_only.add(m)
            own_a, own_b = {**own_a, "n_configs": 0}, {**own_b, "n_configs": 0}
        differ += [f"{m} {d}" for d in _differences(own_a, own_b)]
    if differ:
        raise PublishError(f"the pairs taken from {first} were trained with other settings "
                           f"than {second}'s (" + "; ".join(differ) + ")")
    return default_only


def _relative_files(copy: Path, folder: str) -> list[Path]:
    root = copy / folder
    return sorted(p.relative_to(copy) for p in root.rglob("*") if p.is_file()) \
        if root.is_dir() else []


def _study_sources(copy: Path) -> list[dict[str, Any]]:
    """The manifest of each study folder a copy holds pairs of: its own, or the ``sources``
    of a copy merged before (so that a copy extended again lists every study once, in the
    order they were joined, not a tree of merges)."""
    manifest = read_manifest(copy)
    if manifest.get("sources"):
        return list(manifest["sources"])
    return [{k: manifest[k] for k in SOURCE_KEYS if k in manifest}]


def _unique(sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each study once, in the order first joined: pairs may be taken from one copy in several
    merges (e.g. one model's on every dataset, another's on a few)."""
    seen: set[str] = set()
    kept = []
    for source in sources:
        key = json.dumps(source, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            kept.append(source)
    return kept


def _summary_meta(copy: Path) -> dict[str, Any]:
    return json.loads(Path(ResultsLayout(copy).summary(META)).read_text())


def _check(first: Path, second: Path, take: Take | None = None
           ) -> tuple[dict[Path, list[Path]], set[str]]:
    """Refuse what cannot be one copy (module docstring); returns each copy's selected files
    (of ``first``, only the pairs taken) and the models taken for their default regime only."""
    for copy in (first, second):
        if not is_published(copy):
            raise PublishError(f"{copy} is not a published copy (no PUBLISHED.json): publish "
                               "its study folder first")
    default_only = _check_settings(first, second, take)
    selected = {copy: _relative_files(copy, "selected") for copy in (first, second)}
    if take is not None:
        selected[first] = [p for p in selected[first] if take.holds(p.relative_to("selected"))]
        if not selected[first]:
            raise PublishError(f"{first} holds none of the pairs to take ({', '.join(take.models)}"
                               f" on {', '.join(take.datasets)})")
    both = sorted(set(selected[first]) & set(selected[second]))
    if both:
        raise PublishError("pairs in both copies: " + ", ".join(str(p) for p in both)
                           + "; keep each pair in one of them")
    a, b = _summary_meta(first), _summary_meta(second)
    redraw = [k for k in ("large_rows", "rope_percent") if a.get(k) != b.get(k)]
    if redraw:
        raise PublishError("the copies were summarised with different " + ", ".join(
            f"{k} ({a.get(k)} vs {b.get(k)})" for k in redraw)
            + ": redraw one with the other's (tabbench figures --large-rows / --rope), then "
            "publish it again")
    return selected, default_only


def _default_rows(src: Path, dst: Path) -> None:
    """A selected file with its default regime's rows only."""
    frame = pd.read_parquet(src)
    write_parquet_atomic(frame[frame["regime"] == "default"].reset_index(drop=True), dst)


def _merge_dataset_tables(first: Path, second: Path, tmp: Path) -> None:
    """The data stages' dataset tables of both copies as one: ``first``'s row where both
    describe a dataset (its pairs are the ones taken), ``second``'s for the rest."""
    tables = [pd.read_csv(c / DATASET_TABLE) for c in (first, second)
              if (c / DATASET_TABLE).is_file()]
    if tables:
        merged_table = pd.concat(tables, ignore_index=True).drop_duplicates("dataset")
        merged_table.to_csv(tmp / DATASET_TABLE, index=False)


def _assemble(first: Path, second: Path, selected: dict[Path, list[Path]], tmp: Path,
              take: Take | None = None, default_only: frozenset[str] = frozenset()) -> None:
    """Into ``tmp``: second's settings, both copies' selected and runs files, their merged
    provenance (what regenerate keeps of a copy's meta.json: its runs files are not here to
    read again) and their merged diagnostics tables."""

    # a newer tabbench writes every key an older one did, and more
    ResultsFolder.open(second).copy_settings(tmp, without_machine_paths)
    _merge_dataset_tables(first, second, tmp)
    for copy in (first, second):
        for rel in [*selected[copy], *_relative_files(copy, "runs")]:
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            if copy == first and rel.parts[0] == "selected" and rel.parent.name in default_only:
                _default_rows(copy / rel, tmp / rel)
            else:
                shutil.copy2(copy / rel, tmp / rel)
    summary = Path(ResultsLayout(tmp).summary_dir)
    summary.mkdir(parents=True)
    write_json_atomic(merged_provenance([_summary_meta(first), _summary_meta(second)]),
                      summary / META)
    try:
        tables = [read_diagnostics(ResultsLayout(c).diagnostics_dir) for c in (first, second)]
        if take is not None:
            pairs = {(p.parent.name, p.stem) for p in selected[first]}
            tables[0] = restricted(tables[0], pairs, default_only)
        tables = merged(*tables)
    except ValueError as err:
        raise PublishError(str(err)) from None
    write_diagnostics(tables, ResultsLayout(tmp).diagnostics_dir)
    _keep_balance(first, second, summary)


def _keep_balance(first: Path, second: Path, summary: Path) -> None:
    """The class balance both copies' summaries kept (``heterogeneity.parquet``), where the
    summary of the merged copy reads it (a copy has no data folder to read it again:
    :func:`tabbench.report.redraw.folder_balance`)."""
    name = SUMMARY_FILES["heterogeneity"]
    kept = [pd.read_parquet(p).reindex(columns=BALANCE_COLUMNS).dropna()
            for p in (Path(ResultsLayout(c).summary(name)) for c in (first, second))
            if p.is_file()]
    if kept:
        write_parquet_atomic(pd.concat(kept, ignore_index=True).drop_duplicates("dataset"),
                             summary / name)


def merge_published(first: PathLike, second: PathLike, out: PathLike,
                    max_bytes: int = MAX_BYTES, take: Take | None = None) -> dict[str, Any]:
    """Write into ``out`` the published copy of ``first``'s and ``second``'s pairs (module
    docstring); returns its manifest. ``out`` may be ``first`` (extended in place: written
    aside, then swapped); nothing is left behind when it fails. ``take``: ``first`` is a copy
    of another scope, and only these of its pairs join."""

    first, second, out = Path(first), Path(second), Path(out)
    selected, default_only = _check(first, second, take)
    tmp = out.with_name(f".{out.name}.merge.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        _assemble(first, second, selected, tmp, take, frozenset(default_only))
        sources = _unique(_study_sources(first) + _study_sources(second))
        manifest: dict[str, Any] = {
            # by folder name (a copy published before 2026-12-02 named its absolute path)
            "source": " + ".join(Path(str(s.get("source"))).name for s in sources),
            "published": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "published_by_commit": code_commit(),
            "sources": sources,
            # (a copy published before 2026-12-02 15:00 UTC shipped the report page)
            "left_out": {**read_manifest(second).get("left_out", {}), **DESCRIPTION_LEFT_OUT},
            "diagnostics": f"{SUMMARY}/ diagnostics of both copies, merged",
        }
        joined = [*read_manifest(first).get("joined", []),
                  *read_manifest(second).get("joined", [])]
        if take is not None:
            joined.append({"from": [Path(str(s.get("source"))).name
                                    for s in _study_sources(first)],
                           "pairs": sorted(p.relative_to("selected").with_suffix("").as_posix()
                                           for p in selected[first]),
                           "default_regime_only": sorted(default_only)})
        if joined:
            manifest["joined"] = joined
        manifest = without_machine_paths(manifest)
        published = Path(ResultsLayout(tmp).published)
        write_json_atomic(manifest, published)
        meta = _summary_meta(first)  # the threshold and ROPE of both (checked equal)
        # figures are redrawn from the copy, not shipped: none is drawn here
        regenerate(tmp, tmp, Redraw(meta.get("large_rows"), meta.get("rope_percent")), jobs=1,
                   draw=False)
        for rel in DESCRIPTION_LEFT_OUT:  # it names the temporary folders it was drawn in
            (tmp / rel).unlink(missing_ok=True)
        curve = _summary_meta(tmp).get("curve_run")
        for rel in _relative_files(tmp, "runs"):  # only the Fig. 1 analogue's run is shipped
            if rel.relative_to("runs").as_posix() != curve:
                (tmp / rel).unlink()
        files = sorted(p for p in tmp.rglob("*") if p.is_file() and p != published)
        manifest["files"] = [str(p.relative_to(tmp)) for p in files]
        manifest["bytes"] = int(sum(p.stat().st_size for p in files))
        if manifest["bytes"] > max_bytes:
            raise PublishError(f"the merged copy would take {manifest['bytes'] / 2**20:.1f} "
                               f"MB, over the budget of {max_bytes / 2**20:.0f} MB")
        write_json_atomic(manifest, published)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return manifest
