"""benchmarks/tie_rule_effect.py: the selections the tie rule moves, and the comparison under
both rules, on a folder whose runs hold a tie the first and the last epoch rules resolve apart."""

from __future__ import annotations

import numpy as np
import pandas as pd
from fixtures.scripts import load_script
from fixtures.synthetic import DEMO_DATASETS, write_synthetic_results

tie_rule_effect = load_script("benchmarks/tie_rule_effect.py")
DATASETS = [d for d in DEMO_DATASETS if d.name in ("adult", "segment")]


def test_a_tie_moves_only_its_metrics_selection_later_and_both_rules_are_compared(tmp_path,
                                                                                   capsys):
    paths = write_synthetic_results(tmp_path, DATASETS, ["mlp"], n_splits=2, n_configs=0,
                                    epochs={"mlp": (6, 6)})
    tied = paths[0]
    runs = pd.read_parquet(tied)
    # TS-refinement reaches a floor at epoch 2 and stays there: a tie over epochs 2..6
    floor = runs["val_ts_ref"].min() - 1.0
    runs.loc[runs["epoch"] >= 2, "val_ts_ref"] = floor
    runs.to_parquet(tied)
    sel = tie_rule_effect.selections(str(tmp_path), None)
    first, last = (s.set_index(["dataset", "split", "regime", "stopping"]) for s in
                   (sel["first"], sel["last"]))
    key = (runs["dataset"].iloc[0], int(runs["split"].iloc[0]), "default", "ts_ref")
    assert (first.loc[key, "epoch"], last.loc[key, "epoch"]) == (2, 6)
    moved = tie_rule_effect.moved(sel).set_index(["regime", "stopping"])
    assert moved.loc[("default", "ts_ref"), "moved"] >= 1
    assert moved.loc[("default", "ts_ref"), "mean_shift"] > 0
    table = tie_rule_effect.headline(tie_rule_effect.summaries(sel, large_rows=10_000))
    assert set(table["ties"]) == {"first", "last"}
    assert np.isfinite(table["median"]).all()
    assert tie_rule_effect.main(["--results", str(tmp_path)]) == 0
    assert "first vs last of tied epochs" in capsys.readouterr().out
