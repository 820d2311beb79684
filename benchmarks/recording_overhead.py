"""Cost of recording every epoch: full recording vs the same training with no recording at all.

Measured side by side in one run, on one bundled dataset (≥ 10K rows), interleaved repeats:

- XGBoost, an HPO-like config, 1000 rounds: plain ``xgboost.train`` (no per-round output) vs the
  XGBoost trainer (incremental val/test margins every round) + the recorder (all metrics of
  docs/design.md §4 at every round). Target: ≤ 1.25×.
- LightGBM, an HPO-like config, 1000 rounds: plain ``lightgbm.train`` vs the LightGBM trainer
  (per-round val/test logits from leaf indices predicted every block of rounds) + the recorder.
  No target of its own: XGBoost's 1.25 is shown.
- MLP, default config, 256 epochs: the same training loop (``MLPRun.train_epoch``) alone vs the
  MLP trainer (val/test logits every epoch) + the recorder. Target: ≤ 1.15×.

Both wall time and process CPU time are shown: on a shared machine the CPU-time ratio is the
less noisy one (with ``--threads 1`` it is the work done). The recorded runs are also split into
"metrics" (the recorder) and the rest (training + per-epoch logits), and the two batched metric
calls are timed separately on the last chunk, so that a too-expensive metric can be pointed at;
``--profile`` adds a cProfile of the metric calls (functions of ``tabbench.metrics`` by own time).

    python benchmarks/recording_overhead.py --data-dir data/demo --dataset MagicTelescope
    python benchmarks/recording_overhead.py --only lightgbm --lgb-config-id 1 2 3 4 5

The dataset is read from ``<data-dir>/<name>.parquet`` with its ``MANIFEST.csv`` (target column)
and prepared the way the data layer does it (rows with missing numericals dropped, labels coded
0..K-1, one random 64/16/20 split with seed 0), so the benchmark does not need the pipeline's
``data/processed`` files.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time

import numpy as np
import pandas as pd

from tabbench.models.base import SplitData, TrainContext
from tabbench.models.mlp import MLPRun, MLPTrainer
from tabbench.models.recorder import EpochRecorder, Labels, RunKey
from tabbench.search import get_space, sample_config

#: A mid-range point of Table G.1 (used unless --xgb-config-id picks a random draw instead): the
#: overhead depends on the cost of a round, so the benchmark should not hinge on one random draw.
XGB_HPO_LIKE = {
    "eta": 0.05, "max_depth": 6, "min_child_weight": 1.0, "subsample": 0.8,
    "colsample_bytree": 0.8, "colsample_bylevel": 0.8, "alpha": 1e-3, "lambda": 1.0,
    "gamma": 1e-3,
}

#: The same for LightGBM: about the geometric middle of each range of pytabkit's LGBM-HPO space
#: (tabbench.search.lightgbm), lambda_l1 at its zero half.
LGB_HPO_LIKE = {
    "learning_rate": 0.03, "num_leaves": 47, "feature_fraction": 0.75, "bagging_fraction": 0.75,
    "bagging_freq": 1, "min_data_in_leaf": 20, "min_sum_hessian_in_leaf": 4e-3,
    "lambda_l1": 0.0, "lambda_l2": 1e-3,
}


def load_bundled(data_dir: str, name: str, seed: int = 0) -> SplitData:
    manifest = pd.read_csv(f"{data_dir}/MANIFEST.csv").set_index("name")
    target = manifest.loc[name, "target"]
    df = pd.read_parquet(f"{data_dir}/{name}.parquet")
    y_raw = df.pop(target)
    num = [c for c in df.columns if not isinstance(df[c].dtype, pd.CategoricalDtype)]
    keep = df[num].notna().all(axis=1).to_numpy()
    df, y_raw = df[keep].reset_index(drop=True), y_raw[keep].reset_index(drop=True)
    classes = np.sort(y_raw.unique())
    y = np.searchsorted(classes, y_raw.to_numpy()).astype(np.int64)
    n = len(df)
    perm = np.random.default_rng(seed).permutation(n)
    n_test = int(round(0.2 * n))
    n_val = int(round(0.2 * (n - n_test)))
    te, va, tr = perm[:n_test], perm[n_test:n_test + n_val], perm[n_test + n_val:]
    parts = [(df.iloc[np.sort(i)].reset_index(drop=True), y[np.sort(i)]) for i in (tr, va, te)]
    return SplitData(parts[0][0], parts[0][1], parts[1][0], parts[1][1], parts[2][0],
                     parts[2][1], len(classes))


def _recorder(model, params, data, n_epochs):
    return EpochRecorder(RunKey(model, "bench", 0, 1), params, Labels.of(data), n_epochs)


class Clock:
    """Wall and process-CPU seconds since creation."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def recorded(trainer, model, params, data, ctx, profiler=None):
    """Trainer + recorder. Returns (wall, cpu) seconds, metric (wall, cpu) seconds, last chunk."""
    clock = Clock()
    rec = _recorder(model, params, data, ctx.n_epochs)
    metric_w = metric_c = 0.0
    last = None
    for chunk in trainer.train(params, data, ctx):
        c = Clock()
        if profiler is not None:
            profiler.enable()
        rec.add(chunk)
        if profiler is not None:
            profiler.disable()
        w, u = c.read()
        metric_w, metric_c = metric_w + w, metric_c + u
        last = chunk
    rec.frame()
    return clock.read(), (metric_w, metric_c), last


def xgb_plain(params, data, ctx) -> tuple[float, float]:
    import xgboost as xgb

    from tabbench.models.xgboost import xgb_params

    clock = Clock()
    dtrain = xgb.DMatrix(data.X_train, label=data.y_train, enable_categorical=True,
                         nthread=ctx.threads)
    xgb.train(xgb_params(params, data.n_classes, ctx), dtrain, ctx.n_epochs)
    return clock.read()


def _xgboost_trainer():
    """Imported on use, so that ``--only mlp`` runs where XGBoost is not installed."""
    from tabbench.models.xgboost import XGBoostTrainer

    return XGBoostTrainer()


def lgb_plain(params, data, ctx) -> tuple[float, float]:
    """``lightgbm.train`` with the trainer's parameters, positional feature names and native
    categoricals, and nothing recorded."""
    import lightgbm as lgb

    from tabbench.models.lightgbm import lgb_params

    clock = Clock()
    bparams = lgb_params(params, data.n_classes, ctx)
    names = [f"f{i}" for i in range(data.X_train.shape[1])]
    cats = [i for i, c in enumerate(data.X_train.columns) if c in set(data.cat_columns)]
    train_set = lgb.Dataset(data.X_train, label=data.y_train, params=bparams, feature_name=names,
                            categorical_feature=cats)
    lgb.train(bparams, train_set, num_boost_round=ctx.n_epochs)
    return clock.read()


def _lightgbm_trainer():
    """Imported on use, so that the other cases run where LightGBM is not installed."""
    from tabbench.models.lightgbm import LightGBMTrainer

    return LightGBMTrainer()


def lgb_config(config_id: int, dataset: str) -> dict:
    """Config ``config_id`` of LightGBM's search space, seeded as ``sample_config`` seeds it
    (drawn here directly: the model is registered for ``sample_config`` only on merge)."""
    import optuna

    from tabbench.search import lightgbm as space
    from tabbench.search import stable_seed

    if config_id == 0:
        return dict(space.DEFAULT_CONFIG)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.RandomSampler(
        seed=stable_seed(0, str(dataset), 0, "lightgbm", int(config_id)))
    return dict(space.suggest(optuna.create_study(sampler=sampler).ask()))


def mlp_plain(params, data, ctx) -> tuple[float, float]:
    clock = Clock()
    run = MLPRun(params, data, ctx)
    for _ in range(ctx.n_epochs):
        run.train_epoch()
    return clock.read()


def metric_breakdown(chunk, data) -> dict[str, float]:
    """Seconds per epoch of each batched metric call, on the last recorded chunk."""
    import tabbench.metrics as metrics

    E = len(chunk.fit_seconds)
    out = {}
    t = time.perf_counter()
    stop = metrics.stopping_metrics_batched(chunk.val_logits, data.y_val)
    out["stopping_metrics_batched"] = (time.perf_counter() - t) / E
    t = time.perf_counter()
    metrics.metrics_on_test_batched(chunk.test_logits, data.y_test, stop["beta"], len(data.y_val))
    out["metrics_on_test_batched"] = (time.perf_counter() - t) / E
    if hasattr(metrics, "fit_temperature_batched"):
        t = time.perf_counter()
        metrics.fit_temperature_batched(chunk.val_logits, data.y_val)
        out["  of which fit_temperature_batched (val)"] = (time.perf_counter() - t) / E
    return out


def _print_profile(prof: cProfile.Profile, n_epochs: int) -> None:
    """Per metric stage (cumulative time of tabbench.metrics' batched functions), then the
    hottest functions by own time; ms per recorded epoch."""
    stats = pstats.Stats(prof)
    rows = []
    for (path, line, fn), (_, _, tt, ct, _) in stats.stats.items():
        if "tabbench" in path and "metrics" in path:
            rows.append((ct, tt, f"{path.split('metrics')[-1].lstrip('/')}:{line} {fn}"))
    print("  cProfile of the recorder's metric calls, ms per epoch "
          "(cumulative | own), tabbench.metrics functions:")
    for ct, tt, name in sorted(rows, reverse=True)[:14]:
        print(f"    {1e3 * ct / n_epochs:8.3f} | {1e3 * tt / n_epochs:8.3f}  {name}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="data/demo")
    ap.add_argument("--dataset", default="MagicTelescope")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=1, help="interleaved repeats; median shown")
    ap.add_argument("--xgb-rounds", type=int, default=1000)
    ap.add_argument("--lgb-rounds", type=int, default=1000)
    ap.add_argument("--mlp-epochs", type=int, default=256)
    ap.add_argument("--xgb-config-id", type=int, nargs="+", default=None, metavar="N",
                    help="random config(s) N of the search space instead of the mid-range one "
                         "(several: one measurement each, then min/median/max of the ratios)")
    ap.add_argument("--lgb-config-id", type=int, nargs="+", default=None, metavar="N",
                    help="the same for LightGBM (its search space, tabbench.search.lightgbm)")
    ap.add_argument("--only", choices=["xgboost", "lightgbm", "mlp"], default=None)
    ap.add_argument("--device", default="cpu",
                    help="torch device of the MLP (cuda: training and logits on the GPU, "
                         "metrics on the CPU as in the pipeline); the GBDTs always run on the CPU")
    ap.add_argument("--profile", action="store_true", help="cProfile the metric calls")
    args = ap.parse_args(argv)

    data = load_bundled(args.data_dir, args.dataset)
    n = (len(data.y_train), len(data.y_val), len(data.y_test))
    print(f"dataset {args.dataset}: train/val/test {n}, {data.n_classes} classes, "
          f"{data.X_train.shape[1]} features, threads {args.threads}, repeats {args.repeats}")
    xgb_cfgs = ({"xgboost": XGB_HPO_LIKE} if args.xgb_config_id is None else
                {f"xgboost config {i}": sample_config("xgboost", i, seed=0, dataset=args.dataset,
                                                      split=0) for i in args.xgb_config_id})
    lgb_cfgs = ({"lightgbm": LGB_HPO_LIKE} if args.lgb_config_id is None else
                {f"lightgbm config {i}": lgb_config(i, args.dataset) for i in args.lgb_config_id})
    cases = {
        **{name: (_xgboost_trainer, cfg, args.xgb_rounds, xgb_plain, 1.25)
           for name, cfg in xgb_cfgs.items()},
        **{name: (_lightgbm_trainer, cfg, args.lgb_rounds, lgb_plain, 1.25)
           for name, cfg in lgb_cfgs.items()},
        "mlp": (MLPTrainer, dict(get_space("mlp").DEFAULT_CONFIG), args.mlp_epochs, mlp_plain,
                1.15),
    }
    if args.only:
        cases = {k: v for k, v in cases.items() if k.startswith(args.only)}
    ratios: dict[str, list[float]] = {}
    for name, (cls, params, n_ep, plain_fn, target) in cases.items():
        model = name.split()[0]
        device = args.device if model == "mlp" else "cpu"
        ctx = TrainContext(seed=0, n_epochs=n_ep, threads=args.threads, device=device)
        prof = cProfile.Profile() if args.profile else None
        # warm-up (library initialisation, first-call costs) outside the measurements
        warm = TrainContext(seed=0, n_epochs=2, threads=args.threads, device=device)
        plain_fn(params, data, warm)
        recorded(cls(), model, params, data, warm)
        plain, full, metric, last = [], [], [], None
        for _ in range(args.repeats):
            plain.append(plain_fn(params, data, ctx))
            total, m, last = recorded(cls(), model, params, data, ctx, prof)
            full.append(total)
            metric.append(m)
        print(f"\n{name}: {n_ep} epochs, params {params}")
        print(f"  {'':26s} {'wall s':>9s} {'cpu s':>9s}")
        rows = {"no recording": plain, "full recording": full, "  of which metrics": metric}
        med = {k: [statistics.median(x[i] for x in v) for i in (0, 1)] for k, v in rows.items()}
        for k, (w, c) in med.items():
            print(f"  {k:26s} {w:9.2f} {c:9.2f}")
        ratio = [f / p for f, p in zip(med["full recording"], med["no recording"], strict=True)]
        ratios.setdefault(model, []).append(ratio[1])
        print(f"  {'ratio full / no recording':26s} {ratio[0]:9.3f} {ratio[1]:9.3f}   "
              f"target <= {target:.2f}: wall {'OK' if ratio[0] <= target else 'ABOVE'}, "
              f"cpu {'OK' if ratio[1] <= target else 'ABOVE'}")
        m_cpu = med["  of which metrics"][1]
        print(f"  metrics: {1e3 * m_cpu / n_ep:.2f} ms cpu per epoch = "
              f"{100 * m_cpu / med['no recording'][1]:.1f}% of training; logits and bookkeeping "
              f"{100 * (ratio[1] - 1) - 100 * m_cpu / med['no recording'][1]:.1f}%")
        print(f"  breakdown on the last chunk ({len(last.fit_seconds)} epochs):")
        for k, v in metric_breakdown(last, data).items():
            print(f"    {k:42s} {1e3 * v:8.2f} ms/epoch")
        if prof is not None:
            _print_profile(prof, n_ep * args.repeats)
    for model, r in ratios.items():
        if len(r) > 1:
            print(f"\n{model}: cpu ratio over {len(r)} configs: min {min(r):.3f}, median "
                  f"{statistics.median(r):.3f}, max {max(r):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
