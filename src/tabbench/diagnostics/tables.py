"""Diagnostic tables of a results folder (``tabbench diagnose``; docs/diagnostics.md).

One pass over the splits, each reduced in a worker process to small frames:

* from the runs file (only the columns of :func:`selection_bias.needed_columns`): selection,
  optimism and regret of every (regime, stopping metric), and the winner's-curse curve;
* from the replay file, when there is one and it matches the selection recomputed from the
  runs file (a replay older than a rerun training is *stale* and left out, with a count in
  ``meta.json``): the test scores of every post-hoc calibrator and the reliability-bin sums
  raw and after TS, computed once per distinct selected (config, epoch);
* from the replay sidecar: the replay's cost.

Then per (model, dataset) means over splits (as :mod:`tabbench.aggregate` does: the mean over
splits comes before any ratio), summaries across datasets and a Markdown digest. Everything is
read back by :mod:`tabbench.plots.diagnostics`, which never touches ``runs/`` or ``replay/``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabbench.comparisons import describe
from tabbench.diagnostics import calibrators as cal
from tabbench.diagnostics.paths import (
    DIAGNOSTIC_OTHER_FILES,
    DIAGNOSTIC_TABLE_FILES,
    logits_key,
    replay_key,
)
from tabbench.diagnostics.reliability import SUM_COLUMNS, bin_sums, pool
from tabbench.diagnostics.selection_bias import (
    MAIN_TARGET,
    REGRET_TARGETS,
    read_columns,
    split_selection_bias,
)
from tabbench.frames import read_frames, write_frames
from tabbench.layout import ResultsLayout, replay_sidecar, runs_splits

TABLE_FILES = DIAGNOSTIC_TABLE_FILES
OTHER_FILES = DIAGNOSTIC_OTHER_FILES
DIAGNOSTIC_FILES: dict[str, str] = {**TABLE_FILES, **OTHER_FILES}

CALIBRATIONS = {"none": "raw", "ts": "ts"}  # calibrators drawn in the reliability diagrams
POOLED = "all datasets"


@dataclass(frozen=True)
class SplitTask:
    model: str
    dataset: str
    split: int
    runs: Path
    replay: Path | None


def discover_tasks(results: str | Path, pairs: Sequence[str] | None = None,
                   n_splits: int | None = None) -> list[SplitTask]:
    """One task per runs file of ``results`` (only ``pairs`` "model/dataset" if given, only
    splits ``0..n_splits-1`` if given), with its replay file when one exists."""
    layout = ResultsLayout(results)
    root = Path(layout.runs_dir)
    if pairs is None:
        pairs = sorted(f"{p.parent.name}/{p.name}" for p in root.glob("*/*") if p.is_dir())
    tasks = []
    for pair in pairs:
        model, _, dataset = pair.partition("/")
        if not dataset:
            raise ValueError(f"pairs are model/dataset, got {pair!r}")
        splits = runs_splits(layout.runs_dir, model, dataset)
        if n_splits is not None:
            splits = [s for s in splits if s < n_splits]
        for s in splits:
            npz = Path(layout.replay(model, dataset, s))
            ok = npz.exists() and replay_sidecar(npz).exists()
            tasks.append(SplitTask(model, dataset, s, Path(layout.runs(model, dataset, s)),
                                   npz if ok else None))
    return tasks


def _tag(df: pd.DataFrame, model: str, dataset: str) -> pd.DataFrame:
    if df.empty:
        return df
    df.insert(0, "dataset", dataset)
    df.insert(0, "model", model)
    return df


def _replay_frames(task: SplitTask, sel: pd.DataFrame) -> tuple[dict[str, pd.DataFrame], str]:
    """Calibrator scores, reliability sums and cost of one replay file; status "used" or why
    not ("stale": its selections differ from the records')."""
    from tabbench.replay import read_replay

    arrays, side = read_replay(task.replay)
    want = {replay_key(r.regime, r.stopping): (int(r.config), int(r.epoch))
            for r in sel.itertuples()}
    have = {k: (int(v["config"]), int(v["epoch"])) for k, v in side["selections"].items()}
    if want != have:
        return {}, "stale"
    y_val, y_test = arrays["y_val"], arrays["y_test"]
    done: dict[tuple[int, int], tuple[dict, dict]] = {}
    score_rows, bin_rows = [], []
    for entry in side["selections"].values():
        regime, stopping = entry["regime"], entry["stopping"]
        ce = (int(entry["config"]), int(entry["epoch"]))
        if ce not in done:
            val = arrays[logits_key("val", regime, stopping)]
            test = arrays[logits_key("test", regime, stopping)]
            if not (np.isfinite(val).all() and np.isfinite(test).all()):
                continue
            proba = cal.calibrated_test_proba(val, y_val, test)
            done[ce] = (cal.score_calibrated(proba, test, y_test),
                        {c: bin_sums(proba[name], y_test) for name, c in CALIBRATIONS.items()})
        sc, bins = done[ce]
        for name, s in sc.items():
            score_rows.append({"split": task.split, "regime": regime, "stopping": stopping,
                               "config": ce[0], "epoch": ce[1], "calibrator": name, **s})
        for c, sums in bins.items():
            for b in range(len(sums)):
                bin_rows.append({"split": task.split, "regime": regime, "stopping": stopping,
                                 "calibration": c, "bin": b,
                                 **dict(zip(SUM_COLUMNS, sums[b], strict=True))})
    cost = {"split": task.split, **side["cost"], "device": side.get("device"),
            "n_test": int(len(y_test)), "n_classes": int(side.get("n_classes", 0))}
    frames = {"scores": pd.DataFrame(score_rows), "bins": pd.DataFrame(bin_rows),
              "cost": pd.DataFrame([cost])}
    return frames, "used"


def diagnose_split(task: SplitTask) -> dict[str, Any]:
    """Every per-split frame of one task (module docstring) and the replay's status."""
    sel, curve = split_selection_bias(read_columns(task.runs))
    out: dict[str, Any] = {"selection": sel, "curve": curve}
    status = "missing"
    if task.replay is not None:
        frames, status = _replay_frames(task, sel)
        out.update(frames)
    for key, df in out.items():
        out[key] = _tag(df, task.model, task.dataset)
    out["status"] = status
    out["task"] = f"{task.model}/{task.dataset}/split{task.split}"
    return out


def collect(tasks: Sequence[SplitTask], jobs: int | None = None
            ) -> tuple[dict[str, pd.DataFrame], dict[str, list[str]]]:
    """Per-split frames of all ``tasks`` concatenated; replay status -> tasks."""
    jobs = jobs or os.cpu_count() or 1
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool_:
            results = list(pool_.map(diagnose_split, tasks, chunksize=8))
    else:
        results = [diagnose_split(t) for t in tasks]
    frames: dict[str, list[pd.DataFrame]] = {}
    status: dict[str, list[str]] = {"used": [], "stale": [], "missing": []}
    for r in results:
        status[r["status"]].append(r["task"])
        for key in ("selection", "curve", "scores", "bins", "cost"):
            if key in r and len(r[key]):
                frames.setdefault(key, []).append(r[key])
    return {k: pd.concat(v, ignore_index=True) for k, v in frames.items()}, status


def _stats(values: np.ndarray) -> dict[str, float]:
    """The summary columns of the diagnostics tables (:func:`tabbench.comparisons.describe`)."""
    d = describe(values)
    return {k: d[k] for k in ("n", "mean", "sem", "median", "q25", "q75")}


def _summary(df: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    rows = [{**dict(zip(keys, k if isinstance(k, tuple) else (k,), strict=True)),
             **_stats(g[value].to_numpy())} for k, g in df.groupby(keys, sort=True)]
    return pd.DataFrame(rows, columns=keys + ["n", "mean", "sem", "median", "q25", "q75"])


def _empty(cols: Iterable[str]) -> pd.DataFrame:
    return pd.DataFrame({c: [] for c in cols})


def summarise_selection(sel: pd.DataFrame, curve: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per-dataset means over splits, then summaries across datasets."""
    keys = ["model", "dataset", "regime", "stopping"]
    values = (["val", "test", "optimism"] + [f"regret_{t}" for t in REGRET_TARGETS]
              + [f"rel_regret_{t}" for t in REGRET_TARGETS])
    if sel.empty:
        return {"selection_datasets": _empty(keys + values), "optimism": _empty(keys),
                "regret": _empty(keys), "curve_summary": _empty(["model", "stopping", "k"])}
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
        curve_summary = _empty(["model", "stopping", "k"])
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
    :func:`tabbench.comparisons.relative_difference` (ratio of means, clipped to ±100)."""
    from tabbench.comparisons import relative_difference

    keys = ["model", "dataset", "regime", "stopping", "calibrator"]
    if scores.empty:
        return {"calibrators_relative": _empty(keys + ["metric", "value", "ts", "rel_diff"]),
                "calibrators_summary": _empty(["model", "regime", "stopping", "calibrator"])}
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
        return {"reliability": _empty(["scope"] + keys + ["bin"]),
                "reliability_ece": _empty(["scope"] + keys)}, None
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
        return _empty(cols)
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


def diagnostics_frames(tasks: Sequence[SplitTask], jobs: int | None = None) -> dict[str, Any]:
    """Every diagnostic table (:data:`TABLE_FILES`), the Markdown digest and ``meta``."""
    raw, status = collect(tasks, jobs)
    sel = raw.get("selection", pd.DataFrame())
    curve = raw.get("curve", pd.DataFrame())
    scores = raw.get("scores", _empty(["model", "dataset", "split", "regime", "stopping",
                                       "calibrator", *cal.SCORES]))
    bins = raw.get("bins", _empty(["model", "dataset", "split", "regime", "stopping",
                                   "calibration", "bin", *SUM_COLUMNS]))
    cost = raw.get("cost", _empty(["model", "dataset", "split", "replay_seconds",
                                   "study_train_seconds", "recorded_fit_seconds_replayed"]))
    out: dict[str, Any] = {"selection": sel if len(sel) else _empty(["model", "dataset"]),
                           "curve": curve if len(curve) else _empty(["model", "dataset"]),
                           "scores": scores, "cost": cost}
    out.update(summarise_selection(sel, curve))
    out.update(summarise_calibrators(scores))
    rel, example = summarise_reliability(bins, scores)
    out.update(rel)
    out["cost_summary"] = summarise_cost(cost)
    out["meta"] = {
        "n_splits": len(tasks),
        "models": sorted({t.model for t in tasks}),
        "n_datasets": len({t.dataset for t in tasks}),
        "replay": {k: len(v) for k, v in status.items()},
        "stale_replays": status["stale"],
        "example_dataset": example,
        "main_target": MAIN_TARGET,
    }
    out["markdown"] = markdown(out)
    return out


def _pct(x: float) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:.1f}%"


def _fmt(x: float, spec: str = "+.3f") -> str:
    return "–" if x is None or not np.isfinite(x) else format(x, spec)


def _section(title: str, notes: Sequence[str], header: Sequence[str], n_text: int,
             rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown section: title, notes, then a table whose first ``n_text`` columns are text
    (left-aligned) and the others numbers (right-aligned)."""
    align = "|" + "---|" * n_text + "---:|" * (len(header) - n_text)
    lines = [f"## {title}", ""]
    for note in notes:
        lines += [note, ""]
    lines += ["| " + " | ".join(header) + " |", align]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines + [""]


def markdown(t: dict[str, Any]) -> str:
    """``diagnostics.md``: the replay counts, then one table per diagnostic (those present)."""
    meta = t["meta"]
    lines = ["# Diagnostics of the chosen models (docs/diagnostics.md)", "",
             f"{meta['n_datasets']} datasets, {meta['n_splits']} splits, models "
             f"{', '.join(meta['models']) or '–'}. Replay files used: {meta['replay']['used']},"
             f" stale (older than the records, left out): {meta['replay']['stale']}, "
             f"missing: {meta['replay']['missing']}.", ""]
    cs = t["cost_summary"]
    if len(cs):
        lines += _section(
            "Replay cost (fraction of the study's training)",
            ["Measured: the replay's wall time; CPU: its process CPU time; from records: the "
             "study's own recorded time up to the replayed epochs (same machine and load as the "
             "study). All divided by the study's recorded training time."],
            ["model", "splits", "replay s", "study training s", "measured", "CPU",
             "from records"], 1,
            ([r.model, str(r.n_splits), f"{r.replay_seconds:.1f}",
              f"{r.study_train_seconds:.1f}", _pct(r.fraction_measured), _pct(r.fraction_cpu),
              _pct(r.fraction_recorded)] for r in cs.itertuples()))
    opt = t["optimism"]
    if len(opt):
        lines += _section(
            "Optimism of the selection (test − validation, paired metric)",
            ["Mean over datasets of the per-dataset mean over splits."],
            ["model", "regime", "stopping", "n", "mean", "median", "q25", "q75"], 3,
            ([r.model, r.regime, r.stopping, str(r.n), _fmt(r.mean), _fmt(r.median),
              _fmt(r.q25), _fmt(r.q75)] for r in opt.itertuples()))
    curve = t["curve_summary"]
    if len(curve):
        ks = sorted(curve["k"].unique())
        lines += _section(
            "Winner's curse: mean optimism vs configs searched (tuned)", [],
            ["model", "stopping", *(f"k={k}" for k in ks)], 2,
            ([model, stopping, *(_fmt(g.set_index("k")["mean"].get(k, np.nan)) for k in ks)]
             for (model, stopping), g in curve.groupby(["model", "stopping"], sort=True)))
    rg = t["regret"]
    if len(rg):
        sub = rg[(rg["target"] == MAIN_TARGET) & (rg["kind"] == "rel_regret")]
        lines += _section(
            f"Regret in test {MAIN_TARGET} (% of the oracle)", [],
            ["model", "regime", "stopping", "n", "mean", "median", "q75"], 3,
            ([r.model, r.regime, r.stopping, str(r.n), _fmt(r.mean, ".2f"),
              _fmt(r.median, ".2f"), _fmt(r.q75, ".2f")] for r in sub.itertuples()))
    cb = t["calibrators_summary"]
    if len(cb):
        lines += _section(
            "Calibrators vs TS: median relative difference (%) of the test score", [],
            ["model", "regime", "metric", "stopping", "calibrator", "n", "median",
             "W/L vs TS"], 5,
            ([r.model, r.regime, r.metric, r.stopping, r.calibrator, str(r.n),
              _fmt(r.median, "+.2f"), f"{r.wins}/{r.losses}"]
             for r in cb[cb["calibrator"] != cal.REFERENCE].itertuples()))
    ece = t["reliability_ece"]
    if len(ece):
        lines += _section(
            "Test ECE of the chosen models, raw and after TS",
            ["ECE: 15 equal-width bins of the top-label confidence; smECE: top-label smooth "
             "ECE (relplot). Mean per dataset = mean over datasets of the mean over splits; "
             "pooled = the ECE of the bins pooled with equal weight per dataset."],
            ["scope", "model", "regime", "stopping", "calibration", "ECE mean per dataset",
             "ECE pooled", "smECE mean per dataset"], 5,
            ([r.scope, r.model, r.regime, r.stopping, r.calibration, _fmt(r.ece_mean, ".4f"),
              _fmt(r.ece_pooled, ".4f"), _fmt(r.smece_mean, ".4f")] for r in ece.itertuples()))
    return "\n".join(lines)


def write_diagnostics(frames: dict[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write every table, the Markdown and ``meta.json`` into ``out_dir`` atomically."""
    return write_frames(frames, {**TABLE_FILES, **OTHER_FILES}, out_dir)


def read_diagnostics(folder: str | Path) -> dict[str, Any]:
    """What :func:`write_diagnostics` wrote (the diagnostic figures' only input)."""
    return read_frames({**TABLE_FILES, **OTHER_FILES}, folder)


def diagnose(results: str | Path, out_dir: str | Path, pairs: Sequence[str] | None = None,
             n_splits: int | None = None, jobs: int | None = None) -> dict[str, Any]:
    """Diagnostic tables of ``results`` (module docstring) written to ``out_dir``."""
    frames = diagnostics_frames(discover_tasks(results, pairs, n_splits), jobs)
    write_diagnostics(frames, out_dir)
    return frames
