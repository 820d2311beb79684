"""Source ``bundled``: the parquet files shipped in ``data/demo/`` (offline, always available).

``data/demo/MANIFEST.csv`` names each file's target column and its sha256; the digest is checked
before reading so that a corrupted or truncated file is reported as such rather than parsed into
garbage. Categorical features are stored as pandas ``category``; any non-numeric column is
treated as categorical too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pyarrow
import pyarrow.parquet as pq

from tabbench.data.errors import DataError, SourceUnavailable
from tabbench.data.manifest import demo_manifest
from tabbench.data.raw import RawData, make_raw, split_by_dtype
from tabbench.data.sources.options import SourceOptions


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load(name: str, options: SourceOptions) -> RawData:
    """Load ``<demo_dir>/<name>.parquet`` after checking its sha256 against the MANIFEST."""
    if options.demo_dir is None:
        raise SourceUnavailable("no bundled data folder configured")
    demo_dir = Path(options.demo_dir)
    try:
        manifest = demo_manifest(demo_dir)
    except (FileNotFoundError, ValueError) as e:
        raise SourceUnavailable(str(e)) from e
    if name not in manifest.index:
        raise SourceUnavailable(f"not among the bundled datasets ({demo_dir / 'MANIFEST.csv'})")
    row = manifest.loc[name]
    path = demo_dir / f"{name}.parquet"
    if not path.is_file():
        raise SourceUnavailable(f"bundled file {path} is missing")
    expected = str(row["sha256"]).strip().lower()
    actual = sha256_of(path)
    if actual != expected:
        raise DataError(
            f"{name}: bundled file {path} is corrupted (sha256 {actual[:12]}… != MANIFEST "
            f"{expected[:12]}…); rebuild it with the script in data/demo or restore it from git"
        )
    try:
        names = [str(c) for c in pq.read_schema(path).names]
        if len(set(names)) != len(names):
            dups = sorted({c for c in names if names.count(c) > 1})
            raise DataError(f"{name}: {path} has duplicated column names {dups[:5]}")
        df = pd.read_parquet(path)
    except DataError:
        raise
    except (OSError, ValueError, pyarrow.ArrowException) as e:  # unreadable file, not a bug
        raise DataError(f"{name}: cannot read {path}: {type(e).__name__}: {e}") from e
    target = str(row["target"])
    if target not in df.columns:
        raise DataError(f"{name}: {path} has no target column {target!r} (MANIFEST target)")
    X = df.drop(columns=[target])
    num, cat = split_by_dtype(X)
    origin = {
        "source": "bundled",
        "file": str(path),
        "sha256": actual,
        "target": target,
        **{
            k: _plain(row[k])
            for k in ("origin_package", "origin_version", "openml_id", "licence", "leakage_note")
            if k in row.index
        },
    }
    return make_raw(X[num], X[cat], df[target], name, origin)


def _plain(v: object) -> object:
    if isinstance(v, float) and v != v:
        return None
    return v.item() if hasattr(v, "item") else v
