"""The stopping rules in the summary (tabbench.summary.rule_summary, tabbench.plots.rules): the
compute fraction, the quality against the baseline under the whole run, the regret, the claims under
each patience, the figures, and a folder whose selections predate the rules."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabbench.summary.aggregate import aggregate_frames, read_summary, write_summary
from tabbench.summary.claims import check_claims
from tabbench.summary.rule_summary import (
    RULE_FIGURE,
    paper_claims,
    per_dataset,
    rule_claims,
    rules_answer,
    rules_table,
)
from tabbench.summary.select import SELECTED_COLUMNS, TEST_COLUMNS
from tabbench.summary.stopping_rules import RULE_COLUMNS


def _row(dataset: str, split: int, stopping: str, rule: str, patience: int | None,
         logloss_ts: float, trained: int = 100, recorded: int = 100,
         oracle: float = 0.4, regime: str = "default") -> dict:
    row = dict.fromkeys(TEST_COLUMNS, 1.0)
    row.update(model="xgboost", regime=regime, dataset=dataset, split=split, config=0, epoch=1,
               val=0.0, val_ts_ref=0.0, n_candidates=1, n_skipped=0, beta=1.0, fit_seconds=1.0,
               params="{}",
               n_train=12_800, n_val=3_200, n_test=4_000, n_classes=2, n_rows=20_000,
               stopping=stopping, rule=rule, patience=patience, stop_epoch=trained,
               epochs_trained=trained, epochs_recorded=recorded, oracle_logloss_ts=oracle,
               test_logloss_ts=logloss_ts)
    return row


def _selected(n_datasets: int = 6, gain: float = 5.0) -> pd.DataFrame:
    """Per dataset and split: Logloss+TS and TS-Ref.+TS (and Accuracy+TS) under best and
    patience 20. Under best, TS-Ref. is ``gain`` % better; under patience 20 logloss trains 30
    of 100 rounds and TS-Ref. 60, and TS-Ref. is 2 % worse than under best while logloss loses
    nothing, so TS-Ref. still beats logloss by about ``gain - 2`` %."""
    rows = []
    for d in range(n_datasets):
        for s in range(2):
            base = 0.5 + 0.01 * d + 0.001 * s
            ts = base * (1 - (gain + 0.1 * d) / 100)
            acc = base * 1.2
            for stopping, v_best, v_p, trained in (("logloss", base, base, 30),
                                                    ("ts_ref", ts, ts * 1.02, 60),
                                                    ("error", acc, acc, 90)):
                rows.append(_row(f"d{d}", s, stopping, "best", None, v_best))
                rows.append(_row(f"d{d}", s, stopping, "patience", 20, v_p, trained=trained))
    out = pd.DataFrame(rows)[list(SELECTED_COLUMNS)]
    out["patience"] = out["patience"].astype("Int64")
    return out


def test_the_rules_table_holds_compute_quality_and_regret_per_rule():
    table = rules_table(_selected(), large_rows=10_000)
    t = table[table["subset"] == "all"].set_index(["method", "choice"])
    assert t.loc[("Logloss+TS", "best"), "fraction_median"] == 1.0
    assert t.loc[("Logloss+TS", "patience 20"), "fraction_median"] == pytest.approx(0.3)
    assert t.loc[("TS-Ref.+TS", "patience 20"), "fraction_median"] == pytest.approx(0.6)
    # quality: against Logloss+TS under best; logloss under patience loses nothing here
    assert t.loc[("Logloss+TS", "best"), "rel_median"] == 0.0
    assert t.loc[("Logloss+TS", "patience 20"), "rel_median"] == pytest.approx(0.0)
    ts_best = t.loc[("TS-Ref.+TS", "best"), "rel_median"]
    ts_p = t.loc[("TS-Ref.+TS", "patience 20"), "rel_median"]
    assert ts_best < -5 and ts_p == pytest.approx(100 * ((1 + ts_best / 100) * 1.02 - 1))
    # regret against the oracle 0.4: the mean over splits of 100 (v - 0.4) / 0.4
    ds = per_dataset(_selected())
    one = ds[(ds["dataset"] == "d0") & (ds["method"] == "Logloss+TS") & (ds["rule"] == "best")]
    assert one["regret"].iloc[0] == pytest.approx(100 * (0.5005 - 0.4) / 0.4)
    assert t.loc[("Logloss+TS", "best"), "n"] == 6
    assert set(table["subset"]) == {"all", "large"}


def test_the_papers_comparisons_are_claimed_under_each_patience_by_the_same_rule():
    sel = _selected(gain=5.0)
    claims = rule_claims(sel, large_rows=10_000)
    assert set(claims["figure"]) == {RULE_FIGURE}
    row = claims[claims["claim"] == "ts_ref_beats_logloss_patience20"].iloc[0]
    assert "under patience 20" in row["statement"]
    # the same numbers as the paper's claim checked on the patience rows alone
    only = sel[sel["rule"] == "patience"]
    same = check_claims(only, 10_000)
    paper = same[same["claim"] == "ts_ref_beats_logloss"].iloc[0]
    for col in ("n", "median", "p_better", "p_equivalent", "p_worse", "verdict"):
        assert row[col] == paper[col], col
    assert row["verdict"] == "reproduced"
    assert (claims["claim"] == "accuracy_worse_patience20").any()
    # the paper's claims table of a page leaves them out
    both = pd.concat([same, claims], ignore_index=True)
    assert paper_claims(both)["figure"].ne(RULE_FIGURE).all()
    assert len(paper_claims(both)) == len(same)


def test_the_answer_gives_the_verdict_and_the_fractions_per_rule():
    frames = aggregate_frames(_selected(gain=5.0), large_rows=10_000)
    answer = rules_answer(frames["claims"], frames["rules"]).set_index("rule")
    assert answer.loc["best", "verdict"] == "reproduced"
    assert answer.loc["patience", "patience"] == 20
    assert answer.loc["patience", "fraction_logloss"] == pytest.approx(0.3)
    assert answer.loc["patience", "fraction_ts_ref"] == pytest.approx(0.6)
    assert answer.loc["patience", "fraction_accuracy"] == pytest.approx(0.9)
    assert answer.loc["best", "p_better"] > 0.95


def test_the_summary_reads_the_best_rows_for_the_papers_tables():
    sel = _selected()
    with_rules = aggregate_frames(sel, large_rows=10_000)
    best_only = aggregate_frames(sel[sel["rule"] == "best"].reset_index(drop=True),
                                 large_rows=10_000)
    pd.testing.assert_frame_equal(with_rules["summary"], best_only["summary"])
    pd.testing.assert_frame_equal(with_rules["relative"], best_only["relative"])
    assert with_rules["meta"]["stopping_rules"] == {"xgboost": "best, patience 20"}
    assert (with_rules["claims"]["figure"] == RULE_FIGURE).sum() > 0


def test_figures_draw_a_point_per_metric_and_rule(tmp_path):
    from tabbench.plots.rules import fig_compute_quality, fig_regret

    frames = aggregate_frames(_selected(), large_rows=10_000)
    drawn = fig_compute_quality(frames, tmp_path)
    assert all(p.is_file() for p in drawn["files"])
    points = pd.DataFrame(drawn["points"])
    table = frames["rules"][frames["rules"]["subset"] == "all"]
    assert len(points) == len(table)  # one point per (method, rule) of each panel
    got = points.set_index(["method", "choice"])
    want = table.set_index(["method", "choice"])
    for key in want.index:
        assert got.loc[key, "x"] == pytest.approx(want.loc[key, "fraction_median"])
        assert got.loc[key, "y"] == pytest.approx(want.loc[key, "rel_median"])
    regret = pd.DataFrame(fig_regret(frames, tmp_path)["points"])
    assert len(regret) == len(table)


def test_the_rule_figures_legend_names_every_colour_and_every_marker(tmp_path):
    """The points' shapes say which rule (whole run, then each patience): the legend names
    each shape drawn, in the model's unit, beside each stopping metric's colour."""
    from tabbench.plots.rules import fig_compute_quality, fig_regret

    frames = aggregate_frames(_selected(), large_rows=10_000)
    table = frames["rules"][frames["rules"]["subset"] == "all"]
    for draw in (fig_compute_quality, fig_regret):
        legend = draw(frames, tmp_path)["legend"]
        methods = list(dict.fromkeys(table["method"]))
        assert legend[:len(methods)] == methods
        assert legend[len(methods):] == ["whole run (best epoch)", "patience 20 rounds"]
    # a network's first patience shares the boosters' marker: the label names both
    sel = _selected()
    both = pd.concat([sel, sel.assign(model="mlp", patience=sel["patience"].replace(20, 8))],
                     ignore_index=True)
    legend = fig_compute_quality(aggregate_frames(both, large_rows=10_000), tmp_path)["legend"]
    assert legend[-2:] == ["whole run (best epoch)",
                           "patience 20 rounds / 8 epochs"]


def test_a_selection_from_before_the_rules_summarises_and_draws_as_before(tmp_path):
    """A published copy's selected files have no rule columns: the summary reads them as the
    whole-run rule's, the rule claims are absent, the figures say that there is no patience
    rule, and a summary folder without rules.parquet is read back."""
    from tabbench.plots.rules import fig_compute_quality
    from tabbench.summary.aggregate import load_selected

    old = _selected()
    old = old[old["rule"] == "best"].drop(columns=list(RULE_COLUMNS))
    path = tmp_path / "old.parquet"
    old.to_parquet(path)
    sel = load_selected([path])
    assert set(sel["rule"]) == {"best"}
    frames = aggregate_frames(sel, large_rows=10_000)
    assert (frames["claims"]["figure"] != RULE_FIGURE).all()
    assert set(frames["rules"]["choice"]) == {"best"}
    assert np.isnan(frames["rules"]["regret_median"]).all()
    assert fig_compute_quality(frames, tmp_path)["points"] == []
    write_summary(frames, tmp_path / "summary")
    (tmp_path / "summary" / "rules.parquet").unlink()  # a summary written before the rules
    back = read_summary(tmp_path / "summary")
    assert "rules" not in back
    assert fig_compute_quality(back, tmp_path)["points"] == []


def test_a_folder_reselects_the_pairs_whose_selected_files_hold_other_patiences(tmp_path,
                                                                               capsys):
    """Changing the patiences reselects from the runs what a cached selected file lacks, and
    reuses what already holds them; a folder without runs uses its files as they are."""
    import os
    import shutil

    from fixtures.synthetic import SyntheticDataset, write_synthetic_results

    from tabbench.report.redraw import collect_selected
    from tabbench.summary.select import write_selected
    from tabbench.summary.stopping_rules import RuleChoice, selected_choices

    results = tmp_path / "results"
    runs = write_synthetic_results(results, [SyntheticDataset("toy", 1_200, 2)], ["xgboost"],
                                   n_splits=1, n_configs=2, epochs={"xgboost": (12, 12)})
    selected = results / "selected" / "xgboost" / "toy.parquet"
    write_selected(runs, selected, patience=[2])
    later = runs[0].stat().st_mtime + 10
    os.utime(selected, (later, later))  # fresh: newer than its runs
    sel, counts = collect_selected(results, jobs=1, patience=[2])
    assert (counts["reused"], counts["recomputed"]) == (1, 0)
    sel, counts = collect_selected(results, jobs=1, patience=[3, 5])
    assert (counts["reused"], counts["recomputed"]) == (0, 1)
    assert selected_choices(sel) == [RuleChoice("best"), RuleChoice("patience", 3),
                                     RuleChoice("patience", 5)]
    from tabbench.cli import main

    capsys.readouterr()
    assert main(["stopping-rules", "--results", str(results), "--patience", "3",
                 "--jobs", "1"]) == 0
    printed = capsys.readouterr().out
    assert "| XGBoost | default | patience 3 | " in printed
    assert "| XGBoost | default | best | " in printed
    shutil.rmtree(results / "runs")  # a published copy: its files as they are
    sel, counts = collect_selected(results, jobs=1, patience=[3, 5])
    assert counts["reused"] == 1
    assert selected_choices(sel) == [RuleChoice("best"), RuleChoice("patience", 2)]
