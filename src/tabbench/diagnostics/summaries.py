"""The diagnostics' summaries: per (model, dataset) means over splits, then across datasets.

From the frames :func:`tabbench.diagnostics.collect.collect` returns: the selection's optimism
and regret, the winner's-curse curve, the calibrators relative to TS, the pooled reliability
diagrams with their ECEs, and the replay's cost. As :mod:`tabbench.summary.aggregate` does, the
mean over
splits comes before any ratio; the summary columns are
:func:`tabbench.summary.comparisons.describe`'s.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from tabbench.diagnostics import calibrators as cal
from tabbench.diagnostics.collect import CALIBRATIONS
from tabbench.diagnostics.reliability import pool
from tabbench.diagnostics.selection_bias import REGRET_TARGETS
from tabbench.summary.comparisons import describe, relative_difference

POOLED = "all datasets"


def _stats(values: np.ndarray) -> dict[str, float]:
    """The summary columns of the diagnostics tables
    (:func:`tabbench.summary.comparisons.describe`)."""
    d = describe(values)
    return {k: d[k] for k in ("n", "mean", "sem", "median", "q25", "q75")}


def _summary(df: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    rows = [{**dict(zip(keys, k if isinstance(k, tuple) else (k,), strict=True)),
             **_stats(g[value].to_numpy())} for k, g in df.groupby(keys, sort=True)]
    return pd.DataFrame(rows, columns=keys + ["n", "mean", "sem", "median", "q25", "q75"])


def empty_frame(cols: Iterable[str]) -> pd.DataFrame:
    """A frame with columns ``cols`` and no rows: what a table is when nothing fed it (a folder
    without replays, say), so that it is still written with its columns and read back."""
    return pd.DataFrame({c: [] for c in cols})


def summarise_selection(sel: pd.DataFrame, curve: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per-dataset means over splits, then summaries across datasets."""
    keys = ["model", "dataset", "regime", "stopping"]
    values = (["val", "test", "optimism"] + [f"regret_{t}" for t in REGRET_TARGETS]
              + [f"rel_regret_{t}" for t in REGRET_TARGETS])
    if sel.empty:
        return {"selection_datasets": empty_frame(keys + values),
                "optimism": empty_frame(keys), "regret": empty_frame(keys),
                "curve_summary": empty_frame(["model", "stopping", "k"])}
    g = sel.groupby(keys, sort=True)
    per_ds = g[values].mean()
    per_ds["n_splits"] = g.size()
    per_ds["same_estimator"] = g["same_estimator"].first()
    per_ds = per_ds.reset_index()
    optimism = _summary(per_ds, ["model", "regime", "stopping"], "optimism")
    parts = []
    for t in REGRET_TARGETS:
        for kind in ("regret", "rel_regret"):
            s = _summary(per_ds, ["model", "regime", "stopping"], f"{kind}_{t}")
            s.insert(3, "target", t)
            s.insert(4, "kind", kind)
            parts.append(s)
    regret = pd.concat(parts, ignore_index=True)
    if curve.empty:
        curve_summary = empty_frame(["model", "stopping", "k"])
    else:
        cg = curve.groupby(["model", "dataset", "stopping", "k"], sort=True)
        cd = cg[["val", "test", "optimism", "k_used", "n_configs"]].mean().reset_index()
        s = _summary(cd, ["model", "stopping", "k"], "optimism")
        extra = cd.groupby(["model", "stopping", "k"], sort=True).agg(
            mean_val=("val", "mean"), mean_test=("test", "mean"),
            median_k_used=("k_used", "median"), median_configs=("n_configs", "median"))
        curve_summary = s.merge(extra.reset_index(), on=["model", "stopping", "k"])
        flags = curve.groupby("stopping")["same_estimator"].first()
        curve_summary["same_estimator"] = curve_summary["stopping"].map(flags)
    return {"selection_datasets": per_ds, "optimism": optimism, "regret": regret,
            "curve_summary": curve_summary}


def summarise_calibrators(scores: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per dataset: mean over splits of each score, relative difference to TS (%), as
    :func:`tabbench.summary.comparisons.relative_difference` (ratio of means, clipped to ±100)."""
    keys = ["model", "dataset", "regime", "stopping", "calibrator"]
    if scores.empty:
        return {"calibrators_relative": empty_frame(keys + ["metric", "value", "ts", "rel_diff"]),
                "calibrators_summary": empty_frame(["model", "regime", "stopping", "calibrator"])}
    means = scores.groupby(keys, sort=True)[list(cal.SCORES)].mean().reset_index()
    long = means.melt(id_vars=keys, value_vars=list(cal.SCORES), var_name="metric")
    ref = long[long["calibrator"] == cal.REFERENCE].drop(columns="calibrator")
    rel = long.merge(ref.rename(columns={"value": "ts"}),
                     on=["model", "dataset", "regime", "stopping", "metric"])
    rel["rel_diff"] = relative_difference(rel["value"].to_numpy(), rel["ts"].to_numpy())
    order = {c: i for i, c in enumerate(cal.CALIBRATORS)}
    rel = rel.sort_values(["model", "regime", "metric", "stopping", "calibrator", "dataset"],
                          key=lambda s: s.map(order) if s.name == "calibrator" else s,
                          kind="stable", ignore_index=True)
    summ = _summary(rel, ["model", "regime", "metric", "stopping", "calibrator"], "rel_diff")
    wins = rel.groupby(["model", "regime", "metric", "stopping", "calibrator"], sort=True)[
        "rel_diff"].agg(wins=lambda r: int((r < 0).sum()), losses=lambda r: int((r > 0).sum()))
    summ = summ.merge(wins.reset_index(),
                      on=["model", "regime", "metric", "stopping", "calibrator"])
    return {"calibrators_relative": rel, "calibrators_summary": summ}


def example_dataset(bins: pd.DataFrame) -> str | None:
    """The dataset shown alone in the reliability figure: present for the most models, then
    the most test samples, then the first name."""
    if bins.empty:
        return None
    one = bins[(bins["calibration"] == "raw")]
    first = one.groupby(["model", "dataset", "split", "regime", "stopping"])["n"].sum()
    n_test = first.groupby(["model", "dataset"]).max().groupby("dataset").mean()
    n_models = one.groupby("dataset")["model"].nunique()
    order = sorted(n_test.index, key=lambda d: (-n_models[d], -n_test[d], d))
    return order[0]


def summarise_reliability(bins: pd.DataFrame, scores: pd.DataFrame
                          ) -> tuple[dict[str, pd.DataFrame], str | None]:
    keys = ["model", "regime", "stopping", "calibration"]
    if bins.empty:
        return {"reliability": empty_frame(["scope"] + keys + ["bin"]),
                "reliability_ece": empty_frame(["scope"] + keys)}, None
    example = example_dataset(bins)
    parts, eces = [], []
    for scope, sub in ((POOLED, bins), (example, bins[bins["dataset"] == example])):
        diag, ece = pool(sub, keys)
        diag.insert(0, "scope", scope)
        ece.insert(0, "scope", scope)
        parts.append(diag)
        # the metric's ECE per split, mean over splits, then over datasets
        s = scores[scores["calibrator"].isin(list(CALIBRATIONS))]
        if scope != POOLED:
            s = s[s["dataset"] == scope]
        s = s.assign(calibration=s["calibrator"].map(CALIBRATIONS))
        per_ds = s.groupby(keys + ["dataset"], sort=True)[["ece", "smece"]].mean()
        means = per_ds.groupby(keys).mean().rename(
            columns={"ece": "ece_mean", "smece": "smece_mean"}).reset_index()
        eces.append(ece.merge(means, on=keys, how="left"))
    return {"reliability": pd.concat(parts, ignore_index=True),
            "reliability_ece": pd.concat(eces, ignore_index=True)}, example


def summarise_cost(cost: pd.DataFrame) -> pd.DataFrame:
    """Replay compute as a fraction of the study's training, per model and overall: measured
    (replay wall time / recorded training time) and from the records (recorded fit_seconds up
    to the replayed epochs / recorded training time, machine-independent)."""
    cols = ["model", "n_splits", "replay_seconds", "replay_cpu_seconds", "study_train_seconds",
            "recorded_fit_seconds_replayed", "fraction_measured", "fraction_cpu",
            "fraction_recorded"]
    if cost.empty:
        return empty_frame(cols)
    if "replay_cpu_seconds" not in cost:
        cost = cost.assign(replay_cpu_seconds=np.nan)
    rows = []
    for model, g in [*cost.groupby("model", sort=True), ("all", cost)]:
        study = g["study_train_seconds"].sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            rows.append({
                "model": model, "n_splits": len(g),
                "replay_seconds": g["replay_seconds"].sum(),
                "replay_cpu_seconds": g["replay_cpu_seconds"].sum(min_count=1),
                "study_train_seconds": study,
                "recorded_fit_seconds_replayed": g["recorded_fit_seconds_replayed"].sum(),
                "fraction_measured": g["replay_seconds"].sum() / study,
                "fraction_cpu": g["replay_cpu_seconds"].sum(min_count=1) / study,
                "fraction_recorded": g["recorded_fit_seconds_replayed"].sum() / study})
    return pd.DataFrame(rows, columns=cols)
