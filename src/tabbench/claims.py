"""The paper's tabular claims, checked on a results folder: one row per (claim, model, regime).

Every claim of Berta et al. (2025) that the tabular figures support is written here once, as a
comparison of a *method* (stopping metric ± TS, :mod:`tabbench.methods`) with another on one
test metric, over a subset of datasets, by :mod:`tabbench.comparisons` (the summary's pairing
of splits and relative differences):

    per dataset d:  r_d = 100 · (m̄_A,d / m̄_B,d − 1) %, clipped to [−100, 100]
                    (m̄ = mean over the splits both have; the figures' relative difference)

— or per (dataset, split) where the paper plots one point per split (``unit="split"``) — and
judged by one rule, :func:`verdict` (:data:`VERDICT_RULE`), on the Bayesian signed-rank test's
probabilities within a region of practical equivalence (Benavoli et al. 2017, ``baycomp``),
which can tell at a handful of datasets where the Wilcoxon test cannot; the Wilcoxon p (the
paper's test) and a bootstrap interval of the median stand beside it. Fig. G.1's claim compares
the relative differences of large datasets with those of small ones (a one-sided Mann–Whitney
test), Fig. G.2's "perform best" the mean ranks of the stopping methods (Friedman, Nemenyi).

The claim list is data (:data:`CLAIMS`); a claim whose methods are absent from the results
(e.g. no tuned regime for a network trained at its default only) yields no row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tabbench import comparisons as cmp
from tabbench.methods import BASELINE, ts_method_names

#: a claim needs at least this many datasets (and, judged per (dataset, split), as many points)
#: to be judged at all: splits of one dataset are not independent evidence about datasets
N_MIN = cmp.N_MIN
#: significance level of the frequentist tests (Mann–Whitney, Friedman)
ALPHA = 0.05
#: a posterior probability at least this high decides (and one at most 1 − PROB rules out)
PROB = 0.95

VERDICT_RULE = (
    f"n ≥ {N_MIN} datasets (a claim on (dataset, split) points needs {N_MIN} of both) or the "
    f"verdict is *inconclusive*. P(better), P(≈), "
    f"P(worse): the Bayesian signed-rank test of the relative differences with a region of "
    f"practical equivalence ±ROPE. **better/worse** claims: *reproduced* if P(claimed "
    f"direction) ≥ {PROB}; *not reproduced* if it is ≤ {1 - PROB:.2f}; otherwise "
    f"*inconclusive* (large vs small datasets, Fig. G.1: the median gap has the claimed sign and "
    f"the Mann–Whitney p < {ALPHA}, else *not reproduced* on the other sign). **comparable**: "
    f"*reproduced* if P(≈) ≥ {PROB}, *not reproduced* if P(≈) ≤ {1 - PROB:.2f}. **no worse**: "
    f"*reproduced* if P(worse) ≤ {1 - PROB:.2f}, *not reproduced* if P(worse) ≥ {PROB}. "
    f"**sometimes better**: *reproduced* if the method wins by more than the ROPE on at least "
    f"one dataset. **best ranked** (two methods): *reproduced* if they hold the two best mean "
    f"ranks and Friedman's p < {ALPHA}; *not reproduced* if another method's mean rank is "
    f"better than the worse of the two by more than the critical difference (Nemenyi). "
    f"Otherwise *inconclusive*."
)

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"

#: claim kinds: the direction the claim expects of the method's relative difference to the
#: comparison ("better" = lower, all metrics being lower-is-better), a tolerance, or a ranking
KINDS = ("better", "worse", "comparable", "no_worse", "sometimes_better", "best_ranked")


@dataclass(frozen=True)
class Claim:
    """One statement of the paper, checked as ``method`` vs ``versus`` on ``metric``.

    ``metric`` is a test metric id (``logloss``, ``error``, ``auroc`` (= 1 − AUROC), ...) or
    ``"epoch"`` (the chosen epoch, Fig. G.5). ``subset`` is ``large`` (datasets with ≥ the
    folder's "large" threshold), ``all``, or ``large_vs_small`` (Fig. G.1: the relative
    differences of large datasets against those of the others). ``unit``: one point per
    ``dataset`` (mean over splits) or per (dataset, ``split``), as the paper's Fig. G.5 plots.
    For ``best_ranked`` the two methods named are the ones claimed best. ``models``/``regimes``
    = None: every one present.
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
    unit: str = "dataset"


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
    Claim("ts_ref_and_cv5_best", "Fig. G.2", "TS-Refinement and its 5-fold CV version perform "
          "best (mean ranks of the stopping methods, test logloss after TS)", "TS-Ref.+TS",
          "TS-Ref.-5CV+TS", "logloss", "best_ranked"),
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
    Claim("ts_ref_sometimes_beats_accuracy", "Fig. G.3", "Tuning on TS-Ref. sometimes beats "
          "tuning on accuracy itself, in accuracy", "TS-Ref.+TS", "Accuracy+TS", "error",
          "sometimes_better", regimes=("tuned",)),
    Claim("ts_ref_auroc_no_worse", "Fig. G.4", "Tuning on TS-Ref. gives an AUROC no worse "
          "than tuning on logloss", "TS-Ref.+TS", BASELINE, "auroc", "no_worse"),
    Claim("accuracy_poor_auroc", "Fig. G.4", "Tuning on accuracy often gives poor AUROC "
          "(1 − AUROC higher than with Logloss+TS)", "Accuracy+TS", BASELINE, "auroc",
          "worse"),
    # Fig. G.5 as the paper plots it: one point per (dataset, split), large datasets
    Claim("logloss_stops_before_ts_ref", "Fig. G.5", "Logloss stops first on average: "
          "TS-Ref. stops later than logloss (default configs)", "TS-Ref.+TS", BASELINE,
          "epoch", "worse", regimes=("default",), unit="split"),
    Claim("brier_stops_later", "Fig. G.5", "Brier stops later than logloss (default "
          "configs)", "Brier+TS", BASELINE, "epoch", "worse", regimes=("default",),
          unit="split"),
    Claim("brier_ref_stops_after_brier", "Fig. G.5", "Losses after TS stop later than before "
          "TS: Brier-Ref. stops later than Brier (default configs)", "Brier-Ref.+TS",
          "Brier+TS", "epoch", "worse", regimes=("default",), unit="split"),
    Claim("accuracy_stops_late", "Fig. G.5", "Accuracy stops late: later than logloss "
          "(default configs)", "Accuracy+TS", BASELINE, "epoch", "worse",
          regimes=("default",), unit="split"),
    Claim("auroc_stops_in_the_middle", "Fig. G.5", "AUROC stops in the middle: later than "
          "logloss (default configs)", "AUROC+TS", BASELINE, "epoch", "worse",
          regimes=("default",), unit="split"),
    Claim("auroc_stops_before_accuracy", "Fig. G.5", "AUROC stops in the middle: earlier "
          "than accuracy (default configs)", "AUROC+TS", "Accuracy+TS", "epoch", "better",
          regimes=("default",), unit="split"),
    # the same trend per dataset over all datasets: an extra view (the table before Appendix
    # G's points were checked one by one)
    Claim("logloss_stops_before_ts_ref_all", "Fig. G.5", "TS-Ref. stops later than logloss "
          "(default configs; per dataset, all datasets)", "TS-Ref.+TS", BASELINE, "epoch",
          "worse", subset="all", regimes=("default",)),
    Claim("brier_stops_later_all", "Fig. G.5", "Brier stops later than logloss (default "
          "configs; per dataset, all datasets)", "Brier+TS", BASELINE, "epoch", "worse",
          subset="all", regimes=("default",)),
)

CLAIM_COLUMNS = ["claim", "figure", "statement", "model", "regime", "metric", "method", "versus",
                 "kind", "subset", "unit", "n", "n_datasets", "median", "median_other",
                 "n_other", "q10", "q90", "wins", "ties", "losses", "test", "p_wilcoxon",
                 "p_better", "p_equivalent", "p_worse", "rope", "median_lo", "median_hi",
                 "wins_beyond_rope", "mean_rank", "mean_rank_other", "best_other_rank", "cd",
                 "verdict"]


@dataclass(frozen=True)
class Evidence:
    """What a verdict is decided on (:func:`verdict`): ``n`` datasets (or points, with
    ``n_datasets`` the datasets they come from; None: the same as ``n``), the median
    relative difference (for the large-vs-small claim: the gap of the large datasets' median
    to the small ones'), the frequentist ``p`` of the claim's test, the Bayesian
    ``posterior``, the wins by more than the ROPE, and for a ranking the two named methods'
    mean ranks, the best other one's and the critical difference."""

    n: int
    median: float = float("nan")
    n_datasets: int | None = None
    p: float = float("nan")
    posterior: cmp.Posterior = field(default_factory=cmp.Posterior.unknown)
    wins_beyond_rope: int = 0
    ranks: tuple[float, float] = (float("nan"), float("nan"))
    best_other_rank: float = float("nan")
    cd: float = float("nan")


def verdict(kind: str, evidence: Evidence) -> str:
    """The one rule that turns the numbers of a claim into a verdict (:data:`VERDICT_RULE`)."""
    if kind not in KINDS:
        raise ValueError(f"unknown claim kind {kind!r}; one of {KINDS}")
    e = evidence
    if e.n < N_MIN or (e.n_datasets is not None and e.n_datasets < N_MIN):
        return INCONCLUSIVE
    post = e.posterior
    if kind == "sometimes_better":
        return REPRODUCED if e.wins_beyond_rope >= 1 else NOT_REPRODUCED
    if kind == "best_ranked":
        named = max(e.ranks)
        if not (np.isfinite(named) and np.isfinite(e.best_other_rank)):
            return INCONCLUSIVE
        if e.best_other_rank + e.cd < named:
            return NOT_REPRODUCED
        significant = bool(np.isfinite(e.p) and e.p < ALPHA)
        return REPRODUCED if named < e.best_other_rank and significant else INCONCLUSIVE
    if kind in ("better", "worse") and not np.isfinite(post.p_better):
        # no posterior (two independent groups of datasets): the median's sign and the test
        if not np.isfinite(e.median):
            return INCONCLUSIVE
        if np.sign(e.median) != (-1.0 if kind == "better" else 1.0):
            return NOT_REPRODUCED
        return REPRODUCED if np.isfinite(e.p) and e.p < ALPHA else INCONCLUSIVE
    if not np.isfinite(post.p_better):
        return INCONCLUSIVE
    if kind in ("better", "worse"):
        p = post.p_better if kind == "better" else post.p_worse
        return REPRODUCED if p >= PROB else NOT_REPRODUCED if p <= 1 - PROB else INCONCLUSIVE
    if kind == "comparable":
        p = post.p_equivalent
        return REPRODUCED if p >= PROB else NOT_REPRODUCED if p <= 1 - PROB else INCONCLUSIVE
    # no_worse
    p = post.p_worse
    return REPRODUCED if p <= 1 - PROB else NOT_REPRODUCED if p >= PROB else INCONCLUSIVE


def check_claims(selected: pd.DataFrame, large_rows: int,
                 claims: Sequence[Claim] = CLAIMS, rope: float = cmp.ROPE_PERCENT
                 ) -> pd.DataFrame:
    """Every claim of ``claims`` checked on the selected rows (one per model, dataset, split,
    regime and stopping metric): one row per claim, model and regime present, with its numbers
    and verdict; columns :data:`CLAIM_COLUMNS`."""
    rows = []
    values: dict[str, pd.DataFrame] = {}
    for claim in claims:
        if claim.kind not in KINDS:
            raise ValueError(f"claim {claim.id!r}: unknown kind {claim.kind!r}; one of {KINDS}")
        if claim.metric not in values:
            values[claim.metric] = cmp.method_values(selected, claim.metric)
        table = values[claim.metric]
        pairs, diffs = claim_differences(table, claim)
        for (model, regime), g in diffs.groupby(["model", "regime"], sort=True):
            mine = pairs[(pairs["model"] == model) & (pairs["regime"] == regime)]
            ranked = table[(table["model"] == model) & (table["regime"] == regime)]
            rows.append(_claim_row(claim, model, regime, g, mine, ranked, large_rows, rope))
    out = pd.DataFrame(rows, columns=CLAIM_COLUMNS)
    return out.astype({"n": int, "n_other": int, "wins": int, "ties": int, "losses": int,
                       "wins_beyond_rope": int})


def claim_differences(values: pd.DataFrame, claim: Claim) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The split pairs and the relative differences a claim is judged on, from
    :func:`tabbench.comparisons.method_values` of its metric: per dataset, or per (dataset,
    split) for ``unit="split"``; only the claim's models and regimes."""
    pairs = cmp.paired_splits(values, claim.versus, [claim.method])
    keep = np.ones(len(pairs), dtype=bool)
    if claim.models is not None:
        keep &= pairs["model"].isin(claim.models).to_numpy()
    if claim.regimes is not None:
        keep &= pairs["regime"].isin(claim.regimes).to_numpy()
    pairs = pairs[keep]
    diffs = (cmp.split_differences(pairs) if claim.unit == "split"
             else cmp.dataset_differences(pairs))
    return pairs, diffs


DECLARED_COLUMNS = ["claim", "statement", "model", "regime", "metric", "method", "versus",
                    "subset", "unit", "dataset", "split", "rel_diff", "n_rows", "large"]


def declared_differences(selected: pd.DataFrame, claims: Sequence[Claim], large_rows: int
                         ) -> pd.DataFrame:
    """The relative differences behind each of ``claims`` (the declared comparisons of
    :mod:`tabbench.summary_view`), for their figure: one row per (claim, model, regime,
    dataset[, split]), ``split`` −1 for a per-dataset point; ``large`` by ``large_rows``.
    The figure then draws exactly the numbers the claim rows were judged on."""
    parts = []
    values: dict[str, pd.DataFrame] = {}
    for claim in claims:
        if claim.metric not in values:
            values[claim.metric] = cmp.method_values(selected, claim.metric)
        _, diffs = claim_differences(values[claim.metric], claim)
        if diffs.empty:
            continue
        split = diffs["split"] if "split" in diffs else -1
        parts.append(pd.DataFrame({
            "claim": claim.id, "statement": claim.statement, "model": diffs["model"],
            "regime": diffs["regime"], "metric": claim.metric, "method": claim.method,
            "versus": claim.versus, "subset": claim.subset, "unit": claim.unit,
            "dataset": diffs["dataset"], "split": split, "rel_diff": diffs["rel_diff"],
            "n_rows": diffs["n_rows"], "large": diffs["n_rows"] >= large_rows}))
    if not parts:
        return pd.DataFrame(columns=DECLARED_COLUMNS)
    return pd.concat(parts, ignore_index=True)[DECLARED_COLUMNS]


def _ranks(table: pd.DataFrame, claim: Claim, large: set[str]) -> dict[str, float]:
    """The two named methods' mean ranks among the stopping methods (+TS), the best other one,
    the critical difference and Friedman's p, over the claim's datasets."""
    table = table[table["method"].isin(ts_method_names())]
    if claim.subset == "large":
        table = table[table["dataset"].isin(large)]
    wide = table.pivot_table(index="dataset", columns="method", values="value", aggfunc="mean")
    ranking = cmp.mean_ranks(wide)
    if ranking is None or claim.method not in ranking.mean_ranks or (
            claim.versus not in ranking.mean_ranks):
        return {}
    r = ranking.mean_ranks
    others = r.drop([claim.method, claim.versus])
    return {"mean_rank": float(r[claim.method]), "mean_rank_other": float(r[claim.versus]),
            "best_other_rank": float(others.min()) if len(others) else float("nan"),
            "cd": ranking.cd, "p": ranking.p_friedman,
            "n": int(wide.dropna(axis=0, how="any").shape[0])}


def _claim_row(claim: Claim, model: str, regime: str, g: pd.DataFrame, pairs: pd.DataFrame,
               table: pd.DataFrame, large_rows: int, rope: float) -> dict:
    large = g["n_rows"].to_numpy() >= large_rows
    rel = g["rel_diff"].to_numpy(dtype=float)
    other = np.array([], dtype=float)
    used = g
    if claim.subset == "large":
        rel, used = rel[large], g[large]
    elif claim.subset == "large_vs_small":
        rel, other, used = rel[large], rel[~large], g[large]
    stats = cmp.describe(rel)
    row = {"median_other": float("nan"), "p_wilcoxon": float("nan"),
           "median_lo": float("nan"), "median_hi": float("nan"), "mean_rank": float("nan"),
           "mean_rank_other": float("nan"), "best_other_rank": float("nan"),
           "cd": float("nan")}
    post = cmp.Posterior.unknown()
    n = len(rel)
    n_datasets = int(used["dataset"].nunique())
    if claim.kind == "best_ranked":
        sizes = table.groupby("dataset")["n_rows"].max()
        ranks = _ranks(table, claim, set(sizes.index[sizes >= large_rows]))
        n = n_datasets = ranks.get("n", 0)
        test = "friedman + nemenyi"
        row.update({k: ranks[k] for k in ("mean_rank", "mean_rank_other", "best_other_rank",
                                          "cd") if k in ranks})
        row["p_wilcoxon"] = ranks.get("p", float("nan"))
        ev = Evidence(n=n, p=row["p_wilcoxon"],
                      ranks=(row["mean_rank"], row["mean_rank_other"]),
                      best_other_rank=row["best_other_rank"], cd=row["cd"])
    elif claim.subset == "large_vs_small":
        # the claim: large datasets' differences are lower (a clearer gain) than small ones'
        test = "mann-whitney (large < small)"
        row["p_wilcoxon"] = cmp.mannwhitney_less_p(rel, other)
        row["median_other"] = float(np.median(other)) if len(other) else float("nan")
        gap = stats["median"] - row["median_other"]  # < 0: clearer gain on large datasets
        # the row's n is the large datasets' count (n_other the small ones'); the verdict needs
        # N_MIN in each group, so its evidence counts the smaller one
        ev = Evidence(n=min(len(rel), len(other)), median=gap, p=row["p_wilcoxon"])
    else:
        test = "wilcoxon + bayesian signed-rank"
        row["p_wilcoxon"] = cmp.wilcoxon_p(rel)
        if n >= N_MIN:
            post = cmp.bayesian_signed_rank(rel, rope)
            kept = pairs[pairs["dataset"].isin(used["dataset"])]
            row["median_lo"], row["median_hi"] = cmp.bootstrap_median_interval(
                kept, unit=claim.unit)
        ev = Evidence(n=n, median=stats["median"], p=row["p_wilcoxon"], posterior=post,
                      wins_beyond_rope=int((rel < -rope).sum()), n_datasets=n_datasets)
    v = verdict(claim.kind, ev)
    if claim.subset == "large_vs_small" and v == REPRODUCED and not stats["median"] < 0:
        v = INCONCLUSIVE  # "clearer" presupposes a gain on large datasets
    return {
        "claim": claim.id, "figure": claim.figure, "statement": claim.statement,
        "model": model, "regime": regime, "metric": claim.metric, "method": claim.method,
        "versus": claim.versus, "kind": claim.kind, "subset": claim.subset, "unit": claim.unit,
        "n": n, "n_datasets": n_datasets, "median": stats["median"], "n_other": len(other),
        "q10": stats["q10"],
        "q90": stats["q90"], "wins": int((rel < 0).sum()), "ties": int((rel == 0).sum()),
        "losses": int((rel > 0).sum()), "test": test, "p_better": post.p_better,
        "p_equivalent": post.p_equivalent, "p_worse": post.p_worse, "rope": float(rope),
        "wins_beyond_rope": int((rel < -rope).sum()), **row, "verdict": v,
    }


#: the claims table's columns (Markdown and HTML alike)
TABLE_HEADER = ("figure", "claim (paper)", "model", "regime", "metric", "method vs", "subset",
                "n", "median %", "95 % CI", "q10–q90 %", "W/T/L", "p", "P(<) / P(≈) / P(>)",
                "verdict")


def _failures_sentence(failures: dict | None) -> str:
    if not failures or not failures.get("configs"):
        return ""
    n_pairs = len(failures.get("by", []))
    return (f" {failures['configs']} configs failed in {n_pairs} (model, dataset) pairs and are "
            "left out (summary.md lists them with their reasons).")


def _preamble(large_rows: int, rope: float, failures: dict | None = None) -> list[str]:
    return [f"Relative differences in % of the method to the comparison, per dataset (mean over "
            f"splits first; per (dataset, split) where the paper plots splits), clipped to "
            f"[−100, 100]; lower = the method's test metric (or chosen epoch, Fig. G.5) is "
            f"lower. \"large\" = datasets with ≥ {large_rows:,} rows. W/T/L = datasets where "
            f"the method is lower / equal / higher. 95 % CI: bootstrap interval of the median "
            f"(datasets resampled, their splits inside). p: the claim's frequentist test "
            f"(Wilcoxon signed-rank, the paper's; Mann–Whitney for large vs small; Friedman "
            f"for ranks). P(<) / P(≈) / P(>): Bayesian signed-rank test (baycomp) that the "
            f"method is lower by more than the ROPE of {rope:g} %, within it, or higher."
            + _failures_sentence(failures),
            f"Verdict rule (`tabbench.claims.verdict`): {VERDICT_RULE}"]


def _verdict_counts(claims: pd.DataFrame) -> str:
    counts = claims["verdict"].value_counts()
    return ", ".join(f"{counts.get(v, 0)} {v}" for v in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE))


def _number(x: float, fmt: str) -> str:
    return "–" if not np.isfinite(x) else format(x, fmt)


def _cells(r) -> list[str]:
    """One claims row as the table's cells (text; the verdict last)."""
    subset = r.subset if r.unit == "dataset" else f"{r.subset}, per split"
    median = _number(r.median, "+.2f")
    if r.subset == "large_vs_small":
        subset = f"large vs small (n = {r.n}/{r.n_other})"
        median = f"{_number(r.median, '+.2f')} vs {_number(r.median_other, '+.2f')}"
    if r.kind == "best_ranked":
        median = (f"mean ranks {_number(r.mean_rank, '.2f')}, {_number(r.mean_rank_other, '.2f')}"
                  f" (best other {_number(r.best_other_rank, '.2f')}, CD {_number(r.cd, '.2f')})")
    interval = ("–" if not np.isfinite(r.median_lo)
                else f"[{r.median_lo:+.2f}, {r.median_hi:+.2f}]")
    probs = ("–" if not np.isfinite(r.p_better)
             else f"{r.p_better:.2f} / {r.p_equivalent:.2f} / {r.p_worse:.2f}")
    wtl = f"{r.wins}/{r.ties}/{r.losses}"
    if r.kind == "sometimes_better":
        wtl += f" ({r.wins_beyond_rope} beyond ROPE)"
    quantiles = "–" if not np.isfinite(r.q10) else f"{r.q10:+.1f} – {r.q90:+.1f}"
    return [r.figure, r.statement, r.model, r.regime, r.metric, f"{r.method} vs {r.versus}",
            subset, str(r.n), median, interval, quantiles, wtl, _number(r.p_wilcoxon, ".2g"),
            probs, r.verdict]


def claims_markdown(claims: pd.DataFrame, large_rows: int,
                    rope: float = cmp.ROPE_PERCENT, failures: dict | None = None) -> str:
    """``claims.md``: the verdict rule, a count of verdicts, and one table row per claim,
    model and regime with the paper's statement beside our numbers (and how many configs
    failed, from ``meta.json``'s ``failures``)."""
    intro, rule = _preamble(large_rows, rope, failures)
    lines = ["# The paper's tabular claims, checked on these results", "", intro, "", rule, ""]
    if claims.empty:
        return "\n".join(lines + ["No claim could be checked: no selected results.", ""])
    lines += [_verdict_counts(claims), "",
              "| " + " | ".join(TABLE_HEADER) + " |",
              "|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in claims.itertuples():
        cells = _cells(r)
        cells[-1] = f"**{cells[-1]}**"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])


#: background of a verdict cell in the HTML table
_VERDICT_COLOURS = {REPRODUCED: "#d9f0d3", NOT_REPRODUCED: "#f4cccc", INCONCLUSIVE: "#eeeeee"}


def claims_html(claims: pd.DataFrame, large_rows: int, rope: float = cmp.ROPE_PERCENT,
                failures: dict | None = None) -> str:
    """``claims.html``: the same table as :func:`claims_markdown`, as a self-contained HTML page
    (the HTML report embeds it; verdicts coloured)."""
    from html import escape

    intro, rule = _preamble(large_rows, rope, failures)
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
        numeric = {TABLE_HEADER.index(h) for h in ("n", "median %", "95 % CI", "q10–q90 %",
                                                    "W/T/L", "p", "P(<) / P(≈) / P(>)")}
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


def _short_cell(r) -> str:
    """One (claim, model, regime) in a few numbers and the verdict; a cell without the datasets
    its numbers need says so instead of a row of dashes and zeros."""
    if r.kind == "best_ranked" and not np.isfinite(r.mean_rank):
        return f"too few datasets to rank: **{r.verdict}**"
    if r.subset != "large_vs_small" and not int(r.n) > 0:
        return f"no datasets: **{r.verdict}**"
    if r.kind == "best_ranked":
        core = (f"ranks {_number(r.mean_rank, '.1f')}, {_number(r.mean_rank_other, '.1f')} "
                f"(best other {_number(r.best_other_rank, '.1f')}, CD {_number(r.cd, '.1f')})")
    elif r.subset == "large_vs_small":
        core = (f"{_number(r.median, '+.2f')} vs {_number(r.median_other, '+.2f')} %, "
                f"p {_number(r.p_wilcoxon, '.2g')}")
    else:
        core = f"{_number(r.median, '+.2f')} %"
        if np.isfinite(r.median_lo):
            core += f" [{r.median_lo:+.1f}, {r.median_hi:+.1f}]"
        core += f", {r.wins}/{r.ties}/{r.losses}"
        if np.isfinite(r.p_better):
            core += f", P {r.p_better:.2f}/{r.p_equivalent:.2f}/{r.p_worse:.2f}"
        if r.unit == "split":  # the points are splits: say how many datasets they come from
            core += f", {int(r.n_datasets)} datasets"
    return f"{core}: **{r.verdict}**"


def reproduction_table(claims: pd.DataFrame) -> str:
    """The claims as one Markdown table, a row per claim and a column per (model, regime)
    present: median relative difference with its bootstrap interval, W/T/L, P(<)/P(≈)/P(>) and
    the verdict. What docs/reproduction.md embeds as its generated table ``claims``
    (:mod:`tabbench.page_tables`; a test regenerates it from the shipped results and compares)."""
    from tabbench.plots.style import model_label, order_models

    if claims.empty:
        return "No claim could be checked: no selected results."
    models = order_models(claims["model"].unique())
    cols = [(m, reg) for m in models for reg in ("default", "tuned")
            if ((claims["model"] == m) & (claims["regime"] == reg)).any()]
    head = ["paper (figure): claim"] + [f"{model_label(m)} {reg}" for m, reg in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for claim in dict.fromkeys(claims["claim"]):
        rows = claims[claims["claim"] == claim]
        first = rows.iloc[0]
        where = "all datasets" if first["subset"] == "all" else (
            "large vs small" if first["subset"] == "large_vs_small" else "large datasets")
        if first["unit"] == "split":
            where += ", per split"
        label = (f"{first['figure']}: {first['statement']} (*{first['metric']}*, {where}, "
                 f"n = {int(rows['n'].max())})")
        cells = []
        for m, reg in cols:
            hit = rows[(rows["model"] == m) & (rows["regime"] == reg)]
            cells.append("–" if hit.empty else _short_cell(next(hit.itertuples())))
        lines.append("| " + " | ".join([label, *cells]) + " |")
    return "\n".join(lines)
