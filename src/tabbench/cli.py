"""The `tabbench` command line: what the Snakemake rules call.

Each subcommand is a thin adapter from arguments to one library function, imported lazily so
that `tabbench --help` stays fast and a missing optional dependency only affects its command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

#: name -> (help, function adding arguments, function running the command)
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def command(name: str, help: str):
    """Register a subcommand: decorate a function ``(parser) -> runner``."""

    def deco(add_args: Callable[[argparse.ArgumentParser], Callable[[argparse.Namespace], int]]):
        COMMANDS[name] = (help, add_args, None)  # type: ignore[assignment]
        return add_args

    return deco


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tabbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_, add_args, _) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        runner = add_args(p)
        p.set_defaults(_run=runner)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args._run(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
