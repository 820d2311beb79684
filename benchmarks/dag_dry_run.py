"""How long `snakemake -n` takes for the full study (the target: < 60 s on 2 cores).

The full study is the `paper` preset: the 200 datasets of ye2024, 3 models, 5 splits, so with
196 kept datasets 3 × 196 × 5 = 2,940 train jobs. This script builds, in a temporary copy of
the workflow, the state *after* the `collect_datasets` checkpoint: every dataset fetched and
filtered, the kept list, the two reports, and (optionally) the splits. Dry runs never read
parquet contents; the input functions only read data/kept.txt (kept_datasets()), so the data
files are empty placeholders with the right names and ordered mtimes (outputs newer than
inputs, as after a real run).

It then times `python -m snakemake -n` (a fresh process each time, as a user runs it) and
prints the wall time and the planned jobs per rule, e.g.:

    python benchmarks/dag_dry_run.py                      # splits done: train onwards
    python benchmarks/dag_dry_run.py --no-splits --repeat 3
    python benchmarks/dag_dry_run.py --profile            # cProfile of one dry run (top 25)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
sys.path.insert(0, str(SRC))


def make_workspace(root: Path) -> Path:
    """A copy of the workflow (no data, no results) in ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("Snakefile", "config.yaml", "environment.yml"):
        shutil.copy2(REPO / name, root / name)
    for folder in ("workflow", "profiles"):
        shutil.copytree(REPO / folder, root / folder)
    return root


def _touch_all(paths: list[Path], mtime: float) -> None:
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"")
        os.utime(p, (mtime, mtime))


def write_after_checkpoint(root: Path, n_kept: int = 196, splits: bool = True) -> list[str]:
    """The data/ folder as the checkpoint leaves it for the ye2024 suite; returns the kept
    names (the first ``n_kept`` of the manifest)."""
    from tabbench.data.manifest import suite_names

    names = suite_names("ye2024", root / "data" / "demo")
    kept = names[:n_kept]
    data = root / "data"
    t0 = time.time() - 3600  # one second apart per stage: outputs newer than their inputs
    _touch_all([data / "raw" / f"{n}.{e}" for n in names for e in ("parquet", "json")], t0)
    _touch_all(
        [data / "processed" / f"{n}.{e}" for n in names for e in ("parquet", "json")], t0 + 1
    )
    for n in names:  # the filter's reports: what a split or train request is checked against
        report = data / "processed" / f"{n}.json"
        dropped = {"kept": False, "status": "dropped", "reason": "a stand-in filter reason"}
        report.write_text(json.dumps({"kept": True, "status": "kept"} if n in kept else dropped))
        os.utime(report, (t0 + 1, t0 + 1))
    _touch_all([data / f for f in ("kept.txt", "datasets.csv", "unavailable.csv")], t0 + 2)
    (data / "kept.txt").write_text("".join(f"{n}\n" for n in kept))
    os.utime(data / "kept.txt", (t0 + 2, t0 + 2))
    if splits:
        _touch_all([data / "splits" / f"{n}.parquet" for n in kept], t0 + 3)
    return kept


def job_stats(text: str) -> dict[str, int]:
    """Snakemake's 'Job stats' table as {rule: count}."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "Job stats:":
            out = {}
            for row in lines[i + 3 :]:
                parts = row.split()
                if len(parts) != 2 or not parts[1].isdigit():
                    break
                out[parts[0]] = int(parts[1])
            return out
    return {}


def dry_run(root: Path, extra: list[str] | None = None) -> tuple[float, dict[str, int], str]:
    """Time one `snakemake -n` of the paper preset in ``root`` (a fresh process)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    cmd = [
        sys.executable,
        *(extra or []),
        "-m",
        "snakemake",
        "-n",
        "--cores",
        "2",
        "--config",
        "preset=paper",
    ]
    start = time.perf_counter()
    res = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    text = res.stdout + res.stderr
    if res.returncode != 0:
        raise RuntimeError(f"dry run failed:\n{text[-4000:]}")
    return elapsed, job_stats(text), text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kept", type=int, default=196, help="kept datasets (default 196)")
    ap.add_argument("--no-splits", action="store_true", help="splits not drawn yet")
    ap.add_argument("--repeat", type=int, default=1, help="timed dry runs (default 1)")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one dry run")
    ap.add_argument("--keep-dir", type=Path, help="build the workspace here and keep it")
    args = ap.parse_args(argv)

    tmp = None
    if args.keep_dir:
        root = make_workspace(args.keep_dir)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="dag-dry-run-")
        root = make_workspace(Path(tmp.name) / "wf")
    try:
        t = time.perf_counter()
        kept = write_after_checkpoint(root, args.kept, splits=not args.no_splits)
        print(
            f"fixture: {len(kept)} kept datasets of 200, splits "
            f"{'absent' if args.no_splits else 'present'} ({time.perf_counter() - t:.2f} s)"
        )
        times = []
        for _ in range(args.repeat):
            elapsed, stats, _text = dry_run(root)
            times.append(elapsed)
        print(
            f"snakemake -n (paper preset, {os.cpu_count()} CPUs): "
            + ", ".join(f"{s:.1f} s" for s in times)
        )
        print("planned jobs: " + ", ".join(f"{k} {v}" for k, v in stats.items()))
        if args.profile:
            prof = root / "dry_run.prof"
            dry_run(root, ["-m", "cProfile", "-o", str(prof)])
            import pstats

            pstats.Stats(str(prof)).sort_stats("cumulative").print_stats(25)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
