"""``summary.md``: the summary's statistics and the mean ranks as Markdown tables."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from tabbench.core.failures import failures_markdown
from tabbench.core.markdown import MISSING, cell, markdown_table
from tabbench.models.runs_schema import TEST_METRIC_IDS
from tabbench.summary.methods import BASELINE, ts_method_names
from tabbench.summary.tables import SUBSETS


def _probabilities(r) -> str:
    if not np.isfinite(r.p_better):
        return "–"
    return f"{r.p_better:.2f} / {r.p_equivalent:.2f} / {r.p_worse:.2f}"


def _interval(r) -> str:
    return MISSING if not np.isfinite(r.median_lo) else f"[{r.median_lo:+.2f}, {r.median_hi:+.2f}]"


def markdown_summary(summary: pd.DataFrame, large_rows: int,
                     ranks: pd.DataFrame | None = None, failures: dict | None = None,
                     baseline: str = BASELINE) -> str:
    """Markdown tables of the summary: one per (metric, subset), rows = (model, regime, method),
    relative to ``baseline``; then the mean ranks of the stopping methods and the failed
    configs."""
    if summary.empty:
        return "# Summary\n\nNo selected results to summarise.\n"
    rope = float(summary["rope"].iloc[0]) if "rope" in summary and len(summary) else np.nan
    lines = [f"# Relative test-metric differences to {baseline} (%)", "",
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
            rows = [[r.model, r.regime, r.method, str(r.n), f"{r.median:+.2f}", _interval(r),
                     f"{r.mean:+.2f}", f"{r.q10:+.2f}", f"{r.q90:+.2f}",
                     f"{r.wins}/{r.ties}/{r.losses}", cell(r.p_wilcoxon, ".2g"),
                     _probabilities(r)] for r in sub.itertuples()]
            lines += [f"## test {metric} — {label}", "",
                      markdown_table(["model", "regime", "method", "n", "median", "CI", "mean",
                                      "q10", "q90", "W/T/L", "p", "P(<) / P(≈) / P(>)"],
                                     rows, align="lll" + "r" * 9), ""]
    if ranks is not None and not ranks.empty:
        lines += rank_markdown(ranks)
    lines += failures_markdown(failures or {})
    return "\n".join(lines)


def rank_table_lines(sub: pd.DataFrame, label: Callable[[str], str] = str,
                     order: Callable[[Iterable[str]], list[str]] = sorted) -> list[str]:
    """One subset's mean-ranks table: a row per (model, regime) (models in ``order``, named by
    ``label``), the stopping methods (+TS) as columns in figure order, the best rank in bold,
    then the datasets, Nemenyi's critical difference and Friedman's p. What ``summary.md``
    shows per subset and docs/reproduction.md embeds (:mod:`tabbench.report.page_tables`)."""
    methods_present = [m for m in ts_method_names() if m in set(sub["method"])]
    rows = []
    for model in order(sub["model"].unique()):
        for regime, g in sub[sub["model"] == model].groupby("regime", sort=True):
            by = g.set_index("method")["mean_rank"]
            best = by.min()
            cells = [("**" if by.get(m) == best else "") + f"{by.get(m, np.nan):.2f}"
                     + ("**" if by.get(m) == best else "") for m in methods_present]
            r = g.iloc[0]
            rows.append([label(model), regime, str(r["n"]), *cells, f"{r['cd']:.2f}",
                         f"{r['p_friedman']:.2g}"])
    return markdown_table(["model", "regime", "n", *methods_present, "CD", "Friedman p"], rows,
                          align="llr" + "r" * (len(methods_present) + 2)).split("\n")


def rank_markdown(ranks: pd.DataFrame) -> list[str]:
    """The mean-ranks tables (one per subset, :func:`rank_table_lines`) with their titles."""
    lines = []
    for subset in SUBSETS:
        sub = ranks[ranks["subset"] == subset]
        if sub.empty:
            continue
        metric = sub["metric"].iloc[0]
        lines += [f"## Mean ranks of the stopping methods — test {metric} after TS, "
                  f"{'all datasets' if subset == 'all' else 'large datasets'}", "",
                  "Rank 1 = lowest test metric on a dataset (mean over splits), averaged over "
                  "datasets. Two methods whose mean ranks differ by less than CD (Nemenyi, "
                  "α = 0.05) are not significantly different.", ""]
        lines += rank_table_lines(sub) + [""]
    return lines
