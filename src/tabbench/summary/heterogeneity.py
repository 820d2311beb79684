"""When refining pays: the headline's per-dataset gain beside what validation shows
(``summary/heterogeneity.parquet``; docs/design.md §7).

The paper's headline (Fig. 5, claim ``ts_ref_beats_logloss``) is a median over datasets of
the gain of TS-refinement stopping over logloss stopping; on most datasets that gain is nil and
on a few it is large. This table puts each (model, regime, dataset)'s gain beside quantities a
practitioner sees on validation before any test set, declared here before any was compared
with a test gain:

* ``test_gain`` — the headline's per-dataset value, the claim's own computation
  (:func:`tabbench.summary.claims.claim_differences`): test logloss after TS of TS-Ref.+TS
  relative to Logloss+TS in %, both averaged over their shared splits, then the ratio, clipped;
* ``val_gain`` — the same on validation: the validation TS-refinement ``val_ts_ref`` of the
  (config, epoch) TS-Ref. chose against that of the one logloss chose, averaged over splits
  then the ratio (:func:`tabbench.summary.comparisons.dataset_differences`). ≤ 0 by construction
  (TS-Ref. minimises ``val_ts_ref`` over every candidate logloss had). From the selected rows'
  ``val_ts_ref`` column; a selected file without that column gives it only where both
  metrics chose the same (config, epoch) on every split (the value is then TS-Ref.'s own), else
  NaN;
* ``val_gain_bound`` — the same against the validation logloss *without* TS at logloss's
  choice (the ``val`` of its row): known from any selected file, and ≤ ``val_gain`` (TS never
  raises the logloss it is fit on), equal to it where logloss's choice is calibrated;
* ``epoch_gap`` — TS-Ref.'s chosen epoch minus logloss's, over the mean recorded epochs per
  config of the regime (the run length), averaged over splits; NaN for a selected file without
  the recorded epochs;
* ``beta_logloss`` — the inverse temperature TS fits on validation at logloss's choice (``beta``),
  averaged over splits: 1 = logloss's model is calibrated as it stops;
* ``minority_share`` — the smallest class's share of the dataset's rows, and
  ``learnability`` — the validation logloss at logloss's choice (averaged over splits) over the
  entropy of the class shares (``prior_entropy``, nats): 1 = no better than the prior. Both from
  the data stage's class counts (:mod:`tabbench.data.class_balance`), NaN where the caller has
  none;
* ``n_classes``, ``n_rows`` — the dataset's, known before training.

:data:`PREDICTORS` are what :mod:`tabbench.summary.heterogeneity_fit` correlates with
``test_gain``; :mod:`tabbench.summary.validation_rule` turns ``val_gain`` into a rule.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabbench.summary import comparisons as cmp
from tabbench.summary.claims import CLAIMS, claim_differences
from tabbench.summary.select import VAL_AT_CHOICE
from tabbench.summary.stopping_rules import best_rows

#: the claim whose per-dataset differences are ``test_gain``: the paper's headline
HEADLINE_CLAIM = "ts_ref_beats_logloss"
#: the stopping metrics compared: refined (TS-Ref.) and plain (logloss)
REFINED, PLAIN = "ts_ref", "logloss"

#: the validation-only quantities correlated with the test gain, in the tables' order
PREDICTORS: tuple[str, ...] = ("val_gain", "val_gain_bound", "epoch_gap", "beta_logloss",
                               "learnability", "minority_share", "n_classes", "n_rows")

HETEROGENEITY_COLUMNS = ["model", "regime", "dataset", "n_rows", "n_classes", "large",
                         "n_splits", "test_gain", "val_gain", "val_gain_bound", "epoch_gap",
                         "beta_logloss", "learnability", "minority_share", "prior_entropy"]

_KEYS = ["model", "regime", "dataset"]


def headline_gains(selected: pd.DataFrame) -> pd.DataFrame:
    """``test_gain`` and its ``n_splits`` per (model, regime, dataset): the headline claim's
    relative differences, computed as the claim computes them."""
    claim = next(c for c in CLAIMS if c.id == HEADLINE_CLAIM)
    _, diffs = claim_differences(cmp.method_values(selected, claim.metric), claim)
    return (diffs[[*_KEYS, "rel_diff", "n_splits"]]
            .rename(columns={"rel_diff": "test_gain"}))


def choices_side_by_side(selected: pd.DataFrame) -> pd.DataFrame:
    """Per (model, regime, dataset, split): logloss's selected row beside TS-Ref.'s (suffixes
    ``_plain``, ``_refined``), with ``at_plain``: the validation TS-refinement at logloss's
    choice (its column, else TS-Ref.'s own value where both chose the same (config, epoch))."""
    cols = ["split", "config", "epoch", "val", "beta", "n_candidates", "n_skipped",
            "epochs_recorded", VAL_AT_CHOICE]
    parts = []
    for metric in (PLAIN, REFINED):
        rows = selected[selected["stopping"] == metric]
        rows = rows.reindex(columns=[*_KEYS, *cols, "n_rows", "n_classes"])
        parts.append(rows)
    both = parts[0].merge(parts[1].drop(columns=["n_rows", "n_classes"]),
                          on=[*_KEYS, "split"], suffixes=("_plain", "_refined"))
    same = ((both["config_plain"] == both["config_refined"])
            & (both["epoch_plain"] == both["epoch_refined"]))
    at_plain = both[f"{VAL_AT_CHOICE}_plain"].astype(float)
    both["at_plain"] = at_plain.where(at_plain.notna() | ~same,
                                      both["val_refined"].astype(float))
    return both


def _gains(both: pd.DataFrame, other: str) -> pd.DataFrame:
    """100·(mean TS-Ref. validation value / mean ``other`` − 1) per (model, regime, dataset),
    over the splits where both are finite
    (:func:`tabbench.summary.comparisons.dataset_differences`); NaN where a split has TS-Ref.'s
    value but not ``other``'s (a mean over fewer splits would not be the same quantity)."""
    pairs = pd.DataFrame({**{k: both[k] for k in _KEYS}, "method": "validation",
                          "split": both["split"], "value": both["val_refined"].astype(float),
                          "other": both[other].astype(float), "n_rows": both["n_rows"]})
    pairs["paired"] = np.isfinite(pairs["value"]) & np.isfinite(pairs["other"])
    diffs = cmp.dataset_differences(pairs)[[*_KEYS, "rel_diff"]]
    unknown = pairs[np.isfinite(pairs["value"]) & ~np.isfinite(pairs["other"])]
    gap = unknown[_KEYS].drop_duplicates().assign(_unknown=True)
    diffs = diffs.merge(gap, on=_KEYS, how="left")
    diffs.loc[diffs["_unknown"].eq(True), "rel_diff"] = np.nan
    return diffs.drop(columns="_unknown")


def heterogeneity_table(selected: pd.DataFrame, large_rows: int,
                        balance: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (model, regime, dataset) that has the headline's gain: columns
    :data:`HETEROGENEITY_COLUMNS` (module docstring). ``selected``: the selected rows (the
    ``best`` rule's are used); ``balance``: per dataset ``minority_share`` and
    ``prior_entropy`` (:func:`tabbench.data.class_balance.class_balance`), None: unknown."""
    selected = best_rows(selected)
    test = headline_gains(selected)
    if test.empty:
        return pd.DataFrame(columns=HETEROGENEITY_COLUMNS)
    both = choices_side_by_side(selected)
    runs = (both["epochs_recorded_plain"].astype(float)
            / (both["n_candidates_plain"] + both["n_skipped_plain"]).astype(float))
    both["epoch_gap"] = (both["epoch_refined"] - both["epoch_plain"]) / runs.where(runs > 0)
    per = (both.groupby(_KEYS, sort=True)
           .agg(n_rows=("n_rows", "max"), n_classes=("n_classes", "max"),
                epoch_gap=("epoch_gap", "mean"), beta_logloss=("beta_plain", "mean"),
                val_logloss=("val_plain", "mean"))
           .reset_index())
    out = test.merge(per, on=_KEYS, how="inner")
    out = out.merge(_gains(both, "at_plain").rename(columns={"rel_diff": "val_gain"}),
                    on=_KEYS, how="left")
    out = out.merge(_gains(both, "val_plain").rename(columns={"rel_diff": "val_gain_bound"}),
                    on=_KEYS, how="left")
    balance = (balance if balance is not None
               else pd.DataFrame(columns=["dataset", "minority_share", "prior_entropy"]))
    out = out.merge(balance[["dataset", "minority_share", "prior_entropy"]]
                    .drop_duplicates("dataset"), on="dataset", how="left")
    entropy = out["prior_entropy"].astype(float)
    out["learnability"] = out["val_logloss"] / entropy.where(entropy > 0)
    out["large"] = out["n_rows"] >= large_rows
    out = out.astype({"n_rows": np.int64, "n_classes": np.int64, "n_splits": np.int64})
    for c in ("val_gain", "val_gain_bound", "minority_share", "prior_entropy", "learnability"):
        out[c] = out[c].astype(float)
    return out[HETEROGENEITY_COLUMNS].sort_values(_KEYS, ignore_index=True)
