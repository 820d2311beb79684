"""When refining pays, as text: the predictors' rank correlations with the test gain
(``heterogeneity_fit``) and the validation rule judged out of sample (``meta.json``'s
``validation_rule``), what docs/reproduction_large.md embeds as its generated table
``heterogeneity`` (:mod:`tabbench.report.page_tables`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from tabbench.core.markdown import MISSING, markdown_table
from tabbench.models.registry import model_label
from tabbench.summary.heterogeneity_fit import ALL

#: what each predictor is, in a table's first column
PREDICTOR_LABELS: dict[str, str] = {
    "val_gain": "validation gain (val. TS-refinement, TS-Ref.'s choice vs logloss's)",
    "val_gain_bound": "validation gain against logloss's choice without TS",
    "epoch_gap": "epoch gap, TS-Ref.'s choice − logloss's (share of the run)",
    "beta_logloss": "TS inverse temperature at logloss's choice",
    "learnability": "val. logloss at logloss's choice / prior's entropy",
    "minority_share": "smallest class's share",
    "n_classes": "number of classes",
    "n_rows": "number of rows",
}


def _rho(row: pd.Series) -> str:
    if not np.isfinite(row["spearman"]):
        return f"– (n = {int(row['n'])})"
    ci = ("" if not np.isfinite(row["ci_low"])
          else f" [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]")
    return (f"{row['spearman']:+.2f}{ci} (n = {int(row['n'])}, "
            f"{int(row['n_datasets'])} datasets)").replace("-", "−")


def fit_markdown(fit: pd.DataFrame) -> str:
    """One row per predictor, a column per model and the pooled ``all``: Spearman's ρ with the
    test gain, its bootstrap interval, the cells and datasets it is over."""
    if fit.empty:
        return "No large dataset has the headline's gain."
    models = list(dict.fromkeys(fit["model"]))
    head = ["predictor (Spearman ρ with the test gain)"] + [
        "all (pooled)" if m == ALL else model_label(m) for m in models]
    rows = []
    for predictor in dict.fromkeys(fit["predictor"]):
        cells = []
        for m in models:
            hit = fit[(fit["model"] == m) & (fit["predictor"] == predictor)]
            cells.append(MISSING if hit.empty else _rho(hit.iloc[0]))
        rows.append([f"{PREDICTOR_LABELS.get(predictor, predictor)} (`{predictor}`)", *cells])
    return markdown_table(head, rows)


def _signed(x: float) -> str:
    return f"{x:+.1f}".replace("-", "−")


def rule_markdown(rule: Mapping[str, Any] | None) -> str:
    """The validation rule in one paragraph: its threshold, out-of-sample hit rate against
    ignoring validation, the "no gain" predictions that held, and its verdict."""
    if not rule or not rule.get("n"):
        unknown = int((rule or {}).get("n_unknown") or 0)
        return ("The validation rule could not be judged: no large cell has both gains"
                + (f" ({unknown} have a test gain but no validation gain)." if unknown else "."))
    x = rule["threshold"]
    diff = ("" if rule.get("diff_low") is None else
            f", difference {_signed(rule['diff_low'])} to {_signed(rule['diff_high'])} points "
            "(95 % bootstrap interval over datasets)")
    unknown = (f" The validation gain is unknown on {rule['n_unknown']} more large cells with "
               "a test gain (selected files without `val_ts_ref`), so the "
               "cells judged are not a sample of all: the verdict stays *inconclusive*."
               if rule.get("n_unknown") else "")
    return (f"Rule: *if TS-Ref. stopping gains at most {x:.2g} % on validation over logloss "
            f"stopping (both after TS), expect |test gain| ≤ {rule['rope']:g} %*. Leaving one "
            f"dataset out at a time ({rule['n']} cells, {rule['n_datasets']} datasets), it is "
            f"right on {rule['hit_rate']:.0f} % of the cells; always expecting the outcome "
            f"most common on the other datasets is right on {rule['base_rate']:.0f} %{diff}. "
            f"Of the {rule['no_gain_predicted']} cells where it expected no gain, "
            f"{rule['no_gain_right']} had none. Verdict: **{rule['verdict']}**.{unknown}")


def heterogeneity_markdown(fit: pd.DataFrame, rule: Mapping[str, Any] | None) -> str:
    """:func:`fit_markdown`, then :func:`rule_markdown`."""
    return f"{fit_markdown(fit)}\n\n{rule_markdown(rule)}"
