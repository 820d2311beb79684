"""How long do the records-only diagnostics (winner's curse, regret) take at full-study scale?

A full study has 196 datasets × 3 models × 5 splits runs files of 31 configs × up to 1000 epochs
(~45M record rows). This writes a synthetic folder of ``--datasets`` such datasets (the
full study's sizes and epochs, tests/fixtures/synthetic.py; reused by later runs), times
``tabbench.diagnostics.tables.diagnose`` on it (no replay files: the records-only part, which
reads every runs file) and extrapolates linearly to 196 datasets.

    PYTHONPATH=src python benchmarks/diagnostics_full_scale.py --datasets 12
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# The synthetic results generator is a test fixture, not part of the installed library.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fixtures.synthetic import full_study_datasets, write_synthetic_results  # noqa: E402

from tabbench.diagnostics.tables import diagnose  # noqa: E402

MODELS = ("xgboost", "mlp", "realmlp")
FULL_DATASETS = 196


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path("/tmp/tabbench_diag_bench"))
    ap.add_argument("--datasets", type=int, default=12)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    results = args.root / "results"
    # every 16th dataset of the full study's list: a spread of sizes and class counts
    datasets = full_study_datasets()[:: max(1, FULL_DATASETS // args.datasets)][: args.datasets]
    marker = args.root / "COMPLETE"
    if not (marker.exists() and marker.read_text() == str(len(datasets))):
        t = time.perf_counter()
        write_synthetic_results(results, datasets, MODELS, n_splits=5, n_configs=30)
        marker.write_text(str(len(datasets)))
        print(f"wrote {len(datasets) * len(MODELS) * 5} runs files in "
              f"{time.perf_counter() - t:.0f} s")
    files = sorted(results.glob("runs/*/*/split*.parquet"))
    rows = sum(_rows(p) for p in files)
    t = time.perf_counter()
    frames = diagnose(results, args.root / "diagnostics", jobs=args.jobs)
    secs = time.perf_counter() - t
    per_file = secs / len(files)
    full = per_file * FULL_DATASETS * len(MODELS) * 5
    print(f"diagnose: {len(files)} runs files, {rows / 1e6:.2f}M record rows, {secs:.1f} s with "
          f"{args.jobs} jobs ({1e3 * per_file:.0f} ms per file)")
    print(f"  -> full study ({FULL_DATASETS} datasets, ~45M rows): ~{full:.0f} s with "
          f"{args.jobs} jobs")
    print(f"  selection rows {len(frames['selection'])}, curve rows {len(frames['curve'])}")


def _rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


if __name__ == "__main__":
    main()
