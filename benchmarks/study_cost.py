"""Cost model of the full study: what the paper preset costs, from runs measured here.

    python benchmarks/study_cost.py --results results             # fit on a results folder
    python benchmarks/study_cost.py --results results --cores 32 --gpus 4

Steps 1 and 2 are :mod:`tabbench.study.cost_model`'s (``tabbench status`` fits the same model to
predict a study's time left); this script adds the features from the manifests and step 3.

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
3. **Predict** the paper preset: every dataset of the Ye et al. manifest the paper keeps (not marked
   "DROPPED" in its notes, ≤ 100 classes: 195; the paper reports 196), rows capped at 100,000, 64 %
   of them for training, 5 splits, default + 30 configs, the paper's epochs. XGBoost runs on CPU
   cores (core-hours); the networks on GPUs: per epoch ``ceil(n_train / 256)`` batches at the
   per-batch training times measured on an H200 (``--gpu-ms-per-batch``; defaults MLP 2.0 ms,
   RealMLP 3.7 ms: docs/performance.md) plus what recording adds to a GPU epoch (the device's
   evaluation forward pass and the metrics on the host: ``GPU_FORWARD_SHARE``,
   ``HOST_METRICS_S_PER_ROW``). Wall time on ``--cores`` + ``--gpus``: XGBoost core-hours / (cores −
   gpus) next to GPU-hours / gpus (the two run side by side; one core per GPU job feeds it), and the
   larger of the two, against the paper's ~40 h.

The measured jobs ran with one thread each; on a loaded machine every number is inflated by
the load, which the script cannot know: say what ran beside it.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from tabbench.models.registry import get_model, is_network, model_names, paper_epochs
from tabbench.settings.presets import PRESETS
from tabbench.study import cost_model
from tabbench.study.cost_model import design, fit_costs, k_eff


def epochs_of(model: str, regime: str) -> int:
    """The paper-protocol epochs of ``model``'s default config (regime ``default``) or its random
    configs (``tuned``), from the model's registration."""
    return paper_epochs()[get_model(model).epochs_key(0 if regime == "default" else 1)]

REPO = Path(__file__).resolve().parents[1]
YE_MANIFEST = REPO / "src" / "tabbench" / "data" / "ye2024_classification.csv"
BUNDLED_MANIFEST = REPO / "data" / "demo" / "MANIFEST.csv"
PAPER_HOURS = 40.0
#: the paper preset's protocol (tabbench.settings.presets; 64 % of the rows train: 20 % test, then
#: 20 %
#: of the rest validation, docs/design.md §3)
PAPER = {"n_splits": PRESETS["paper"]["n_splits"], "n_configs": PRESETS["paper"]["n_configs"],
         "max_rows": PRESETS["paper"]["max_rows"], "train_fraction": 0.8 * 0.8}
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
    """:func:`tabbench.study.cost_model.measurements` of ``results``, features from the
    manifests."""
    out = cost_model.measurements(results, feature_counts())
    if out.empty:
        raise SystemExit(f"no runs files under {results}/runs")
    return out


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


def predict(coefs: dict, data: pd.DataFrame, gpu_ms: dict[str, float],
            stacked_ms: dict[str, float] | None = None,
            models: Sequence[str] | None = None) -> pd.DataFrame:
    """Per model (``models``: those measured, or the given ones): predicted CPU core-hours of
    the preset's datasets ``data``, and for the networks the GPU-hours, one config at a time
    (per-batch GPU time, the device's evaluation pass and the metrics on the host: module
    docstring) and, with ``stacked_ms`` (GPU ms per member-step of stacked training), stacked."""
    x = design(data["n_train"], data["n_features"], k_eff(data["n_classes"]))
    rows = []
    measured = sorted({m for m, _ in coefs})
    for model in (measured if models is None else [m for m in models if m in measured]):
        cpu = 0.0
        for regime, n_cfg in (("default", 1), ("tuned", PAPER["n_configs"])):
            key = (model, regime) if (model, regime) in coefs else (model, "default")
            s_epoch = np.exp(x @ coefs[key])
            cpu += float((s_epoch * epochs_of(model, regime) * n_cfg * PAPER["n_splits"]).sum())
        row = {"model": model, "cpu_core_hours": cpu / 3600, "gpu_hours": np.nan,
               "gpu_hours_stacked": np.nan,
               "regimes_measured": ",".join(sorted(r for m, r in coefs if m == model))}
        if is_network(model) and model in gpu_ms:
            n_eval = data["n_train"] / PAPER["train_fraction"] * (1 - PAPER["train_fraction"])
            batches = np.ceil(data["n_train"] / BATCH)
            member_epochs = PAPER["n_splits"] * (epochs_of(model, "default")
                                                 + PAPER["n_configs"] * epochs_of(model, "tuned"))
            host = HOST_METRICS_S_PER_ROW * n_eval  # per member-epoch, either path
            for column, ms in (("gpu_hours", gpu_ms[model]),
                               ("gpu_hours_stacked", (stacked_ms or {}).get(model))):
                if ms is not None:
                    s_epoch = batches * ms / 1000 * (1 + GPU_FORWARD_SHARE) + host
                    row[column] = float((s_epoch * member_epochs).sum()) / 3600
        rows.append(row)
    return pd.DataFrame(rows)


def stacked_op_ratios(models: Sequence[str], n_configs: int, rows: int = 2048,
                      dataset: str = "MagicTelescope") -> dict[str, float]:
    """Per network: ATen ops per member-step of one config at a time / of the job's
    ``1 + n_configs`` configs stacked (grouped as a job groups them), counted on the CPU by
    benchmarks/network_batching.py on ``rows`` training rows of a bundled dataset (the count
    depends on shapes and groups, not on the number of rows)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch
    from network_batching import measure
    from recording_overhead import load_bundled

    from tabbench.models.base import SplitData, TrainContext
    from tabbench.models.registry import get_trainer
    from tabbench.models.stacked.plan import plan_groups
    from tabbench.search import sample_config

    torch.set_num_threads(1)
    full = load_bundled(str(REPO / "data" / "demo"), dataset)
    data = SplitData(full.X_train.iloc[:rows], full.y_train[:rows], full.X_val.iloc[:256],
                     full.y_val[:256], full.X_test.iloc[:256], full.y_test[:256],
                     full.n_classes)
    out = {}
    for model in models:
        cfgs = [sample_config(model, c, seed=0, dataset=dataset, split=0)
                for c in range(n_configs + 1)]
        ctxs = [TrainContext(seed=c, n_epochs=3) for c in range(len(cfgs))]
        today = sum(measure(model, data, [p], [c], False, 1)["ops"]
                    for p, c in zip(cfgs, ctxs, strict=True))
        trainer = get_trainer(model)
        keys = {c: trainer.stack_key(cfgs[c]) for c in range(len(cfgs))}
        groups = plan_groups(list(range(len(cfgs))), keys, {}, len(cfgs), None)
        stacked = sum(measure(model, data, [cfgs[c] for c in g], [ctxs[c] for c in g], True,
                              1)["ops"] for g in groups)
        out[model] = today / stacked
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=REPO / "results")
    ap.add_argument("--preset", choices=sorted(PRESET_DATASETS), default="paper",
                    help="predict the paper preset (Ye et al. suite) or the bundled one")
    ap.add_argument("--cores", type=int, default=32)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--gpu-ms-per-batch", nargs="*", default=[], metavar="MODEL=MS",
                    help="H200 per-batch training time, e.g. mlp=2.0 realmlp=3.7")
    ap.add_argument("--stacked-ms-per-member-step", nargs="*", default=[], metavar="MODEL=MS",
                    help="GPU ms per member-step of stacked training, measured "
                         "(benchmarks/network_batching.py --gpu); default: the launch-count "
                         "proxy (the per-batch time / the ops ratio counted here)")
    args = ap.parse_args(argv)
    gpu_ms = dict(GPU_MS_PER_BATCH)
    for item in args.gpu_ms_per_batch:
        k, v = item.split("=")
        gpu_ms[k] = float(v)
    measured_stacked = {k: float(v) for k, v in
                        (item.split("=") for item in args.stacked_ms_per_member_step)}

    meas = measurements(args.results)
    coefs = fit_costs(meas)
    data = PRESET_DATASETS[args.preset]()
    preset_models = [m for m in PRESETS[args.preset]["models"] if m in model_names()]
    measured = set(meas["model"])
    networks = [m for m in preset_models if is_network(m) and m in gpu_ms and m in measured]
    proxy = [m for m in networks if m not in measured_stacked]
    ratios = stacked_op_ratios(proxy, PAPER["n_configs"]) if proxy else {}
    stacked_ms = {**{m: gpu_ms[m] / r for m, r in ratios.items()}, **measured_stacked}
    pred = predict(coefs, data, gpu_ms, stacked_ms, preset_models)

    n_jobs = meas[["model", "dataset", "split"]].drop_duplicates().shape[0]
    print(f"measured: {len(meas)} configs of {n_jobs} "
          f"jobs under {args.results} ({int(meas['wall_ratio_filled'].sum())} without a usable "
          "log: wall = training x the model's median ratio, or x 1 for a model without any "
          "log, which leaves its recording out)")
    for (model, regime), g in meas.groupby(["model", "regime"]):
        ratio = (g["wall"] / g["fit"]).median()
        print(f"  {model:8s} {regime:8s} {g['dataset'].nunique():3d} datasets "
              f"{len(g):5d} configs  wall/training {ratio:.2f}  "
              f"coef [1, log n_train, log n_feat, log K_eff] = "
              f"{np.array2string(coefs[(model, regime)], precision=2)}")
    print(f"\n{args.preset} preset: {len(data)} datasets, {PAPER['n_splits']} splits, default + "
          f"{PAPER['n_configs']} configs, epochs XGBoost 100/1000, networks 256")
    missing = sorted(set(preset_models) - set(pred["model"]))
    if missing:
        print(f"  (not in {args.results}, so not predicted: {', '.join(missing)})")
    for m in sorted(measured - set(preset_models)):
        why = ("not registered here (no model of that name is installed)"
               if m not in model_names() else f"not one of the {args.preset} preset's models")
        print(f"  ({m}: measured in {args.results} but {why}: not costed)")
    for r in pred.itertuples():
        gpu = "" if math.isnan(r.gpu_hours) else f", {r.gpu_hours:8.1f} GPU-hours"
        if not math.isnan(r.gpu_hours_stacked):
            gpu += f" one config at a time, {r.gpu_hours_stacked:8.1f} stacked"
        print(f"  {r.model:8s} {r.cpu_core_hours:9.1f} CPU core-hours (1 thread){gpu}")
    net = pred["model"].map(is_network)
    cpu_hours = float(pred.loc[~net, "cpu_core_hours"].sum())
    gpu_hours = float(pred.loc[net, "gpu_hours"].sum())
    stacked_hours = float(pred.loc[net, "gpu_hours_stacked"].sum())

    def wall(gpu_total: float, cores: int, gpus: int) -> tuple[float, float, float]:
        cpu_part = cpu_hours / max(cores - gpus, 1)  # one core feeds each GPU job
        gpu_part = gpu_total / gpus
        return cpu_part, gpu_part, max(cpu_part, gpu_part)

    if args.gpus < 1:  # a CPU-only machine: the networks train on its cores too
        cpu_only = float(pred["cpu_core_hours"].sum())
        print(f"\non {args.cores} cores without a GPU (every model on CPU, 1 thread per job): "
              f"{cpu_only / args.cores:.1f} h ({cpu_only:.0f} core-hours)")
        return 0
    cpu_part, gpu_part, both = wall(gpu_hours, args.cores, args.gpus)
    print(f"\none config at a time, wall on {args.cores} cores + {args.gpus} GPUs: CPU part "
          f"{cpu_part:.1f} h, GPU part {gpu_part:.1f} h, side by side {both:.1f} h"
          + (f" = {both / PAPER_HOURS:.2f} x the paper's ~{PAPER_HOURS:.0f} h"
             if args.preset == "paper" else ""))
    cpu_only = float(pred["cpu_core_hours"].sum())
    print(f"on {args.cores} cores without a GPU (every model on CPU, 1 thread per job): "
          f"{cpu_only / args.cores:.1f} h ({cpu_only:.0f} core-hours)")
    if not networks:
        return 0
    print("\nstacked training (docs/design.md §15): GPU ms per member-step")
    for m in networks:
        if m in measured_stacked:
            print(f"  {m:8s} {stacked_ms[m]:.4f} ms (measured, --stacked-ms-per-member-step)")
        else:
            print(f"  {m:8s} {stacked_ms[m]:.4f} ms = {gpu_ms[m]} ms per batch / {ratios[m]:.2f}"
                  f" (ATen ops per member-step, one config at a time / the job's "
                  f"{1 + PAPER['n_configs']} configs stacked, counted on this CPU): a "
                  "launch-count proxy, not measured on a GPU")
    for cores, gpus in ((16, 1), (args.cores, args.gpus)):
        cpu_part, gpu_part, both = wall(stacked_hours, cores, gpus)
        print(f"stacked, wall on {cores} cores + {gpus} GPU{'s' if gpus > 1 else ''}: CPU part "
              f"{cpu_part:.1f} h, GPU part {gpu_part:.1f} h, side by side {both:.1f} h")
    _, _, both = wall(stacked_hours, args.cores, args.gpus)
    print(f"{args.preset} preset, stacked: networks {stacked_hours:.0f} GPU-hours; wall "
          f"{both:.1f} h on {args.cores} cores + {args.gpus} GPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
