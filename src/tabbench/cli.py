"""The `tabbench` command line: what the Snakemake rules call.

Each area of the library registers its own subcommands in a ``commands`` module with a
``register(subparsers)`` function; this file only assembles them. A subcommand is a thin adapter
from arguments to one library function.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: modules exposing ``register(subparsers)``; each adds parsers with ``set_defaults(func=...)``
#: where ``func(args) -> int`` runs the command.
COMMAND_MODULES: list[str] = [
    "tabbench.data.commands",
    "tabbench.diagnostics.commands",
    "tabbench.results_commands",
    "tabbench.train_commands",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tabbench",
        description="Benchmark pipeline for 'Rethinking Early Stopping: Refine, Then Calibrate'.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
