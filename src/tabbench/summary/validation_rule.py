"""A rule a practitioner can apply to their own validation curve, judged out of sample: "if
stopping on TS-refinement gains at most X % on validation over stopping on logloss (both
compared after TS, ``val_gain`` of :mod:`tabbench.summary.heterogeneity`), expect no test gain
(|test gain| within the ROPE)".

Declared before any test gain was looked at:

* the cells: every (model, regime, dataset) of the large datasets with a finite ``val_gain``
  and ``test_gain``; a cell's outcome is "no gain" when |test_gain| ≤ ROPE;
* the rule at X predicts "no gain" for a cell with |val_gain| ≤ X and "gain" otherwise; its
  hit rate is the share of cells whose outcome it predicts;
* X is chosen on a set of datasets as the smallest of the observed |val_gain| that maximises
  the hit rate there (:func:`choose_threshold`); the rule's X is chosen on every dataset;
* its hit rate is judged **leaving one dataset out**: X chosen on the other datasets, applied to
  every cell of the one left out (:func:`leave_one_dataset_out`). Beside it, the same for the
  rule that ignores validation: the outcome most common on the other datasets, for every cell;
* the claims row (:func:`rule_claim_row`): *reproduced* ("validation tells") when the
  out-of-sample hit rate beats the ignoring rule's with a bootstrap interval of the difference
  (held-out datasets resampled, seeded) above 0; *not reproduced* ("validation cannot tell")
  when it does not beat it at all; otherwise, with fewer than
  :data:`tabbench.summary.comparisons.N_MIN` datasets, or where ``val_gain`` is unknown on a
  large cell that has a test gain (selected files without ``val_ts_ref``: the
  cells left are those where both metrics chose alike, not a sample of the others),
  *inconclusive*.

Validation gains are optimistic (TS-Ref.'s choice is the minimum of its own criterion, the
winner's curse), which is why the rule is judged on held-out datasets and not on the ones
whose validation gains chose X.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from tabbench.summary import comparisons as cmp
from tabbench.summary.claims import CLAIM_COLUMNS, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED
from tabbench.summary.methods import BASELINE

#: the claims table's ``figure`` and ``claim`` of the rule's row (left out of the paper's claims:
#: :func:`tabbench.summary.rule_summary.paper_claims`)
HETEROGENEITY_FIGURE = "When refining pays"
RULE_CLAIM = "validation_tells_refining_gain"
RULE_KIND = "hit_rate"


def choose_threshold(val_gain: np.ndarray, no_gain: np.ndarray) -> float:
    """The smallest X among the cells' |``val_gain``| whose rule (no gain where |val_gain| ≤
    X) predicts the most of ``no_gain`` (True: |test gain| within the ROPE); NaN without
    cells."""
    v = np.abs(np.asarray(val_gain, dtype=float))
    y = np.asarray(no_gain, dtype=bool)
    if v.size == 0:
        return float("nan")
    candidates = np.unique(v)
    hits = [int(((v <= x) == y).sum()) for x in candidates]
    return float(candidates[int(np.argmax(hits))])  # argmax: the first, i.e. smallest


def rule_cells(table: pd.DataFrame, rope: float) -> pd.DataFrame:
    """The cells the rule is judged on (module docstring), with ``no_gain``."""
    if table.empty:
        return table.assign(no_gain=pd.Series(dtype=bool))
    cells = table[table["large"].astype(bool) & np.isfinite(table["val_gain"].astype(float))
                  & np.isfinite(table["test_gain"].astype(float))].copy()
    cells["no_gain"] = cells["test_gain"].abs() <= rope
    return cells.reset_index(drop=True)


def leave_one_dataset_out(cells: pd.DataFrame) -> pd.DataFrame:
    """Every cell with the threshold chosen without its dataset (``threshold``), the rule's
    prediction and hit, and those of the rule that ignores validation (``base_hit``: the
    outcome most common on the other datasets, "no gain" on a tie)."""
    out = []
    for dataset, held in cells.groupby("dataset", sort=True):
        rest = cells[cells["dataset"] != dataset]
        if rest.empty:
            continue
        x = choose_threshold(rest["val_gain"], rest["no_gain"])
        common = bool(rest["no_gain"].mean() >= 0.5)
        predicted = held["val_gain"].abs() <= x
        out.append(held.assign(threshold=x, predicted_no_gain=predicted,
                               hit=predicted == held["no_gain"],
                               base_hit=held["no_gain"] == common))
    if not out:
        return cells.assign(threshold=np.nan, predicted_no_gain=False, hit=False, base_hit=False)
    return pd.concat(out, ignore_index=True)


@dataclass(frozen=True)
class RuleResult:
    """The rule on one results folder: its threshold (chosen on every dataset), the
    out-of-sample hit rates of the rule and of ignoring validation, the bootstrap interval of
    their difference (percentage points), the share of "no gain" predictions that held, and
    the verdict."""

    threshold: float
    rope: float
    n: int
    n_datasets: int
    n_unknown: int
    hit_rate: float
    base_rate: float
    diff_low: float
    diff_high: float
    no_gain_predicted: int
    no_gain_right: int
    wins: int
    ties: int
    losses: int
    verdict: str

    def as_meta(self) -> dict:
        return {k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                for k, v in asdict(self).items()}


def _difference_interval(judged: pd.DataFrame, seed: int = cmp.BAYES_SEED,
                         n_boot: int = cmp.BOOTSTRAP_SAMPLES,
                         level: float = cmp.BOOTSTRAP_LEVEL) -> tuple[float, float]:
    """Percentile interval of (rule's − ignoring rule's) hit rate in percentage points, the
    held-out datasets resampled with all their cells."""
    per = judged.groupby("dataset").agg(hit=("hit", "sum"), base=("base_hit", "sum"),
                                        n=("hit", "size"))
    if len(per) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(per), size=(n_boot, len(per)))
    hit, base, n = (per[c].to_numpy(dtype=float)[picks].sum(axis=1) for c in ("hit", "base", "n"))
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(100.0 * (hit - base) / n, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def judge_rule(table: pd.DataFrame, rope: float = cmp.ROPE_PERCENT) -> RuleResult:
    """The rule on the heterogeneity ``table`` (module docstring)."""
    cells = rule_cells(table, rope)
    unknown = (int((table["large"].astype(bool) & table["val_gain"].isna()
                    & np.isfinite(table["test_gain"].astype(float))).sum())
               if len(table) else 0)
    judged = leave_one_dataset_out(cells)
    n, n_datasets = len(judged), int(judged["dataset"].nunique()) if len(judged) else 0
    hit_rate = 100.0 * judged["hit"].mean() if n else float("nan")
    base_rate = 100.0 * judged["base_hit"].mean() if n else float("nan")
    lo, hi = _difference_interval(judged) if n else (float("nan"), float("nan"))
    if n_datasets < cmp.N_MIN or not np.isfinite(hit_rate) or unknown:
        verdict = INCONCLUSIVE
    elif np.isfinite(lo) and lo > 0:
        verdict = REPRODUCED
    elif hit_rate <= base_rate:
        verdict = NOT_REPRODUCED
    else:
        verdict = INCONCLUSIVE
    predicted = judged[judged["predicted_no_gain"].astype(bool)] if n else judged
    hit, base = judged["hit"].astype(bool), judged["base_hit"].astype(bool)
    return RuleResult(
        threshold=choose_threshold(cells["val_gain"], cells["no_gain"]), rope=float(rope),
        n=n, n_datasets=n_datasets, n_unknown=unknown, hit_rate=float(hit_rate),
        base_rate=float(base_rate), diff_low=lo, diff_high=hi,
        no_gain_predicted=int(len(predicted)),
        no_gain_right=int(predicted["no_gain"].sum()) if len(predicted) else 0,
        wins=int((hit & ~base).sum()), ties=int((hit == base).sum()),
        losses=int((~hit & base).sum()), verdict=verdict)


def rule_statement(result: RuleResult) -> str:
    """The claims row's statement: the rule with its threshold, and what decides it."""
    x = "–" if not np.isfinite(result.threshold) else f"{result.threshold:.2g}"
    return (f"Validation tells when refining pays: \"if TS-Ref. stopping gains at most {x} % "
            f"on validation over logloss stopping (both after TS), expect |test gain| ≤ "
            f"{result.rope:g} %\" is right, leaving one dataset out, more often than always "
            "expecting the outcome most common on the other datasets (reproduced: the 95 % "
            "bootstrap interval of the difference in hit rate is above 0; not reproduced: no "
            "higher hit rate)")


def rule_claim_row(result: RuleResult) -> dict:
    """The rule as a row of the claims table (:data:`tabbench.summary.claims.CLAIM_COLUMNS`):
    ``median`` = out-of-sample hit rate (%), ``median_other`` = that of ignoring validation,
    ``median_lo``/``median_hi`` = the interval of their difference (percentage points), W/T/L =
    cells the rule gets right and the ignoring rule wrong / both alike / the reverse,
    ``n_other`` = the large cells with a test gain but no ``val_gain``."""
    nan = float("nan")
    return dict.fromkeys(CLAIM_COLUMNS, nan) | {
        "claim": RULE_CLAIM, "figure": HETEROGENEITY_FIGURE, "statement": rule_statement(result),
        "model": "all", "regime": "all", "metric": "logloss", "method": "TS-Ref.+TS",
        "versus": BASELINE, "kind": RULE_KIND, "subset": "large", "unit": "dataset",
        "n": result.n, "n_datasets": result.n_datasets, "median": result.hit_rate,
        "median_other": result.base_rate, "n_other": result.n_unknown, "q10": nan, "q90": nan,
        "wins": result.wins, "ties": result.ties, "losses": result.losses,
        "test": "leave one dataset out + bootstrap over datasets", "p_wilcoxon": nan,
        "p_better": nan, "p_equivalent": nan, "p_worse": nan, "rope": result.rope,
        "median_lo": result.diff_low, "median_hi": result.diff_high, "wins_beyond_rope": 0,
        "mean_rank": nan, "mean_rank_other": nan, "best_other_rank": nan, "cd": nan,
        "draws": 0, "verdict": result.verdict,
    }
