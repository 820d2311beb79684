"""What early stopping on TS-refinement costs in a user's own XGBoost, LightGBM or CatBoost fit.

Each library's ``fit`` with our metric (``tabbench.stopping.xgboost_metric("ts_ref")``,
``lightgbm_metric`` with ``metric="None"``, ``catboost_metric``) vs the same ``fit`` with the
library's built-in log loss as its eval metric (``logloss``/``mlogloss``, LightGBM's
``binary_logloss``/``multi_logloss``, CatBoost's ``Logloss``/``MultiClass``). Same data, config,
rounds and early stopping (patience = rounds by default, so every fit trains every round), one
thread, the variants interleaved (built-in, no-op, ours, built-in, ...), and the best of
``--repeats`` fits per variant: on a shared machine the least disturbed fit is the closest to
the work itself. Shown: process CPU time (one thread: the work done; the less noisy clock on a
loaded machine) and wall time, both as the ratio ours / built-in of the whole fit.

A third variant, a custom metric that does nothing, shows what the library's custom-metric path
costs by itself, which no callable can avoid (XGBoost runs a Python ``predict`` of the eval set
and fetches its labels every round; CatBoost calls a Python metric on the training set too and
has no option to skip that for a metric object). "metric" is the time spent inside our callable
(CPU). Both XGBoost custom variants (ours and the no-op one) pass
``disable_default_eval_metric=True``, the usage ``xgboost_metric`` recommends: without it XGBoost
computes its default log loss beside the custom metric every round, a second metric that a user
stopping on ours does not need and that the built-in variant (exactly one metric) does not pay.

Configs: a mid-range one per library (XGBoost: the ``recording_overhead.py`` point of Table G.1;
LightGBM: 31 leaves, learning rate 0.05; CatBoost: depth 6, learning rate 0.05) plus
``--n-configs`` random draws (XGBoost: tabbench's search space, paper Table G.1; LightGBM and
CatBoost: comparable ranges), because the overhead is a fixed cost per round and so depends on
what a round costs. Target: ours ≤ 1.25× the built-in's CPU time at the mid-range config.

    python benchmarks/stopping_overhead.py     # MagicTelescope, phoneme, adult, pendigits
    python benchmarks/stopping_overhead.py --datasets MagicTelescope --n-configs 4 --repeats 5
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from tabbench.stopping import CatBoostMetric, LightGBMMetric, XGBoostMetric

ROOT = Path(__file__).resolve().parents[1]

#: The ratio ours / built-in the mid-range configs should not exceed.
TARGET = 1.25

#: The mid-range point of Table G.1 used by recording_overhead.py (native XGBoost names).
XGB_MID = {
    "eta": 0.05, "max_depth": 6, "min_child_weight": 1.0, "subsample": 0.8,
    "colsample_bytree": 0.8, "colsample_bylevel": 0.8, "alpha": 1e-3, "lambda": 1.0,
    "gamma": 1e-3,
}
LGB_MID = {"learning_rate": 0.05, "num_leaves": 31, "min_child_samples": 20,
           "subsample": 0.8, "subsample_freq": 1, "colsample_bytree": 0.8}
CB_MID = {"learning_rate": 0.05, "depth": 6, "l2_leaf_reg": 3.0}
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


def _rng(i: int, dataset: str) -> np.random.Generator:
    return np.random.default_rng([i, sum(map(ord, dataset))])


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def xgb_configs(n: int, dataset: str) -> dict[str, dict]:
    from tabbench.search import sample_config

    cfgs = {"mid": XGB_MID}
    for i in range(1, n + 1):
        cfgs[f"random {i}"] = sample_config("xgboost", i, seed=0, dataset=dataset, split=0)
    return {k: {_XGB_SKLEARN_NAMES.get(p, p): v for p, v in c.items()} for k, c in cfgs.items()}


def lgb_configs(n: int, dataset: str) -> dict[str, dict]:
    cfgs = {"mid": LGB_MID}
    for i in range(1, n + 1):
        rng = _rng(i, dataset)
        cfgs[f"random {i}"] = {
            "learning_rate": _log_uniform(rng, 0.005, 0.3),
            "num_leaves": int(_log_uniform(rng, 4, 256)),
            "min_child_samples": int(rng.integers(2, 100)),
            "subsample": float(rng.uniform(0.5, 1.0)), "subsample_freq": 1,
            "colsample_bytree": float(rng.uniform(0.5, 1.0)),
            "reg_lambda": _log_uniform(rng, 1e-5, 5.0),
        }
    return cfgs


def cb_configs(n: int, dataset: str) -> dict[str, dict]:
    cfgs = {"mid": CB_MID}
    for i in range(1, n + 1):
        rng = _rng(i, dataset)
        cfgs[f"random {i}"] = {
            "learning_rate": _log_uniform(rng, 0.01, 0.3),
            "depth": int(rng.integers(4, 11)),
            "l2_leaf_reg": _log_uniform(rng, 1.0, 10.0),
        }
    return cfgs


class _Clock:
    """CPU seconds spent inside our metric during one fit."""

    seconds = 0.0


def _timed(call: Callable) -> Callable:
    def wrapper(*args, **kwargs):
        t = time.process_time()
        try:
            return call(*args, **kwargs)
        finally:
            _Clock.seconds += time.process_time() - t
    return wrapper


class _TimedXGB(XGBoostMetric):
    __call__ = _timed(XGBoostMetric.__call__)


class _TimedLGB(LightGBMMetric):
    __call__ = _timed(LightGBMMetric.__call__)


class _TimedCB(CatBoostMetric):
    evaluate = _timed(CatBoostMetric.evaluate)


class _NoopXGB:
    """A custom metric that does nothing: what XGBoost's custom-metric path itself costs."""

    __name__ = "noop"

    def __call__(self, y_true, y_pred, sample_weight=None):
        return 0.0


def _noop_lgb(y_true, y_pred, weight):
    return "noop", 0.0, False


class _NoopCB:
    """CatBoost's no-op metric, kept out of numba like ours (``no_jit``)."""

    no_jit = True

    def is_max_optimal(self):
        return False

    def evaluate(self, approxes, target, weight):
        return 0.0, 1.0

    def get_final_error(self, error, weight):
        return error


def fit_xgb(data, cfg, variant: str, rounds: int, patience: int) -> int:
    """Fit once; return the rounds trained."""
    from xgboost import XGBClassifier

    X_tr, y_tr, X_val, y_val = data
    metric = {"builtin": "logloss" if y_tr.max() == 1 else "mlogloss", "noop": _NoopXGB(),
              "ours": _TimedXGB("ts_ref")}[variant]
    clf = XGBClassifier(
        **cfg, n_estimators=rounds, early_stopping_rounds=patience, n_jobs=1, random_state=0,
        tree_method="hist", enable_categorical=True, eval_metric=metric,
        disable_default_eval_metric=variant != "builtin",  # one metric per variant
    )
    clf.fit(X_tr, y_tr, eval_set=[(X_val, y_val)], verbose=False)
    return len(next(iter(clf.evals_result()["validation_0"].values())))


def fit_lgb(data, cfg, variant: str, rounds: int, patience: int) -> int:
    import lightgbm as lgb

    X_tr, y_tr, X_val, y_val = data
    evals = ({"eval_X": X_val, "eval_y": y_val}
             if "eval_X" in inspect.signature(lgb.LGBMClassifier.fit).parameters
             else {"eval_set": [(X_val, y_val)]})
    metric = {"builtin": None, "noop": _noop_lgb, "ours": _TimedLGB("ts_ref")}[variant]
    clf = lgb.LGBMClassifier(**cfg, n_estimators=rounds, n_jobs=1, random_state=0, verbose=-1,
                             **({} if metric is None else {"metric": "None"}))
    clf.fit(X_tr, y_tr, **evals, eval_metric=metric,
            callbacks=[lgb.early_stopping(patience, verbose=False)])
    # rounds evaluated (the booster itself is cut back to best_iteration_ after stopping)
    return len(next(iter(clf.evals_result_["valid_0"].values())))


def catboost_data(data):
    """CatBoost takes categorical columns as strings (missing ones as a category of their own)
    named in ``cat_features``."""
    X_tr, y_tr, X_val, y_val = data
    cats = [c for c in X_tr.columns if not pd.api.types.is_numeric_dtype(X_tr[c])]

    def prep(X):
        X = X.copy()
        for c in cats:
            X[c] = X[c].astype(object).where(X[c].notna(), "missing").astype(str)
        return X

    return prep(X_tr), y_tr, prep(X_val), y_val, cats


def fit_cb(data, cfg, variant: str, rounds: int, patience: int) -> int:
    from catboost import CatBoostClassifier

    X_tr, y_tr, X_val, y_val, cats = data
    metric = {"builtin": "Logloss" if y_tr.max() == 1 else "MultiClass", "noop": _NoopCB(),
              "ours": _TimedCB("ts_ref")}[variant]
    clf = CatBoostClassifier(**cfg, iterations=rounds, thread_count=1, random_seed=0,
                             verbose=False, allow_writing_files=False, eval_metric=metric,
                             early_stopping_rounds=patience, cat_features=cats or None)
    clf.fit(X_tr, y_tr, eval_set=(X_val, y_val))
    return len(next(iter(clf.get_evals_result()["validation"].values())))


LIBRARIES = {"xgboost": (fit_xgb, xgb_configs, lambda d: d),
             "lightgbm": (fit_lgb, lgb_configs, lambda d: d),
             "catboost": (fit_cb, cb_configs, catboost_data)}
VARIANTS = ("builtin", "noop", "ours")


def measure(fit, data, cfg, rounds: int, patience: int, repeats: int) -> dict:
    """Interleaved repeats of (built-in, no-op custom metric, ours); the best (least) wall and
    CPU seconds of each over the repeats, and the ratios to the built-in metric."""
    best = {v: {"wall": np.inf, "cpu": np.inf, "metric": np.inf} for v in VARIANTS}
    n_rounds = {}
    fit(data, cfg, "ours", min(rounds, 5), patience)  # warm-up: imports, first-call costs
    for _ in range(repeats):
        for variant in VARIANTS:
            _Clock.seconds = 0.0
            w, c = time.perf_counter(), time.process_time()
            n_rounds[variant] = fit(data, cfg, variant, rounds, patience)
            w, c = time.perf_counter() - w, time.process_time() - c
            for key, value in (("wall", w), ("cpu", c), ("metric", _Clock.seconds)):
                best[variant][key] = min(best[variant][key], value)
    if len(set(n_rounds.values())) != 1:
        raise RuntimeError(f"the variants trained different numbers of rounds: {n_rounds}")
    return {
        "rounds": n_rounds["ours"],
        "cpu_s": tuple(best[v]["cpu"] for v in VARIANTS),
        "metric_s": best["ours"]["metric"],
        "wall": best["ours"]["wall"] / best["builtin"]["wall"],
        "cpu": best["ours"]["cpu"] / best["builtin"]["cpu"],
        "noop_cpu": best["noop"]["cpu"] / best["builtin"]["cpu"],
    }


def _available(lib: str) -> bool:
    try:
        __import__(lib)
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=ROOT / "data" / "demo")
    ap.add_argument("--datasets", nargs="+",
                    default=["MagicTelescope", "phoneme", "adult", "pendigits"])
    ap.add_argument("--libraries", nargs="+", default=list(LIBRARIES), choices=list(LIBRARIES))
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--patience", type=int, default=None, help="default: = rounds")
    ap.add_argument("--n-configs", type=int, default=0, help="random configs besides 'mid'")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    patience = args.patience or args.rounds
    libraries = [lib for lib in args.libraries if _available(lib)]
    for lib in sorted(set(args.libraries) - set(libraries)):
        print(f"{lib} is not installed: skipped")

    print(f"whole fit, {args.rounds} rounds, 1 thread, best of {args.repeats} interleaved "
          "repeats; CPU seconds: built-in log loss, a no-op custom metric, ours ('metric': "
          "inside ours);\nratios ours / built-in (CPU, wall) and no-op / built-in (CPU: "
          "the custom-metric floor)")
    print(f"{'library':<9}{'dataset':<15}{'config':<10}{'rounds':>7}{'built-in':>9}{'no-op':>7}"
          f"{'ours':>7}{'metric':>7}{'cpu':>6}{'wall':>6}{'no-op':>7}")
    mid: list[tuple[str, str, float, float]] = []
    spread: dict[str, list[float]] = {}
    for lib in libraries:
        fit, configs, prepare = LIBRARIES[lib]
        for ds in args.datasets:
            data = prepare(load(ds, args.data_dir))
            for name, cfg in configs(args.n_configs, ds).items():
                r = measure(fit, data, cfg, args.rounds, patience, args.repeats)
                t = r["cpu_s"]
                print(f"{lib:<9}{ds:<15}{name:<10}{r['rounds']:>7}{t[0]:>9.2f}{t[1]:>7.2f}"
                      f"{t[2]:>7.2f}{r['metric_s']:>7.2f}{r['cpu']:>6.2f}{r['wall']:>6.2f}"
                      f"{r['noop_cpu']:>7.2f}", flush=True)
                spread.setdefault(lib, []).append(r["cpu"])
                if name == "mid":
                    mid.append((lib, ds, r["cpu"], r["noop_cpu"]))
    print(f"\nmid-range config, ratio ours / built-in of the CPU time (target <= {TARGET}):")
    for lib in libraries:
        rows = [m for m in mid if m[0] == lib]
        cells = "  ".join(f"{ds} {cpu:.2f}" for _, ds, cpu, _ in rows)
        n_ok = sum(cpu <= TARGET for *_, cpu, _ in rows)
        print(f"  {lib:<9}{cells}   ({n_ok} of {len(rows)} within the target)")
    if args.n_configs:
        print("\nall configs, ratio ours / built-in (CPU): min / median / max")
        for lib, values in spread.items():
            print(f"  {lib:<9}{min(values):.2f} / {statistics.median(values):.2f} / "
                  f"{max(values):.2f}  (n = {len(values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
