"""CLI adapter of ``tabbench status --results DIR``: how far a study is
(:mod:`tabbench.study.status`)."""

from __future__ import annotations

import argparse
import sys

from tabbench.cli.args import add_data_folder, add_results


def _status(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.study.status import StatusError, render, study_status

    try:
        status = study_status(args.results, args.data, args.workers)
    except StatusError as err:
        print(f"tabbench status: error: {err}", file=sys.stderr)
        return 2
    print(status.to_json() if args.json else render(status))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "status", help="how far a study is: jobs done/running/left, failures, time left",
        description="Per model of a results folder: train jobs done, running (a part folder "
                    "without its runs file) and left of those its settings plan, configs "
                    "recorded and failed, and the time left predicted from the folder's own "
                    "finished jobs (tabbench.study.status). Reads only; safe beside a running "
                    "study.")
    add_results(p)
    add_data_folder(p, "which datasets its settings plan")
    p.add_argument("--workers", type=float, default=None, metavar="N",
                   help="jobs that will run at once (default: measured on the latest "
                        "finished jobs)")
    p.add_argument("--json", action="store_true", help="the status as JSON, for machines")
    p.set_defaults(func=_status)
