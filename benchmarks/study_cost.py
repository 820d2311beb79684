"""Cost model of the full study: what the paper preset costs, from runs measured here.

    python benchmarks/study_cost.py --results results             # fit on a results folder
    python benchmarks/study_cost.py --results results --cores 32 --gpus 4

1. **Measure.** Every finished job of ``--results`` gives, per config, its epochs, its training
   time (``fit_seconds`` of the last epoch) and, from the job's log
   (``results/logs/train/...``, the progress lines' cumulative "elapsed"), its wall time
   including the per-epoch recording. Jobs without a usable log (resumed, or the log missing)
   count with the model's median ratio wall / training time.
2. **Fit.** Per model and regime (default config / random configs), the wall seconds per epoch
   are fit log-linearly on the training rows, the number of features and the number of trees
   or output columns per round (1 for binary, K otherwise): ``log s = b0 + b1 log n_train +
   b2 log n_features + b3 log K_eff`` (least squares over (dataset, split) means; random configs
   are averaged first, so the tuned fit predicts the cost of an average random config).
3. **Predict** the paper preset: every dataset of the Ye et al. manifest the paper keeps
   (196: not marked "DROPPED" in its notes, ≤ 100 classes), rows capped at 100,000, 64 % of
   them for training, 5 splits, default + 30 configs, the paper's epochs. XGBoost runs on CPU
   cores (core-hours); the networks on GPUs: per epoch ``ceil(n_train / 256)`` batches at the
   per-batch training times measured on an H200 (``--gpu-ms-per-batch``; defaults MLP 2.0 ms,
   RealMLP 3.7 ms: docs/performance.md) plus what recording adds to a GPU epoch (the device's
   evaluation forward pass and the metrics on the host: ``GPU_FORWARD_SHARE``,
   ``HOST_METRICS_S_PER_ROW``). Wall time on ``--cores`` + ``--gpus``: XGBoost
   core-hours / (cores − gpus) next to GPU-hours / gpus (the two run side by side; one core
   per GPU job feeds it), and the larger of the two, against the paper's ~40 h.

The measured jobs ran with one thread each; on a loaded machine every number is inflated by
the load, which the script cannot know: say what ran beside it.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
YE_MANIFEST = REPO / "src" / "tabbench" / "data" / "ye2024_classification.csv"
BUNDLED_MANIFEST = REPO / "data" / "demo" / "MANIFEST.csv"
PAPER_HOURS = 40.0
PAPER = {"n_splits": 5, "n_configs": 30, "max_rows": 100_000, "train_fraction": 0.64,
         "epochs": {("xgboost", "default"): 100, ("xgboost", "tuned"): 1000,
                    ("mlp", "default"): 256, ("mlp", "tuned"): 256,
                    ("realmlp", "default"): 256, ("realmlp", "tuned"): 256}}
NETWORKS = ("mlp", "realmlp")
BATCH = 256
#: H200 per-batch training time (ms), docs/performance.md (MagicTelescope MLP 94 ms per epoch of
#: 47 batches; adult RealMLP 449 ms per epoch of 122 batches)
GPU_MS_PER_BATCH = {"mlp": 2.0, "realmlp": 3.7}
#: what recording adds to a GPU epoch, measured on the H200 (docs/performance.md, MLP on
#: MagicTelescope): the evaluation forward pass on the device, 2.1 % of the GPU epoch, and the
#: metrics on the host CPU, 1.38 ms per epoch for 6,847 val+test rows on this VM
#: (benchmarks/recording_overhead.py), i.e. 0.20 us per evaluated row. The CPU runs' own
#: "wall - training" cannot stand in: it holds the CPU forward pass, which a GPU does in a
#: fraction of the time.
GPU_FORWARD_SHARE = 0.021
HOST_METRICS_S_PER_ROW = 1.38e-3 / 6_847

_LINE = re.compile(r"config (\d+) \(\d+/\d+\) epoch (\d+)/(\d+) elapsed (\S+)")


def parse_hms(text: str) -> float:
    """The progress lines' durations: ``41.1s`` or ``h:mm:ss``."""
    if text.endswith("s"):
        return float(text[:-1])
    h, m, s = (int(x) for x in text.split(":"))
    return 3600 * h + 60 * m + s


def config_walls(log: Path) -> dict[int, float] | None:
    """Wall seconds of each config trained by the job whose log this is (differences of the
    cumulative "elapsed" at each config's last epoch line); None for a resumed job (its
    elapsed restarts) or a log without progress lines."""
    text = log.read_text(errors="replace")
    if "already done (part file)" in text or "done:" not in text:
        return None
    last: dict[int, float] = {}
    for m in _LINE.finditer(text):
        last[int(m.group(1))] = parse_hms(m.group(4))
    if not last:
        return None
    walls, prev = {}, 0.0
    for c in sorted(last):
        walls[c] = max(last[c] - prev, 0.0)
        prev = last[c]
    return walls


def feature_counts() -> dict[str, int]:
    """Number of features per dataset name (bundled manifest first, then Ye et al.'s)."""
    out: dict[str, int] = {}
    for path in (YE_MANIFEST, BUNDLED_MANIFEST):
        if path.exists():
            df = pd.read_csv(path)
            for r in df.itertuples():
                if pd.notna(r.n_num) and pd.notna(r.n_cat):
                    out[r.name] = int(r.n_num) + int(r.n_cat)
    return out


def measurements(results: Path) -> pd.DataFrame:
    """One row per (model, dataset, split, config): epochs, training and wall seconds, sizes."""
    n_feat = feature_counts()
    rows = []
    for runs in sorted(results.glob("runs/*/*/split*.parquet")):
        model, dataset, split = runs.parent.parent.name, runs.parent.name, runs.stem
        cols = ["config", "epoch", "fit_seconds", "n_train", "n_val", "n_test", "n_classes"]
        df = pd.read_parquet(runs, columns=cols)
        if df.empty:
            continue
        last = df.sort_values("epoch").groupby("config").last()
        log = results / "logs" / "train" / model / dataset / f"{split}.log"
        walls = config_walls(log) if log.exists() else None
        for c, r in last.iterrows():
            rows.append({
                "model": model, "dataset": dataset, "split": split, "config": int(c),
                "regime": "default" if c == 0 else "tuned", "epochs": int(r["epoch"]),
                "fit": float(r["fit_seconds"]),
                "wall": np.nan if walls is None else walls.get(int(c), np.nan),
                "n_train": int(r["n_train"]), "n_eval": int(r["n_val"] + r["n_test"]),
                "n_classes": int(r["n_classes"]), "n_features": n_feat.get(dataset, np.nan),
            })
    out = pd.DataFrame(rows)
    if out.empty:
        raise SystemExit(f"no runs files under {results}/runs")
    ratio = (out["wall"] / out["fit"]).groupby(out["model"]).median()
    out["wall_ratio_filled"] = out["wall"].isna()
    out["wall"] = out["wall"].fillna(out["fit"] * out["model"].map(ratio))
    return out


def design(n_train, n_features, k_eff) -> np.ndarray:
    return np.column_stack([np.ones(len(n_train)), np.log(n_train), np.log(n_features),
                            np.log(k_eff)])


def k_eff(n_classes) -> np.ndarray:
    k = np.asarray(n_classes, dtype=float)
    return np.where(k <= 2, 1.0, k)


def fit_costs(meas: pd.DataFrame, column: str = "wall") -> dict[tuple[str, str], np.ndarray]:
    """Least-squares coefficients of log(seconds per epoch) per (model, regime); a model with
    too few datasets for 4 coefficients gets a fit on log n_train only (others 0)."""
    meas = meas.dropna(subset=["n_features"])
    coefs = {}
    for (model, regime), g in meas.groupby(["model", "regime"]):
        per = (g.assign(s=g[column] / g["epochs"])
               .groupby(["dataset", "split"])
               .agg(s=("s", "mean"), n_train=("n_train", "first"),
                    n_features=("n_features", "first"), n_classes=("n_classes", "first"))
               .reset_index())
        x = design(per["n_train"], per["n_features"], k_eff(per["n_classes"]))
        y = np.log(per["s"].to_numpy())
        if per["dataset"].nunique() < 6:
            x = x[:, :2]
        beta, *_ = np.linalg.lstsq(x, y, rcond=None)
        coefs[(model, regime)] = np.pad(beta, (0, 4 - len(beta)))
    return coefs


def paper_datasets() -> pd.DataFrame:
    """The paper preset's datasets: the Ye et al. manifest minus what the paper drops."""
    ye = pd.read_csv(YE_MANIFEST)
    kept = ye[~ye["notes"].fillna("").str.contains("DROPPED") & (ye["n_classes"] <= 100)]
    # a few manifest rows lack a size: they count with the manifest's median (said in the output)
    kept = kept.fillna({c: ye[c].median() for c in ("n_rows", "n_num", "n_cat")})
    n = np.minimum(kept["n_rows"].to_numpy(), PAPER["max_rows"])
    return pd.DataFrame({"dataset": kept["name"].to_numpy(),
                         "n_train": np.floor(n * PAPER["train_fraction"]).astype(int),
                         "n_features": (kept["n_num"] + kept["n_cat"]).clip(lower=1).to_numpy(),
                         "n_classes": kept["n_classes"].to_numpy()})


def bundled_datasets() -> pd.DataFrame:
    """The bundled preset's datasets (data/demo/MANIFEST.csv) at full size. The one the paper's
    filter drops (hypothyroid, 3,163 rows) is counted too: a slight upper bound."""
    b = pd.read_csv(BUNDLED_MANIFEST)
    n = np.minimum(b["rows"].to_numpy(), PAPER["max_rows"])
    return pd.DataFrame({"dataset": b["name"].to_numpy(),
                         "n_train": np.floor(n * PAPER["train_fraction"]).astype(int),
                         "n_features": (b["n_num"] + b["n_cat"]).clip(lower=1).to_numpy(),
                         "n_classes": b["classes"].to_numpy()})


#: --preset: the datasets whose cost is predicted (both at the paper's protocol)
PRESET_DATASETS = {"paper": paper_datasets, "bundled": bundled_datasets}


def predict(coefs: dict, data: pd.DataFrame, gpu_ms: dict[str, float]) -> pd.DataFrame:
    """Per model: predicted CPU core-hours of the preset's datasets ``data``, and for the
    networks the GPU-hours (per-batch GPU time, the device's evaluation pass and the metrics
    on the host: module docstring)."""
    x = design(data["n_train"], data["n_features"], k_eff(data["n_classes"]))
    rows = []
    models = sorted({m for m, _ in coefs})
    for model in models:
        cpu = 0.0
        per_regime = {}
        for regime, n_cfg in (("default", 1), ("tuned", PAPER["n_configs"])):
            key = (model, regime) if (model, regime) in coefs else (model, "default")
            s_epoch = np.exp(x @ coefs[key])
            epochs = PAPER["epochs"][(model, regime)]
            per_regime[regime] = s_epoch * epochs * n_cfg * PAPER["n_splits"]
            cpu += float(per_regime[regime].sum())
        row = {"model": model, "cpu_core_hours": cpu / 3600, "gpu_hours": np.nan,
               "regimes_measured": ",".join(sorted(r for m, r in coefs if m == model))}
        if model in NETWORKS:
            n_eval = data["n_train"] / PAPER["train_fraction"] * (1 - PAPER["train_fraction"])
            batches = np.ceil(data["n_train"] / BATCH)
            s_epoch = (batches * gpu_ms[model] / 1000 * (1 + GPU_FORWARD_SHARE)
                       + HOST_METRICS_S_PER_ROW * n_eval)
            total_epochs = PAPER["epochs"][(model, "default")] * (1 + PAPER["n_configs"])
            row["gpu_hours"] = float((s_epoch * total_epochs * PAPER["n_splits"]).sum()) / 3600
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=REPO / "results")
    ap.add_argument("--preset", choices=sorted(PRESET_DATASETS), default="paper",
                    help="predict the paper preset (Ye et al. suite) or the bundled one")
    ap.add_argument("--cores", type=int, default=32)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--gpu-ms-per-batch", nargs="*", default=[], metavar="MODEL=MS",
                    help="H200 per-batch training time, e.g. mlp=2.0 realmlp=3.7")
    args = ap.parse_args(argv)
    gpu_ms = dict(GPU_MS_PER_BATCH)
    for item in args.gpu_ms_per_batch:
        k, v = item.split("=")
        gpu_ms[k] = float(v)

    meas = measurements(args.results)
    coefs = fit_costs(meas)
    data = PRESET_DATASETS[args.preset]()
    pred = predict(coefs, data, gpu_ms)

    n_jobs = meas[["model", "dataset", "split"]].drop_duplicates().shape[0]
    print(f"measured: {len(meas)} configs of {n_jobs} "
          f"jobs under {args.results} ({int(meas['wall_ratio_filled'].sum())} without a usable "
          "log: wall = training x the model's median ratio)")
    for (model, regime), g in meas.groupby(["model", "regime"]):
        ratio = (g["wall"] / g["fit"]).median()
        print(f"  {model:8s} {regime:8s} {g['dataset'].nunique():3d} datasets "
              f"{len(g):5d} configs  wall/training {ratio:.2f}  "
              f"coef [1, log n_train, log n_feat, log K_eff] = "
              f"{np.array2string(coefs[(model, regime)], precision=2)}")
    print(f"\n{args.preset} preset: {len(data)} datasets, {PAPER['n_splits']} splits, default + "
          f"{PAPER['n_configs']} configs, epochs XGBoost 100/1000, networks 256")
    xgb_wall = gpu_wall = 0.0
    for r in pred.itertuples():
        gpu = "" if math.isnan(r.gpu_hours) else f", {r.gpu_hours:8.1f} GPU-hours"
        print(f"  {r.model:8s} {r.cpu_core_hours:9.1f} CPU core-hours (1 thread){gpu}")
        if r.model in NETWORKS:
            gpu_wall += 0.0 if math.isnan(r.gpu_hours) else r.gpu_hours / args.gpus
        else:
            xgb_wall += r.cpu_core_hours / max(args.cores - args.gpus, 1)
    wall = max(xgb_wall, gpu_wall)
    print(f"\nwall on {args.cores} cores + {args.gpus} GPUs: CPU part {xgb_wall:.1f} h, "
          f"GPU part {gpu_wall:.1f} h, side by side {wall:.1f} h"
          + (f" = {wall / PAPER_HOURS:.2f} x the paper's ~{PAPER_HOURS:.0f} h"
             if args.preset == "paper" else ""))
    cpu_only = float(pred["cpu_core_hours"].sum())
    print(f"on {args.cores} cores without a GPU (every model on CPU, 1 thread per job): "
          f"{cpu_only / args.cores:.1f} h ({cpu_only:.0f} core-hours)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
