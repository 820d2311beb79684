"""Parity of tabbench's RealMLP with the reference (pytabkit's RealMLP-TD), side by side.

What is compared, per (dataset, split), on the same 64/16/20 train/val/test split (docs/design.md §3
recipe, unstratified: test = first 20% of ``default_rng(split).permutation(n)``, then val = first
20% of the rest) and the same number of epochs (256):

* reference: ``pytabkit.RealMLP_TD_Classifier(use_ls=False, val_metric_name="cross_entropy")``
  fit with ``X_val, y_val``. pytabkit then evaluates the validation logloss after every epoch and
  restores the parameters of the best epoch (the *last* best on ties); we report the test logloss
  of ``predict_proba`` of that restored model, and the best epoch it recorded.
* ours: ``RealMLPTrainer`` with ``DEFAULT_CONFIG`` (RealMLP-TD, no label smoothing); from the
  per-epoch validation/test logits we take the epoch with the lowest validation logloss (last on
  ties, as the reference) and report its test logloss.

Wall time: the reference's ``fit`` + ``predict_proba`` (it evaluates val every epoch) versus our
full ``train`` loop, which evaluates val *and* test every epoch (``fit_s`` is our fit_seconds,
i.e. without evaluation). Both run in the same process with the same torch thread count, one
after the other on each split (order alternating between splits so a drifting machine load
doesn't favour one side), after one short warm-up fit each so one-time costs (imports, lazy
initialisation) are paid outside the timings. The process CPU time is printed too: on a machine
shared with other jobs it is the steadier measure. ``--threads`` defaults to 1 because with more
intra-op threads than idle cores, OpenMP barriers make wall times erratic (10× swings seen).

Run::

    PYTHONPATH=src python benchmarks/realmlp_parity.py --data-dir data/demo

Needs the optional reference package: ``pip install --no-deps pytabkit`` plus
``pytorch-lightning``, ``lightning-utilities``, ``torchmetrics`` and ``psutil`` (each installed
so torch is left unchanged). Datasets larger than ``--max-rows`` are subsampled
(``default_rng(0)``, said in the output) to keep the run short.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tabbench.models.base import SplitData, TrainContext  # noqa: E402
from tabbench.models.realmlp import RealMLPTrainer  # noqa: E402
from tabbench.search.realmlp import DEFAULT_CONFIG  # noqa: E402

DEFAULT_DATASETS = ["credit-g", "cmc", "kr-vs-kp", "segment", "spambase", "phoneme"]


@dataclass
class Result:
    test_logloss: float
    best_epoch: int
    wall_s: float
    cpu_s: float
    fit_s: float = float("nan")


def load_dataset(data_dir: Path, name: str, max_rows: int) -> tuple[pd.DataFrame, np.ndarray, str]:
    """Features (numericals float, categoricals ``category``), label codes, and a note."""
    manifest = pd.read_csv(data_dir / "MANIFEST.csv").set_index("name")
    if name not in manifest.index:
        raise SystemExit(f"{name!r} not in {data_dir / 'MANIFEST.csv'}")
    df = pd.read_parquet(data_dir / f"{name}.parquet")
    target = manifest.loc[name, "target"]
    X = df.drop(columns=[target])
    for c in X.columns:  # string columns are categorical too
        if not pd.api.types.is_numeric_dtype(X[c].dtype) and not isinstance(
            X[c].dtype, pd.CategoricalDtype
        ):
            X[c] = X[c].astype("category")
    num = [c for c in X.columns if not isinstance(X[c].dtype, pd.CategoricalDtype)]
    keep = ~X[num].isna().any(axis=1).to_numpy() if num else np.ones(len(X), bool)
    X, labels = X[keep].reset_index(drop=True), df[target][keep].reset_index(drop=True)
    note = ""
    if len(X) > max_rows:
        rows = np.sort(np.random.default_rng(0).permutation(len(X))[:max_rows])
        X, labels = X.iloc[rows].reset_index(drop=True), labels.iloc[rows].reset_index(drop=True)
        note = f"subsampled to {max_rows} rows"
    y = pd.factorize(labels, sort=True)[0].astype(np.int64)
    return X, y, note


def make_split(X: pd.DataFrame, y: np.ndarray, split: int) -> SplitData:
    n = len(X)
    perm = np.random.default_rng(split).permutation(n)
    n_test = int(round(0.2 * n))
    test, rest = perm[:n_test], perm[n_test:]
    n_val = int(round(0.2 * len(rest)))
    val, train = rest[:n_val], rest[n_val:]

    def part(idx: np.ndarray) -> pd.DataFrame:
        return X.iloc[idx].reset_index(drop=True)

    return SplitData(
        part(train), y[train], part(val), y[val], part(test), y[test], int(y.max()) + 1
    )


def logloss_from_logits(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Mean −log softmax(z)_y for a stack of logits (E, N, K) → (E,)."""
    z = logits.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return -logp[:, np.arange(len(y)), y].mean(axis=1)


def run_ours(data: SplitData, seed: int, epochs: int, threads: int) -> Result:
    t0, c0 = time.perf_counter(), time.process_time()
    val_ll, test_ll, fit_s = [], [], 0.0
    for chunk in RealMLPTrainer().train(
        DEFAULT_CONFIG, data, TrainContext(seed=seed, n_epochs=epochs, threads=threads)
    ):
        val_ll.append(logloss_from_logits(chunk.val_logits, data.y_val))
        test_ll.append(logloss_from_logits(chunk.test_logits, data.y_test))
        fit_s = float(chunk.fit_seconds[-1])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    val, test = np.concatenate(val_ll), np.concatenate(test_ll)
    best = len(val) - 1 - int(np.argmin(val[::-1]))  # last best on ties, as the reference
    return Result(float(test[best]), best + 1, wall, cpu, fit_s)


def reference_classifier(seed: int, epochs: int, threads: int, ls_eps: float = 0.0):
    """pytabkit's RealMLP-TD as we compare against it: validation by cross-entropy, label
    smoothing off unless ``ls_eps`` > 0 (pytabkit's TD default is 0.1; docs/design.md §5 turns it
    off), on the CPU."""
    from pytabkit import RealMLP_TD_Classifier

    return RealMLP_TD_Classifier(
        use_ls=ls_eps > 0,
        ls_eps=ls_eps,
        val_metric_name="cross_entropy",
        n_epochs=epochs,
        random_state=seed,
        device="cpu",
        n_threads=threads,
        verbosity=0,
    )


def run_reference(data: SplitData, seed: int, epochs: int, threads: int) -> Result:
    t0, c0 = time.perf_counter(), time.process_time()
    clf = reference_classifier(seed, epochs, threads)
    clf.fit(data.X_train, data.y_train, X_val=data.X_val, y_val=data.y_val)
    proba = clf.predict_proba(data.X_test)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if len(clf.classes_) != data.n_classes:
        raise RuntimeError("a class is missing from train+val; pick another split")
    p = np.clip(proba[np.arange(len(data.y_test)), data.y_test], 1e-300, None)
    try:
        best = int(clf.alg_interface_.fit_params[0]["stop_epoch"]["cross_entropy"])
    except (AttributeError, KeyError, IndexError, TypeError):
        best = -1
    return Result(float(-np.log(p).mean()), best, wall, cpu)


def wait_for(data_dir: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not (data_dir / "MANIFEST.csv").exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"no {data_dir / 'MANIFEST.csv'} (waited {seconds:.0f}s)")
        print(f"waiting for {data_dir / 'MANIFEST.csv'} …", flush=True)
        time.sleep(30)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path("data/demo"))
    ap.add_argument("--datasets", nargs="+", default=DEFAULT_DATASETS)
    ap.add_argument("--splits", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--epochs", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-rows", type=int, default=5000)
    ap.add_argument("--wait", type=float, default=0.0, help="seconds to wait for the data")
    args = ap.parse_args(argv)

    try:
        import pytabkit  # noqa: F401
    except ImportError:
        print("pytabkit is not installed: pip install --no-deps pytabkit (see module doc)")
        return 2
    import torch

    warnings.filterwarnings("ignore")
    for name in ("lightning", "pytorch_lightning", "lightning.pytorch", "lightning_fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)
    torch.set_num_threads(args.threads)
    wait_for(args.data_dir, args.wait)

    datasets = {name: load_dataset(args.data_dir, name, args.max_rows) for name in args.datasets}
    first = make_split(*datasets[args.datasets[0]][:2], split=0)
    run_reference(first, seed=0, epochs=1, threads=args.threads)  # warm-up, untimed
    run_ours(first, seed=0, epochs=1, threads=args.threads)

    print(
        f"RealMLP-TD parity, {args.epochs} epochs, threads={args.threads}, torch "
        f"{torch.__version__}, pytabkit {importlib.metadata.version('pytabkit')}; "
        "test logloss at the best-val-logloss epoch"
    )
    header = (
        f"{'dataset':<10} {'split':>5} {'n_tr':>5} {'K':>3} | {'ref_ll':>7} {'our_ll':>7} "
        f"{'ratio':>6} | {'ref_ep':>6} {'our_ep':>6} | {'ref_s':>6} {'our_s':>6} {'fit_s':>6} "
        f"{'ratio':>6} | {'ref_cpu':>7} {'our_cpu':>7} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for name, (X, y, note) in datasets.items():
        for split in args.splits:
            data = make_split(X, y, split)
            runners = [("ref", run_reference), ("ours", run_ours)]
            if split % 2:
                runners.reverse()
            res = {who: fn(data, split, args.epochs, args.threads) for who, fn in runners}
            ref, ours = res["ref"], res["ours"]
            rows.append((name, split, ref, ours))
            print(
                f"{name:<10} {split:>5} {len(data.y_train):>5} {data.n_classes:>3} | "
                f"{ref.test_logloss:7.4f} {ours.test_logloss:7.4f} "
                f"{ours.test_logloss / ref.test_logloss:6.3f} | {ref.best_epoch:>6} "
                f"{ours.best_epoch:>6} | {ref.wall_s:6.1f} {ours.wall_s:6.1f} {ours.fit_s:6.1f} "
                f"{ours.wall_s / ref.wall_s:6.3f} | {ref.cpu_s:7.1f} {ours.cpu_s:7.1f} "
                f"{ours.cpu_s / ref.cpu_s:6.3f}" + (f"  ({note})" if note and split == 0 else ""),
                flush=True,
            )

    ref_ll = np.mean([r.test_logloss for _, _, r, _ in rows])
    our_ll = np.mean([o.test_logloss for _, _, _, o in rows])
    ref_wall = sum(r.wall_s for _, _, r, _ in rows)
    our_wall = sum(o.wall_s for _, _, _, o in rows)
    our_fit = sum(o.fit_s for _, _, _, o in rows)
    ref_cpu = sum(r.cpu_s for _, _, r, _ in rows)
    our_cpu = sum(o.cpu_s for _, _, _, o in rows)
    print("-" * len(header))
    print(
        f"mean test logloss: reference {ref_ll:.4f}, ours {our_ll:.4f}, "
        f"ratio {our_ll / ref_ll:.4f} (target within 3%: "
        f"{'yes' if abs(our_ll / ref_ll - 1) <= 0.03 else 'NO'})"
    )
    per_ds = {
        name: np.mean([o.test_logloss / r.test_logloss for n, _, r, o in rows if n == name])
        for name in datasets
    }
    print("per-dataset mean ratio: " + ", ".join(f"{k} {v:.3f}" for k, v in per_ds.items()))
    print(
        f"total wall: reference {ref_wall:.1f}s, ours {our_wall:.1f}s (fit only {our_fit:.1f}s), "
        f"ratio {our_wall / ref_wall:.3f} (target <= 1.0: "
        f"{'yes' if our_wall <= ref_wall else 'NO'})"
    )
    print(
        f"total process CPU time: reference {ref_cpu:.1f}s, ours {our_cpu:.1f}s, "
        f"ratio {our_cpu / ref_cpu:.3f} (insensitive to other processes on a shared machine)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
