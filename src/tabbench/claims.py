"""The paper's tabular claims, checked on a results folder: one row per (claim, model, regime).

Every claim of Berta et al. (2025) that the tabular figures support is written here once, as a
comparison of a *method* (stopping metric ± TS, :mod:`tabbench.aggregate`) with another on one
test metric, over a subset of datasets:

    per dataset d:  r_d = 100 · (m̄_A,d / m̄_B,d − 1) %, clipped to [−100, 100]
                    (m̄ = mean over the splits both have; the figures' relative difference)

and judged by one rule, :func:`verdict` (see :data:`VERDICT_RULE`). For B = "Logloss+TS" the
r_d are exactly the figures' relative differences. Fig. G.5's claims compare the chosen epochs
instead of a test metric, and Fig. G.1's compares the relative differences of large datasets
with those of small ones (a one-sided Mann–Whitney test instead of the Wilcoxon test).

The claim list is data (:data:`CLAIMS`); a claim whose methods are absent from the results
(e.g. no tuned regime for a network trained at its default only) yields no row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tabbench.aggregate import BASELINE, box_stats, relative_difference

#: a claim needs at least this many datasets to be judged at all
N_MIN = 5
#: significance level of the tests
ALPHA = 0.05
#: "comparable" / "no worse" tolerance on the median relative difference, in %
MARGIN = 1.0

VERDICT_RULE = (
    f"n ≥ {N_MIN} datasets or the verdict is *inconclusive*. "
    f"**better/worse** claims: *reproduced* if the median relative difference has the claimed "
    f"sign and the test's p < {ALPHA}; *not reproduced* if the median is 0 or has the opposite "
    f"sign; otherwise *inconclusive*. "
    f"**comparable** claims: *reproduced* if |median| ≤ {MARGIN:g}%; *not reproduced* if "
    f"|median| > {MARGIN:g}% and p < {ALPHA}; otherwise *inconclusive*. "
    f"**no worse** claims: *reproduced* if median ≤ {MARGIN:g}%; *not reproduced* if "
    f"median > {MARGIN:g}% and p < {ALPHA}; otherwise *inconclusive*."
)

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"

#: claim kinds: the sign the claim expects of the method's relative difference to the
#: comparison ("better" = lower, all metrics being lower-is-better), or a tolerance
KINDS = ("better", "worse", "comparable", "no_worse")


@dataclass(frozen=True)
class Claim:
    """One statement of the paper, checked as ``method`` vs ``versus`` on ``metric``.

    ``metric`` is a test metric id (``logloss``, ``error``, ``auroc`` (= 1 − AUROC), ...) or
    ``"epoch"`` (the chosen epoch, Fig. G.5). ``subset`` is ``large`` (datasets with ≥ the
    folder's "large" threshold), ``all``, or ``large_vs_small`` (Fig. G.1: the relative
    differences of large datasets against those of the others). ``models``/``regimes`` = None:
    every one present.
    """

    id: str
    figure: str
    statement: str
    method: str
    versus: str
    metric: str
    kind: str
    subset: str = "large"
    models: tuple[str, ...] | None = None
    regimes: tuple[str, ...] | None = None


CLAIMS: tuple[Claim, ...] = (
    Claim("ts_helps", "Fig. 5", "Temperature scaling helps: Logloss without TS is worse than "
          "Logloss+TS", "Logloss", BASELINE, "logloss", "worse"),
    Claim("ts_ref_beats_logloss", "Fig. 5", "TS-Ref.+TS beats Logloss+TS in test logloss "
          "(XGBoost, MLP and RealMLP)", "TS-Ref.+TS", BASELINE, "logloss", "better"),
    Claim("accuracy_worse", "Fig. 5", "Accuracy+TS is worse than Logloss+TS in test logloss",
          "Accuracy+TS", BASELINE, "logloss", "worse"),
    Claim("gain_larger_on_large", "Fig. G.1", "The gain of TS-Ref.+TS over Logloss+TS is "
          "clearer on large datasets than on small ones", "TS-Ref.+TS", BASELINE, "logloss",
          "better", subset="large_vs_small"),
    Claim("cv5_as_good", "Fig. G.2", "TS-Ref.-5CV+TS is as good as TS-Ref.+TS",
          "TS-Ref.-5CV+TS", "TS-Ref.+TS", "logloss", "comparable"),
    Claim("brier_comparable", "Fig. G.2", "Brier+TS is comparable to Logloss+TS", "Brier+TS",
          BASELINE, "logloss", "comparable"),
    Claim("brier_ref_comparable", "Fig. G.2", "Brier-Ref.+TS is comparable to Logloss+TS",
          "Brier-Ref.+TS", BASELINE, "logloss", "comparable"),
    Claim("auroc_worse_realmlp", "Fig. G.2", "AUROC+TS is worse than Logloss+TS for RealMLP",
          "AUROC+TS", BASELINE, "logloss", "worse", models=("realmlp",)),
    Claim("ts_ref_accuracy_no_worse", "Fig. G.3", "Tuning on TS-Ref. gives a classification "
          "error no worse than tuning on logloss", "TS-Ref.+TS", BASELINE, "error",
          "no_worse"),
    Claim("ts_ref_auroc_no_worse", "Fig. G.4", "Tuning on TS-Ref. gives an AUROC no worse "
          "than tuning on logloss", "TS-Ref.+TS", BASELINE, "auroc", "no_worse"),
    Claim("accuracy_poor_auroc", "Fig. G.4", "Tuning on accuracy often gives poor AUROC "
          "(1 − AUROC higher than with Logloss+TS)", "Accuracy+TS", BASELINE, "auroc",
          "worse"),
    Claim("logloss_stops_before_ts_ref", "Fig. G.5", "Logloss stops first on average: "
          "TS-Ref. stops later than logloss (default configs)", "TS-Ref.+TS", BASELINE,
          "epoch", "worse", subset="all", regimes=("default",)),
    Claim("brier_stops_later", "Fig. G.5", "Brier stops later than logloss (default "
          "configs)", "Brier+TS", BASELINE, "epoch", "worse", subset="all",
          regimes=("default",)),
)

CLAIM_COLUMNS = ["claim", "figure", "statement", "model", "regime", "metric", "method", "versus",
                 "kind", "subset", "n", "median", "median_other", "n_other", "q10", "q90",
                 "wins", "ties", "losses", "test", "p_wilcoxon", "verdict"]


def verdict(kind: str, n: int, median: float, p: float) -> str:
    """The one rule that turns the numbers of a claim into a verdict (:data:`VERDICT_RULE`).

    ``median`` is the median relative difference of the method to its comparison in %, lower =
    the method has the lower (better) metric; ``p`` the test's p-value (NaN = no test)."""
    if kind not in KINDS:
        raise ValueError(f"unknown claim kind {kind!r}; one of {KINDS}")
    if n < N_MIN or not np.isfinite(median):
        return INCONCLUSIVE
    significant = bool(np.isfinite(p) and p < ALPHA)
    if kind in ("better", "worse"):
        sign = -1.0 if kind == "better" else 1.0
        if np.sign(median) != sign:
            return NOT_REPRODUCED
        return REPRODUCED if significant else INCONCLUSIVE
    if kind == "comparable":
        if abs(median) <= MARGIN:
            return REPRODUCED
        return NOT_REPRODUCED if significant else INCONCLUSIVE
    # no_worse
    if median <= MARGIN:
        return REPRODUCED
    return NOT_REPRODUCED if significant else INCONCLUSIVE


def _wilcoxon(rel: np.ndarray) -> float:
    from scipy.stats import wilcoxon

    nz = rel[rel != 0]
    return float(wilcoxon(nz).pvalue) if len(nz) else float("nan")


def _mannwhitney_less(a: np.ndarray, b: np.ndarray) -> float:
    """One-sided p that the values of ``a`` tend to be lower than those of ``b``."""
    from scipy.stats import mannwhitneyu

    if len(a) == 0 or len(b) == 0:
        return float("nan")
    return float(mannwhitneyu(a, b, alternative="less").pvalue)


def method_table(selected: pd.DataFrame, metric: str) -> pd.DataFrame:
    """(model, regime, dataset, split, method, value, n_rows) of one test metric — or, for
    ``metric="epoch"``, of the chosen epoch — for every method whose stopping metric the
    selected rows (one per split, ``results/selected``) hold."""
    from tabbench.aggregate import methods
    from tabbench.runs_schema import test_column

    parts = []
    for m in methods():
        sub = selected[selected["stopping"] == m.stopping]
        if sub.empty:
            continue
        col = "epoch" if metric == "epoch" else test_column(metric, m.ts)
        if col not in sub:
            continue
        parts.append(pd.DataFrame({
            "model": sub["model"].to_numpy(), "regime": sub["regime"].to_numpy(),
            "dataset": sub["dataset"].to_numpy(), "split": sub["split"].to_numpy(),
            "method": m.name, "value": sub[col].to_numpy(dtype=float),
            "n_rows": sub["n_rows"].to_numpy(),
        }))
    cols = ["model", "regime", "dataset", "split", "method", "value", "n_rows"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


def paired_differences(table: pd.DataFrame, method: str, versus: str) -> pd.DataFrame:
    """Per (model, regime, dataset): the relative difference (%) of ``method`` to ``versus``,
    both averaged over the splits where both are finite (as :mod:`tabbench.aggregate` pairs a
    method with its baseline); datasets without such a split are left out."""
    keys = ["model", "regime", "dataset", "split"]
    a = table[table["method"] == method]
    b = table[table["method"] == versus][[*keys, "value"]].rename(columns={"value": "other"})
    m = a.merge(b, on=keys)
    m = m[np.isfinite(m["value"].astype(float)) & np.isfinite(m["other"].astype(float))]
    g = m.groupby(["model", "regime", "dataset"], sort=True)
    out = g[["value", "other"]].mean()
    out["n_rows"] = g["n_rows"].max()
    out = out.reset_index()
    out["rel_diff"] = relative_difference(out["value"], out["other"])
    return out[np.isfinite(out["rel_diff"])].reset_index(drop=True)


def check_claims(selected: pd.DataFrame, large_rows: int,
                 claims: Sequence[Claim] = CLAIMS) -> pd.DataFrame:
    """Every claim of ``claims`` checked on the selected rows (one per model, dataset, split,
    regime and stopping metric): one row per claim, model and regime present, with its numbers
    and verdict; columns :data:`CLAIM_COLUMNS`."""
    rows = []
    tables: dict[str, pd.DataFrame] = {}
    for claim in claims:
        if claim.metric not in tables:
            tables[claim.metric] = method_table(selected, claim.metric)
        diffs = paired_differences(tables[claim.metric], claim.method, claim.versus)
        for (model, regime), g in diffs.groupby(["model", "regime"], sort=True):
            if claim.models is not None and model not in claim.models:
                continue
            if claim.regimes is not None and regime not in claim.regimes:
                continue
            rows.append(_claim_row(claim, model, regime, g, large_rows))
    out = pd.DataFrame(rows, columns=CLAIM_COLUMNS)
    return out.astype({"n": int, "n_other": int, "wins": int, "ties": int, "losses": int})


def _claim_row(claim: Claim, model: str, regime: str, g: pd.DataFrame,
               large_rows: int) -> dict:
    large = g["n_rows"].to_numpy() >= large_rows
    rel = g["rel_diff"].to_numpy(dtype=float)
    other = np.array([], dtype=float)
    if claim.subset == "large":
        rel = rel[large]
    elif claim.subset == "large_vs_small":
        rel, other = rel[large], rel[~large]
    stats = box_stats(rel)
    if claim.subset == "large_vs_small":
        # the claim: large datasets' differences are lower (a clearer gain) than small ones'
        test, p = "mann-whitney (large < small)", _mannwhitney_less(rel, other)
        med_other = float(np.median(other)) if len(other) else float("nan")
        gap = stats["median"] - med_other  # < 0: clearer gain on large datasets
        n = min(len(rel), len(other))
        v = verdict(claim.kind, n, gap, p)
        if v == REPRODUCED and not stats["median"] < 0:
            v = INCONCLUSIVE  # "clearer" presupposes a gain on large datasets
    else:
        test, p, med_other = "wilcoxon", _wilcoxon(rel), float("nan")
        v = verdict(claim.kind, len(rel), stats["median"], p)
    return {
        "claim": claim.id, "figure": claim.figure, "statement": claim.statement,
        "model": model, "regime": regime, "metric": claim.metric, "method": claim.method,
        "versus": claim.versus, "kind": claim.kind, "subset": claim.subset, "n": len(rel),
        "median": stats["median"], "median_other": med_other, "n_other": len(other),
        "q10": stats["q10"], "q90": stats["q90"], "wins": int((rel < 0).sum()),
        "ties": int((rel == 0).sum()), "losses": int((rel > 0).sum()), "test": test,
        "p_wilcoxon": p, "verdict": v,
    }


#: the claims table's columns (Markdown and HTML alike)
TABLE_HEADER = ("figure", "claim (paper)", "model", "regime", "metric", "method vs", "subset",
                "n", "median %", "q10–q90 %", "W/T/L", "p", "verdict")


def _preamble(large_rows: int) -> list[str]:
    return [f"Relative differences in % of the method to the comparison, per dataset (mean over "
            f"splits first), clipped to [−100, 100]; lower = the method's test metric (or "
            f"chosen epoch, Fig. G.5) is lower. \"large\" = datasets with ≥ {large_rows:,} "
            f"rows. W/T/L = datasets where the method is lower / equal / higher.",
            f"Verdict rule (`tabbench.claims.verdict`): {VERDICT_RULE}"]


def _verdict_counts(claims: pd.DataFrame) -> str:
    counts = claims["verdict"].value_counts()
    return ", ".join(f"{counts.get(v, 0)} {v}" for v in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE))


def _cells(r) -> list[str]:
    """One claims row as the table's cells (text; the verdict last)."""
    subset = r.subset
    median = f"{r.median:+.2f}"
    if r.subset == "large_vs_small":
        subset = f"large vs small (n = {r.n}/{r.n_other})"
        median = f"{r.median:+.2f} vs {r.median_other:+.2f}"
    p = "–" if not np.isfinite(r.p_wilcoxon) else f"{r.p_wilcoxon:.2g}"
    return [r.figure, r.statement, r.model, r.regime, r.metric, f"{r.method} vs {r.versus}",
            subset, str(r.n), median, f"{r.q10:+.1f} – {r.q90:+.1f}",
            f"{r.wins}/{r.ties}/{r.losses}", p, r.verdict]


def claims_markdown(claims: pd.DataFrame, large_rows: int) -> str:
    """``claims.md``: the verdict rule, a count of verdicts, and one table row per claim,
    model and regime with the paper's statement beside our numbers."""
    intro, rule = _preamble(large_rows)
    lines = ["# The paper's tabular claims, checked on these results", "", intro, "", rule, ""]
    if claims.empty:
        return "\n".join(lines + ["No claim could be checked: no selected results.", ""])
    lines += [_verdict_counts(claims), "",
              "| " + " | ".join(TABLE_HEADER) + " |",
              "|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in claims.itertuples():
        cells = _cells(r)
        cells[-1] = f"**{cells[-1]}**"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])


#: background of a verdict cell in the HTML table
_VERDICT_COLOURS = {REPRODUCED: "#d9f0d3", NOT_REPRODUCED: "#f4cccc", INCONCLUSIVE: "#eeeeee"}


def claims_html(claims: pd.DataFrame, large_rows: int) -> str:
    """``claims.html``: the same table as :func:`claims_markdown`, as a self-contained HTML page
    (the HTML report embeds it; verdicts coloured)."""
    from html import escape

    intro, rule = _preamble(large_rows)
    rule = rule.replace("`", "")
    head = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
            "<title>The paper's tabular claims</title><style>"
            "body{font-family:sans-serif;font-size:13px;margin:1em}"
            "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:3px 6px;"
            "vertical-align:top}th{background:#f4f4f4}td.num{text-align:right;"
            "white-space:nowrap}</style></head><body>")
    parts = [head, "<h2>The paper's tabular claims, checked on these results</h2>",
             f"<p>{escape(intro)}</p>", f"<p>{escape(rule)}</p>"]
    if claims.empty:
        parts.append("<p>No claim could be checked: no selected results.</p>")
    else:
        parts.append(f"<p><b>{escape(_verdict_counts(claims))}</b></p><table><tr>"
                     + "".join(f"<th>{escape(h)}</th>" for h in TABLE_HEADER) + "</tr>")
        numeric = {TABLE_HEADER.index(h) for h in ("n", "median %", "q10–q90 %", "W/T/L", "p")}
        for r in claims.itertuples():
            cells = _cells(r)
            row = "".join(f"<td class=\"num\">{escape(c)}</td>" if i in numeric
                          else f"<td>{escape(c)}</td>" for i, c in enumerate(cells[:-1]))
            colour = _VERDICT_COLOURS.get(r.verdict, "#ffffff")
            row += f"<td style=\"background:{colour}\"><b>{escape(r.verdict)}</b></td>"
            parts.append(f"<tr>{row}</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
