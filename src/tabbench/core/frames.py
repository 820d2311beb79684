"""A set of tables written and read together: the summary folder and the diagnostics folder are
each a mapping key -> file name, and what a file holds follows from its extension — ``.parquet``
a DataFrame, ``.json`` a JSON object, ``.md``/``.html``/``.txt`` text. Written once here, so
both folders are written atomically file by file and read back the same way."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tabbench.core.io import (
    read_parquet,
    write_json_atomic,
    write_parquet_atomic,
    write_text_atomic,
)

TEXT_SUFFIXES = (".md", ".html", ".txt")


def write_frames(frames: Mapping[str, Any], files: Mapping[str, str], out_dir: str | Path
                 ) -> dict[str, Path]:
    """Write ``frames[key]`` to ``out_dir/files[key]`` for every key of ``files``, each
    atomically; returns key -> path."""
    out = Path(out_dir)
    paths = {}
    for key, name in files.items():
        path = out / name
        obj = frames[key]
        if path.suffix == ".parquet":
            write_parquet_atomic(obj.reset_index(drop=True), path)
        elif path.suffix == ".json":
            write_json_atomic(obj, path)
        elif path.suffix in TEXT_SUFFIXES:
            write_text_atomic(str(obj), path)
        else:
            raise ValueError(f"{name}: no known way to write a {path.suffix or 'suffix-less'} "
                             "file")
        paths[key] = path
    return paths


def read_frames(files: Mapping[str, str], folder: str | Path) -> dict[str, Any]:
    """What :func:`write_frames` wrote into ``folder``: key -> DataFrame, object or text."""
    d = Path(folder)
    out: dict[str, Any] = {}
    for key, name in files.items():
        path = d / name
        if path.suffix == ".parquet":
            out[key] = read_parquet(path)  # a damaged table: one line naming it
        elif path.suffix == ".json":
            out[key] = json.loads(path.read_text())
        else:
            out[key] = path.read_text()
    return out
