"""The one "did you mean" of every refusal of a name a user typed (a dataset, a model, an
epochs key): the known name closest to it, by :mod:`difflib`."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """``"; did you mean 'kc1'?"`` for the known name closest to ``name``, or ``""`` where
    none is close."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
