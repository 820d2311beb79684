"""What early stopping on TS-refinement costs in a user's own XGBoost/LightGBM fit.

``XGBClassifier.fit`` with ``eval_metric=tabbench.stopping.xgboost_metric("ts_ref")`` vs the same
fit with XGBoost's built-in ``logloss`` eval metric; ``LGBMClassifier.fit`` with
``lightgbm_metric("ts_ref")`` (``metric="None"``) vs LightGBM's built-in ``binary_logloss`` /
``multi_logloss``. Same data, config, rounds and early stopping (patience = rounds by default, so
both fits run every round and the comparison is per round; with a smaller ``--patience`` the
ratio is taken per round as well), 1 thread, interleaved repeats, median of the repeats.

Configs: a mid-range one (XGBoost: the ``recording_overhead.py`` point of Table G.1; LightGBM:
31 leaves, learning rate 0.05) plus ``--n-configs`` random draws (XGBoost: tabbench's search
space, paper Table G.1; LightGBM: a comparable range), because the overhead is a fixed cost
per round and so depends on what a round costs. Target: ≤ 1.3× at the mid-range config.

Besides wall time the process CPU time is shown: on a shared machine it is the less noisy one
(1 thread: it is the work done). A third variant, a custom metric that does nothing, shows what
the library's custom-metric path costs by itself (XGBoost: a Python ``predict`` of the eval set
and its labels every round, on top of its default metric, which it still computes); ``metric``
is the time spent inside our callable.

    python benchmarks/stopping_overhead.py                 # adult, MagicTelescope, pendigits
    python benchmarks/stopping_overhead.py --datasets adult --n-configs 6 --repeats 5
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from tabbench.stopping import LightGBMMetric, XGBoostMetric

ROOT = Path(__file__).resolve().parents[1]

#: The mid-range point of Table G.1 used by recording_overhead.py (native XGBoost names).
XGB_MID = {
    "eta": 0.05, "max_depth": 6, "min_child_weight": 1.0, "subsample": 0.8,
    "colsample_bytree": 0.8, "colsample_bylevel": 0.8, "alpha": 1e-3, "lambda": 1.0,
    "gamma": 1e-3,
}
LGB_MID = {"learning_rate": 0.05, "num_leaves": 31, "min_child_samples": 20,
           "subsample": 0.8, "subsample_freq": 1, "colsample_bytree": 0.8}
_XGB_SKLEARN_NAMES = {"eta": "learning_rate", "alpha": "reg_alpha", "lambda": "reg_lambda"}


def load(name: str, data_dir: Path, seed: int = 0):
    """64/16/20 random split of a bundled dataset (as recording_overhead.py), labels 0..K-1."""
    target = pd.read_csv(data_dir / "MANIFEST.csv").set_index("name").loc[name, "target"]
    X = pd.read_parquet(data_dir / f"{name}.parquet")
    _, y = np.unique(X.pop(target).to_numpy(dtype=str), return_inverse=True)
    perm = np.random.default_rng(seed).permutation(len(X))
    n_test = round(0.2 * len(X))
    n_val = round(0.2 * (len(X) - n_test))
    va, tr = perm[n_test:n_test + n_val], perm[n_test + n_val:]
    return X.iloc[tr], y[tr], X.iloc[va], y[va]


def xgb_configs(n: int, dataset: str) -> dict[str, dict]:
    from tabbench.search import sample_config

    cfgs = {"mid": XGB_MID}
    for i in range(1, n + 1):
        cfgs[f"random {i}"] = sample_config("xgboost", i, seed=0, dataset=dataset, split=0)
    return {k: {_XGB_SKLEARN_NAMES.get(p, p): v for p, v in c.items()} for k, c in cfgs.items()}


def lgb_configs(n: int, dataset: str) -> dict[str, dict]:
    cfgs = {"mid": LGB_MID}
    for i in range(1, n + 1):
        rng = np.random.default_rng([i, sum(map(ord, dataset))])
        cfgs[f"random {i}"] = {
            "learning_rate": float(np.exp(rng.uniform(np.log(0.005), np.log(0.3)))),
            "num_leaves": int(np.exp(rng.uniform(np.log(4), np.log(256)))),
            "min_child_samples": int(rng.integers(2, 100)),
            "subsample": float(rng.uniform(0.5, 1.0)), "subsample_freq": 1,
            "colsample_bytree": float(rng.uniform(0.5, 1.0)),
            "reg_lambda": float(np.exp(rng.uniform(np.log(1e-5), np.log(5.0)))),
        }
    return cfgs


class _NoopXGB:
    """A custom metric that does nothing: what XGBoost's custom-metric path itself costs."""

    __name__ = "noop"

    def __call__(self, y_true, y_pred, sample_weight=None):
        return 0.0


def _noop_lgb(y_true, y_pred, weight):
    return "noop", 0.0, False


class _TimedXGB(XGBoostMetric):
    seconds = 0.0

    def __call__(self, y_true, y_pred, sample_weight=None):
        t = time.perf_counter()
        try:
            return super().__call__(y_true, y_pred, sample_weight)
        finally:
            type(self).seconds += time.perf_counter() - t


class _TimedLGB(LightGBMMetric):
    seconds = 0.0

    def __call__(self, y_true, y_pred, weight=None):
        t = time.perf_counter()
        try:
            return super().__call__(y_true, y_pred, weight)
        finally:
            type(self).seconds += time.perf_counter() - t


def fit_xgb(data, cfg, variant: str, rounds: int, patience: int) -> tuple[int, float]:
    """Fit once; return (rounds trained, seconds inside our metric)."""
    from xgboost import XGBClassifier

    X_tr, y_tr, X_val, y_val = data
    _TimedXGB.seconds = 0.0
    metric = {"builtin": "logloss" if y_tr.max() == 1 else "mlogloss", "noop": _NoopXGB(),
              "ours": _TimedXGB("ts_ref")}[variant]
    clf = XGBClassifier(
        **cfg, n_estimators=rounds, early_stopping_rounds=patience, n_jobs=1, random_state=0,
        tree_method="hist", enable_categorical=True, eval_metric=metric,
    )
    clf.fit(X_tr, y_tr, eval_set=[(X_val, y_val)], verbose=False)
    return len(next(iter(clf.evals_result()["validation_0"].values()))), _TimedXGB.seconds


def fit_lgb(data, cfg, variant: str, rounds: int, patience: int) -> tuple[int, float]:
    import lightgbm as lgb

    X_tr, y_tr, X_val, y_val = data
    _TimedLGB.seconds = 0.0
    evals = ({"eval_X": X_val, "eval_y": y_val}
             if "eval_X" in inspect.signature(lgb.LGBMClassifier.fit).parameters
             else {"eval_set": [(X_val, y_val)]})
    metric = {"builtin": None, "noop": _noop_lgb, "ours": _TimedLGB("ts_ref")}[variant]
    clf = lgb.LGBMClassifier(**cfg, n_estimators=rounds, n_jobs=1, random_state=0, verbose=-1,
                             **({} if metric is None else {"metric": "None"}))
    clf.fit(X_tr, y_tr, **evals, eval_metric=metric,
            callbacks=[lgb.early_stopping(patience, verbose=False)])
    # rounds evaluated (the booster itself is cut back to best_iteration_ after stopping)
    return len(next(iter(clf.evals_result_["valid_0"].values()))), _TimedLGB.seconds


VARIANTS = ("builtin", "noop", "ours")


def measure(fit, data, cfg, rounds: int, patience: int, repeats: int) -> dict:
    """Interleaved repeats of (built-in, no-op custom metric, ours); medians of per-round wall
    and CPU seconds, ratios to the built-in metric."""
    per = {v: {"wall": [], "cpu": [], "metric": []} for v in VARIANTS}
    n_rounds = {}
    fit(data, cfg, "ours", min(rounds, 5), patience)  # warm-up: imports, first-call costs
    for _ in range(repeats):
        for variant in VARIANTS:
            w, c = time.perf_counter(), time.process_time()
            n, metric_s = fit(data, cfg, variant, rounds, patience)
            w, c = time.perf_counter() - w, time.process_time() - c
            n_rounds[variant] = n
            per[variant]["wall"].append(w / n)
            per[variant]["cpu"].append(c / n)
            per[variant]["metric"].append(metric_s / n)
    med = {v: {k: statistics.median(x) for k, x in d.items()} for v, d in per.items()}
    return {
        "rounds": n_rounds["ours"],
        "ms_round": tuple(1e3 * med[v]["wall"] for v in VARIANTS),
        "metric_ms": 1e3 * med["ours"]["metric"],
        "wall": med["ours"]["wall"] / med["builtin"]["wall"],
        "cpu": med["ours"]["cpu"] / med["builtin"]["cpu"],
        "noop_cpu": med["noop"]["cpu"] / med["builtin"]["cpu"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=ROOT / "data" / "demo")
    ap.add_argument("--datasets", nargs="+", default=["adult", "MagicTelescope", "pendigits"])
    ap.add_argument("--libraries", nargs="+", default=["xgboost", "lightgbm"],
                    choices=["xgboost", "lightgbm"])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--patience", type=int, default=None, help="default: = rounds")
    ap.add_argument("--n-configs", type=int, default=3, help="random configs besides 'mid'")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    patience = args.patience or args.rounds

    print("ms/round (wall): built-in logloss, a no-op custom metric, ours; 'metric' = inside "
          "ours;\nratios ours / built-in (wall, cpu) and no-op / built-in (cpu: the custom-metric "
          "floor)")
    print(f"{'library':<9}{'dataset':<15}{'config':<10}{'rounds':>7}{'built-in':>9}{'no-op':>7}"
          f"{'ours':>7}{'metric':>7}{'wall':>6}{'cpu':>6}{'no-op':>7}")
    summary: dict[str, list[tuple[str, float, float, float]]] = {}
    for lib in args.libraries:
        fit, configs = (fit_xgb, xgb_configs) if lib == "xgboost" else (fit_lgb, lgb_configs)
        for ds in args.datasets:
            data = load(ds, args.data_dir)
            for name, cfg in configs(args.n_configs, ds).items():
                r = measure(fit, data, cfg, args.rounds, patience, args.repeats)
                t = r["ms_round"]
                print(f"{lib:<9}{ds:<15}{name:<10}{r['rounds']:>7}{t[0]:>9.2f}{t[1]:>7.2f}"
                      f"{t[2]:>7.2f}{r['metric_ms']:>7.2f}{r['wall']:>6.2f}{r['cpu']:>6.2f}"
                      f"{r['noop_cpu']:>7.2f}", flush=True)
                summary.setdefault(lib, []).append((name, r["wall"], r["cpu"], r["noop_cpu"]))
    print("\nratio ours / built-in logloss of fit time per round, 1 thread: min / median / max")
    for lib, rows in summary.items():
        for label, sel in (("mid-range config", [r for r in rows if r[0] == "mid"]),
                           ("all configs", rows)):
            cols = [[r[i] for r in sel] for i in (1, 2, 3)]
            w, c, f = (f"{min(x):.2f} / {statistics.median(x):.2f} / {max(x):.2f}" for x in cols)
            print(f"  {lib:<9}{label:<17} wall {w}   cpu {c}   (no-op cpu {f}; n = {len(sel)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
