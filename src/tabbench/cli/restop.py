"""CLI adapters of ``tabbench restop`` (add the columns of stopping metrics registered after a
study was trained, :mod:`tabbench.study.restop`) and ``tabbench retry-failed`` (reopen finished jobs
so that the next ``snakemake`` retrains their failed configs, :mod:`tabbench.study.retry`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tabbench.cli.args import add_data_folder, add_jobs, add_results, positive_int


def _restop(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.study.restop import restop_folder

    if not Path(args.results, "runs").is_dir():
        print(f"tabbench restop: error: {args.results}/runs does not exist (not a results "
              "folder, or nothing trained yet)", file=sys.stderr)
        return 2
    restop_folder(args.results, args.data, threads=args.threads, jobs=args.jobs,
                  progress=sys.stdout)
    return 0


def _retry_failed(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.study.retry import RetryError, reopen_failed

    try:
        jobs = reopen_failed(args.results, progress=sys.stdout)
    except RetryError as err:
        print(f"tabbench retry-failed: error: {err}", file=sys.stderr)
        return 2
    configs = sum(len(j.failed_configs) for j in jobs)
    print(f"tabbench retry-failed: {len(jobs)} finished jobs reopened, {configs} failed configs "
          "to retrain; run snakemake (the same command as the study) to retrain them"
          if jobs else "tabbench retry-failed: no finished job has a failed config")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "restop", help="add the columns of newly registered stopping metrics to a finished "
                       "study's runs files, without retraining",
        description="For every runs file of a results folder and every registered stopping "
                    "metric it has no val_<id> column of, compute the column from what the "
                    "train job kept (keep_for_restop: the boosters' models, the networks' "
                    "validation logits) after a self-check against the recorded val_logloss; "
                    "existing columns never change. Prints what it added and what it could not, "
                    "and why; writes <results>/restop.json; writes the selected files of the "
                    "pairs whose runs files changed again. Then `snakemake figures` redraws "
                    "(`snakemake restop` does all of it; docs/design.md §16).")
    add_results(p)
    add_data_folder(p, "which kept models predict on")
    add_jobs(p, "re-stopping one runs file", default=1)
    p.add_argument("--threads", type=positive_int, default=1, metavar="N",
                   help="threads of each kept model's prediction")
    p.set_defaults(func=_restop)

    r = subparsers.add_parser(
        "retry-failed", help="reopen finished train jobs with failed configs, so the next "
                             "snakemake run retrains those configs only",
        description="For every finished runs file whose failures sidecar lists failed configs, "
                    "turn it back into its part folder without the failures (atomically; its "
                    "recorded configs kept as they are) and remove it, so that the next "
                    "`snakemake` run plans its train job, which retrains the failed configs "
                    "only. Writes <results>/retry_failed.json (tabbench.study.retry).")
    add_results(r)
    r.set_defaults(func=_retry_failed)
