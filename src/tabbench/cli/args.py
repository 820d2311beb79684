"""Text values from the command line: the argument types of the CLI subcommands.

Snakemake renders config values into shell commands as Python would print them (``True``,
``None``), so the rules' flags arrive as text; these parse them strictly and say what was wrong.
How null is spelled is the library's :func:`tabbench.core.nulls.is_null` (Snakemake's ``--config``
values and the model options read it too, and the library never imports the CLI).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from tabbench.core.extras import require_extra
from tabbench.core.nulls import is_null
from tabbench.settings.table import default
from tabbench.summary.select import EPOCH_TIES

require_extra("pipeline", __name__)

import yaml  # noqa: E402  (after the check)


def boolean(text: str) -> bool:
    """``true/false`` in any of the usual spellings (``True``, ``1``, ``yes``, ...)."""
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def optional_str(text: str) -> str | None:
    """A string, or None for a null spelling (Snakemake renders null as ``None``)."""
    return None if is_null(text) else text


def optional_int(text: str) -> int | None:
    """An integer, or None for a null spelling."""
    if is_null(text):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or null, got {text!r}") from None


def positive_int(text: str) -> int:
    """An integer >= 1 (a count of workers or threads)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0 (a count that may be none, e.g. random configs beside the default)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    """A number > 0 (a size or a budget)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def results_folder(text: str) -> Path:
    """An existing folder, for ``--results``: a mistyped path is refused here rather than read
    as an empty study (which draws empty figures and writes "no pairs" tables without a word)."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"no such results folder: {text!r}")
    return path


def field_default(cls: type, name: str) -> Any:
    """The default of field ``name`` of dataclass ``cls``: argparse defaults are read from the
    dataclass the command builds, so the two cannot drift apart."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            if f.default is dataclasses.MISSING:
                raise ValueError(f"{cls.__name__}.{name} has no default")
            return f.default
    raise ValueError(f"{cls.__name__} has no field {name!r}")


def add_epoch_ties(parser: argparse.ArgumentParser) -> None:
    """``--epoch-ties``: which of tied epochs a selection keeps (config ``epoch_ties``,
    :mod:`tabbench.summary.select`); the commands that select (select, replay) take it alike."""
    parser.add_argument("--epoch-ties", choices=EPOCH_TIES, default=default("epoch_ties"),
                        help="config epoch_ties: keep the first (default) or the last of tied "
                             "epochs (pytabkit's rule for networks)")


def patience_setting(text: str) -> Any:
    """The ``patience`` setting as text (YAML or JSON): a list of patiences for every model,
    a mapping model -> list, ``[]`` (no patience rule) or a null spelling (each model's
    defaults); :func:`tabbench.summary.stopping_rules.patiences_for` reads it."""
    if is_null(text):
        return None
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise argparse.ArgumentTypeError(f"not YAML: {e}") from None

    def ints(v: Any) -> bool:
        return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool)
                                           and x >= 1 for x in v)

    if ints(value) or (isinstance(value, dict) and all(
            isinstance(k, str) and (v is None or ints(v)) for k, v in value.items())):
        return value
    raise argparse.ArgumentTypeError(
        f"expected a list of integers >= 1 (e.g. '[20, 50]') or a mapping model -> list "
        f"(e.g. '{{xgboost: [20, 50], mlp: [8]}}'), got {text!r}")
