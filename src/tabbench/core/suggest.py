""""Did you mean ...?" for a name a person typed (a setting, a preset, a model, a folder of a
results path): the close known names, so that a one-line refusal also shows the fix."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def close_names(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names closest to ``name`` (difflib's ratio ≥ 0.6, best first; a match that
    differs only in case first of all)."""
    known = [str(k) for k in dict.fromkeys(known)]
    same_case = [k for k in known if k.lower() == name.lower() and k != name]
    close = difflib.get_close_matches(name, known, n=n, cutoff=0.6)
    return list(dict.fromkeys(same_case + close))[:n]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" (did you mean 'xgboost'?)"`` for the close known names, or ``""`` where none is
    close: a suffix for a message that names ``name``."""
    close = close_names(name, known)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
