"""The judge of the paper's claims: each claim of the catalogue
(:mod:`tabbench.summary.claims.catalogue`) checked on a results folder, one row per (claim, model,
regime) with its numbers and verdict.

A claim compares a *method* (stopping metric ± TS, :mod:`tabbench.summary.methods`) with another on
one
test metric, over a subset of datasets, by :mod:`tabbench.summary.comparisons` (the summary's
pairing
of splits and relative differences):

    per dataset d:  r_d = 100 · (m̄_A,d / m̄_B,d − 1) %, clipped to [−100, 100]
                    (m̄ = mean over the splits both have; the figures' relative difference)

— or per (dataset, split) where the paper plots one point per split (``unit="split"``) — and
is judged by one rule, :func:`verdict` (:data:`VERDICT_RULE`), on the Bayesian signed-rank
test's probabilities within a region of practical equivalence (Benavoli et al. 2017,
``baycomp``), which can tell at a handful of datasets where the Wilcoxon test cannot; the
Wilcoxon p (the paper's test) and a bootstrap interval of the median stand beside it. The
probability a verdict rests on is drawn until the Monte Carlo draws place it clearly on one side
of the thresholds, or is *borderline* (:func:`tabbench.summary.comparisons.signed_rank_adaptive`),
so no seed changes a verdict. Fig.
G.1's claim compares the relative differences of large datasets with those of small ones (a
one-sided Mann–Whitney test), Fig. G.2's "perform best" the mean ranks of the stopping methods
(Friedman, Nemenyi). A claim whose methods are absent from the results (e.g. no tuned regime
for a network trained at its default only) yields no row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tabbench.summary import comparisons as cmp
from tabbench.summary.claims.catalogue import CLAIMS, KINDS, Claim
from tabbench.summary.methods import ts_method_names

#: a claim needs at least this many datasets (and, judged per (dataset, split), as many points)
#: to be judged at all: splits of one dataset are not independent evidence about datasets
N_MIN = cmp.N_MIN
#: significance level of the frequentist tests (Mann–Whitney, Friedman)
ALPHA = 0.05
#: a posterior probability at least this high decides (and one at most 1 − PROB rules out)
PROB = cmp.DECIDE_PROB
#: the posterior probability each kind of claim is judged on
DECIDES = {"better": "p_better", "worse": "p_worse", "comparable": "p_equivalent",
           "no_worse": "p_worse"}

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
    f"Otherwise *inconclusive*. **borderline**: the probability a verdict rests on is within "
    f"{cmp.MC_BAND:g} Monte Carlo standard errors (√(p(1 − p)/draws)) of {1 - PROB:.2f} or "
    f"{PROB} after the most draws the test makes ({cmp.BAYES_SAMPLES:,} posterior samples, "
    f"doubled while that probability is that near a threshold, up to "
    f"{cmp.BAYES_MAX_SAMPLES:,}): the draws cannot tell on which side of its threshold it lies."
)

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
#: the fourth verdict: a probability within the Monte Carlo error of a threshold
BORDERLINE = "borderline"
#: every verdict, in the order the tables count them
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, BORDERLINE)
#: the verdicts in a few words, for the tables that show them (claims.md, the pages' tables)
VERDICT_LEGEND = (
    f"Verdicts: *{REPRODUCED}*, *{NOT_REPRODUCED}*, *{INCONCLUSIVE}* (the rule of "
    f"`tabbench.summary.claims.verdict`: P ≥ {PROB} decides, P ≤ {1 - PROB:.2f} rules out), or "
    f"*{BORDERLINE}*: the deciding probability is within {cmp.MC_BAND:g} Monte Carlo standard "
    f"errors of {1 - PROB:.2f} or {PROB} after up to {cmp.BAYES_MAX_SAMPLES:,} posterior "
    f"samples, so the draws cannot tell the verdict.")

CLAIM_COLUMNS = ["claim", "figure", "statement", "model", "regime", "metric", "method", "versus",
                 "kind", "subset", "unit", "n", "n_datasets", "median", "median_other",
                 "n_other", "q10", "q90", "wins", "ties", "losses", "test", "p_wilcoxon",
                 "p_better", "p_equivalent", "p_worse", "se_better", "se_equivalent", "se_worse",
                 "draws", "rope", "median_lo", "median_hi",
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
    p = getattr(post, DECIDES[kind])
    if cmp.near_threshold(p, post.standard_error(p)):
        return BORDERLINE
    if kind == "no_worse":
        return REPRODUCED if p <= 1 - PROB else NOT_REPRODUCED if p >= PROB else INCONCLUSIVE
    return REPRODUCED if p >= PROB else NOT_REPRODUCED if p <= 1 - PROB else INCONCLUSIVE


def check_claims(selected: pd.DataFrame, large_rows: int,
                 claims: Sequence[Claim] = CLAIMS, rope: float = cmp.ROPE_PERCENT,
                 seed: int = cmp.BAYES_SEED) -> pd.DataFrame:
    """Every claim of ``claims`` checked on the selected rows (one per model, dataset, split,
    regime and stopping metric): one row per claim, model and regime present, with its numbers
    and verdict; columns :data:`CLAIM_COLUMNS`. ``seed``: the Bayesian test's (a verdict is the
    same for every seed, or *borderline*)."""
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
            rows.append(_claim_row(claim, (model, regime), g, mine, ranked, large_rows, rope,
                                   seed))
    out = pd.DataFrame(rows, columns=CLAIM_COLUMNS)
    return out.astype({"n": int, "n_other": int, "wins": int, "ties": int, "losses": int,
                       "wins_beyond_rope": int, "draws": int})


def claim_differences(values: pd.DataFrame, claim: Claim) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The split pairs and the relative differences a claim is judged on, from
    :func:`tabbench.summary.comparisons.method_values` of its metric: per dataset, or per (dataset,
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
    :mod:`tabbench.summary.view`), for their figure: one row per (claim, model, regime,
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


def _claim_row(claim: Claim, cell: tuple[str, str], g: pd.DataFrame, pairs: pd.DataFrame,
               table: pd.DataFrame, large_rows: int, rope: float,
               seed: int = cmp.BAYES_SEED) -> dict:
    """One row of :func:`check_claims`: ``claim`` on the (model, regime) ``cell``'s
    differences ``g``, their split-level ``pairs`` and the cell's per-method ``table``."""
    model, regime = cell
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
            post = cmp.bayesian_signed_rank(rel, rope, seed=seed,
                                            decides=DECIDES.get(claim.kind))
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
        "p_equivalent": post.p_equivalent, "p_worse": post.p_worse,
        "se_better": post.se_better, "se_equivalent": post.se_equivalent,
        "se_worse": post.se_worse, "draws": post.draws or 0, "rope": float(rope),
        "wins_beyond_rope": int((rel < -rope).sum()), **row, "verdict": v,
    }
