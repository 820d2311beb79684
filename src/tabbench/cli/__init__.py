"""The `tabbench` command line: what the Snakemake rules call.

Every command-line adapter lives in this package, one module per area (``data``, ``train``,
``results``), each with a ``register(subparsers)`` function; this file only assembles them. A
subcommand is a thin adapter from arguments to one library function, so the library itself
never parses arguments and the CLI's surface is read in one place.

Layer 10 of docs/design.md §2, the top: it may import every package below it, and no
library module imports it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

import tabbench
from tabbench.core.extras import MissingExtraError, require_extra

#: modules exposing ``register(subparsers)``; each adds parsers with ``set_defaults(func=...)``
#: where ``func(args) -> int`` runs the command.
COMMAND_MODULES: list[str] = [
    "tabbench.cli.data",
    "tabbench.cli.results",
    "tabbench.cli.train",
    "tabbench.cli.diagnostics",
    "tabbench.cli.status",
    "tabbench.cli.restop",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tabbench",
        description="Benchmark pipeline for 'Rethinking Early Stopping: Refine, Then Calibrate'.",
    )
    parser.add_argument("--version", action="version", version=version_line())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def version_line() -> str:
    """``tabbench <version>``: the installed distribution's version (its metadata), else the
    source tree's when it runs uninstalled."""
    try:
        return f"tabbench {version('tabbench')}"
    except PackageNotFoundError:
        return f"tabbench {tabbench.__version__} (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    """The console script. Without the ``pipeline`` extra (``pip install tabbench`` alone) every
    command says in one line what to install; ``--version`` alone answers all the same."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--version"]:
        print(version_line())
        return 0
    try:
        require_extra("pipeline", "the tabbench command")
    except MissingExtraError as err:
        print(f"tabbench: error: {err}", file=sys.stderr)
        return 1
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:  # Ctrl-C outside what a command handles itself (e.g. imports)
        print(f"tabbench {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        code = one_line_exit_code(err)
        if code is None:
            raise
        print(f"tabbench {args.command}: error: {err}", file=sys.stderr)
        return code


def one_line_exit_code(err: Exception) -> int | None:
    """The exit code of an error said in one line without a traceback, None for any other.

    The error classes are imported here, on the error path only: at the start their modules
    (the summary's view imports scipy) would add to every job's start (docs/performance.md)."""
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.core.io import UnreadableFileError
    from tabbench.data.errors import DataError
    from tabbench.settings.folder import FolderError
    from tabbench.summary.view import ViewError

    if isinstance(err, UnreadableFileError):  # a damaged input: which file, how to rebuild it
        return 1
    # a figures setting naming an unknown method, a folder's settings unreadable or missing, a
    # dataset that cannot be used as asked (e.g. split a dropped one)
    if isinstance(err, ViewError | FolderError | DataError):
        return 2
    return None
