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
(1 thread: it is the work done). ``metric ms/round`` is the time spent inside our callable
(the rest of the overhead is the library computing validation predictions for it).

    python benchmarks/stopping_overhead.py                       # adult, MagicTelescope, letter
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


def fit_xgb(data, cfg, ours: bool, rounds: int, patience: int) -> tuple[int, float]:
    """Fit once; return (rounds trained, seconds inside our metric)."""
    from xgboost import XGBClassifier

    X_tr, y_tr, X_val, y_val = data
    _TimedXGB.seconds = 0.0
    clf = XGBClassifier(
        **cfg, n_estimators=rounds, early_stopping_rounds=patience, n_jobs=1, random_state=0,
        tree_method="hist", enable_categorical=True,
        eval_metric=_TimedXGB("ts_ref") if ours else "logloss",
    )
    clf.fit(X_tr, y_tr, eval_set=[(X_val, y_val)], verbose=False)
    return clf.get_booster().num_boosted_rounds(), _TimedXGB.seconds


def fit_lgb(data, cfg, ours: bool, rounds: int, patience: int) -> tuple[int, float]:
    import lightgbm as lgb

    X_tr, y_tr, X_val, y_val = data
    _TimedLGB.seconds = 0.0
    evals = ({"eval_X": X_val, "eval_y": y_val}
             if "eval_X" in inspect.signature(lgb.LGBMClassifier.fit).parameters
             else {"eval_set": [(X_val, y_val)]})
    clf = lgb.LGBMClassifier(**cfg, n_estimators=rounds, n_jobs=1, random_state=0, verbose=-1,
                             **({"metric": "None"} if ours else {}))
    clf.fit(X_tr, y_tr, **evals, eval_metric=_TimedLGB("ts_ref") if ours else None,
            callbacks=[lgb.early_stopping(patience, verbose=False)])
    return clf.booster_.current_iteration(), _TimedLGB.seconds


def measure(fit, data, cfg, rounds: int, patience: int, repeats: int) -> dict:
    """Interleaved repeats of (built-in, ours); medians of per-round wall and CPU seconds."""
    per = {False: {"wall": [], "cpu": [], "metric": []}, True: {"wall": [], "cpu": [],
                                                                "metric": []}}
    n_rounds = {}
    fit(data, cfg, True, min(rounds, 5), patience)  # warm-up: imports, first-call costs
    for _ in range(repeats):
        for ours in (False, True):
            w, c = time.perf_counter(), time.process_time()
            n, metric_s = fit(data, cfg, ours, rounds, patience)
            w, c = time.perf_counter() - w, time.process_time() - c
            n_rounds[ours] = n
            per[ours]["wall"].append(w / n)
            per[ours]["cpu"].append(c / n)
            per[ours]["metric"].append(metric_s / n)
    med = {o: {k: statistics.median(v) for k, v in d.items()} for o, d in per.items()}
    return {
        "rounds": (n_rounds[False], n_rounds[True]),
        "ms_round": (1e3 * med[False]["wall"], 1e3 * med[True]["wall"]),
        "metric_ms": 1e3 * med[True]["metric"],
        "wall": med[True]["wall"] / med[False]["wall"],
        "cpu": med[True]["cpu"] / med[False]["cpu"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=ROOT / "data" / "demo")
    ap.add_argument("--datasets", nargs="+", default=["adult", "MagicTelescope", "letter"])
    ap.add_argument("--libraries", nargs="+", default=["xgboost", "lightgbm"],
                    choices=["xgboost", "lightgbm"])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--patience", type=int, default=None, help="default: = rounds")
    ap.add_argument("--n-configs", type=int, default=3, help="random configs besides 'mid'")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    patience = args.patience or args.rounds

    print(f"{'library':<9}{'dataset':<15}{'config':<10}{'rounds':>8}{'ms/round':>10}"
          f"{'ours':>8}{'metric':>8}{'wall':>7}{'cpu':>7}")
    summary: dict[str, list[tuple[str, float, float]]] = {}
    for lib in args.libraries:
        fit, configs = (fit_xgb, xgb_configs) if lib == "xgboost" else (fit_lgb, lgb_configs)
        for ds in args.datasets:
            data = load(ds, args.data_dir)
            for name, cfg in configs(args.n_configs, ds).items():
                r = measure(fit, data, cfg, args.rounds, patience, args.repeats)
                print(f"{lib:<9}{ds:<15}{name:<10}{r['rounds'][1]:>8}{r['ms_round'][0]:>10.2f}"
                      f"{r['ms_round'][1]:>8.2f}{r['metric_ms']:>8.2f}{r['wall']:>7.2f}"
                      f"{r['cpu']:>7.2f}", flush=True)
                summary.setdefault(lib, []).append((name, r["wall"], r["cpu"]))
    print("\nratio (ours / built-in logloss) of fit time per round, 1 thread")
    for lib, rows in summary.items():
        for label, sel in (("mid-range config", [r for r in rows if r[0] == "mid"]),
                           ("all configs", rows)):
            w, c = [r[1] for r in sel], [r[2] for r in sel]
            print(f"  {lib:<9}{label:<17} wall min/median/max {min(w):.2f} / "
                  f"{statistics.median(w):.2f} / {max(w):.2f}   cpu {min(c):.2f} / "
                  f"{statistics.median(c):.2f} / {max(c):.2f}  (n = {len(sel)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
