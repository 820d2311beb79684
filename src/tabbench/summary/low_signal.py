"""The headline without the low-signal datasets: a sensitivity declared beside the headline
(``summary/low_signal.parquet`` and its section of ``claims.md``; docs/design.md §7).

On a dataset where no model learns much beyond the class shares, logloss and TS-refinement
choose (nearly) the same model by construction, so such datasets pull the headline's median
towards "no difference" whatever the stopping metric is worth where there is signal. Whether
a verdict rests on them is judged by one rule on validation alone, fixed before any test gain
was looked at:

* a large dataset is **low-signal** when its ``learnability``
  (:mod:`tabbench.summary.heterogeneity`: the validation logloss at logloss's choice, mean over
  splits, over the prior's entropy, the entropy of the class shares) is at least the threshold
  (config ``low_signal_learnability``, default 0.9) for **every** (model, regime) that has one:
  no model gets its validation logloss below that share of what predicting the class shares
  scores;
* a dataset whose learnability is unknown (no class counts where the summary was computed) is
  not low-signal by this rule: it stays in, and the table counts it.

The headline claim (:data:`HEADLINE_CLAIM`, TS-Ref.+TS vs Logloss+TS in test logloss after TS
on the large datasets) is then judged per (model, regime) by the claims' own code
(:func:`tabbench.summary.claims.check_claims`: same pairing, statistics and verdict rule) on the
large datasets that are not low-signal, beside its row of the claims table (every large dataset).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabbench.core.markdown import markdown_table
from tabbench.models.registry import model_label, order_models
from tabbench.summary import comparisons as cmp
from tabbench.summary.claims import (
    CLAIMS,
    INCONCLUSIVE,
    VERDICT_LEGEND,
    check_claims,
)
from tabbench.summary.heterogeneity import HEADLINE_CLAIM
from tabbench.summary.view import LOW_SIGNAL_LEARNABILITY

#: the two sets of large datasets the headline is judged on (the table's ``datasets``)
ALL_LARGE, NOT_LOW_SIGNAL = "all large", "not low-signal"

#: the claims' columns each row keeps
_CLAIM_KEEP = ["model", "regime", "n", "median", "median_lo", "median_hi", "wins", "ties",
               "losses", "p_wilcoxon", "p_better", "p_equivalent", "p_worse", "se_better",
               "se_equivalent", "se_worse", "draws", "verdict"]
LOW_SIGNAL_COLUMNS = ["model", "regime", "datasets", "threshold", *_CLAIM_KEEP[2:],
                      "n_low_signal", "n_unknown", "low_signal"]


def dataset_learnability(heterogeneity: pd.DataFrame) -> pd.DataFrame:
    """Per large dataset of ``heterogeneity``
    (:func:`tabbench.summary.heterogeneity.heterogeneity_table`): the lowest ``learnability``
    over its (model, regime)s (NaN where none is known), as ``dataset``, ``learnability``."""
    large = heterogeneity[heterogeneity["large"].astype(bool)]
    per = large.groupby("dataset", sort=True)["learnability"].min()
    return per.rename("learnability").reset_index()


def low_signal_datasets(heterogeneity: pd.DataFrame,
                        threshold: float = LOW_SIGNAL_LEARNABILITY) -> tuple[list[str], list[str]]:
    """(the low-signal large datasets, the large datasets whose learnability is unknown), each
    sorted: the rule of the module docstring."""
    per = dataset_learnability(heterogeneity)
    known = per["learnability"].notna()
    low = per[known & (per["learnability"] >= threshold)]["dataset"].tolist()
    return low, per[~known]["dataset"].tolist()


def low_signal_table(selected: pd.DataFrame, claims: pd.DataFrame,
                     heterogeneity: pd.DataFrame, large_rows: int,
                     rope: float = cmp.ROPE_PERCENT,
                     threshold: float = LOW_SIGNAL_LEARNABILITY) -> pd.DataFrame:
    """Columns :data:`LOW_SIGNAL_COLUMNS`: per (model, regime) of the headline claim's rows of
    ``claims`` (:func:`tabbench.summary.claims.check_claims` of the ``best`` rule's
    ``selected`` rows), that row (``datasets`` "all large") and the claim judged again on the
    large datasets that are not low-signal (module docstring), with the low-signal datasets
    left out of that cell (``n_low_signal``, ``low_signal``: their names) and those of unknown
    learnability kept (``n_unknown``). A cell left with no dataset is *inconclusive*, n = 0."""
    claim = next(c for c in CLAIMS if c.id == HEADLINE_CLAIM)
    everyone = claims[claims["claim"] == HEADLINE_CLAIM]
    if everyone.empty:
        return pd.DataFrame(columns=LOW_SIGNAL_COLUMNS)
    low, unknown = low_signal_datasets(heterogeneity, threshold)
    kept = selected[~selected["dataset"].isin(low)]
    again = check_claims(kept, large_rows, [claim], rope=rope)
    large = selected[selected["n_rows"] >= large_rows]
    rows = []
    for r in everyone.itertuples(index=False):
        mine = set(large.loc[(large["model"] == r.model) & (large["regime"] == r.regime),
                             "dataset"])
        out = sorted(mine & set(low))
        base = {"model": r.model, "regime": r.regime, "threshold": float(threshold),
                "n_unknown": len(mine & set(unknown))}
        rows.append({**base, **{k: getattr(r, k) for k in _CLAIM_KEEP[2:]},
                     "datasets": ALL_LARGE, "n_low_signal": 0, "low_signal": ""})
        hit = again[(again["model"] == r.model) & (again["regime"] == r.regime)]
        judged = (hit.iloc[0][_CLAIM_KEEP[2:]].to_dict() if len(hit) else _no_datasets())
        rows.append({**base, **judged, "datasets": NOT_LOW_SIGNAL, "n_low_signal": len(out),
                     "low_signal": ", ".join(out)})
    table = pd.DataFrame(rows, columns=LOW_SIGNAL_COLUMNS)
    return table.astype({"n": np.int64, "wins": np.int64, "ties": np.int64,
                         "losses": np.int64, "draws": np.int64, "n_low_signal": np.int64,
                         "n_unknown": np.int64})


def _no_datasets() -> dict[str, object]:
    """A cell judged on no dataset: its numbers unknown, the verdict *inconclusive*."""
    row: dict[str, object] = dict.fromkeys(_CLAIM_KEEP[2:], float("nan"))
    row.update({"n": 0, "wins": 0, "ties": 0, "losses": 0, "draws": 0,
                "verdict": INCONCLUSIVE})
    return row


def _cell(r: pd.Series) -> str:
    if not int(r["n"]) > 0:
        return f"n = 0: **{r['verdict']}**"
    text = (f"n = {int(r['n'])}: {r['median']:+.2f} %, "
            f"{int(r['wins'])}/{int(r['ties'])}/{int(r['losses'])}")
    if np.isfinite(r["p_better"]):
        text += f", P {r['p_better']:.2f}/{r['p_equivalent']:.2f}/{r['p_worse']:.2f}"
    return f"{text}: **{r['verdict']}**".replace("-", "−")


def low_signal_markdown(table: pd.DataFrame, threshold: float) -> str:
    """The sensitivity as Markdown: the rule in one sentence with the low-signal datasets named,
    then a row per (model, regime): the headline on every large dataset and without the
    low-signal ones (n, median, W/T/L, P(better)/P(≈)/P(worse), verdict), what was left out and
    how many datasets' learnability was unknown; the verdicts' legend under it. What
    ``claims.md``'s section and the generated table ``low_signal`` of a page show."""
    rule = (f"A large dataset is *low-signal* when every model's validation logloss at "
            f"logloss's choice (mean over splits) is at least {threshold:g} of the prior's "
            f"entropy (its `learnability`, config `low_signal_learnability`); a dataset whose "
            f"learnability is unknown stays in.")
    if table.empty:
        return f"{rule} No (model, regime) has the headline claim's datasets."
    low = sorted({d for names in table["low_signal"] if names for d in names.split(", ")})
    unknown = int(table["n_unknown"].max())
    named = (f" Low-signal here: {', '.join(low)}." if low
             else " No large dataset is low-signal here.")
    if unknown:
        named += (f" Unknown learnability (no class counts where the summary was computed): "
                  f"up to {unknown} datasets per cell, kept.")
    order = {m: i for i, m in enumerate(order_models(table["model"].unique()))}
    cells = sorted({(m, g) for m, g in zip(table["model"], table["regime"], strict=True)},
                   key=lambda k: (order[k[0]], k[1] != "default", k[1]))
    rows, changed = [], []
    for model, regime in cells:
        mine = table[(table["model"] == model) & (table["regime"] == regime)]
        every = mine[mine["datasets"] == ALL_LARGE].iloc[0]
        kept = mine[mine["datasets"] == NOT_LOW_SIGNAL].iloc[0]
        rows.append([model_label(model), regime, _cell(every), _cell(kept),
                     str(int(kept["n_low_signal"])), str(int(kept["n_unknown"]))])
        if every["verdict"] != kept["verdict"]:
            changed.append(f"{model_label(model)} {regime} ({every['verdict']} → "
                           f"{kept['verdict']})")
    head = ["model", "regime", "TS-Ref.+TS vs Logloss+TS, all large datasets",
            "without the low-signal ones", "low-signal, left out", "learnability unknown"]
    verdicts = ("Without the low-signal datasets every verdict is the same." if not changed
                else "Without the low-signal datasets the verdict changes for "
                + "; ".join(changed) + "; the others are the same.")
    return (f"{rule}{named}\n\n" + markdown_table(head, rows, align="llllrr") + "\n\n"
            + f"{verdicts} {VERDICT_LEGEND}")


def low_signal_section(table: pd.DataFrame, threshold: float) -> str:
    """``claims.md``'s section: a heading, then :func:`low_signal_markdown`."""
    return ("## The headline without the low-signal datasets\n\n"
            + low_signal_markdown(table, threshold) + "\n")
