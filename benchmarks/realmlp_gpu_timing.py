"""Time a full RealMLP-TD run (256 epochs) on the largest bundled dataset on a GPU.

Prints the training time per epoch (our ``fit_seconds``, measured with CUDA events around the
training steps, evaluation excluded), the evaluation overhead (val + test logits every epoch),
the total wall time, and the best-val-logloss epoch with its test logloss, so a GPU run can be
checked for sanity as well as speed.

Run on a GPU machine::

    PYTHONPATH=src python benchmarks/realmlp_gpu_timing.py --data-dir data/demo

On CPU the same code path can be smoke-tested with ``--device cpu --epochs 2``. The dataset is
split 64/16/20 like split 0 of the pipeline (docs/design.md §3); datasets over ``--max-rows``
rows are
subsampled (default 100,000, the paper's cap, so the largest bundled dataset, adult, is used
whole).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realmlp_parity import load_dataset, logloss_from_logits, make_split  # noqa: E402

from tabbench.models.base import TrainContext  # noqa: E402
from tabbench.models.realmlp import RealMLPTrainer  # noqa: E402
from tabbench.search.realmlp import DEFAULT_CONFIG  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path("data/demo"))
    ap.add_argument("--dataset", default=None, help="default: the largest in MANIFEST.csv")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--epochs", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-rows", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("CUDA is not available on this machine; use --device cpu for a smoke test")
        return 2
    manifest = pd.read_csv(args.data_dir / "MANIFEST.csv")
    name = args.dataset or str(manifest.sort_values("rows").iloc[-1]["name"])
    X, y, note = load_dataset(args.data_dir, name, args.max_rows)
    data = make_split(X, y, split=0)
    device_name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu"
    print(
        f"{name}: {len(X)} rows ({len(data.y_train)} train), {X.shape[1]} features, "
        f"{data.n_classes} classes {note}| device {args.device} ({device_name}), "
        f"torch {torch.__version__}, {args.epochs} epochs"
    )

    t0 = time.perf_counter()
    val_ll, test_ll, fit = [], [], np.zeros(0)
    for chunk in RealMLPTrainer().train(
        DEFAULT_CONFIG,
        data,
        TrainContext(
            seed=args.seed, n_epochs=args.epochs, threads=args.threads, device=args.device
        ),
    ):
        val_ll.append(logloss_from_logits(chunk.val_logits, data.y_val))
        test_ll.append(logloss_from_logits(chunk.test_logits, data.y_test))
        fit = np.concatenate([fit, chunk.fit_seconds])
    wall = time.perf_counter() - t0

    per_epoch = np.diff(np.concatenate([[0.0], fit]))
    val, test = np.concatenate(val_ll), np.concatenate(test_ll)
    best = int(np.argmin(val))
    steady = per_epoch[1:] if len(per_epoch) > 1 else per_epoch
    print(
        f"training time per epoch: mean {steady.mean() * 1e3:.1f} ms, median "
        f"{np.median(steady) * 1e3:.1f} ms (epochs 2..{args.epochs}); first epoch incl. "
        f"preprocessing and init {per_epoch[0] * 1e3:.1f} ms"
    )
    print(
        f"total: fit {fit[-1]:.1f} s, wall {wall:.1f} s "
        f"(evaluation + transfers {wall - fit[-1]:.1f} s, {(wall - fit[-1]) / len(fit) * 1e3:.1f} "
        "ms per epoch)"
    )
    print(
        f"best val logloss {val[best]:.4f} at epoch {best + 1}: test logloss {test[best]:.4f} "
        f"(last epoch: val {val[-1]:.4f}, test {test[-1]:.4f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
