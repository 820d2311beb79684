"""What a `tabbench` job pays before its own work: the CLI's start beside its floor and beside
loading every command's library.

Every Snakemake job of a study is one `tabbench` process (the smoke study: 25 jobs, the full
study tens of thousands), and the CLI builds every subcommand's parser before it runs one. Its
command modules import their library functions inside each command, so that a select or data
job does not load scipy, scikit-learn or matplotlib for the figures' and diagnostics' commands.
This prints, per job kind, the wall time of a fresh interpreter that

- **floor**: imports pandas (every job reads or writes parquet), nothing else;
- **start**: builds the CLI's parsers and parses the job's arguments (what the job pays now);
- **eager**: also imports every command's library module first (what the start costs when
  the command modules import their libraries at their top);

median of interleaved repeats, and start/floor, eager/start.

    python benchmarks/job_start.py
    python benchmarks/job_start.py --repeats 15
"""

from __future__ import annotations

import argparse
import ast
import statistics
import subprocess
import sys
import time
from pathlib import Path

CLI = Path(__file__).resolve().parents[1] / "src" / "tabbench" / "cli"


def command_libraries() -> list[str]:
    """The tabbench modules the CLI's command functions import when they run (their
    function-local imports), read from its source."""
    found = set()
    for path in CLI.glob("*.py"):
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, ast.FunctionDef):
                found |= {node.module for node in ast.walk(fn)
                          if isinstance(node, ast.ImportFrom) and node.module
                          and node.module.startswith("tabbench.")}
    return sorted(found)


#: job kind -> the arguments of one such job (paths need not exist: only parsing runs)
JOBS = {
    "select": ["select", "--runs", "r.parquet", "--out", "o.parquet"],
    "data split": ["data", "split", "--processed", "p.parquet", "--out", "o.parquet",
                   "--n-splits", "5"],
    "train": ["train", "--model", "xgboost", "--dataset", "d", "--split", "0", "--processed",
              "p", "--splits", "s", "--out", "o", "--n-configs", "0", "--epochs",
              "xgboost_default=10", "--seed", "0"],
}


def _code(argv: list[str] | None, eager: bool) -> str:
    if argv is None:
        return "import pandas"
    first = "".join(f"import {m}\n" for m in command_libraries()) if eager else ""
    return first + f"from tabbench.cli import build_parser\nbuild_parser().parse_args({argv!r})"


def _seconds(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    _seconds(_code(JOBS["select"], eager=True))  # warm the file cache once
    print(f"{'job':<11} {'floor s':>8} {'start s':>8} {'eager s':>8} {'start/floor':>12} "
          f"{'eager/start':>12}")
    for job, argv in JOBS.items():
        times: dict[str, list[float]] = {"floor": [], "start": [], "eager": []}
        for _ in range(args.repeats):  # interleaved: all three see the same machine load
            times["floor"].append(_seconds(_code(None, eager=False)))
            times["start"].append(_seconds(_code(argv, eager=False)))
            times["eager"].append(_seconds(_code(argv, eager=True)))
        floor, start, eager = (statistics.median(times[k]) for k in ("floor", "start", "eager"))
        print(f"{job:<11} {floor:>8.2f} {start:>8.2f} {eager:>8.2f} {start / floor:>11.1f}x "
              f"{eager / start:>11.1f}x")


if __name__ == "__main__":
    main()
