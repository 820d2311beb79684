"""How well does the cost model behind ``tabbench status`` predict jobs it has not seen?

    python benchmarks/cost_model_holdout.py --results results --data data

Leave one dataset out: for each model and each dataset with finished jobs, fit
:func:`tabbench.study.cost_model.fit_costs` on the model's *other* datasets and predict the summed
wall time of that dataset's finished configs (at their epochs), next to the measured one. Prints
the ratio predicted / measured per dataset and summed per model: what the "time left" of
``tabbench status`` can be trusted to, on this folder. Reads only (safe beside a running study).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from tabbench.study import cost_model
from tabbench.study.status import dataset_sizes


def holdout(meas: pd.DataFrame) -> pd.DataFrame:
    """Per (model, dataset): splits, measured and predicted wall seconds (fit without it)."""
    rows = []
    for model, m in meas.groupby("model"):
        for dataset, g in m.groupby("dataset"):
            coefs = cost_model.fit_costs(meas[~((meas["model"] == model)
                                                & (meas["dataset"] == dataset))])
            predicted = 0.0
            for r in g.itertuples():
                if (model, r.regime) not in coefs:
                    predicted = float("nan")
                    break
                predicted += float(cost_model.seconds_per_epoch(
                    coefs[(model, r.regime)], r.n_train, r.n_features, r.n_classes)[0]) * r.epochs
            rows.append({"model": model, "dataset": dataset, "splits": g["split"].nunique(),
                         "other_datasets": m["dataset"].nunique() - 1,
                         "measured_s": float(g["wall"].sum()), "predicted_s": predicted})
    out = pd.DataFrame(rows)
    out["ratio"] = out["predicted_s"] / out["measured_s"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--data", type=Path, required=True, help="its data folder (datasets.csv)")
    args = ap.parse_args(argv)
    sizes = dataset_sizes(args.data)
    meas = cost_model.measurements(args.results, sizes["n_features"].to_dict())
    if meas.empty:
        raise SystemExit(f"no finished jobs under {args.results}")
    table = holdout(meas)
    print(table.round(2).to_string(index=False))
    total = table.dropna().groupby("model")[["measured_s", "predicted_s"]].sum()
    total["ratio"] = total["predicted_s"] / total["measured_s"]
    print("\nsummed over the held-out datasets:")
    print(total.round(2).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
