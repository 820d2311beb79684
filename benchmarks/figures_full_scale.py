"""How long does regenerating every figure from cached results take?

Targets: < 30 s for a demo-size results folder, < 2 min for one the size of the full
study (196 datasets × 3 models × 5 splits × 31 configs × up to 1000 epochs ≈ 45M record rows),
selection + aggregation + figures included. The folders are synthetic
(tests/fixtures/synthetic.py) and written once under --root (the full one takes several GB and
minutes; it is reused by later runs). Both are measured in the same run and printed side by side
with their budgets.

    PYTHONPATH=src python benchmarks/figures_full_scale.py --root /tmp/tabbench_bench
    PYTHONPATH=src python benchmarks/figures_full_scale.py --datasets 20   # a quick subset
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# The synthetic results generator is a test fixture, not part of the installed library.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fixtures.synthetic import (  # noqa: E402
    DEMO_DATASETS,
    SyntheticDataset,
    full_study_datasets,
    paper_epochs,
    write_synthetic_results,
)

MODELS = ("xgboost", "mlp", "realmlp")
DEMO_EPOCHS = {"xgboost": (100, 200), "mlp": (24, 24), "realmlp": (24, 24)}


def _write_one(args: tuple[Path, SyntheticDataset, int, int, dict]) -> int:
    root, ds, n_splits, n_configs, epochs = args
    return len(write_synthetic_results(root, [ds], MODELS, n_splits, n_configs, epochs))


def build(root: Path, datasets: list[SyntheticDataset], n_splits: int, n_configs: int,
          epochs: dict, jobs: int) -> float:
    """Write the synthetic runs folder unless a complete one is already there."""
    marker = root / "COMPLETE"
    if marker.exists() and marker.read_text() == f"{len(datasets)} {n_splits} {n_configs}":
        return 0.0
    shutil.rmtree(root, ignore_errors=True)
    t = time.perf_counter()
    work = [(root, ds, n_splits, n_configs, epochs) for ds in datasets]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        n = sum(pool.map(_write_one, work, chunksize=2))
    marker.write_text(f"{len(datasets)} {n_splits} {n_configs}")
    secs = time.perf_counter() - t
    print(f"  wrote {n} record files under {root} in {secs:.0f} s")
    return secs


def folder_size(root: Path) -> tuple[int, float]:
    files = list((root / "runs").rglob("*.parquet"))
    return len(files), sum(f.stat().st_size for f in files) / 2**30


CLI = "import sys; from tabbench import cli; sys.exit(cli.main())"


def measure(name: str, root: Path, out: Path, jobs: int) -> dict:
    """Time `tabbench figures --results ROOT --out OUT --reselect` in a fresh process, as a user
    runs it (interpreter start and imports included); CPU seconds summed over all processes."""
    shutil.rmtree(out, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CLI, "figures", "--results", str(root),
                           "--out", str(out), "--jobs", str(jobs), "--reselect"],
                          check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    timing = json.loads(proc.stdout.strip().splitlines()[-1])
    n_files, gib = folder_size(root)
    timing.update(name=name, files=n_files, gib=gib, wall_s=wall,
                  cpu_s=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
    return timing


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=Path("/tmp/tabbench_bench"))
    ap.add_argument("--datasets", type=int, default=196, help="full-study datasets (196)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()

    full_ds = full_study_datasets()[: args.datasets] if args.datasets < 196 else (
        full_study_datasets())
    print("building synthetic results folders (reused when present)")
    build(args.root / "demo" / "results", list(DEMO_DATASETS), 2, 2, DEMO_EPOCHS, args.jobs)
    build(args.root / "full" / "results", full_ds, 5, 30, paper_epochs(), args.jobs)

    rows = [
        (measure("demo", args.root / "demo" / "results", args.root / "demo" / "figures",
                 args.jobs), 30.0),
        (measure(f"full ({len(full_ds)} datasets)", args.root / "full" / "results",
                 args.root / "full" / "figures", args.jobs), 120.0),
    ]
    print(f"\n`tabbench figures --results DIR --reselect` in a fresh process (selection recomputed"
          f" from every record file, {args.jobs} worker processes; load average now "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    head = (f"{'folder':<22}{'files':>7}{'GiB':>7}{'pairs':>7}{'select s':>10}{'aggr. s':>9}"
            f"{'figs s':>8}{'wall s':>8}{'CPU s':>8}{'budget s':>10}{'wall/budget':>13}")
    print(head)
    print("-" * len(head))
    for t, budget in rows:
        print(f"{t['name']:<22}{t['files']:>7}{t['gib']:>7.2f}{t['pairs']:>7}"
              f"{t['select_s']:>10.1f}{t['aggregate_s']:>9.1f}{t['figures_s']:>8.1f}"
              f"{t['wall_s']:>8.1f}{t['cpu_s']:>8.1f}{budget:>10.0f}{t['wall_s'] / budget:>13.2f}")


if __name__ == "__main__":
    main()
