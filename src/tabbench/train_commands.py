"""``tabbench train``: run one training job (what the Snakemake rule ``train`` calls)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tabbench.models.registry import TRAINERS


def _epochs_item(text: str) -> tuple[str, int]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=ROUNDS, got {text!r}")
    try:
        return key, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"rounds must be an integer in {text!r}") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train",
        help="train every config of one (model, dataset, split), recording every epoch",
        description="Train configs 0..N of a model on one split and record all metrics at "
        "every epoch (DESIGN.md §6). Resumes from <out>.part/ if a previous run was killed.",
    )
    p.add_argument("--model", required=True, choices=sorted(TRAINERS))
    p.add_argument("--dataset", required=True)
    p.add_argument("--split", required=True, type=int)
    p.add_argument("--processed", required=True, help="data/processed/<dataset>.parquet")
    p.add_argument("--splits", required=True, help="data/splits/<dataset>.parquet")
    p.add_argument("--out", required=True, help="results/runs/<model>/<dataset>/split<i>.parquet")
    p.add_argument("--n-configs", required=True, type=int,
                   help="random configs besides the default config 0")
    p.add_argument("--epochs", required=True, nargs="+", type=_epochs_item, metavar="KEY=N",
                   help="e.g. xgboost_default=100 xgboost_tuned=1000 (or mlp=256)")
    p.add_argument("--seed", required=True, type=int)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu", help="cpu, cuda (picks a free GPU) or cuda:<i>")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tabbench.train_job import run_train_job

    run_train_job(
        args.model, args.dataset, args.split, args.processed, args.splits, args.out,
        n_configs=args.n_configs, epochs=dict(args.epochs), seed=args.seed,
        threads=args.threads, device=args.device, progress=sys.stderr,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tabbench.train_commands train ...`` (same as ``tabbench train ...``)."""
    parser = argparse.ArgumentParser(prog="tabbench")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
