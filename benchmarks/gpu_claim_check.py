"""Concurrent NN train jobs with `--device cuda` on a real GPU machine: each claims its own GPU.

Starts one more MLP train job than there are GPUs (what Snakemake would do without
`--resources gpu=N`), all at once, each as its own process with the same lock folder, and
records from their logs when each claimed which GPU and when it finished. Printed: one line per
job, whether any two jobs held one GPU at the same time (must be never), and how long the
surplus job waited. Finally a job with a 1 s claim timeout is started while every GPU is busy:
it must fail with the clear error, not train.

    python benchmarks/gpu_claim_check.py [--epochs 100] [--rows 50000]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def write_toy(folder: Path, n: int) -> tuple[Path, Path]:
    import numpy as np
    import pandas as pd

    from tabbench.data.dataset import LABEL_COLUMN

    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"x{j}": rng.normal(size=n) for j in range(8)})
    df["c"] = pd.Categorical(rng.choice(["a", "b", "c", "d"], size=n))
    df[LABEL_COLUMN] = (df["x0"] + rng.normal(size=n) > 0).astype(np.int64)
    perm = rng.permutation(n)
    n_test, n_val = n // 5, (n - n // 5) // 5
    roles = ["test"] * n_test + ["val"] * n_val + ["train"] * (n - n_test - n_val)
    folder.mkdir(parents=True, exist_ok=True)
    df.to_parquet(folder / "toy.parquet", index=False)
    pd.DataFrame({"split": 0, "row": perm, "role": roles}).to_parquet(
        folder / "toy.splits.parquet", index=False
    )
    return folder / "toy.parquet", folder / "toy.splits.parquet"


def start_job(i, data, out_dir, locks, epochs, timeout):
    processed, splits = data
    log = out_dir / f"job{i}.log"
    cmd = [sys.executable, "-m", "tabbench.cli", "train", "--model", "mlp",
           "--dataset", "toy", "--split", "0", "--processed", str(processed),
           "--splits", str(splits), "--out", str(out_dir / f"job{i}" / "split0.parquet"),
           "--n-configs", "1", "--epochs", f"mlp={epochs}", "--seed", str(i),
           "--device", "cuda", "--gpu-lock-dir", str(locks),
           "--gpu-claim-timeout", str(timeout)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    fh = open(log, "w")  # noqa: SIM115 - closed when the job ends
    return subprocess.Popen(cmd, stderr=fh, stdout=fh, env=env), log, fh


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--rows", type=int, default=50_000)
    args = ap.parse_args(argv)

    import torch

    print(f"torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}")
    if not torch.cuda.is_available():
        print("no CUDA: nothing to check here")
        return 1
    n_gpus = torch.cuda.device_count()
    print(f"GPUs: {n_gpus} ({torch.cuda.get_device_name(0)})")
    tmp = Path(tempfile.mkdtemp(prefix="gpu-claim-"))
    data = write_toy(tmp / "data", args.rows)
    locks = tmp / "locks"
    t0 = time.monotonic()
    jobs = [start_job(i, data, tmp, locks, args.epochs, 600) for i in range(n_gpus + 1)]
    last_epoch = f"config 1 (2/2) epoch {args.epochs}/{args.epochs}"
    claimed, released = {}, {}
    late = None
    while any(p.poll() is None for p, _, _ in jobs) or (late and late[0].poll() is None):
        now = time.monotonic() - t0
        for i, (_, log, _) in enumerate(jobs):
            text = log.read_text()
            m = re.search(r"claimed GPU (\S+) as (cuda:\d+)", text)
            if m and i not in claimed:
                claimed[i] = (m.group(1), now)
            if last_epoch in text and i not in released:
                released[i] = now  # the GPU is released right after the last epoch
        if late is None and len(claimed) >= n_gpus and not released:
            late = start_job("late", data, tmp, locks, args.epochs, 1)
        time.sleep(0.05)
    for _, _, fh in jobs:
        fh.close()
    now = time.monotonic() - t0
    if late is not None:
        late[2].close()
        err = late[1].read_text().strip()
        started = "training" in err
        print(
            f"extra job with a 1 s claim timeout while all GPUs were busy: exit "
            f"{late[0].returncode}, trained: {started}, last line: "
            f"{err.splitlines()[-1] if err else '(none)'}"
        )
    for i, (p, log, _) in enumerate(jobs):
        text = log.read_text()
        released.setdefault(i, now)
        dev = re.search(r"device=(\S+)", text)
        gpu, at = claimed.get(i, ("-", float("nan")))
        print(
            f"job{i}: exit {p.returncode}, GPU {gpu}, device {dev.group(1) if dev else '?'}, "
            f"claimed at {at:.1f} s, released at {released[i]:.1f} s"
        )
        if p.returncode != 0:
            print(text[-2000:])
    overlap = False
    for i in claimed:
        for j in claimed:
            if i < j and claimed[i][0] == claimed[j][0]:
                a = (claimed[i][1], released[i])
                b = (claimed[j][1], released[j])
                overlap |= a[0] < b[1] and b[0] < a[1]
    print(f"two jobs on one GPU at the same time: {'YES (bug)' if overlap else 'never'}")
    print(f"all {len(jobs)} jobs finished in {now:.1f} s")
    return int(overlap or any(p.returncode for p, _, _ in jobs))


if __name__ == "__main__":
    sys.exit(main())
