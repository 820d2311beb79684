"""Where a number came from: code and package versions, device and threads of a training job.

Every runs file carries this mapping in its parquet key-value metadata (key
:data:`PARQUET_KEY`), written by the training job that produced it, so a published number can be
traced to the code (tabbench version and, in a git checkout, the commit) and the libraries that
computed it. :func:`gather` collects the mappings of many runs files for ``meta.json`` and names
every key whose value differs between files (a results folder filled by two environments).

Package versions come from the installed distributions' metadata (``importlib.metadata``), so
asking for torch's version never imports torch (an XGBoost job would pay ~1 s for it).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import tabbench
from tabbench.core.extras import require_extra
from tabbench.core.io import reading
from tabbench.core.layout import runs_file

require_extra("pipeline", __name__)

import pyarrow.parquet as pq  # noqa: E402  (after the check)

#: parquet key-value metadata key of a runs file's provenance (JSON)
PARQUET_KEY = "tabbench.core.provenance"

#: distributions whose versions are recorded (name as pip knows it -> key in the mapping)
PACKAGES: dict[str, str] = {
    "numpy": "numpy",
    "scipy": "scipy",
    "pandas": "pandas",
    "scikit-learn": "scikit-learn",
    "torch": "torch",
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
    "optuna": "optuna",
}


def _package_version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def code_commit() -> str | None:
    """The git commit of the tabbench source in use (``<sha>`` or ``<sha>-dirty``), or None
    when tabbench is not imported from a git checkout (a wheel install) or git is absent."""
    src = Path(tabbench.__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no", "--", "."],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{sha}-dirty" if dirty else sha or None


#: vector instruction sets, widest first: which one the CPU has decides the kernels torch and
#: the boosters dispatch to, and so the rounding of float32 training
ISA_LEVELS = ("avx512f", "avx2", "avx", "sse4_2", "asimd")


def describe_cpu(cpuinfo: str, fallback: str = "") -> str:
    """``"<model name> (<widest of ISA_LEVELS>)"`` from the text of ``/proc/cpuinfo``
    (``fallback``, else "unknown", where it names no model)."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    name = fields.get("model name") or fields.get("CPU part") or fallback or "unknown"
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    isa = next((f for f in ISA_LEVELS if f in flags), None)
    return f"{name} ({isa})" if isa else name


@lru_cache(maxsize=1)
def cpu() -> str:
    """This machine's CPU (:func:`describe_cpu`). Recorded because float32 network training is
    bit-reproducible on one CPU but not across CPUs: the same code and packages gave a RealMLP
    run whose validation logloss differed by 1e-6 after one epoch on another CPU, and by up to
    0.1 after 256 (docs/reproduction.md, "Hardware")."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:  # not Linux
        text = ""
    return describe_cpu(text, platform.processor())


def environment(device: str | None = None, threads: int | None = None) -> dict[str, Any]:
    """The provenance of a job run in this process: tabbench version and commit, Python,
    platform and CPU, the versions of :data:`PACKAGES` (None = not installed), device and
    threads."""
    out: dict[str, Any] = {
        "tabbench": tabbench.__version__,
        "commit": code_commit(),
        "python": platform.python_version(),
        "platform": f"{platform.system()}-{platform.machine()}",
        "cpu": cpu(),
    }
    out.update({key: _package_version(dist) for dist, key in PACKAGES.items()})
    if device is not None:
        out["device"] = str(device)
    if threads is not None:
        out["threads"] = int(threads)
    return out


def to_parquet_metadata(prov: Mapping[str, Any]) -> dict[str, str]:
    return {PARQUET_KEY: json.dumps(dict(prov), sort_keys=True)}


def read_runs_provenance(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The provenance stored in a runs file's metadata; None for a file written without one
    (before provenance was recorded). A damaged file is a
    :class:`tabbench.core.io.UnreadableFileError`
    (aggregation reads every runs file's provenance: this is where it meets one)."""

    with reading(path):
        meta = pq.read_schema(path).metadata or {}
    raw = meta.get(PARQUET_KEY.encode())
    return None if raw is None else json.loads(raw)


def gather(provenances: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """Summarise many files' provenance for ``meta.json``.

    Returns ``{"versions": {key: value or [values...]}, "mixed": [keys with several values],
    "n_files": n, "n_without_provenance": m}``. A key with one value across all files maps to
    that value; a key with several maps to their sorted list and is listed in ``mixed``, so a
    results folder produced by two environments says so.
    """
    values: dict[str, set[str]] = {}
    n_files = n_missing = 0
    for prov in provenances:
        n_files += 1
        if prov is None:
            n_missing += 1
            continue
        for key, value in prov.items():
            values.setdefault(key, set()).add(json.dumps(value))
    versions, mixed = _collapse(values)
    return {"versions": versions, "mixed": mixed, "n_files": n_files,
            "n_without_provenance": n_missing}


def _collapse(values: Mapping[str, set[str]]) -> tuple[dict[str, Any], list[str]]:
    """key -> the one value it takes, or the sorted list of its values (JSON-encoded in
    ``values``); and the keys with several (what ``meta.json`` calls mixed versions)."""
    versions: dict[str, Any] = {}
    mixed = []
    for key in sorted(values):
        decoded = sorted((json.loads(v) for v in values[key]), key=json.dumps)
        if len(decoded) == 1:
            versions[key] = decoded[0]
        else:
            versions[key] = decoded
            mixed.append(key)
    return versions, mixed


def runs_files_provenance(selected: Any, runs_dir: str | os.PathLike[str] | None) -> dict[str, Any]:
    """``versions`` (code and package versions, device, threads; a list where they differ),
    ``mixed_versions`` (the keys that differ) and counts, gathered from the provenance of every
    runs file behind ``selected`` (:mod:`tabbench.core.provenance`). Empty without ``runs_dir``
    (a folder of selected files only)."""
    if runs_dir is None or selected.empty:
        return {"versions": {}, "mixed_versions": [], "n_runs_files": 0,
                "n_runs_files_without_provenance": 0}

    pairs = selected[["model", "dataset", "split"]].drop_duplicates()
    provs = []
    for model, dataset, split in pairs.itertuples(index=False):
        path = Path(runs_file(runs_dir, str(model), str(dataset), int(split)))
        provs.append(read_runs_provenance(path) if path.exists() else None)
    g = gather(provs)
    return {"versions": g["versions"], "mixed_versions": g["mixed"],
            "n_runs_files": g["n_files"], "n_runs_files_without_provenance":
            g["n_without_provenance"]}


def merged_provenance(metas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The provenance keys of several summaries' ``meta.json`` (each as
    :func:`runs_files_provenance` and the failure counts wrote it) as one summary of all their
    runs files would give them: a version with one value everywhere stays a value, one with
    several becomes their sorted list and is listed in ``mixed_versions``; counts add up. For a
    published copy extended with another study's pairs (:mod:`tabbench.report.publish_merge`), whose
    runs files are not there to gather again."""
    values: dict[str, set[str]] = {}
    for meta in metas:
        mixed = set(meta.get("mixed_versions", []))
        for key, value in meta.get("versions", {}).items():
            values.setdefault(key, set()).update(
                json.dumps(v) for v in (value if key in mixed else [value]))
    versions, mixed_keys = _collapse(values)
    failures = [m.get("failures", {"configs": 0, "by": []}) for m in metas]
    return {"versions": versions, "mixed_versions": mixed_keys,
            "n_runs_files": sum(int(m.get("n_runs_files", 0)) for m in metas),
            "n_runs_files_without_provenance":
                sum(int(m.get("n_runs_files_without_provenance", 0)) for m in metas),
            "failures": {"configs": sum(int(f.get("configs", 0)) for f in failures),
                         "by": [b for f in failures for b in f.get("by", [])]}}
