"""Per-epoch validation logloss curves of our RealMLP and pytabkit's RealMLP-TD, side by side.

``realmlp_parity.py`` compares the two only at the best validation epoch. This script records the
whole curve of both on the same split (its data loading and split recipe are reused from there),
so a late-training blow-up can be told apart from genuine RealMLP-TD behaviour:

* ours: ``RealMLPTrainer`` with ``DEFAULT_CONFIG``; val logloss from the per-epoch val logits.
* reference: ``RealMLP_TD_Classifier(use_ls=False, val_metric_name="cross_entropy")``. pytabkit
  keeps no per-epoch history (``TabNNModule`` stores only the best error and epoch per metric), so
  ``TabNNModule.on_validation_epoch_end`` is wrapped from outside for the duration of ``fit``:
  after pytabkit's own bookkeeping, the wrapper copies the epoch's val logits (``val_preds``) and
  labels (``val_dl.val_y``) and the logloss is computed here with the same function as for ours.
  The last curve entry is therefore the reference's *final-epoch* val logloss (before it restores
  the best epoch). As a check, the recorded curve's argmin (last on ties) must equal the best epoch
  pytabkit itself reports (``fit_params[0]["stop_epoch"]``); the script says if it does not.

Printed per dataset: best epoch and val logloss there, and val logloss at epochs 64/128/192/256
(scaled to ``--epochs``). Saved under ``--out-dir``: ``curves.json`` (every curve) and
``curves.png`` (one panel per dataset).

Run (one torch thread; ``nice`` because the machine may be shared)::

    PYTHONPATH=src OMP_NUM_THREADS=1 nice -n 19 python benchmarks/realmlp_curves.py \\
        --datasets adult phoneme spambase --max-rows 8000

``--max-rows 100000`` runs the full adult (31 259 train rows; about 4 min per side on one
thread); ``--ls-eps 0.1`` switches label smoothing on for both (pytabkit's TD default).

Needs pytabkit as ``realmlp_parity.py`` describes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import logging
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from realmlp_parity import (  # noqa: E402
    load_dataset,
    logloss_from_logits,
    make_split,
    reference_classifier,
)

from tabbench.core.io import write_json_atomic  # noqa: E402
from tabbench.models.base import SplitData, TrainContext  # noqa: E402
from tabbench.models.realmlp import RealMLPTrainer  # noqa: E402
from tabbench.search.realmlp import DEFAULT_CONFIG  # noqa: E402


def curve_ours(
    data: SplitData, seed: int, epochs: int, threads: int, params: dict | None = None
) -> np.ndarray:
    """Val logloss after each epoch of our trainer (``params`` overrides ``DEFAULT_CONFIG``)."""
    config = {**DEFAULT_CONFIG, **(params or {})}
    ctx = TrainContext(seed=seed, n_epochs=epochs, threads=threads)
    chunks = RealMLPTrainer().train(config, data, ctx)
    return np.concatenate([logloss_from_logits(c.val_logits, data.y_val) for c in chunks])


@contextlib.contextmanager
def recording_reference_val_logits() -> Iterator[list[tuple[np.ndarray, np.ndarray]]]:
    """Within the block, every validation pass of a pytabkit NN appends ``(logits, y)``.

    Wraps ``TabNNModule.on_validation_epoch_end`` (restored on exit). ``val_preds`` are the raw
    model outputs of shape (n_models, n_val, K); with one model and no ensembling they are the
    logits that pytabkit's own ``cross_entropy`` metric sees.
    """
    import torch
    from pytabkit.models.training.lightning_modules import TabNNModule

    original = TabNNModule.on_validation_epoch_end
    records: list[tuple[np.ndarray, np.ndarray]] = []

    def wrapped(self: TabNNModule) -> None:
        preds = torch.cat(self.val_preds, dim=-2)
        original(self)
        if preds.shape[0] != 1:
            raise RuntimeError(f"expected one model in the reference, got {preds.shape[0]}")
        y = self.val_dl.val_y[0, :, 0]
        records.append((preds[0].detach().cpu().numpy(), y.cpu().numpy().astype(np.int64)))

    TabNNModule.on_validation_epoch_end = wrapped
    try:
        yield records
    finally:
        TabNNModule.on_validation_epoch_end = original


def curve_reference(
    data: SplitData, seed: int, epochs: int, threads: int, ls_eps: float = 0.0
) -> tuple[np.ndarray, int]:
    """Val logloss after each epoch of pytabkit's RealMLP-TD, and the best epoch it reports."""
    clf = reference_classifier(seed, epochs, threads, ls_eps)
    with recording_reference_val_logits() as records:
        clf.fit(data.X_train, data.y_train, X_val=data.X_val, y_val=data.y_val)
    if len(records) != epochs:
        raise RuntimeError(f"recorded {len(records)} validation passes for {epochs} epochs")
    curve = np.array([logloss_from_logits(z[None], y)[0] for z, y in records])
    best = int(clf.alg_interface_.fit_params[0]["stop_epoch"]["cross_entropy"])
    return curve, best


def best_epoch(curve: np.ndarray) -> int:
    """1-based epoch of the lowest value, the last one on ties (as pytabkit)."""
    return len(curve) - int(np.argmin(curve[::-1]))


def plot(curves: dict[str, dict[str, list[float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 4), squeeze=False)
    for ax, (name, by_impl) in zip(axes[0], curves.items(), strict=True):
        for impl, values in by_impl.items():
            ax.plot(np.arange(1, len(values) + 1), values, label=impl, lw=1)
        ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.set_ylabel("val logloss (log scale)")
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path("data/demo"))
    ap.add_argument("--datasets", nargs="+", default=["adult", "phoneme", "spambase"])
    ap.add_argument("--split", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-rows", type=int, default=8000)
    ap.add_argument("--out-dir", type=Path, default=Path("/tmp/mlpcurves"))
    ap.add_argument(
        "--ls-eps",
        type=float,
        default=0.0,
        help="label smoothing on both sides (0 = DEFAULT_CONFIG; 0.1 = pytabkit's TD default)",
    )
    ap.add_argument(
        "--skip-reference", action="store_true", help="only our curve (no pytabkit needed)"
    )
    args = ap.parse_args(argv)

    import torch

    warnings.filterwarnings("ignore")
    for name in ("lightning", "pytorch_lightning", "lightning.pytorch", "lightning_fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)
    torch.set_num_threads(args.threads)
    if not args.skip_reference:
        try:
            ref_version = importlib.metadata.version("pytabkit")
        except importlib.metadata.PackageNotFoundError:
            print("pytabkit is not installed: see benchmarks/realmlp_parity.py")
            return 2
    else:
        ref_version = "-"

    marks = [max(1, args.epochs * q // 4) for q in (1, 2, 3, 4)]
    print(
        f"RealMLP-TD val logloss curves, split {args.split}, {args.epochs} epochs, "
        f"label smoothing {args.ls_eps}, "
        f"threads={args.threads}, torch {torch.__version__}, pytabkit {ref_version}"
    )
    header = (
        f"{'dataset':<10} {'impl':<5} {'n_tr':>6} | {'best_ep':>7} {'best':>7} | "
        + " ".join(f"{'ep' + str(e):>7}" for e in marks)
        + f" | {'sec':>6}"
    )
    print(header)
    print("-" * len(header))
    curves: dict[str, dict[str, list[float]]] = {}
    for name in args.datasets:
        X, y, note = load_dataset(args.data_dir, name, args.max_rows)
        data = make_split(X, y, args.split)
        curves[name] = {}
        runs = ["ours"] if args.skip_reference else ["ref", "ours"]
        for impl in runs:
            t0 = time.perf_counter()
            if impl == "ref":
                curve, reported = curve_reference(
                    data, args.split, args.epochs, args.threads, args.ls_eps
                )
            else:
                curve = curve_ours(
                    data, args.split, args.epochs, args.threads, {"ls_eps": args.ls_eps}
                )
                reported = best_epoch(curve)
            secs = time.perf_counter() - t0
            curves[name][impl] = curve.tolist()
            best = best_epoch(curve)
            check = "" if best == reported else f"  (!! pytabkit reports best epoch {reported})"
            print(
                f"{name:<10} {impl:<5} {len(data.y_train):>6} | {best:>7} {curve[best - 1]:7.4f} | "
                + " ".join(f"{curve[e - 1]:7.4f}" for e in marks)
                + f" | {secs:6.1f}"
                + check
                + (f"  ({note})" if note and impl == runs[0] else ""),
                flush=True,
            )
        write_json_atomic(curves, args.out_dir / "curves.json")
        plot(curves, args.out_dir / "curves.png")
    print(f"curves: {args.out_dir / 'curves.json'}, plot: {args.out_dir / 'curves.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
