"""What a train job costs, learnt from a results folder's own finished jobs.

Two readers need the same numbers: ``tabbench status`` (how long the rest of *this* study will
take, on this machine) and ``benchmarks/study_cost.py`` (what the paper preset would cost). So
the measurement and the fit live here, once:

1. **Measure** (:func:`measurements`). Every finished job (a runs file) gives, per config, its
   epochs, its training time (``fit_seconds`` of the last epoch) and, from the job's train log
   (:func:`config_walls`: the progress lines' cumulative "elapsed", written by
   :mod:`tabbench.study.train_job`), its wall time including the per-epoch recording. A job without
   a
   usable log (resumed: its elapsed restarts; or the log missing) counts with its model's
   median ratio wall / training time (1 for a model without any log: recording left out).
2. **Fit** (:func:`fit_costs`). Per model and regime (default config 0 / random configs), the
   wall seconds per epoch, log-linear in the training rows, the features and the trees or
   output columns per round (:func:`k_eff`): ``log s = b0 + b1 log n_train + b2 log n_features
   + b3 log K_eff``, least squares over (dataset, split) means (random configs averaged first,
   so the tuned fit is the cost of an average random config). Fewer than
   :data:`MIN_FULL_FIT_DATASETS` datasets: ``log n_train`` alone (the others 0), since four
   coefficients from a handful of points would be noise.
3. **Predict** (:func:`seconds_per_epoch`): ``exp(design @ coefficients)`` for any dataset size.

The measured walls hold whatever ran beside the jobs (the study's own concurrency and load):
that is what a prediction for the same folder on the same machine wants, and what a
prediction for another machine must keep in mind.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from tabbench.core.io import read_parquet
from tabbench.core.layout import ResultsLayout, runs_files_by_pair

#: a config's progress line (tabbench.study.train_job): "config 3 (4/31) epoch 250/1000 elapsed
#: 0.8s"
_LINE = re.compile(r"config (\d+) \(\d+/\d+\) epoch (\d+)/(\d+) elapsed (\S+)")
#: a stacked group's progress line (tabbench.study.train_job): its configs share its wall time
_GROUP_LINE = re.compile(r"configs ([\d,]+) \([^)]*\) epoch (\d+)/(\d+) elapsed (\S+)")
#: what a resumed job logs for a config it found in its part folder (its elapsed restarts)
_RESUMED = "already done (part file)"
#: what a job logs last, once its runs file is written
_DONE = "done:"

#: below this many datasets a (model, regime) is fit on log n_train alone
MIN_FULL_FIT_DATASETS = 6
#: the columns :func:`measurements` reads from a runs file
_RUNS_COLUMNS = ["config", "epoch", "fit_seconds", "n_train", "n_val", "n_test", "n_classes"]
MEASUREMENT_COLUMNS = ["model", "dataset", "split", "config", "regime", "epochs", "fit", "wall",
                       "n_train", "n_eval", "n_classes", "n_features", "wall_ratio_filled"]


def parse_hms(text: str) -> float:
    """The progress lines' durations: ``41.1s`` or ``h:mm:ss``."""
    if text.endswith("s"):
        return float(text[:-1])
    h, m, s = (int(x) for x in text.split(":"))
    return 3600 * h + 60 * m + s


def config_walls(log: str | os.PathLike[str]) -> dict[int, float] | None:
    """Wall seconds of each config trained by the job whose log this is (differences of the
    cumulative "elapsed" at each config's last epoch line); None for a resumed job (its
    elapsed restarts), an unfinished one or a log without progress lines."""
    text = Path(log).read_text(errors="replace")
    if _RESUMED in text or _DONE not in text:
        return None
    last: dict[tuple[int, ...], float] = {}
    for m in _LINE.finditer(text):
        last[(int(m.group(1)),)] = parse_hms(m.group(4))
    for m in _GROUP_LINE.finditer(text):
        last[tuple(int(c) for c in m.group(1).split(","))] = parse_hms(m.group(4))
    if not last:
        return None
    walls, prev = {}, 0.0
    for configs in sorted(last, key=lambda g: last[g]):  # in the order they finished
        for c in configs:  # a group's wall is shared equally, as its fit_seconds
            walls[c] = max(last[configs] - prev, 0.0) / len(configs)
        prev = last[configs]
    return walls


def regime_of(config: int) -> str:
    """``default`` for config 0 (the model's defaults), ``tuned`` for the random configs."""
    return "default" if int(config) == 0 else "tuned"


def measurements(results: str | os.PathLike[str],
                 n_features: Mapping[str, int]) -> pd.DataFrame:
    """One row per (model, dataset, split, config) of every finished, non-empty job of
    ``results`` (columns :data:`MEASUREMENT_COLUMNS`; ``n_features`` by dataset name, NaN where
    the mapping has none); empty when the folder has no such job."""
    layout = ResultsLayout(results)
    files = sorted((path, model, dataset, split)
                   for (model, dataset), by_split in runs_files_by_pair(results).items()
                   for split, path in by_split.items())
    rows = []
    for runs, model, dataset, split in files:
        df = read_parquet(runs, columns=_RUNS_COLUMNS)
        if df.empty:
            continue
        last = df.sort_values("epoch").groupby("config").last()
        log = Path(layout.log("train", model, dataset, f"split{split}"))
        walls = config_walls(log) if log.exists() else None
        for c, r in last.iterrows():
            rows.append({
                "model": model, "dataset": dataset, "split": int(split), "config": int(c),
                "regime": regime_of(int(c)), "epochs": int(r["epoch"]),
                "fit": float(r["fit_seconds"]),
                "wall": np.nan if walls is None else walls.get(int(c), np.nan),
                "n_train": int(r["n_train"]), "n_eval": int(r["n_val"] + r["n_test"]),
                "n_classes": int(r["n_classes"]), "n_features": n_features.get(dataset, np.nan),
            })
    out = pd.DataFrame(rows, columns=MEASUREMENT_COLUMNS[:-1])
    if out.empty:
        return out.assign(wall_ratio_filled=pd.Series(dtype=bool))
    # a model without any usable log (e.g. a published folder that ships no logs) counts with
    # its training time alone (ratio 1): recording is then left out, which callers say
    ratio = (out["wall"] / out["fit"]).groupby(out["model"]).median().fillna(1.0)
    out["wall_ratio_filled"] = out["wall"].isna()
    out["wall"] = out["wall"].fillna(out["fit"] * out["model"].map(ratio))
    return out


def k_eff(n_classes) -> np.ndarray:
    """Trees or output columns per round: 1 for a binary task, K otherwise."""
    k = np.asarray(n_classes, dtype=float)
    return np.where(k <= 2, 1.0, k)


def design(n_train, n_features, keff) -> np.ndarray:
    """The fit's design matrix: ``[1, log n_train, log n_features, log K_eff]`` (``keff``:
    :func:`k_eff` of the classes)."""
    return np.column_stack([np.ones(len(n_train)), np.log(n_train), np.log(n_features),
                            np.log(keff)])


def fit_points(meas: pd.DataFrame, column: str = "wall") -> pd.DataFrame:
    """What :func:`fit_costs` fits: per (model, regime, dataset, split), the mean seconds per
    epoch ``s`` of its configs and the sizes. Left out: rows without ``n_features``, and jobs
    whose configs all took no measurable time (a log's "elapsed" has 0.1 s steps; a zero has
    no logarithm)."""
    meas = meas.dropna(subset=["n_features"])
    per = (meas.assign(s=meas[column] / meas["epochs"])
           .groupby(["model", "regime", "dataset", "split"])
           .agg(s=("s", "mean"), n_train=("n_train", "first"),
                n_features=("n_features", "first"), n_classes=("n_classes", "first"))
           .reset_index())
    return per[per["s"] > 0]


def fit_costs(meas: pd.DataFrame, column: str = "wall") -> dict[tuple[str, str], np.ndarray]:
    """Least-squares coefficients of log(seconds per epoch) per (model, regime) on
    :func:`fit_points`; a model with fewer than :data:`MIN_FULL_FIT_DATASETS` datasets gets a
    fit on log n_train only (others 0)."""
    coefs = {}
    for (model, regime), per in fit_points(meas, column).groupby(["model", "regime"]):
        x = design(per["n_train"], per["n_features"], k_eff(per["n_classes"]))
        y = np.log(per["s"].to_numpy())
        if per["dataset"].nunique() < MIN_FULL_FIT_DATASETS:
            x = x[:, :2]
        beta, *_ = np.linalg.lstsq(x, y, rcond=None)
        coefs[(model, regime)] = np.pad(beta, (0, 4 - len(beta)))
    return coefs


def seconds_per_epoch(coef: np.ndarray, n_train, n_features, n_classes) -> np.ndarray:
    """Predicted wall seconds per epoch of one config, per dataset size, from one
    (model, regime)'s :func:`fit_costs` coefficients."""
    return np.exp(design(np.atleast_1d(n_train), np.atleast_1d(n_features),
                         k_eff(np.atleast_1d(n_classes))) @ coef)
