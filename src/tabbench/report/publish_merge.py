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
:data:`tabbench.settings.run_config.INVOCATION_KEYS`). The copy holds both selected/ folders, the
run of
the Fig. 1 analogue its summary chooses, the summary computed again from all selected files
(what ``tabbench figures`` does on any copy), the diagnostics tables of both merged
(:func:`tabbench.diagnostics.tables.merged`), the provenance of both (versions that differ are
listed as mixed: :func:`tabbench.core.provenance.merged_provenance`) and a ``PUBLISHED.json`` whose
``sources`` keep each study folder's own manifest: where it came from, with which code, and how
far its study was (a copy merged before contributes its sources, so the list stays flat).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from tabbench.core.io import write_json_atomic
from tabbench.core.layout import META, SUMMARY, PathLike, ResultsLayout
from tabbench.core.provenance import code_commit, merged_provenance
from tabbench.diagnostics.tables import merged, read_diagnostics, write_diagnostics
from tabbench.report.publish import (
    DESCRIPTION_LEFT_OUT,
    MAX_BYTES,
    PublishError,
    is_published,
    read_manifest,
)
from tabbench.report.results_folder import Redraw, regenerate
from tabbench.settings.run_config import INVOCATION_KEYS, RECORD_KEYS, with_defaults

#: the manifest keys each source keeps in the merged copy's ``sources``
SOURCE_KEYS = ("source", "published", "published_by_commit", "status")


def _settings(copy: Path) -> dict[str, Any]:
    """The copy's settings that change what it holds; a key added since it was made has the
    value it was made with (:func:`tabbench.settings.run_config.with_defaults`), so that a new
    tie rule is not merged into an older copy's unnoticed."""

    path = Path(ResultsLayout(copy).run_config)
    if not path.is_file():
        raise PublishError(f"{copy} has no run_config.yaml: its settings cannot be checked")
    body = with_defaults(yaml.safe_load(path.read_text()) or {})
    return {k: v for k, v in body.items() if k not in INVOCATION_KEYS and k not in RECORD_KEYS}


def _check_settings(first: Path, second: Path) -> None:
    a, b = _settings(first), _settings(second)
    differ = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
    if differ:
        raise PublishError(
            f"{first} and {second} were trained with different settings ("
            + "; ".join(f"{k}: {a[k]!r} vs {b[k]!r}" for k in differ)
            + "): their pairs are not one study")


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


def _summary_meta(copy: Path) -> dict[str, Any]:
    return json.loads(Path(ResultsLayout(copy).summary(META)).read_text())


def _check(first: Path, second: Path) -> dict[Path, list[Path]]:
    """Refuse what cannot be one copy (module docstring); returns each copy's selected files."""
    for copy in (first, second):
        if not is_published(copy):
            raise PublishError(f"{copy} is not a published copy (no PUBLISHED.json): publish "
                               "its study folder first")
    _check_settings(first, second)
    selected = {copy: _relative_files(copy, "selected") for copy in (first, second)}
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
    return selected


def _assemble(first: Path, second: Path, selected: dict[Path, list[Path]], tmp: Path) -> None:
    """Into ``tmp``: second's settings, both copies' selected and runs files, their merged
    provenance (what regenerate keeps of a copy's meta.json: its runs files are not here to
    read again) and their merged diagnostics tables."""

    # a newer tabbench writes every key an older one did, and more
    shutil.copy2(ResultsLayout(second).run_config, ResultsLayout(tmp).run_config)
    for copy in (first, second):
        for rel in [*selected[copy], *_relative_files(copy, "runs")]:
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(copy / rel, tmp / rel)
    summary = Path(ResultsLayout(tmp).summary_dir)
    summary.mkdir(parents=True)
    write_json_atomic(merged_provenance([_summary_meta(first), _summary_meta(second)]),
                      summary / META)
    try:
        tables = merged(*(read_diagnostics(ResultsLayout(c).diagnostics_dir)
                          for c in (first, second)))
    except ValueError as err:
        raise PublishError(str(err)) from None
    write_diagnostics(tables, ResultsLayout(tmp).diagnostics_dir)


def merge_published(first: PathLike, second: PathLike, out: PathLike,
                    max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """Write into ``out`` the published copy of ``first``'s and ``second``'s pairs (module
    docstring); returns its manifest. ``out`` may be ``first`` (extended in place: written
    aside, then swapped); nothing is left behind when it fails."""

    first, second, out = Path(first), Path(second), Path(out)
    selected = _check(first, second)
    tmp = out.with_name(f".{out.name}.merge.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        _assemble(first, second, selected, tmp)
        sources = _study_sources(first) + _study_sources(second)
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
