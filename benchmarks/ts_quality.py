"""Quality vs runtime of temperature-scaling implementations (idea of the paper's Fig. 3 / E.1).

Run:  PYTHONPATH=src python benchmarks/ts_quality.py [--data-dir data/demo] [--out DIR]

For every bundled dataset (``MANIFEST.csv`` in ``--data-dir``): a seeded random 64/16/20
train/val/test split, XGBoost with library defaults and 100 rounds (native categoricals),
validation and test logits; then each TS implementation is fit on the validation logits
and the test log loss of softmax(β·z) is measured (no smoothing: this compares optimisers).
sklearn's LogisticRegression is TS only for binary problems (one weight on z₁ − z₀), so it is
run on the binary datasets only.
Per dataset the test log losses are divided by that of the uncalibrated model (no TS; the
best method's loss cannot be the reference: a separable validation set, e.g. nursery, sends
β to e^16 and the test loss to 0); the figure shows the mean of this normalised loss against
the mean CPU time per fit, one point per implementation.
The table printed and the figure (PNG + PDF in ``--out``) come from the same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _ts_impls as impl  # noqa: E402


def load(data_dir: Path, row: pd.Series) -> tuple[pd.DataFrame, np.ndarray, int]:
    df = pd.read_parquet(data_dir / f"{row['name']}.parquet")
    target = row["target"]
    y_raw = df.pop(target)
    num = [c for c in df.columns if not isinstance(df[c].dtype, pd.CategoricalDtype)]
    keep = df[num].notna().all(axis=1).to_numpy()  # paper's filter: no missing numericals
    df, y_raw = df[keep].reset_index(drop=True), y_raw[keep].reset_index(drop=True)
    codes, classes = pd.factorize(y_raw, sort=True)
    return df, codes.astype(np.int64), len(classes)


def xgb_logits(X: pd.DataFrame, y: np.ndarray, k: int, seed: int):
    """Validation and test logits (N, K) of a default XGBoost with 100 rounds."""
    import xgboost as xgb

    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    n_test = int(round(0.2 * len(y)))
    test, rest = perm[:n_test], perm[n_test:]
    n_val = int(round(0.2 * len(rest)))
    val, train = rest[:n_val], rest[n_val:]
    params = {"tree_method": "hist", "nthread": 2, "seed": seed}
    if k == 2:
        params["objective"] = "binary:logistic"
    else:
        params.update(objective="multi:softprob", num_class=k)
    dtrain = xgb.DMatrix(X.iloc[train], y[train], enable_categorical=True)
    booster = xgb.train(params, dtrain, num_boost_round=100)

    def margins(idx):
        m = booster.predict(xgb.DMatrix(X.iloc[idx], enable_categorical=True), output_margin=True)
        if k == 2:  # one margin = logit of class 1
            m = np.stack([np.zeros_like(m), m], axis=1)
        return m.astype(np.float32)

    return margins(val), y[val], margins(test), y[test]


def cpu_seconds(fn, repeats: int) -> tuple[float, object]:
    result = fn()
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        result = fn()
        times.append(time.process_time() - t0)
    return float(np.median(times)), result


def test_logloss(z: np.ndarray, y: np.ndarray, fitted) -> float:
    if callable(fitted):
        return float(-fitted(z)[np.arange(len(y)), y].mean())
    return impl.nll(z, y, fitted)


def run(data_dir: Path, seed: int, repeats: int, limit: int | None) -> pd.DataFrame:
    manifest = pd.read_csv(data_dir / "MANIFEST.csv")
    if limit:
        manifest = manifest.head(limit)
    rows = []
    for _, entry in manifest.iterrows():
        X, y, k = load(data_dir, entry)
        if len(y) < 1000:  # the paper's filter (App. G.6) drops these
            print(f"  {entry['name']}: {len(y)} rows after dropping missing numericals, skipped")
            continue
        z_val, y_val, z_test, y_test = xgb_logits(X, y, k, seed)
        rows.append(
            dict(
                dataset=entry["name"],
                method="no TS",
                seconds=np.nan,
                classes=k,
                test_logloss=impl.nll(z_test, y_test, 1.0),
            )
        )
        for name, fit in impl.methods().items():
            if name == "sklearn LogReg" and k > 2:
                continue  # multinomial LogReg on logits is matrix scaling, not TS
            sec, fitted = cpu_seconds(partial(fit, z_val, y_val), repeats)
            rows.append(
                dict(
                    dataset=entry["name"],
                    method=name,
                    seconds=sec,
                    classes=k,
                    test_logloss=test_logloss(z_test, y_test, fitted),
                )
            )
        print(f"  {entry['name']}: N_val={len(y_val)}, K={k}", flush=True)
    res = pd.DataFrame(rows)
    raw = res[res.method == "no TS"].set_index("dataset").test_logloss
    res["normalised"] = res.test_logloss / res.dataset.map(raw)
    return res


def summarise(res: pd.DataFrame) -> pd.DataFrame:
    return (
        res.groupby("method")
        .agg(
            seconds=("seconds", "mean"),
            normalised=("normalised", "mean"),
            worst=("normalised", "max"),
            datasets=("dataset", "nunique"),
        )
        .sort_values("seconds")
    )


def plot(panels: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """One panel per dataset subset (all datasets; binary ones, where sklearn's LogReg is TS)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), sharey=True)
    methods = sorted({m for summary in panels.values() for m in summary.index if m != "no TS"})
    colours = {m: f"C{i}" for i, m in enumerate(methods)}
    for ax, (title, summary) in zip(np.atleast_1d(axes), panels.items(), strict=True):
        for method, r in summary.dropna(subset=["seconds"]).iterrows():
            ax.scatter(r.seconds, r.normalised, s=60, color=colours[method], label=method, zorder=3)
        ax.set_xscale("log")
        ax.set_xlabel("mean CPU time per TS fit on validation [s]")
        ax.axhline(1.0, color="gray", ls="--", lw=1)
        ax.annotate(
            "no TS",
            (0.01, 1.0),
            xycoords=("axes fraction", "data"),
            textcoords="offset points",
            xytext=(0, 3),
            color="gray",
            fontsize=8,
        )
        ax.set_title(f"{title} ({int(summary.datasets.max())} datasets)", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    first = np.atleast_1d(axes)[0]
    first.set_ylabel("mean test log loss / uncalibrated")
    handles = [plt.Line2D([], [], marker="o", ls="", color=colours[m], label=m) for m in methods]
    first.legend(handles=handles, fontsize=8, loc="center right")
    fig.suptitle("Temperature-scaling implementations on XGBoost-default logits", fontsize=11)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "ts_quality.png", out / "ts_quality.pdf"]
    for p in paths:
        tmp = p.with_name(p.stem + ".tmp" + p.suffix)
        fig.savefig(tmp, dpi=150)
        tmp.replace(p)  # atomic: a crash never leaves a half-written figure
    plt.close(fig)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=Path("data/demo"))
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=5, help="timed fits per method and dataset")
    ap.add_argument("--limit", type=int, default=None, help="first N datasets only")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    res = run(args.data_dir, args.seed, args.repeats, args.limit)
    pd.set_option("display.width", 120)
    fmt = {"float_format": lambda v: f"{v:.4g}"}
    everything = summarise(res[res.method != "sklearn LogReg"])
    binary = summarise(res[res.classes == 2])
    print("\nAll datasets (normalised = test log loss / uncalibrated test log loss):")
    print(everything.to_string(**fmt))
    print("\nBinary datasets (sklearn LogReg on z1 - z0 without intercept is exactly TS):")
    print(binary.to_string(**fmt))
    for p in plot({"all datasets": everything, "binary datasets": binary}, args.out):
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
