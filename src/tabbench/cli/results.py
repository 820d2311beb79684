"""CLI adapters for selection, aggregation and figures (``tabbench select|aggregate|figures``).

Each subcommand maps arguments onto one library function; the Snakemake rules of
``workflow/rules/select.smk`` and ``report.smk`` call them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tabbench.aggregate import LARGE_ROWS


def _select(args: argparse.Namespace) -> int:
    from tabbench.select import write_selected

    df = write_selected(args.runs, args.out)
    print(f"selected {len(df)} rows from {len(args.runs)} record files -> {args.out}")
    return 0


def _aggregate(args: argparse.Namespace) -> int:
    from tabbench.aggregate import aggregate
    from tabbench.io import check_parquet

    check_parquet(args.selected)  # aggregate reads them with pandas: a damaged one, one line
    frames = aggregate(args.selected, args.out, args.runs_dir, args.large_rows)
    print(json.dumps(frames["meta"]))
    return 0


def _figures(args: argparse.Namespace) -> int:
    if args.summary is not None:
        from tabbench.aggregate import SUMMARY_FILES, read_summary
        from tabbench.io import check_parquet
        from tabbench.plots import make_figures

        # read_summary reads with pandas: a damaged table ends the command with one line
        check_parquet(args.summary / name for name in SUMMARY_FILES.values()
                      if name.endswith(".parquet"))
        make_figures(read_summary(args.summary), args.out)
        print(f"figures from {args.summary} -> {args.out}")
        return 0
    from tabbench.results_folder import regenerate

    timing = regenerate(args.results, args.out, args.large_rows, args.jobs, args.reselect)
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v
                      for k, v in timing.items()}))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "select", help="best epoch and config per stopping metric (one model × dataset)",
        description="Write results/selected/{model}/{dataset}.parquet from the per-epoch "
                    "records of every split (docs/design.md §7).")
    p.add_argument("--runs", nargs="+", required=True, type=Path,
                   help="results/runs/{model}/{dataset}/split{i}.parquet, one per split")
    p.add_argument("--out", required=True, type=Path)
    p.set_defaults(func=_select)

    p = subparsers.add_parser(
        "aggregate", help="relative differences to Logloss+TS and summary tables",
        description="Mean over splits per dataset, relative differences to the baseline, "
                    "summary statistics (parquet + Markdown) and the Fig. 1 curve.")
    p.add_argument("--selected", nargs="*", default=[], type=Path,
                   help="results/selected/{model}/{dataset}.parquet files")
    p.add_argument("--out", required=True, type=Path, help="summary folder")
    p.add_argument("--runs-dir", type=Path, default=None,
                   help="results/runs, to draw the Fig. 1 curve from (optional)")
    p.add_argument("--large-rows", type=int, default=LARGE_ROWS,
                   help="datasets with at least this many rows are 'large' (Fig. 5)")
    p.set_defaults(func=_aggregate)

    p = subparsers.add_parser(
        "figures", help="regenerate every figure from a results folder (no Snakemake)",
        description="From --results DIR: reuse or recompute the selections, aggregate and "
                    "draw every figure into --out (summary tables in OUT/summary). "
                    "From --summary DIR: only draw (what the Snakemake rule does).")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--results", type=Path, help="a results folder (runs/ and/or selected/)")
    src.add_argument("--summary", type=Path, help="a summary folder written by `aggregate`")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--large-rows", type=int, default=None,
                   help="datasets with at least this many rows are 'large' (Fig. 5, G.2-G.4); "
                        "default: the results folder's own setting (run_config.yaml, or its "
                        f"last summary's meta.json), else {LARGE_ROWS}")
    p.add_argument("--jobs", type=int, default=None, help="selection worker processes")
    p.add_argument("--reselect", action="store_true",
                   help="recompute every selection from runs/ even if selected/ is fresh")
    p.set_defaults(func=_figures)
