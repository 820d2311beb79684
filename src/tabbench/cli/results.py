"""CLI adapters for selection, aggregation and figures (``tabbench select|aggregate|figures``).

Each subcommand maps arguments onto one library function; the Snakemake rules of
``workflow/rules/select.smk`` and ``report.smk`` call them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from tabbench.cli.args import (
    add_data_folder,
    add_epoch_ties,
    add_jobs,
    add_patience,
    add_results,
    non_negative_int,
    results_folder,
)
from tabbench.settings.folder import FOLDER
from tabbench.settings.presets import default_value
from tabbench.settings.table import SETTINGS

# The commands' library functions are imported in each command: they load scipy, scikit-learn
# and matplotlib, which every job's start would pay otherwise, since the CLI builds all its
# parsers (docs/performance.md, "A job's start").

def _select(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.summary.select import write_selected

    df = write_selected(args.runs, args.out, args.epoch_ties, args.patience)
    print(f"selected {len(df)} rows from {len(args.runs)} record files -> {args.out}")
    return 0


def _view_settings(args: argparse.Namespace) -> dict:
    """The view's config keys given on the command line (:mod:`tabbench.summary.view`)."""
    given = {"figures_baseline": args.figures_baseline,
             "figures_methods": args.figures_methods,
             "comparisons": None if args.comparisons is None else json.loads(args.comparisons),
             "low_signal_learnability": args.low_signal_learnability}
    return {k: v for k, v in given.items() if v is not None}


def _aggregate(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.summary.aggregate import aggregate
    from tabbench.summary.view import view_from_config

    frames = aggregate(args.selected, args.out, args.runs_dir, args.large_rows, args.rope,
                       view_from_config(_view_settings(args)))
    print(json.dumps(frames["meta"]))
    return 0


def _figures(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.plots import make_figures
    from tabbench.report.redraw import Redraw, regenerate
    from tabbench.summary.aggregate import read_summary

    if args.summary is not None:
        make_figures(read_summary(args.summary), args.out)
        print(f"figures from {args.summary} -> {args.out}")
        return 0
    redraw = Redraw(args.large_rows, args.rope, _view_settings(args), args.patience)
    timing = regenerate(args.results, args.out, redraw, args.jobs, args.reselect,
                        figures_dir=args.figures_dir, data=args.data)
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v
                      for k, v in timing.items()}))
    return 0


def _stopping_rules(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.report.redraw import collect_selected, summary_frames
    from tabbench.summary.rule_summary import answer_markdown, rules_answer

    selected, _ = collect_selected(args.results, args.jobs, patience=args.patience)
    frames, large_rows = summary_frames(args.results, selected)
    answer = rules_answer(frames["claims"], frames["rules"])
    print(answer_markdown(answer, large_rows, frames["meta"]["rope_percent"]), end="")
    return 0


def _publish(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.report.publish import PublishError, is_published, publish
    from tabbench.report.publish_merge import Take, merge_published

    max_bytes = int(args.max_mb * 2**20)
    try:
        if args.onto is None:
            if is_published(args.results):
                raise PublishError(f"{args.results} is a published copy already: copy the "
                                   "folder, or extend another copy with it (--onto)")
            manifest = publish(args.results, args.out, max_bytes)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                own = Path(args.results)
                if not is_published(own):
                    own = Path(tmp) / "copy"  # its manifest names --results, not this
                    publish(args.results, own, max_bytes)
                take = None
                if args.take_models or args.take_datasets:
                    if not (args.take_models and args.take_datasets):
                        raise PublishError("--take-models and --take-datasets go together")
                    take = Take(tuple(args.take_models), tuple(args.take_datasets))
                manifest = merge_published(args.onto, own, args.out, max_bytes, take)
    except PublishError as err:
        print(f"tabbench publish: error: {err}", file=sys.stderr)
        return 2
    print(f"published {len(manifest['files'])} files ({manifest['bytes'] / 2**20:.1f} MB) of "
          f"{args.results} -> {args.out}; redraw with: tabbench figures --results {args.out} "
          "--out <folder>")
    return 0


def _comparisons_json(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(value, list):
        raise argparse.ArgumentTypeError("expected a JSON list of comparisons")
    return text


def _add_view_options(p: argparse.ArgumentParser, default: str) -> None:
    """What the summary compares (config keys of :mod:`tabbench.summary.view`)."""
    p.add_argument("--figures-baseline", default=None, metavar="METHOD",
                   help=f"config figures_baseline: the method every method is relative to "
                        f"(e.g. 'Logloss+TS'); default: {default}")
    p.add_argument("--figures-methods", nargs="+", default=None, metavar="METHOD",
                   help=f"config figures_methods: Fig. 5's methods, in order; default: {default}")
    p.add_argument("--comparisons", type=_comparisons_json, default=None, metavar="JSON",
                   help="config comparisons as a JSON list, e.g. '[{\"method\": \"Brier+TS\", "
                        f"\"versus\": \"TS-Ref.+TS\"}}]'; default: {default}")
    p.add_argument("--low-signal-learnability", type=float, default=None, metavar="SHARE",
                   help="config low_signal_learnability: a large dataset whose validation "
                        "logloss is at least this share of the prior's entropy for every model "
                        "is low-signal, and the headline is judged again without those; "
                        f"default: {default.replace('the paper', 'the settings table')}"
                        f" ({default_value('low_signal_learnability'):g})")


def _add_threshold_options(p: argparse.ArgumentParser, *, from_folder: bool) -> None:
    """``--large-rows`` (config figures_large_rows) and ``--rope`` (config rope_percent), help
    and defaults from the settings table; ``from_folder``: None by default, so that a drawing
    of a results folder takes the folder's own (run_config.yaml, or its last summary's
    meta.json), else the table's."""
    for flag, key, kind, metavar in (("--large-rows", "figures_large_rows", non_negative_int,
                                      "N"),
                                     ("--rope", "rope_percent", float, "PERCENT")):
        value = default_value(key)
        p.add_argument(flag, type=kind, default=None if from_folder else value,
                       metavar=metavar,
                       help=f"config {key}: {SETTINGS[key].help.replace('%', '%%')}; default: "
                            + (f"the results folder's own, else {value:g}" if from_folder
                               else f"{value:g}"))


def _add_patience_option(p: argparse.ArgumentParser) -> None:
    add_patience(p, per_model=True, default=FOLDER,
                 default_help="the results folder's setting; selected files holding other "
                              "patiences are selected again from their runs (nothing is "
                              "trained)")


def _claims_table(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.core.io import write_text_atomic
    from tabbench.report.page_tables import PageInputs, names_in, page_inputs, regenerate_page
    from tabbench.summary.claims import reproduction_table

    inputs = page_inputs(args.results, args.jobs)
    if args.page is None:
        print(reproduction_table(inputs.frames["claims"]))
        return 0

    def beside(source: str) -> PageInputs:  # a "NAME from PATH" table's folder
        folder = args.page.resolve().parent / source
        if not folder.is_dir():
            raise ValueError(f"a table is computed from {source}, and {folder} is no folder")
        return page_inputs(folder, args.jobs)

    try:
        text = args.page.read_text()
        page = regenerate_page(text, inputs, beside)
    except ValueError as err:
        print(f"tabbench claims-table: error: {args.page}: {err}", file=sys.stderr)
        return 2
    write_text_atomic(page, args.page)
    print(f"{args.page}: generated tables {', '.join(names_in(text))} of {args.results} "
          "written between their markers")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "select", help="best epoch and config per stopping metric (one model × dataset)",
        description="Write results/selected/{model}/{dataset}.parquet from the per-epoch "
                    "records of every split (docs/design.md §7).")
    p.add_argument("--runs", nargs="+", required=True, type=Path,
                   help="results/runs/{model}/{dataset}/split{i}.parquet, one per split")
    p.add_argument("--out", required=True, type=Path)
    add_epoch_ties(p)
    add_patience(p, per_model=False, default=None,
                 default_help="the model's defaults (tabbench.summary.stopping_rules)")
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
    _add_threshold_options(p, from_folder=False)
    _add_view_options(p, "the paper's")
    p.set_defaults(func=_aggregate)

    p = subparsers.add_parser(
        "figures", help="regenerate every figure from a results folder (no Snakemake)",
        description="From --results DIR: reuse or recompute the selections, aggregate and "
                    "draw every figure into --out (summary tables in OUT/summary). "
                    "From --summary DIR: only draw (what the Snakemake rule does).")
    src = p.add_mutually_exclusive_group(required=True)
    add_results(src, required=False, note="runs/ and/or selected/, or a published copy")
    src.add_argument("--summary", type=Path, help="a summary folder written by `aggregate`")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--figures-dir", type=Path, default=None,
                   help="with --results: where the figures go (default: OUT itself); the "
                        "workflow redraws a results folder in place with --out DIR "
                        "--figures-dir DIR/figures")
    _add_threshold_options(p, from_folder=True)
    _add_view_options(p, "the results folder's setting, else the paper's")
    add_jobs(p, "selecting one (model, dataset)")
    p.add_argument("--reselect", action="store_true",
                   help="recompute every selection from runs/ even if selected/ is fresh")
    add_data_folder(p, "with --results: its class counts give the datasets' class balance "
                       "in summary/heterogeneity.parquet", otherwise="what its last summary kept")
    _add_patience_option(p)
    p.set_defaults(func=_figures)

    p = subparsers.add_parser(
        "stopping-rules", help="does TS-Ref.+TS beat Logloss+TS under each stopping rule, "
                               "and how much training each rule saves",
        description="From --results DIR (a results folder or a published copy): per model, "
                    "regime and stopping rule (best = the whole run; patience p), the claim "
                    "'TS-Ref.+TS beats Logloss+TS' (n, median, Bayesian probabilities, "
                    "verdict) and the median fraction of epochs Logloss+TS, TS-Ref.+TS and "
                    "Accuracy+TS train (tabbench.summary.rule_summary; docs/stopping_rules.md).")
    add_results(p)
    _add_patience_option(p)
    add_jobs(p, "selecting one (model, dataset)")
    p.set_defaults(func=_stopping_rules)

    p = subparsers.add_parser(
        "claims-table", help="the claims of a results folder as one Markdown table",
        description="The paper's claims checked on --results DIR with the folder's own "
                    "settings (tabbench.summary.claims.reproduction_table), printed; or, with "
                    "--page, every generated table the page holds (tabbench.report.page_tables: "
                    "the claims, "
                    "the complete pairs, the progress, the all-datasets comparison, the ranks, "
                    "the regret, the ROPEs, the stopping rules) rewritten between its markers "
                    "(docs/reproduction.md: a test checks the page against its shipped "
                    "results); a table marked 'NAME from PATH' is computed from that folder, "
                    "PATH relative to the page.")
    add_results(p)
    p.add_argument("--page", type=Path, default=None,
                   help="a Markdown page holding generated tables' markers")
    add_jobs(p, "selecting one (model, dataset)")
    p.set_defaults(func=_claims_table)

    p = subparsers.add_parser(
        "publish", help="a compact copy of a results folder that redraws without training",
        description="Copy what redraws a results folder's summary, claims and figures "
                    "(selected/, summary/ with the diagnostics tables, run_config.yaml, the "
                    "Fig. 1 run) into --out, with a PUBLISHED.json manifest "
                    "(tabbench.report.publish); `tabbench figures --results OUT` then redraws "
                    "them.")
    add_results(p, note="with --onto also a published copy (merged as it is)")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--max-mb", type=float, default=30.0,
                   help="refuse to write a copy larger than this (default 30 MB)")
    p.add_argument("--onto", type=results_folder, default=None,
                   help="a published copy to extend: --out gets its pairs and those of "
                        "--results (same settings, no pair in both; "
                        "tabbench.report.publish_merge). "
                        "--out may be this folder")
    p.add_argument("--take-models", nargs="+", default=None, metavar="MODEL",
                   help="with --onto a copy of another scope (suite, sources): join only the "
                        "pairs of these models...")
    p.add_argument("--take-datasets", nargs="+", default=None, metavar="DATASET",
                   help="...on these datasets (their global and per-model settings must "
                        "agree with --results'; tabbench.report.publish_merge)")
    p.set_defaults(func=_publish)
