"""The one Markdown table writer: every generated table (the summary, the claims, the
diagnostics, the reproduction page, the configuration reference) is built by
:func:`markdown_table`, so a missing value reads the same everywhere (:data:`MISSING`)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)

import pandas as pd  # noqa: E402  (after the check)

#: how a missing value (None, NaN, ±inf) is written in a cell
MISSING = "–"
_RULES = {"l": "---", "r": "---:", "c": ":---:"}


def is_missing(value: Any) -> bool:
    """None, pandas' NA, or a number that is not finite (NaN, ±inf: no value to show)."""
    if value is None or value is pd.NA:
        return True
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return not math.isfinite(float(value))
    return False


def cell(value: Any, fmt: str | Callable[[Any], str] | None = None,
         missing: str = MISSING) -> str:
    """One cell: ``missing`` for a missing value, else ``fmt`` (a format spec like ``"+.1f"``
    or a function) applied, else ``str``. A ``|`` inside is escaped."""
    if is_missing(value):
        return missing
    if fmt is None:
        text = str(value)
    elif callable(fmt):
        text = fmt(value)
    else:
        text = format(value, fmt)
    return text.replace("|", "\\|")


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]], *,
                   align: Sequence[str] | str | None = None, missing: str = MISSING) -> str:
    """A Markdown table: ``header`` and one line per row of ``rows`` (cells already text are
    kept, others go through :func:`cell`). ``align``: per column ``"l"`` (``---``), ``"r"``
    (``---:``) or ``"c"`` (``:---:``), as a sequence or one string; default all ``"l"``. No
    trailing newline."""
    rules = [_RULES[a] for a in (align or "l" * len(header))]
    if len(rules) != len(header):
        raise ValueError(f"{len(rules)} alignments for {len(header)} columns")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rules) + "|"]
    for row in rows:
        cells = [c if isinstance(c, str) else cell(c, missing=missing) for c in row]
        if len(cells) != len(header):
            raise ValueError(f"a row of {len(cells)} cells under {len(header)} columns")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
