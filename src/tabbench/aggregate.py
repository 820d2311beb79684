"""From selected rows to the summary tables of the paper's comparisons (docs/design.md §7).

A *method* (:mod:`tabbench.methods`) is a (stopping metric, ±TS) pair; every method is
compared with the baseline "logloss stopping + TS" on every test metric by
:mod:`tabbench.comparisons` (the same pairing of splits, relative differences and statistics
as the claims and the diagnostics):

    per (model, regime, dataset):  m̄_A = mean over the splits shared with the baseline
    relative difference:            r_A = 100 · (m̄_A / m̄_base − 1)  %, clipped to [−100, 100]

A split where the method or the baseline has no selection (a config that failed everywhere, a
missing runs file) or a non-finite test value is dropped from that comparison and counted in
``meta.json`` (``dropped_splits``). The summary gives, per (subset, model, regime, metric,
method), the box statistics of the r over datasets, wins/ties/losses, the Wilcoxon p, the
Bayesian signed-rank probabilities within a ROPE and a bootstrap interval of the median; the
ranks table the mean ranks of the stopping methods (Friedman, Nemenyi's critical difference).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from tabbench import comparisons as cmp
from tabbench.io import write_json_atomic, write_parquet_atomic, write_text_atomic
from tabbench.layout import runs_file
from tabbench.methods import BASELINE, method_names, ts_method_names
from tabbench.provenance import gather, read_runs_provenance
from tabbench.runs_schema import TEST_METRIC_IDS, val_column
from tabbench.select import TEST_COLUMNS

#: rows from which a dataset counts as "large" (paper Fig. 5: ≥ 10K samples)
LARGE_ROWS = 10_000

SUBSETS: tuple[str, ...] = ("all", "large")
#: the test metric whose ranks the ranks table and the CD diagrams show (the paper's main one)
RANK_METRIC = "logloss"

#: the files :func:`aggregate` writes into its output folder
SUMMARY_FILES: dict[str, str] = {
    "dataset_means": "dataset_means.parquet",
    "relative": "relative.parquet",
    "summary": "summary.parquet",
    "ranks": "ranks.parquet",
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


_REL_COLUMNS = ["model", "regime", "metric", "method", "dataset", "value", "baseline",
                "rel_diff", "n_rows", "n_splits", "large"]


def paired_with_baseline(selected: pd.DataFrame, metrics: Sequence[str] = TEST_METRIC_IDS,
                         baseline: str = BASELINE) -> pd.DataFrame:
    """Every method beside the baseline, split by split, for every metric
    (:func:`tabbench.comparisons.paired_splits` with a ``metric`` column)."""
    parts = []
    for metric in metrics:
        pairs = cmp.paired_splits(cmp.method_values(selected, metric), baseline)
        if not pairs.empty:
            parts.append(pairs.assign(metric=metric))
    if not parts:
        return pd.DataFrame(columns=[*cmp.PAIR_COLUMNS, "metric"])
    return pd.concat(parts, ignore_index=True)


def relative_differences(selected: pd.DataFrame, metrics: Sequence[str] = TEST_METRIC_IDS,
                         baseline: str = BASELINE, large_rows: int = LARGE_ROWS,
                         pairs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every method's relative difference to ``baseline``, per (model, regime, dataset, metric),
    from the selected rows (one per split): both means over the splits they share; ``n_splits``
    counts those. A (method, dataset) without any shared split has no row. ``pairs``: the
    :func:`paired_with_baseline` table, if already built."""
    if pairs is None:
        pairs = paired_with_baseline(selected, metrics, baseline)
    parts = [cmp.dataset_differences(g).assign(metric=metric)
             for metric, g in pairs.groupby("metric", sort=False)]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=_REL_COLUMNS)
    out = pd.concat(parts, ignore_index=True).rename(columns={"other": "baseline"})
    out["large"] = out["n_rows"] >= large_rows
    order = {name: i for i, name in enumerate(method_names())}
    metric_order = {m: i for i, m in enumerate(TEST_METRIC_IDS)}
    out["_o"] = out["method"].map(order)
    out["_m"] = out["metric"].map(metric_order)
    out = out.sort_values(["model", "regime", "_m", "_o", "dataset"], kind="stable")
    return out[_REL_COLUMNS].reset_index(drop=True)


def dropped_splits(selected: pd.DataFrame, metrics: Sequence[str] = TEST_METRIC_IDS,
                   baseline: str = BASELINE, pairs: pd.DataFrame | None = None
                   ) -> dict[str, object]:
    """Splits left out of the comparisons because the method or the baseline has no finite
    value there: ``{"total": n, "by": [{model, regime, metric, method, n}, ...]}`` (non-zero
    counts only), for ``meta.json``."""
    if pairs is None:
        pairs = paired_with_baseline(selected, metrics, baseline)
    by = []
    lost = pairs[~pairs["paired"].astype(bool)]
    order = {m: i for i, m in enumerate(metrics)}
    for (metric, model, regime, method), g in sorted(
            lost.groupby(["metric", "model", "regime", "method"], sort=False),
            key=lambda kv: (order.get(kv[0][0], len(order)), *map(str, kv[0][1:]))):
        by.append({"model": str(model), "regime": str(regime), "metric": metric,
                   "method": str(method), "n": int(len(g))})
    return {"total": int(sum(r["n"] for r in by)), "by": by}


SUMMARY_COLUMNS = ["subset", "model", "regime", "metric", "method", "n", "median", "mean",
                   "q10", "q25", "q75", "q90", "wins", "ties", "losses", "p_wilcoxon",
                   "p_better", "p_equivalent", "p_worse", "rope", "median_lo", "median_hi"]


def summarise(rel: pd.DataFrame, pairs: pd.DataFrame | None = None,
              rope: float = cmp.ROPE_PERCENT) -> pd.DataFrame:
    """Per (subset, model, regime, metric, method): n datasets, median, mean, quantiles,
    wins/ties/losses against the baseline (win = lower test metric), the Wilcoxon p, and — for
    at least :data:`tabbench.comparisons.N_MIN` datasets — the Bayesian signed-rank
    probabilities within ±``rope`` % and, with ``pairs`` (:func:`paired_with_baseline`), the
    bootstrap interval of the median."""
    rows = []
    for subset in SUBSETS:
        sub = rel if subset == "all" else rel[rel["large"].astype(bool)]
        for key, g in sub.groupby(["model", "regime", "metric", "method"], sort=False):
            r = g["rel_diff"].to_numpy(dtype=float)
            model, regime, metric, method = key
            stats = cmp.describe(r)
            compared = method != BASELINE
            post = (cmp.bayesian_signed_rank(r, rope) if compared and len(r) >= cmp.N_MIN
                    else cmp.Posterior.unknown())
            lo = hi = np.nan
            if compared and pairs is not None and len(r) >= cmp.N_MIN:
                mine = pairs[(pairs["model"] == model) & (pairs["regime"] == regime)
                             & (pairs["metric"] == metric) & (pairs["method"] == method)
                             & pairs["dataset"].isin(g["dataset"])]
                lo, hi = cmp.bootstrap_median_interval(mine)
            rows.append({
                "subset": subset, "model": model, "regime": regime, "metric": metric,
                "method": method, "n": len(r),
                **{k: stats[k] for k in ("median", "mean", "q10", "q25", "q75", "q90")},
                "wins": int((r < 0).sum()), "ties": int((r == 0).sum()),
                "losses": int((r > 0).sum()),
                "p_wilcoxon": cmp.wilcoxon_p(r) if compared else np.nan,
                "p_better": post.p_better, "p_equivalent": post.p_equivalent,
                "p_worse": post.p_worse, "rope": float(rope),
                "median_lo": lo, "median_hi": hi,
            })
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


RANK_COLUMNS = ["subset", "model", "regime", "metric", "method", "mean_rank", "n", "cd",
                "p_friedman", "alpha"]


def rank_table(selected: pd.DataFrame, large_rows: int = LARGE_ROWS,
               metric: str = RANK_METRIC) -> pd.DataFrame:
    """Mean ranks of the stopping methods (each +TS) over datasets, per (subset, model, regime),
    on ``metric`` averaged over splits (:func:`tabbench.comparisons.mean_ranks`: Friedman's test
    and Nemenyi's critical difference); a (model, regime) with fewer than 5 datasets that hold
    every method has no rows."""
    values = cmp.method_values(selected, metric)
    values = values[values["method"].isin(ts_method_names())]
    rows = []
    if values.empty:
        return pd.DataFrame(columns=RANK_COLUMNS)
    means = (values.groupby(["model", "regime", "dataset", "method"], sort=True)
             .agg(value=("value", "mean"), n_rows=("n_rows", "max")).reset_index())
    order = [m for m in ts_method_names() if m in set(means["method"])]
    for (model, regime), g in means.groupby(["model", "regime"], sort=True):
        table = g.pivot(index="dataset", columns="method", values="value")
        table = table[[m for m in order if m in table.columns]]
        sizes = g.groupby("dataset")["n_rows"].max().reindex(table.index)
        for subset in SUBSETS:
            t = table if subset == "all" else table[sizes >= large_rows]
            ranking = cmp.mean_ranks(t)
            if ranking is None:
                continue
            n = int(t.dropna(axis=0, how="any").shape[0])
            for method, rank in ranking.mean_ranks.items():
                rows.append({"subset": subset, "model": model, "regime": regime,
                             "metric": metric, "method": method, "mean_rank": float(rank),
                             "n": n, "cd": ranking.cd, "p_friedman": ranking.p_friedman,
                             "alpha": ranking.alpha})
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


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
        stats = cmp.describe(g["epoch"].to_numpy(dtype=float))
        rows.append({"model": model, "stopping": stopping, "n": len(g),
                     **{k: stats[k] for k in ("median", "mean", "q10", "q25", "q75", "q90")}})
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


def _probabilities(r) -> str:
    if not np.isfinite(r.p_better):
        return "–"
    return f"{r.p_better:.2f} / {r.p_equivalent:.2f} / {r.p_worse:.2f}"


def _interval(r) -> str:
    return "–" if not np.isfinite(r.median_lo) else f"[{r.median_lo:+.2f}, {r.median_hi:+.2f}]"


def markdown_summary(summary: pd.DataFrame, large_rows: int = LARGE_ROWS,
                     ranks: pd.DataFrame | None = None) -> str:
    """Markdown tables of the summary: one per (metric, subset), rows = (model, regime, method);
    then the mean ranks of the stopping methods."""
    if summary.empty:
        return "# Summary\n\nNo selected results to summarise.\n"
    rope = float(summary["rope"].iloc[0]) if "rope" in summary and len(summary) else np.nan
    lines = ["# Relative test-metric differences to Logloss+TS (%)", "",
             "Per dataset, mean over splits, then 100·(m/m_base − 1) clipped to [−100, 100]. "
             "Win = lower test metric than the baseline. p = two-sided Wilcoxon signed-rank test "
             "of the relative differences against 0. P(<) / P(≈) / P(>) = Bayesian signed-rank "
             f"test (baycomp): the method lower by more than {rope:g} %, within ±{rope:g} %, "
             "higher by more. CI = 95 % bootstrap interval of the median (datasets resampled, "
             "splits inside). Tests need 5 datasets.", ""]
    present = set(summary["metric"])
    for metric in [m for m in TEST_METRIC_IDS if m in present]:
        for subset in SUBSETS:
            sub = summary[(summary["metric"] == metric) & (summary["subset"] == subset)]
            if sub.empty:
                continue
            label = "all datasets" if subset == "all" else f"datasets with ≥ {large_rows:,} rows"
            lines += [f"## test {metric} — {label}", "",
                      "| model | regime | method | n | median | CI | mean | q10 | q90 | W/T/L | "
                      "p | P(<) / P(≈) / P(>) |",
                      "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for r in sub.itertuples():
                p = "–" if np.isnan(r.p_wilcoxon) else f"{r.p_wilcoxon:.2g}"
                lines.append(
                    f"| {r.model} | {r.regime} | {r.method} | {r.n} | {r.median:+.2f} | "
                    f"{_interval(r)} | {r.mean:+.2f} | {r.q10:+.2f} | {r.q90:+.2f} | "
                    f"{r.wins}/{r.ties}/{r.losses} | {p} | {_probabilities(r)} |")
            lines.append("")
    if ranks is not None and not ranks.empty:
        lines += rank_markdown(ranks)
    return "\n".join(lines)


def rank_markdown(ranks: pd.DataFrame) -> list[str]:
    """The mean-ranks tables (one per subset): one row per (model, regime), methods as
    columns, the best rank in bold; Friedman's p and Nemenyi's critical difference."""
    lines = []
    methods_present = [m for m in ts_method_names() if m in set(ranks["method"])]
    for subset in SUBSETS:
        sub = ranks[ranks["subset"] == subset]
        if sub.empty:
            continue
        metric = sub["metric"].iloc[0]
        lines += [f"## Mean ranks of the stopping methods — test {metric} after TS, "
                  f"{'all datasets' if subset == 'all' else 'large datasets'}", "",
                  "Rank 1 = lowest test metric on a dataset (mean over splits), averaged over "
                  "datasets. Two methods whose mean ranks differ by less than CD (Nemenyi, "
                  "α = 0.05) are not significantly different.", "",
                  "| model | regime | n | " + " | ".join(methods_present)
                  + " | CD | Friedman p |",
                  "|---|---|---:|" + "---:|" * len(methods_present) + "---:|---:|"]
        for (model, regime), g in sub.groupby(["model", "regime"], sort=True):
            by = g.set_index("method")["mean_rank"]
            best = by.min()
            cells = [("**" if by.get(m) == best else "") + f"{by.get(m, np.nan):.2f}"
                     + ("**" if by.get(m) == best else "") for m in methods_present]
            r = g.iloc[0]
            lines.append(f"| {model} | {regime} | {r['n']} | " + " | ".join(cells)
                         + f" | {r['cd']:.2f} | {r['p_friedman']:.2g} |")
        lines.append("")
    return lines


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
                     large_rows: int = LARGE_ROWS, rope: float = cmp.ROPE_PERCENT
                     ) -> dict[str, object]:
    """All summary tables (in memory) from the concatenated selected rows. ``rope``: the
    Bayesian test's region of practical equivalence in % (config ``rope_percent``)."""
    from tabbench.claims import check_claims, claims_html, claims_markdown

    means = dataset_means(selected)
    pairs = paired_with_baseline(selected)
    rel = relative_differences(selected, large_rows=large_rows, pairs=pairs)
    summary = summarise(rel, pairs, rope)
    ranks = rank_table(selected, large_rows)
    epochs = mean_best_epochs(selected)
    curve_run = choose_curve_run(selected, runs_dir)
    claims = check_claims(selected, large_rows, rope=rope)
    meta = {
        "large_rows": int(large_rows),
        "rope_percent": float(rope),
        "models": sorted(selected["model"].unique().tolist()),
        "n_datasets": int(selected["dataset"].nunique()),
        "n_large_datasets": int(selected.loc[selected["n_rows"] >= large_rows,
                                             "dataset"].nunique()),
        "curve_run": None if curve_run is None else str(curve_run),
        "baseline": BASELINE,
        "dropped_splits": dropped_splits(selected, pairs=pairs),
        **runs_provenance(selected, runs_dir),
    }
    return {
        "dataset_means": means,
        "relative": rel,
        "summary": summary,
        "ranks": ranks,
        "best_epochs": epochs,
        "best_epochs_summary": summarise_best_epochs(epochs),
        "curve": extract_curve(curve_run),
        "markdown": markdown_summary(summary, large_rows, ranks),
        "claims": claims,
        "claims_markdown": claims_markdown(claims, large_rows, rope),
        "claims_html": claims_html(claims, large_rows, rope),
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
              runs_dir: str | Path | None = None, large_rows: int = LARGE_ROWS,
              rope: float = cmp.ROPE_PERCENT) -> dict[str, object]:
    """Load selected files, build every summary table, write them to ``out_dir``."""
    frames = aggregate_frames(load_selected(selected_paths), runs_dir, large_rows, rope)
    write_summary(frames, out_dir)
    return frames
