"""The stopping rules in the summary: what each (stopping metric, rule) costs in training and
gives in test logloss, its regret, and the paper's comparisons under each rule
(docs/stopping_rules.md).

From the selected rows of every rule (:mod:`tabbench.summary.select`,
:mod:`tabbench.summary.stopping_rules`):

* **compute** — per (dataset, split, regime) the fraction of epochs the rule trains,
  ``epochs_trained / epochs_recorded`` (the stop epochs summed over the regime's configs, over
  their recorded epochs: 1 for ``best``, which trains the whole run); averaged over splits per
  dataset;
* **quality** — the relative difference of the test logloss after TS of (metric, rule) to the
  summary's baseline (Logloss+TS) under ``best``, the paper's reference, by
  :mod:`tabbench.summary.comparisons` (the same pairing of splits and ratio of means as every
  relative difference of the summary);
* **regret** — the test logloss after TS of the selection against the lowest one over every
  (config, epoch) of the regime (``oracle_logloss_ts``), in % of the oracle
  (:func:`tabbench.summary.comparisons.relative_regret`, the regret diagnostic's
  definition), averaged over splits per dataset;
* **claims** — the paper's two comparisons of stopping metrics (TS-Ref.+TS vs Logloss+TS,
  Accuracy+TS vs Logloss+TS), checked under every rule other than ``best`` (whose rows are the
  paper's claims themselves) by :func:`tabbench.summary.claims.check_claims`: the same statistics
  and verdict rule, both methods stopped by the same rule.

:data:`RULES_COLUMNS` is ``summary/rules.parquet``, the table the compute–quality and regret
figures draw (:mod:`tabbench.plots.rules`); :func:`rules_answer` is what ``tabbench
stopping-rules`` prints.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from tabbench.models.registry import model_label
from tabbench.summary import comparisons as cmp
from tabbench.summary.claims import CLAIM_COLUMNS, CLAIMS, VERDICT_LEGEND, Claim, check_claims
from tabbench.summary.methods import BASELINE, methods
from tabbench.summary.stopping_rules import (
    BEST,
    RuleChoice,
    choice_names,
    selected_choices,
    with_rule_columns,
)
from tabbench.summary.tables import SUBSETS
from tabbench.summary.validation_rule import HETEROGENEITY_FIGURE

#: the paper's claims re-checked under each stopping rule (ids of
#: :data:`tabbench.summary.claims.CLAIMS`)
RULE_CLAIM_IDS: tuple[str, ...] = ("ts_ref_beats_logloss", "accuracy_worse")
#: what the claims table's ``figure`` column says of a rule's claim
RULE_FIGURE = "Stopping rules"

RULES_COLUMNS = ["subset", "model", "regime", "method", "stopping", "rule", "patience",
                 "choice", "n", "fraction_median", "fraction_q25", "fraction_q75",
                 "rel_median", "rel_q25", "rel_q75", "regret_median", "regret_q25",
                 "regret_q75", "n_regret"]


def paper_claims(claims: pd.DataFrame) -> pd.DataFrame:
    """The claims table without the rule claims (:func:`rule_claims`) and the validation
    rule's (:mod:`tabbench.summary.validation_rule`): the paper's and the declared ones, what a
    page's claims table and the report's opening page list."""
    if not len(claims):
        return claims
    return claims[~claims["figure"].isin([RULE_FIGURE, HETEROGENEITY_FIGURE])]


def rule_claim(claim: Claim, choice: RuleChoice) -> Claim:
    """``claim`` checked under ``choice``: its id and statement say the rule."""
    unit = "epochs (rounds)"
    how = (f"under patience {choice.param} (stop {choice.param} {unit} after the best so far)"
           if choice.rule == "patience" else f"under the stopping rule {choice.name}")
    suffix = choice.rule if choice.param is None else f"{choice.rule}{choice.param}"
    return replace(claim, id=f"{claim.id}_{suffix}", figure=RULE_FIGURE,
                   statement=f"{claim.statement}, {how}")


def rows_of(selected: pd.DataFrame, choice: RuleChoice) -> pd.DataFrame:
    """The selected rows of one (rule, parameter)."""
    sel = with_rule_columns(selected)
    return sel[choice_names(sel) == choice.name].reset_index(drop=True)


def rule_claims(selected: pd.DataFrame, large_rows: int,
                rope: float = cmp.ROPE_PERCENT) -> pd.DataFrame:
    """The claims of :data:`RULE_CLAIM_IDS` under every rule but ``best`` present in
    ``selected`` (module docstring); columns :data:`tabbench.summary.claims.CLAIM_COLUMNS`."""
    base = [c for c in CLAIMS if c.id in RULE_CLAIM_IDS]
    parts = []
    for choice in selected_choices(selected):
        if choice.rule == BEST:
            continue
        got = check_claims(rows_of(selected, choice), large_rows,
                           claims=[rule_claim(c, choice) for c in base], rope=rope)
        if len(got):
            parts.append(got)
    if not parts:
        return pd.DataFrame(columns=CLAIM_COLUMNS)
    return pd.concat(parts, ignore_index=True)


def _ts_stopping() -> dict[str, str]:
    """stopping metric id -> its "+TS" method name."""
    return {m.stopping: m.name for m in methods() if m.ts}


def per_dataset(selected: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Per (model, regime, dataset, stopping metric, rule): the mean fraction of epochs
    trained, the relative difference of the test logloss after TS to ``baseline`` under
    ``best``, and the mean relative regret (module docstring)."""
    sel = with_rule_columns(selected).copy()
    if sel.empty:
        return pd.DataFrame(columns=["model", "regime", "dataset", "stopping", "rule",
                                     "patience", "choice", "method", "n_rows", "fraction",
                                     "rel_diff", "regret"])
    names = _ts_stopping()
    sel = sel[sel["stopping"].isin(names)]
    sel["choice"] = choice_names(sel)
    sel["method"] = sel["stopping"].map(names)
    fraction = sel["epochs_trained"].astype(float) / sel["epochs_recorded"].astype(float)
    sel["fraction"] = np.where(sel["rule"] == BEST, 1.0, fraction)  # best trains every epoch
    sel["regret"] = cmp.relative_regret(sel["test_logloss_ts"], sel["oracle_logloss_ts"])
    keys = ["model", "regime", "dataset", "stopping", "rule", "choice", "method"]
    out = (sel.groupby(keys, sort=False, dropna=False)
           .agg(patience=("patience", "first"), n_rows=("n_rows", "max"),
                fraction=("fraction", "mean"), regret=("regret", "mean"))
           .reset_index())
    # quality: the test logloss after TS of every (method, rule) against the baseline (best)
    best = sel[sel["rule"] == BEST]
    base = best[best["method"] == baseline]
    values = pd.DataFrame({
        "model": pd.concat([base["model"], sel["model"]]),
        "regime": pd.concat([base["regime"], sel["regime"]]),
        "dataset": pd.concat([base["dataset"], sel["dataset"]]),
        "split": pd.concat([base["split"], sel["split"]]),
        "method": pd.concat([pd.Series(baseline, index=base.index),
                             sel["method"] + " | " + sel["choice"]]),
        "value": pd.concat([base["test_logloss_ts"], sel["test_logloss_ts"]]).astype(float),
        "n_rows": pd.concat([base["n_rows"], sel["n_rows"]]),
    }).reset_index(drop=True)
    compared = [m for m in values["method"].unique() if m != baseline]
    diffs = cmp.dataset_differences(cmp.paired_splits(values, baseline, compared))
    diffs[["method", "choice"]] = diffs["method"].str.split(" | ", n=1, expand=True,
                                                            regex=False)
    out = out.merge(diffs[["model", "regime", "dataset", "method", "choice", "rel_diff"]],
                    on=["model", "regime", "dataset", "method", "choice"], how="left")
    out["patience"] = out["patience"].astype("Int64")
    return out


def rules_table(selected: pd.DataFrame, large_rows: int,
                baseline: str = BASELINE) -> pd.DataFrame:
    """``summary/rules.parquet``: per (subset, model, regime, "+TS" method, rule) the median
    and quartiles over datasets of the fraction of epochs trained, of the relative test logloss
    after TS to ``baseline`` under ``best``, and of the relative regret (module docstring);
    columns :data:`RULES_COLUMNS`."""
    ds = per_dataset(selected, baseline)
    rows = []
    order = {c.name: i for i, c in enumerate(selected_choices(selected))} if len(ds) else {}
    for subset in SUBSETS:
        sub = ds if subset == "all" else ds[ds["n_rows"] >= large_rows]
        for key, g in sub.groupby(["model", "regime", "method", "stopping", "rule", "choice"],
                                  sort=False):
            model, regime, method, stopping, rule, choice = key
            q = {}
            for col, name in (("fraction", "fraction"), ("rel_diff", "rel"),
                              ("regret", "regret")):
                v = g[col].to_numpy(dtype=float)
                v = v[np.isfinite(v)]
                qs = np.quantile(v, [0.5, 0.25, 0.75]) if len(v) else [np.nan] * 3
                q.update({f"{name}_median": float(qs[0]), f"{name}_q25": float(qs[1]),
                          f"{name}_q75": float(qs[2])})
            rows.append({"subset": subset, "model": model, "regime": regime, "method": method,
                         "stopping": stopping, "rule": rule,
                         "patience": g["patience"].iloc[0], "choice": choice,
                         "n": int(g["dataset"].nunique()), **q,
                         "n_regret": int(np.isfinite(g["regret"].to_numpy(dtype=float)).sum()),
                         "_order": order.get(choice, len(order))})
    if not rows:
        out = pd.DataFrame(columns=RULES_COLUMNS)
        out["patience"] = out["patience"].astype("Int64")
        return out
    method_order = {m.name: i for i, m in enumerate(methods())}
    out = pd.DataFrame(rows)
    out["_m"] = out["method"].map(method_order)
    out = out.sort_values(["subset", "model", "regime", "_m", "_order"], kind="stable")
    out["patience"] = out["patience"].astype("Int64")
    return out[RULES_COLUMNS].reset_index(drop=True)


ANSWER_COLUMNS = ["model", "regime", "rule", "patience", "n", "median", "p_better",
                  "p_equivalent", "p_worse", "verdict", "fraction_logloss", "fraction_ts_ref",
                  "fraction_accuracy"]


def rules_answer(claims: pd.DataFrame, rules: pd.DataFrame) -> pd.DataFrame:
    """Per model, regime and rule: whether TS-Ref.+TS beats Logloss+TS (the claim's n,
    median, probabilities and verdict: the paper's claim for ``best``, its rule version
    otherwise) and the median fraction of epochs that Logloss+TS, TS-Ref.+TS and Accuracy+TS
    train under that rule (all datasets). ``claims``: the claims table with the rule claims
    (:func:`rule_claims`); ``rules``: :func:`rules_table`."""
    all_ds = rules[rules["subset"] == "all"]
    rows = []
    for (model, regime, rule, _), g in all_ds.groupby(
            ["model", "regime", "rule", "choice"], sort=False):
        patience = g["patience"].iloc[0]
        cid = "ts_ref_beats_logloss" + ("" if rule == BEST else
                                        f"_{rule}{'' if pd.isna(patience) else int(patience)}")
        hit = claims[(claims["claim"] == cid) & (claims["model"] == model)
                     & (claims["regime"] == regime)]
        c = hit.iloc[0] if len(hit) else None

        def frac(method: str, g=g) -> float:
            row = g[g["method"] == method]
            return float(row["fraction_median"].iloc[0]) if len(row) else np.nan

        rows.append({"model": model, "regime": regime, "rule": rule, "patience": patience,
                     "n": int(c["n"]) if c is not None else 0,
                     "median": float(c["median"]) if c is not None else np.nan,
                     **{k: float(c[k]) if c is not None else np.nan
                        for k in ("p_better", "p_equivalent", "p_worse")},
                     "verdict": str(c["verdict"]) if c is not None else "no claim row",
                     "fraction_logloss": frac(BASELINE), "fraction_ts_ref": frac("TS-Ref.+TS"),
                     "fraction_accuracy": frac("Accuracy+TS")})
    out = pd.DataFrame(rows, columns=ANSWER_COLUMNS)
    out["patience"] = out["patience"].astype("Int64")
    return out


def answer_markdown(answer: pd.DataFrame, large_rows: int, rope: float) -> str:
    """:func:`rules_answer` as a Markdown table with a sentence on how to read it and the
    verdicts' legend."""
    def num(x: float, fmt: str) -> str:
        return "–" if not np.isfinite(x) else format(x, fmt)

    lines = [f"TS-Ref.+TS vs Logloss+TS in test logloss, both stopped by the same rule (large "
             f"datasets, ≥ {large_rows:,} rows; P(<)/P(≈)/P(>): Bayesian signed-rank test, "
             f"ROPE {rope:g} %; the claims' verdict rule). Fraction trained: median over all "
             "datasets of the epochs (rounds) the rule trains over those of the whole run.", "",
             "| model | regime | rule | n | median % | P(<) / P(≈) / P(>) | verdict | "
             "fraction trained: Logloss+TS / TS-Ref.+TS / Accuracy+TS |",
             "|---|---|---|---:|---:|---:|---|---:|"]
    for r in answer.itertuples():
        rule = r.rule if pd.isna(r.patience) else f"{r.rule} {int(r.patience)}"
        probs = ("–" if not np.isfinite(r.p_better)
                 else f"{r.p_better:.2f} / {r.p_equivalent:.2f} / {r.p_worse:.2f}")
        fr = " / ".join(num(x, ".2f") for x in (r.fraction_logloss, r.fraction_ts_ref,
                                                r.fraction_accuracy))
        lines.append(f"| {model_label(r.model)} | {r.regime} | {rule} | {r.n} | "
                     f"{num(r.median, '+.2f')} | {probs} | {r.verdict} | {fr} |")
    return "\n".join(lines + ["", VERDICT_LEGEND]) + "\n"
