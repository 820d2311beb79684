"""Atomic file writes: a crash never leaves a half-written output behind.

Every output of the pipeline is first written to a temporary file in the destination folder and
then renamed over the target (``os.replace`` is atomic on POSIX within one file system), so a
killed job leaves either the old file, the new file, or no file — never a truncated one that a
rerun would trust.

Permissions: ``mkstemp`` creates its file with mode 0600 whatever the umask, and the rename
keeps that mode, so without care every output would be private to its owner and a colleague on
a shared file system could not read a results folder. The temporary file is therefore given the
mode an ordinary ``open(path, "w")`` would have: ``0666`` masked by the process's umask (umask
022 -> 0644, 077 -> 0600). Folders are created by ``mkdir``, which already applies the umask.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where the OS allows (Linux ``/proc``):
    ``os.umask`` can only be read by setting it, which would briefly affect other threads."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def default_file_mode() -> int:
    """The mode ``open(path, "w")`` gives a new file: 0666 without the umask's bits."""
    return 0o666 & ~current_umask()


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it over ``target`` on success.

    On an exception the temporary file is removed and ``target`` is left untouched. The file
    ends up with the umask's usual mode (:func:`default_file_mode`), not mkstemp's 0600.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, default_file_mode())
    finally:
        os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_parquet_atomic(
    df: pd.DataFrame,
    target: str | os.PathLike[str],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write ``df`` to parquet atomically (index dropped), with optional key-value ``metadata``
    added to the file's schema (e.g. a runs file's provenance)."""
    with atomic_path(target) as tmp:
        if not metadata:
            df.to_parquet(tmp, index=False)
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(df, preserve_index=False)
        merged = dict(table.schema.metadata or {})
        merged.update({k.encode(): v.encode() for k, v in metadata.items()})
        pq.write_table(table.replace_schema_metadata(merged), tmp)


def write_json_atomic(obj: Any, target: str | os.PathLike[str]) -> None:
    """Write ``obj`` as indented JSON atomically; non-finite floats become ``null``-safe strings
    only if the caller put them there (``json`` writes NaN as the token NaN, which Python reads)."""
    with atomic_path(target) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def write_text_atomic(text: str, target: str | os.PathLike[str]) -> None:
    """Write ``text`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text)


def _json_default(obj: Any) -> Any:
    # numpy scalars and paths appear in metadata often enough to handle them here once.
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
