"""Exceptions of the data layer.

Three kinds, because the pipeline reacts differently to each:

- :class:`SourceUnavailable`: one source cannot provide a dataset (not in the TALENT folder, no
  OpenML id, network absent, corrupted bundled file...). The next source in the configured order
  is tried; when none works the dataset is recorded as unavailable and the suite continues.
  ``network=True`` marks the reason "the server could not be reached" (the data summary counts
  those, to say that the machine is offline rather than that the datasets do not exist).

Any other exception inside a source is a bug (or an incompatible dependency) and is not caught:
the fetch job fails loudly instead of recording the dataset as unavailable.
- :class:`DataError`: the data itself is unusable (duplicated column names, unparseable numbers,
  regression target...). Raised with a message naming the dataset and the problem.
- :class:`ChecksumMismatch` (a :class:`DataError`): a pinned file's sha256 is not the pin (a
  tampered cache, an index serving another file). Nothing in it is parsed; the data stage fails
  on it unless the user chose to skip such datasets (``on_checksum_mismatch``), because a wrong
  digest says more about the machine or the index than about the dataset.
"""

from __future__ import annotations


class DataError(ValueError):
    """The data of a dataset cannot be used as it is (clear message, never silent garbage)."""


class SourceUnavailable(RuntimeError):
    """A source cannot provide a dataset; the reason is the message. ``network``: because the
    source's server could not be reached (refused, silent, no route, DNS failure)."""

    def __init__(self, message: str, *, network: bool = False) -> None:
        super().__init__(message)
        self.network = network


class ChecksumMismatch(DataError):
    """A pinned file whose sha256 is not the pinned one; the message names the dataset, the
    file and both digests. Nothing was read from the file."""
