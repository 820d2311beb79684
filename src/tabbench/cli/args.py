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

from tabbench.core.nulls import is_null
from tabbench.settings.table import default
from tabbench.summary.patience_words import PatienceWordsError, parse_patience
from tabbench.summary.stopping_rules import EPOCH_TIES


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


class _PatienceWords(argparse.Action):
    """``--patience`` words read by :func:`tabbench.summary.patience_words.parse_patience`."""

    def __init__(self, *args: Any, per_model: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.per_model = per_model

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        try:
            setattr(namespace, self.dest, parse_patience(values, per_model=self.per_model))
        except PatienceWordsError as err:
            parser.error(str(err))


def add_patience(parser: argparse.ArgumentParser, *, per_model: bool, default: Any,
                 default_help: str) -> None:
    """``--patience``: config ``patience`` in the one grammar of :mod:`tabbench.summary.
    patience_words` (``20 50``; no word; ``null``; ``MODEL=P,P`` where ``per_model``), so that
    the same words work for every command that takes it."""
    grammar = ("P [P ...] for every model, no word for the whole-run rule only, 'null' for "
               "each model's defaults" + (", MODEL=P,P ... per model (a model not named: its "
                                          "defaults)" if per_model else ""))
    parser.add_argument("--patience", nargs="*", action=_PatienceWords, per_model=per_model,
                        default=default, metavar="P",
                        help=f"config patience: the patience stopping rule's patiences in "
                             f"epochs (boosting rounds): {grammar}; default: {default_help}")


#: the help of every subcommand's ``--results`` (:func:`add_results`)
RESULTS_HELP = "the results folder (config results_dir)"


def add_results(parser: argparse.ArgumentParser | argparse._ActionsContainer, *,
                required: bool = True, note: str = "") -> argparse.Action:
    """``--results DIR``, the one declaration every subcommand that reads a results folder
    uses: an existing folder (:func:`results_folder`), no default; ``note`` adds what this
    command also accepts there. ``required`` False for a mutually exclusive group's member
    (the group is required instead)."""
    return parser.add_argument("--results", type=results_folder, required=required,
                               default=None, metavar="DIR",
                               help=RESULTS_HELP + (f"; {note}" if note else ""))


def add_jobs(parser: argparse.ArgumentParser, what: str, *, default: int | None = None) -> None:
    """``--jobs N``: how many worker processes a command runs at once, each doing ``what``;
    ``default`` None = one per CPU (what :func:`tabbench.report.redraw.
    collect_selected` and :func:`tabbench.diagnostics.collect.collect` do with None)."""
    parser.add_argument("--jobs", type=positive_int, default=default, metavar="N",
                        help=f"worker processes, each {what}; default: "
                             + ("one per CPU" if default is None else str(default)))


def add_data_folder(parser: argparse.ArgumentParser, use: str, *,
                    otherwise: str = "") -> None:
    """``--data DIR``: the study's data folder, where a command reads more than the results
    folder holds (``use``: what it reads there); by default the folder's own (its
    ``data_dir`` setting), ``otherwise`` what the command falls back on without one."""
    parser.add_argument("--data", type=Path, default=None, metavar="DIR",
                        help=f"the study's data folder ({use}); default: the results "
                             "folder's own (its data_dir setting)"
                             + (f", else {otherwise}" if otherwise else ""))
