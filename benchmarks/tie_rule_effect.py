"""What the tie rule of the selection changes: the first of tied epochs (tabbench's rule,
docs/design.md §7) against the last (pytabkit's ``use_last_best_epoch``, the paper authors'
library), on the complete pairs of a results folder that still has its runs files.

    python benchmarks/tie_rule_effect.py --results results_bundled [--models realmlp mlp]

Prints, per (model, regime, stopping metric), how many selections the rule moves (and how far,
in epochs), then the test logloss after TS of each method against Logloss+TS under both rules,
per subset of datasets: median, wins/ties/losses and the Bayesian signed-rank probabilities,
computed by the summary's own functions (``tabbench.summary_tables``, ``tabbench.comparisons``),
and the verdicts of the paper's claims on stopping epochs (Fig. G.5: ``tabbench.claims``, the
claims table's own rule) under both rules. Reads only (safe beside a running study).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np
import pandas as pd

from tabbench import comparisons as cmp
from tabbench.results_folder import discover
from tabbench.select import EPOCH_TIES, read_records, select_table
from tabbench.summary_tables import LARGE_ROWS, relative_differences

METHODS = ("TS-Ref.+TS", "Accuracy+TS", "Brier+TS")


def selections(results: str, models: Sequence[str] | None) -> dict[str, pd.DataFrame]:
    """The selection of every complete pair with runs files, under each tie rule."""
    out: dict[str, list[pd.DataFrame]] = {t: [] for t in EPOCH_TIES}
    for pair in discover(results):
        if not pair.runs or (models and pair.model not in models):
            continue
        tables = [read_records(p) for p in pair.runs]
        for ties in EPOCH_TIES:
            out[ties].extend(select_table(t, epoch_ties=ties) for t in tables)
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


def headline(sel: dict[str, pd.DataFrame], large_rows: int) -> pd.DataFrame:
    """Each method's test logloss after TS against Logloss+TS, under each rule."""
    rows = []
    for ties, s in sel.items():
        rel = relative_differences(s, metrics=("logloss",), large_rows=large_rows)
        for subset, part in (("all", rel), ("large", rel[rel["large"]])):
            for (model, regime, method), g in part.groupby(["model", "regime", "method"]):
                if method not in METHODS:
                    continue
                r = g["rel_diff"].to_numpy(dtype=float)
                post = cmp.bayesian_signed_rank(r)
                rows.append({"ties": ties, "subset": subset, "model": model, "regime": regime,
                             "method": method, "n": len(r),
                             "median": cmp.describe(r)["median"],
                             "W/T/L": f"{(r < 0).sum()}/{(r == 0).sum()}/{(r > 0).sum()}",
                             "P better/eq/worse": f"{post.p_better:.2f}/{post.p_equivalent:.2f}"
                                                  f"/{post.p_worse:.2f}"})
    return pd.DataFrame(rows)


def epoch_claims(sel: dict[str, pd.DataFrame], large_rows: int) -> pd.DataFrame:
    """The claims on stopping epochs (Fig. G.5), judged under each rule by the claims table."""
    from tabbench.aggregate import aggregate_frames

    rows = []
    for ties, s in sel.items():
        claims = aggregate_frames(s, None, large_rows)["claims"]
        claims = claims[(claims["metric"] == "epoch") & (claims["n"] > 0)]
        for r in claims.itertuples():
            rows.append({"ties": ties, "claim": r.claim, "model": r.model, "n": int(r.n),
                         "median": float(r.median),
                         "W/T/L": f"{r.wins}/{r.ties}/{r.losses}",
                         "P": f"{r.p_better:.2f}/{r.p_equivalent:.2f}/{r.p_worse:.2f}",
                         "verdict": r.verdict})
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", required=True, help="a results folder with its runs files")
    ap.add_argument("--models", nargs="*", help="only these models (default: every one)")
    ap.add_argument("--large-rows", type=int, default=LARGE_ROWS)
    args = ap.parse_args(argv)
    sel = selections(args.results, args.models)
    pd.set_option("display.width", 200)
    print("Selections moved by the tie rule (mean shift: epochs later, over those moved):")
    print(moved(sel).to_string(index=False, float_format=lambda x: f"{x:.1f}"))
    table = headline(sel, args.large_rows)
    print("\nTest logloss after TS relative to Logloss+TS (%), first vs last of tied epochs:")
    wide = table.pivot_table(index=["subset", "model", "regime", "method", "n"],
                             columns="ties", values=["median", "W/T/L", "P better/eq/worse"],
                             aggfunc="first")
    print(wide.to_string(float_format=lambda x: f"{x:+.2f}" if np.isfinite(x) else "–"))
    claims = epoch_claims(sel, args.large_rows)
    if not claims.empty:
        print("\nFig. G.5's claims on stopping epochs (median relative epoch difference %, "
              "W/T/L, P earlier/eq/later, verdict), first vs last of tied epochs:")
        print(claims.pivot_table(index=["model", "claim", "n"], columns="ties",
                                 values=["median", "W/T/L", "P", "verdict"], aggfunc="first")
              .to_string(float_format=lambda x: f"{x:+.1f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
