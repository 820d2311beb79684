"""What the tie rule of the selection changes: the first of tied epochs (tabbench's rule,
docs/design.md §7) against the last (pytabkit's ``use_last_best_epoch``, the paper authors'
library), on the complete pairs of a results folder that still has its runs files.

    python benchmarks/tie_rule_effect.py --results results_bundled [--models realmlp mlp]

Prints, per (model, regime, stopping metric), how many selections the rule moves (and how far,
in epochs), then the test logloss after TS of each method against Logloss+TS under both rules,
per subset of datasets: median, wins/ties/losses and the Bayesian signed-rank probabilities,
the summary's own rows (``tabbench.summary.aggregate``, computed once per rule),
and the verdicts of the paper's claims on stopping epochs (Fig. G.5: ``tabbench.summary.claims``,
the
claims table's own rule) under both rules. Reads only (safe beside a running study).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np
import pandas as pd

from tabbench.report.drawing_state import discover
from tabbench.settings.presets import default_value
from tabbench.summary.select import EPOCH_TIES, read_records, select_table

METHODS = ("TS-Ref.+TS", "Accuracy+TS", "Brier+TS")


def selections(results: str, models: Sequence[str] | None) -> dict[str, pd.DataFrame]:
    """The selection of every complete pair with runs files, under each tie rule."""
    out: dict[str, list[pd.DataFrame]] = {t: [] for t in EPOCH_TIES}
    for pair in discover(results):
        if not pair.runs or (models and pair.model not in models):
            continue
        tables = [read_records(p) for p in pair.runs]
        for ties in EPOCH_TIES:
            out[ties].extend(select_table(t, epoch_ties=ties, patience=[]) for t in tables)
    if not out["first"]:
        raise SystemExit(f"{results}: no complete (model, dataset) with its runs files")
    return {t: pd.concat(v, ignore_index=True) for t, v in out.items()}


def moved(sel: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per (model, regime, stopping): selections, how many the rule moves, and by how many
    epochs later on average (over the moved ones)."""
    keys = ["model", "dataset", "split", "regime", "stopping"]
    both = sel["first"].merge(sel["last"], on=keys, suffixes=("_first", "_last"))
    both["moved"] = ((both["epoch_first"] != both["epoch_last"])
                     | (both["config_first"] != both["config_last"]))
    # the shift of the moved selections only (NaN where none moved)
    both["shift"] = (both["epoch_last"] - both["epoch_first"]).where(both["moved"])
    return (both.groupby(["model", "regime", "stopping"])
            .agg(selections=("moved", "size"), moved=("moved", "sum"),
                 mean_shift=("shift", "mean"))
            .reset_index())


def summaries(sel: dict[str, pd.DataFrame], large_rows: int) -> dict[str, dict]:
    """The summary frames (``tabbench.summary.aggregate.aggregate_frames``: summary, claims...) of
    each
    rule's selection, computed once and read by :func:`headline` and :func:`epoch_claims`."""
    from tabbench.summary.aggregate import aggregate_frames

    return {ties: aggregate_frames(s, None, large_rows) for ties, s in sel.items()}


def _posterior(r) -> str:
    return f"{r.p_better:.2f}/{r.p_equivalent:.2f}/{r.p_worse:.2f}"


def headline(frames: dict[str, dict]) -> pd.DataFrame:
    """Each method's test logloss after TS against Logloss+TS, under each rule (the summary's
    own rows: median, wins/ties/losses, Bayesian signed-rank probabilities)."""
    rows = []
    for ties, f in frames.items():
        summary = f["summary"]
        summary = summary[(summary["metric"] == "logloss") & summary["method"].isin(METHODS)]
        for r in summary.itertuples():
            rows.append({"ties": ties, "subset": r.subset, "model": r.model,
                         "regime": r.regime, "method": r.method, "n": int(r.n),
                         "median": float(r.median), "W/T/L": f"{r.wins}/{r.ties}/{r.losses}",
                         "P better/eq/worse": _posterior(r)})
    return pd.DataFrame(rows)


def epoch_claims(frames: dict[str, dict]) -> pd.DataFrame:
    """The claims on stopping epochs (Fig. G.5), judged under each rule by the claims table."""
    rows = []
    for ties, f in frames.items():
        claims = f["claims"]
        claims = claims[(claims["metric"] == "epoch") & (claims["n"] > 0)]
        for r in claims.itertuples():
            rows.append({"ties": ties, "claim": r.claim, "model": r.model, "n": int(r.n),
                         "median": float(r.median), "W/T/L": f"{r.wins}/{r.ties}/{r.losses}",
                         "P": _posterior(r), "verdict": r.verdict})
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", required=True, help="a results folder with its runs files")
    ap.add_argument("--models", nargs="*", help="only these models (default: every one)")
    ap.add_argument("--large-rows", type=int, default=default_value("figures_large_rows"),
                    help="config figures_large_rows (default: its default)")
    args = ap.parse_args(argv)
    sel = selections(args.results, args.models)
    pd.set_option("display.width", 200)
    print("Selections moved by the tie rule (mean shift: epochs later, over those moved):")
    print(moved(sel).to_string(index=False, float_format=lambda x: f"{x:.1f}"))
    frames = summaries(sel, args.large_rows)
    table = headline(frames)
    print("\nTest logloss after TS relative to Logloss+TS (%), first vs last of tied epochs:")
    wide = table.pivot_table(index=["subset", "model", "regime", "method", "n"],
                             columns="ties", values=["median", "W/T/L", "P better/eq/worse"],
                             aggfunc="first")
    print(wide.to_string(float_format=lambda x: f"{x:+.2f}" if np.isfinite(x) else "–"))
    claims = epoch_claims(frames)
    if not claims.empty:
        print("\nFig. G.5's claims on stopping epochs (median relative epoch difference %, "
              "W/T/L, P earlier/eq/later, verdict), first vs last of tied epochs:")
        print(claims.pivot_table(index=["model", "claim", "n"], columns="ties",
                                 values=["median", "W/T/L", "P", "verdict"], aggfunc="first")
              .to_string(float_format=lambda x: f"{x:+.1f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
