"""Atomic file writes: a crash never leaves a half-written output behind; and reading parquet
files so that a damaged one ends a command with one line, not a traceback.

Every output of the pipeline is first written to a temporary file in the destination folder and
then renamed over the target (``os.replace`` is atomic on POSIX within one file system), so a
killed job leaves either the old file, the new file, or no file — never a truncated one that a
rerun would trust.

Permissions: ``mkstemp`` creates its file with mode 0600 whatever the umask, and the rename
keeps that mode, so without care every output would be private to its owner and a colleague on
a shared file system could not read a results folder. The temporary file is therefore given the
mode an ordinary ``open(path, "w")`` would have: ``0666`` masked by the process's umask (umask
022 -> 0644, 077 -> 0600). Folders are created by ``mkdir``, which already applies the umask.

Reading: atomic writes keep our own outputs whole, but a file can still be damaged after it was
written (a copy cut short, a full disk on a colleague's machine, a bad sector). Readers of the
runs, selected and summary files go through :func:`reading` (or :func:`read_parquet`), which
turns what pyarrow raises for such a file into :class:`UnreadableFileError`: one line naming
the file and how to rebuild it, which the CLI prints as the command's error.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tabbench.core.extras import require_extra
from tabbench.core.layout import rebuild_hint

require_extra("pipeline", __name__)

import pandas as pd  # noqa: E402  (after the check)
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

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


# --- reading -------------------------------------------------------------------------------------


class UnreadableFileError(Exception):
    """A file that exists but cannot be read as parquet: truncated or corrupt. ``str()`` is one
    line: the file, what the reader said, and how to rebuild the file
    (:func:`tabbench.core.layout.rebuild_hint`)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)  # both in args: the error survives a worker process
        self.path = path
        self.reason = reason

    def __str__(self) -> str:

        return (f"{self.path} cannot be read, truncated or corrupt ({self.reason}); "
                f"{rebuild_hint(self.path)}")


#: errors that say something about where the file is or who may read it, not about its bytes
_NOT_DAMAGE = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)


@contextlib.contextmanager
def reading(path: str | os.PathLike[str]) -> Iterator[None]:
    """Inside the block, what reading ``path`` as parquet raises for damaged bytes (pyarrow's
    errors; an ``OSError`` such as "Corrupt snappy compressed data") becomes
    :class:`UnreadableFileError`. A missing or forbidden file stays the error it is."""
    try:
        yield
    except _NOT_DAMAGE:
        raise
    except (pa.ArrowException, OSError, EOFError) as e:
        said = str(e).removeprefix(f"Could not open Parquet input source '{os.fspath(path)}': ")
        reason = " ".join(f"{type(e).__name__}: {said}".split())  # one line
        raise UnreadableFileError(os.fspath(path), reason) from e


def read_parquet(path: str | os.PathLike[str], **kwargs: Any) -> pd.DataFrame:
    """``pd.read_parquet(path, **kwargs)`` under :func:`reading`."""
    with reading(path):
        return pd.read_parquet(path, **kwargs)


def check_parquet(paths: Iterable[str | os.PathLike[str]]) -> None:
    """:class:`UnreadableFileError` for the first of ``paths`` whose footer (schema and row
    groups, at the end of the file) cannot be read: a truncated, empty or foreign file. Cheap
    (no data is read), so a command can check the files a reader it does not own will open."""
    for path in paths:
        with reading(path):
            pq.read_metadata(path)
