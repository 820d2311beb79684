"""CLI adapters of the diagnostics: ``tabbench replay``, ``tabbench diagnose`` and
``tabbench diagnostics-figures``; the rules of ``workflow/rules/diagnostics.smk`` call them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tabbench.cli.args import add_epoch_ties, add_jobs, add_results
from tabbench.cli.train import (
    add_device_arguments,
    add_trainer_option_arguments,
    given_trainer_options,
    hardware_from,
)
from tabbench.settings.table import default

# The commands' library functions are imported in each command: they load scipy, scikit-learn
# and matplotlib, which every job's start would pay otherwise, since the CLI builds all its
# parsers (docs/performance.md, "A job's start").


def _replay(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    import pyarrow.parquet as pq

    from tabbench.core.gpu import GpuUnavailableError
    from tabbench.core.io import reading
    from tabbench.diagnostics.replay import ReplayMismatchError, ReplaySpec, run_replay_job
    from tabbench.study.specs import JobFiles

    with reading(args.runs):
        models = pq.read_table(args.runs, columns=["model"]).column("model").unique().to_pylist()
    options = given_trainer_options(args, str(models[0]), "tabbench replay") if models else {}
    if options is None:
        return 2
    spec = ReplaySpec(args.seed, options, args.rtol, args.epoch_ties)
    try:
        run_replay_job(args.runs, JobFiles(args.processed, args.splits, args.out), spec,
                       hardware_from(args), progress=sys.stderr)
    except (ReplayMismatchError, GpuUnavailableError) as err:
        print(f"tabbench replay: error: {err}", file=sys.stderr)
        return 1
    return 0


def _diagnose(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.diagnostics.tables import diagnose

    frames = diagnose(args.results, args.out, args.pairs, args.n_splits, args.jobs)
    print(json.dumps(frames["meta"]))
    return 0


def _figures(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.diagnostics.tables import read_diagnostics
    from tabbench.plots.diagnostics import make_diagnostic_figures

    make_diagnostic_figures(read_diagnostics(args.tables), args.out)
    print(f"diagnostic figures from {args.tables} -> {args.out}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    rtol = default("replay_rtol")
    p = subparsers.add_parser(
        "replay", help="retrain the selected (config, epoch)s of one split, save their logits",
        description="Replay the selection of one runs file (every regime x stopping metric): "
                    "one retraining per distinct selected config up to its last needed epoch; "
                    "writes OUT (.npz: y_val, y_test, val_logits__{regime}__{stopping}, "
                    "test_logits__...) and OUT with .json (the (config, epoch) of each, the "
                    "self-check, the cost). Fails if a replayed logloss differs from the "
                    "record by more than --rtol (relative).")
    p.add_argument("--runs", required=True, type=Path,
                   help="results/runs/{model}/{dataset}/split{i}.parquet")
    p.add_argument("--processed", required=True, help="data/processed/<dataset>.parquet")
    p.add_argument("--splits", required=True, help="data/splits/<dataset>.parquet")
    p.add_argument("--out", required=True, type=Path,
                   help="results/replay/{model}/{dataset}/split{i}.npz")
    p.add_argument("--seed", required=True, type=int, help="the study's seed (config seed)")
    add_device_arguments(p)
    add_trainer_option_arguments(p)  # as for tabbench train: the same trainer is rebuilt
    p.add_argument("--rtol", type=float, default=rtol,
                   help=f"relative tolerance of the self-check (default {rtol:g}, for CPU "
                        "training)")
    add_epoch_ties(p)  # the study's, as for tabbench select: the same (config, epoch)s
    p.set_defaults(func=_replay)

    p = subparsers.add_parser(
        "diagnose", help="winner's curse, regret, calibrators, reliability: diagnostic tables",
        description="Diagnostic tables of a results folder (docs/diagnostics.md) from its "
                    "runs/ (selection bias) and replay/ (calibrators, reliability; stale or "
                    "missing replays are counted and left out) into --out.")
    add_results(p)
    p.add_argument("--out", required=True, type=Path, help="results/summary/diagnostics")
    p.add_argument("--pairs", nargs="*", default=None, metavar="MODEL/DATASET",
                   help="only these (model, dataset); default every one under runs/")
    p.add_argument("--n-splits", type=int, default=None, help="only splits 0..N-1")
    add_jobs(p, "reading one split's records")
    p.set_defaults(func=_diagnose)

    p = subparsers.add_parser(
        "diagnostics-figures", help="draw the diagnostic figures from the diagnostic tables",
        description="The figures diag_*.{pdf,png} from a folder written by `tabbench "
                    "diagnose` (nothing else is read).")
    p.add_argument("--tables", required=True, type=Path, help="results/summary/diagnostics")
    p.add_argument("--out", required=True, type=Path, help="results/figures")
    p.set_defaults(func=_figures)
