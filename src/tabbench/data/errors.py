"""Exceptions of the data layer.

Two kinds, because the pipeline reacts differently to each:

- :class:`SourceUnavailable`: one source cannot provide a dataset (not in the TALENT folder, no
  OpenML id, network absent, corrupted bundled file...). The next source in the configured order
  is tried; when none works the dataset is recorded as unavailable and the suite continues.
- :class:`DataError`: the data itself is unusable (duplicated column names, unparseable numbers,
  regression target...). Raised with a message naming the dataset and the problem.
"""

from __future__ import annotations


class DataError(ValueError):
    """The data of a dataset cannot be used as it is (clear message, never silent garbage)."""


class SourceUnavailable(RuntimeError):
    """A source cannot provide a dataset; the reason is the message."""
