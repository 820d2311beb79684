"""From selected rows to the paper's comparisons (docs/design.md §7).

A *method* is a (stopping metric, ±TS) pair: stop on ``val_<stopping>``, then report the test
metric raw or after temperature scaling fit on validation (``test_<m>_ts``). The paper compares
every method with the baseline "logloss stopping + TS" (Berta et al. 2025, Sec. 4, Fig. 5):

    per (model, regime, dataset):  m̄_A = mean over splits of the test metric of method A
    relative difference:            r_A = 100 · (m̄_A / m̄_base − 1)  %, clipped to [−100, 100]

The mean over splits comes *before* the ratio (a ratio of means, not a mean of ratios), as in
the paper's code. Clipping keeps a few datasets with a near-zero baseline (e.g. error 0) from
dominating a mean; medians and quantiles are unaffected by it.

A method and the baseline are averaged over the *same* splits: a split where either has no
selection (a config that failed everywhere, a missing runs file) or a non-finite test value is
dropped for that comparison, and counted in ``meta.json`` (``dropped_splits``). Otherwise a
method could be compared on splits 0–4 with a baseline averaged over splits 0–2.

The methods follow from the registry of stopping metrics (:mod:`tabbench.metrics.registry`):
``"<label>+TS"`` for every registered metric, and ``"<label>"`` (raw) where the metric asks for
it; the paper's Fig. 5 methods come first, in its order, then the others in registry order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tabbench.io import write_json_atomic, write_parquet_atomic, write_text_atomic
from tabbench.layout import runs_file
from tabbench.metrics.registry import get_stopping_metrics
from tabbench.provenance import gather, read_runs_provenance
from tabbench.runs_schema import TEST_METRIC_IDS, test_column, val_column
from tabbench.select import TEST_COLUMNS

#: rows from which a dataset counts as "large" (paper Fig. 5: ≥ 10K samples)
LARGE_ROWS = 10_000
CLIP = 100.0


@dataclass(frozen=True)
class Method:
    """Stop on ``stopping``; report the test metric after TS if ``ts``."""

    name: str
    stopping: str
    ts: bool


BASELINE = "Logloss+TS"
#: the paper's Fig. 5: its four methods in its order (the figures show them first)
FIG5_METHODS: tuple[str, ...] = ("Logloss", "Logloss+TS", "TS-Ref.+TS", "Accuracy+TS")


def methods() -> tuple[Method, ...]:
    """Every method of the registered stopping metrics, in the order the figures show them
    (module docstring)."""
    out = []
    for metric in get_stopping_metrics().values():
        if metric.raw_method:
            out.append(Method(metric.method_name(ts=False), metric.id, False))
        out.append(Method(metric.method_name(ts=True), metric.id, True))
    rank = {name: i for i, name in enumerate(FIG5_METHODS)}
    return tuple(sorted(out, key=lambda m: rank.get(m.name, len(rank))))  # stable


def method_names() -> tuple[str, ...]:
    return tuple(m.name for m in methods())


SUBSETS: tuple[str, ...] = ("all", "large")

#: the files :func:`aggregate` writes into its output folder
SUMMARY_FILES: dict[str, str] = {
    "dataset_means": "dataset_means.parquet",
    "relative": "relative.parquet",
    "summary": "summary.parquet",
    "best_epochs": "best_epochs.parquet",
    "best_epochs_summary": "best_epochs_summary.parquet",
    "curve": "curve.parquet",
    "markdown": "summary.md",
    "claims": "claims.parquet",
    "claims_markdown": "claims.md",
    "claims_html": "claims.html",
    "meta": "meta.json",
}
#: the SUMMARY_FILES written as text (the others: parquet, and meta as JSON)
TEXT_SUMMARY_KEYS = frozenset({"markdown", "claims_markdown", "claims_html"})


def load_selected(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Concatenate ``results/selected/{model}/{dataset}.parquet`` files."""
    frames = [pd.read_parquet(p) for p in paths]
    frames = [f for f in frames if len(f)]
    if not frames:
        from tabbench.select import SELECTED_COLUMNS

        return pd.DataFrame({c: [] for c in SELECTED_COLUMNS})
    return pd.concat(frames, ignore_index=True)


def dataset_means(selected: pd.DataFrame) -> pd.DataFrame:
    """Per (model, dataset, regime, stopping): mean over splits of every test metric and of the
    chosen epoch; ``n_splits`` counts the splits that had a selection."""
    keys = ["model", "dataset", "regime", "stopping"]
    g = selected.groupby(keys, sort=True, observed=True)
    out = g[list(TEST_COLUMNS) + ["epoch"]].mean()
    out["n_splits"] = g.size()
    out["n_rows"] = g["n_rows"].max()
    out["n_classes"] = g["n_classes"].max()
    return out.reset_index()


def relative_difference(value: np.ndarray, base: np.ndarray, clip: float = CLIP) -> np.ndarray:
    """``100·(value/base − 1)`` clipped to [−clip, clip]; exactly 0 where value == base (also
    when both are 0), ±clip where base == 0 < |value|, NaN where either is NaN."""
    value = np.asarray(value, dtype=float)
    base = np.asarray(base, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = 100.0 * (value / base - 1.0)
        rel = np.where(value == base, 0.0, rel)
        rel = np.where((base == 0) & (value != 0), np.sign(value) * np.inf, rel)
    return np.clip(rel, -clip, clip)


_GROUP = ["model", "dataset", "regime"]
_REL_COLUMNS = ["model", "regime", "metric", "method", "dataset", "value", "baseline",
                "rel_diff", "n_rows", "n_splits", "large"]


def split_values(selected: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Long table (model, dataset, regime, split, method, value, n_rows) of one test metric for
    every method whose stopping metric the selection holds."""
    parts = []
    for m in methods():
        sub = selected[selected["stopping"] == m.stopping]
        if sub.empty:
            continue
        parts.append(pd.DataFrame({
            "model": sub["model"].to_numpy(),
            "dataset": sub["dataset"].to_numpy(),
            "regime": sub["regime"].to_numpy(),
            "split": sub["split"].to_numpy(),
            "method": m.name,
            "value": sub[test_column(metric, m.ts)].to_numpy(dtype=float),
            "n_rows": sub["n_rows"].to_numpy(),
        }))
    if not parts:
        return pd.DataFrame(columns=[*_GROUP, "split", "method", "value", "n_rows"])
    return pd.concat(parts, ignore_index=True)


def paired_splits(selected: pd.DataFrame, metric: str, baseline: str = BASELINE
                  ) -> pd.DataFrame:
    """Per (model, dataset, regime, method) and every split that the method *or* the baseline
    has: the method's and the baseline's test value, and ``paired`` = both are finite (the
    splits a comparison may use)."""
    vals = split_values(selected, metric)
    if vals.empty:
        return pd.DataFrame(columns=[*_GROUP, "method", "split", "value", "baseline", "n_rows",
                                     "paired"])
    base = (vals[vals["method"] == baseline][[*_GROUP, "split", "value"]]
            .rename(columns={"value": "baseline"}))
    groups = vals[[*_GROUP, "method"]].drop_duplicates()
    base_splits = groups.merge(base[[*_GROUP, "split"]], on=_GROUP)
    keys = (pd.concat([vals[[*_GROUP, "method", "split"]], base_splits], ignore_index=True)
            .drop_duplicates())
    sizes = selected.groupby(["model", "dataset"], sort=False)["n_rows"].max().rename("n_rows")
    out = (keys.merge(vals.drop(columns="n_rows"), on=[*_GROUP, "method", "split"], how="left")
           .merge(base, on=[*_GROUP, "split"], how="left")
           .merge(sizes.reset_index(), on=["model", "dataset"], how="left"))
    out["paired"] = np.isfinite(out["value"].astype(float)) & np.isfinite(
        out["baseline"].astype(float))
    return out


def relative_differences(selected: pd.DataFrame, metrics: Sequence[str] = TEST_METRIC_IDS,
                         baseline: str = BASELINE, large_rows: int = LARGE_ROWS
                         ) -> pd.DataFrame:
    """Every method's relative difference to ``baseline``, per (model, regime, dataset, metric),
    from the selected rows (one per split): both means over the splits they share
    (:func:`paired_splits`); ``n_splits`` counts those. A (method, dataset) without any shared
    split has no row."""
    parts = []
    for metric in metrics:
        pairs = paired_splits(selected, metric, baseline)
        pairs = pairs[pairs["paired"]]
        if pairs.empty:
            continue
        g = pairs.groupby([*_GROUP, "method"], sort=False)
        means = g[["value", "baseline"]].mean()
        means["n_splits"] = g.size()
        means["n_rows"] = g["n_rows"].max()
        means = means.reset_index()
        means["metric"] = metric
        means["rel_diff"] = relative_difference(means["value"], means["baseline"])
        parts.append(means[np.isfinite(means["rel_diff"])])
    if not parts:
        return pd.DataFrame(columns=_REL_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    out["large"] = out["n_rows"] >= large_rows
    order = {name: i for i, name in enumerate(method_names())}
    out["_o"] = out["method"].map(order)
    out = out.sort_values(["model", "regime", "metric", "_o", "dataset"], kind="stable")
    return out[_REL_COLUMNS].reset_index(drop=True)


def dropped_splits(selected: pd.DataFrame, metrics: Sequence[str] = TEST_METRIC_IDS,
                   baseline: str = BASELINE) -> dict[str, object]:
    """Splits left out of the comparisons because the method or the baseline has no finite
    value there: ``{"total": n, "by": [{model, regime, metric, method, n}, ...]}`` (non-zero
    counts only), for ``meta.json``."""
    by = []
    for metric in metrics:
        pairs = paired_splits(selected, metric, baseline)
        if pairs.empty:
            continue
        lost = pairs[~pairs["paired"].astype(bool)]
        for (model, regime, method), g in lost.groupby(["model", "regime", "method"], sort=True):
            by.append({"model": str(model), "regime": str(regime), "metric": metric,
                       "method": str(method), "n": int(len(g))})
    return {"total": int(sum(r["n"] for r in by)), "by": by}


def box_stats(values: np.ndarray) -> dict[str, float]:
    """The numbers a box of the figures shows: whiskers at the 10%/90% quantiles, box at the
    quartiles (linear interpolation, as numpy and matplotlib compute them)."""
    v = np.asarray(values, dtype=float)
    if len(v) == 0:
        return {k: np.nan for k in ("median", "mean", "q10", "q25", "q75", "q90")}
    q10, q25, q50, q75, q90 = np.quantile(v, [0.1, 0.25, 0.5, 0.75, 0.9])
    return {"median": q50, "mean": float(v.mean()), "q10": q10, "q25": q25, "q75": q75,
            "q90": q90}


def _wilcoxon_p(rel: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the relative differences against 0 (zeros
    dropped, scipy's default). On relative rather than raw differences, so that datasets with
    large losses do not dominate the ranks. NaN when no difference is non-zero."""
    from scipy.stats import wilcoxon  # lazy: scipy.stats is slow to import for the rule files

    nz = rel[rel != 0]
    if len(nz) == 0:
        return np.nan
    return float(wilcoxon(nz).pvalue)


def summarise(rel: pd.DataFrame) -> pd.DataFrame:
    """Per (subset, model, regime, metric, method): n datasets, median, mean, quantiles,
    wins/ties/losses against the baseline (win = lower test metric) and the Wilcoxon p-value."""
    rows = []
    for subset in SUBSETS:
        sub = rel if subset == "all" else rel[rel["large"].astype(bool)]
        for key, g in sub.groupby(["model", "regime", "metric", "method"], sort=False):
            r = g["rel_diff"].to_numpy(dtype=float)
            model, regime, metric, method = key
            rows.append({
                "subset": subset, "model": model, "regime": regime, "metric": metric,
                "method": method, "n": len(r), **box_stats(r),
                "wins": int((r < 0).sum()), "ties": int((r == 0).sum()),
                "losses": int((r > 0).sum()),
                "p_wilcoxon": np.nan if method == BASELINE else _wilcoxon_p(r),
            })
    cols = ["subset", "model", "regime", "metric", "method", "n", "median", "mean", "q10", "q25",
            "q75", "q90", "wins", "ties", "losses", "p_wilcoxon"]
    return pd.DataFrame(rows, columns=cols)


def mean_best_epochs(selected: pd.DataFrame, regime: str = "default") -> pd.DataFrame:
    """Per (model, dataset, stopping): the chosen epoch averaged over splits (paper Fig. G.5)."""
    sub = selected[selected["regime"] == regime]
    g = sub.groupby(["model", "dataset", "stopping"], sort=True)
    out = g["epoch"].mean().rename("epoch").to_frame()
    out["n_splits"] = g.size()
    out["n_rows"] = g["n_rows"].max()
    return out.reset_index()


def summarise_best_epochs(table: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (model, stopping), g in table.groupby(["model", "stopping"], sort=True):
        rows.append({"model": model, "stopping": stopping, "n": len(g),
                     **box_stats(g["epoch"].to_numpy(dtype=float))})
    return pd.DataFrame(rows, columns=["model", "stopping", "n", "median", "mean", "q10", "q25",
                                       "q75", "q90"])


def curve_model_preference() -> tuple[str, ...]:
    """Models in the order preferred for the Fig. 1 analogue: the registered neural networks
    first (a network shows the U shape), then the other registered models."""
    from tabbench.models.registry import get_models

    models = get_models()
    return (tuple(n for n, m in models.items() if m.network)
            + tuple(n for n, m in models.items() if not m.network))


def choose_curve_run(selected: pd.DataFrame, runs_dir: str | Path | None) -> Path | None:
    """The run shown in the Fig. 1 analogue: split 0 of the largest dataset for the first model
    of :func:`curve_model_preference` present (larger validation sets give smoother curves);
    ``None`` if no such runs file exists (e.g. a results folder holding only ``selected/``)."""
    if runs_dir is None or selected.empty:
        return None
    sizes = selected.groupby(["model", "dataset"])["n_rows"].max().reset_index()
    rank = {m: i for i, m in enumerate(curve_model_preference())}
    sizes["_r"] = sizes["model"].map(rank).fillna(len(rank))
    sizes = sizes.sort_values(["_r", "n_rows", "dataset"], ascending=[True, False, True])
    for model, dataset in zip(sizes["model"], sizes["dataset"], strict=False):
        path = Path(runs_file(runs_dir, model, dataset, 0))
        if path.exists():
            return path
    return None


CURVE_COLUMNS = ["model", "dataset", "split", "config", "epoch", "val_logloss", "val_ts_ref",
                 "calibration_gap"]


def extract_curve(runs_file: str | Path | None, config: int = 0) -> pd.DataFrame:
    """Val logloss, TS-refinement and their gap (the calibration error the paper's Fig. 1
    shows) over epochs for one config of one run. Empty frame when ``runs_file`` is None."""
    if runs_file is None:
        return pd.DataFrame({c: [] for c in CURVE_COLUMNS})
    cols = ["model", "dataset", "split", "config", "epoch", val_column("logloss"),
            val_column("ts_ref")]
    df = pd.read_parquet(runs_file, columns=cols, filters=[("config", "==", config)])
    df = df.sort_values("epoch", ignore_index=True)
    df["calibration_gap"] = df[val_column("logloss")] - df[val_column("ts_ref")]
    return df[CURVE_COLUMNS]


def markdown_summary(summary: pd.DataFrame, large_rows: int = LARGE_ROWS) -> str:
    """Markdown tables of the summary: one per (metric, subset), rows = (model, regime, method)."""
    if summary.empty:
        return "# Summary\n\nNo selected results to summarise.\n"
    lines = ["# Relative test-metric differences to Logloss+TS (%)", "",
             "Per dataset, mean over splits, then 100·(m/m_base − 1) clipped to [−100, 100]. "
             "Win = lower test metric than the baseline. p = two-sided Wilcoxon signed-rank test "
             "of the relative differences against 0.", ""]
    present = set(summary["metric"])
    for metric in [m for m in TEST_METRIC_IDS if m in present]:
        for subset in SUBSETS:
            sub = summary[(summary["metric"] == metric) & (summary["subset"] == subset)]
            if sub.empty:
                continue
            label = "all datasets" if subset == "all" else f"datasets with ≥ {large_rows:,} rows"
            lines += [f"## test {metric} — {label}", "",
                      "| model | regime | method | n | median | mean | q10 | q90 | W/T/L | p |",
                      "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
            for r in sub.itertuples():
                p = "–" if np.isnan(r.p_wilcoxon) else f"{r.p_wilcoxon:.2g}"
                lines.append(
                    f"| {r.model} | {r.regime} | {r.method} | {r.n} | {r.median:+.2f} | "
                    f"{r.mean:+.2f} | {r.q10:+.2f} | {r.q90:+.2f} | "
                    f"{r.wins}/{r.ties}/{r.losses} | {p} |")
            lines.append("")
    return "\n".join(lines)


def runs_provenance(selected: pd.DataFrame, runs_dir: str | Path | None) -> dict[str, object]:
    """``versions`` (code and package versions, device, threads; a list where they differ),
    ``mixed_versions`` (the keys that differ) and counts, gathered from the provenance of every
    runs file behind ``selected`` (:mod:`tabbench.provenance`). Empty without ``runs_dir``
    (a folder of selected files only)."""
    if runs_dir is None or selected.empty:
        return {"versions": {}, "mixed_versions": [], "n_runs_files": 0,
                "n_runs_files_without_provenance": 0}
    pairs = selected[["model", "dataset", "split"]].drop_duplicates()
    provs = []
    for model, dataset, split in pairs.itertuples(index=False):
        path = Path(runs_file(runs_dir, str(model), str(dataset), int(split)))
        provs.append(read_runs_provenance(path) if path.exists() else None)
    g = gather(provs)
    return {"versions": g["versions"], "mixed_versions": g["mixed"],
            "n_runs_files": g["n_files"], "n_runs_files_without_provenance":
            g["n_without_provenance"]}


def aggregate_frames(selected: pd.DataFrame, runs_dir: str | Path | None = None,
                     large_rows: int = LARGE_ROWS) -> dict[str, object]:
    """All summary tables (in memory) from the concatenated selected rows."""
    from tabbench.claims import (  # claims builds on this module
        check_claims,
        claims_html,
        claims_markdown,
    )

    means = dataset_means(selected)
    rel = relative_differences(selected, large_rows=large_rows)
    summary = summarise(rel)
    epochs = mean_best_epochs(selected)
    curve_run = choose_curve_run(selected, runs_dir)
    claims = check_claims(selected, large_rows)
    meta = {
        "large_rows": int(large_rows),
        "models": sorted(selected["model"].unique().tolist()),
        "n_datasets": int(selected["dataset"].nunique()),
        "n_large_datasets": int(selected.loc[selected["n_rows"] >= large_rows,
                                             "dataset"].nunique()),
        "curve_run": None if curve_run is None else str(curve_run),
        "baseline": BASELINE,
        "dropped_splits": dropped_splits(selected),
        **runs_provenance(selected, runs_dir),
    }
    return {
        "dataset_means": means,
        "relative": rel,
        "summary": summary,
        "best_epochs": epochs,
        "best_epochs_summary": summarise_best_epochs(epochs),
        "curve": extract_curve(curve_run),
        "markdown": markdown_summary(summary, large_rows),
        "claims": claims,
        "claims_markdown": claims_markdown(claims, large_rows),
        "claims_html": claims_html(claims, large_rows),
        "meta": meta,
    }


def write_summary(frames: dict[str, object], out_dir: str | Path) -> dict[str, Path]:
    """Write the tables of :func:`aggregate_frames` into ``out_dir`` (names
    :data:`SUMMARY_FILES`), atomically."""
    out_dir = Path(out_dir)
    paths = {}
    for key, name in SUMMARY_FILES.items():
        path = out_dir / name
        obj = frames[key]
        if key in TEXT_SUMMARY_KEYS:
            write_text_atomic(str(obj), path)
        elif key == "meta":
            write_json_atomic(obj, path)
        else:
            write_parquet_atomic(obj, path)  # type: ignore[arg-type]
        paths[key] = path
    return paths


def read_summary(summary_dir: str | Path) -> dict[str, object]:
    """Read back what :func:`write_summary` wrote (the plots' only input)."""
    d = Path(summary_dir)
    out: dict[str, object] = {}
    for key, name in SUMMARY_FILES.items():
        path = d / name
        if key in TEXT_SUMMARY_KEYS:
            out[key] = path.read_text()
        elif key == "meta":
            out[key] = json.loads(path.read_text())
        else:
            out[key] = pd.read_parquet(path)
    return out


def aggregate(selected_paths: Iterable[str | Path], out_dir: str | Path,
              runs_dir: str | Path | None = None, large_rows: int = LARGE_ROWS
              ) -> dict[str, object]:
    """Load selected files, build every summary table, write them to ``out_dir``."""
    frames = aggregate_frames(load_selected(selected_paths), runs_dir, large_rows)
    write_summary(frames, out_dir)
    return frames
