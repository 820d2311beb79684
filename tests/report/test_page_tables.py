"""A page's generated tables (tabbench.report.page_tables): each is rewritten between its own
markers
and nothing else of the page changes; a marker the code does not know, or a page without any,
is an error; the tables say what the frames hold (docs/reproduction.md's drift test,
tests/report/test_reproduction_page.py, runs them on the shipped study)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabbench.core.layout import ResultsLayout
from tabbench.report.page_tables import (
    TABLES,
    PageInputs,
    baseline_table,
    complete_pairs_table,
    embedded,
    markers,
    names_in,
    not_run_table,
    regenerate_page,
    what_ran_table,
    with_tables,
)
from tabbench.settings.folder import ResultsFolder


def _page(*names: str) -> str:
    parts = ["intro"]
    for name in names:
        begin, end = markers(name)
        parts += [begin, "| old |", end, f"text after {name}"]
    return "\n".join(parts) + "\n"


def _selected() -> pd.DataFrame:
    rows = [("xgboost", "adult", 48_842), ("xgboost", "kc1", 2_109), ("lightgbm", "Car", 1_728),
            ("lightgbm", "adult", 48_842)]
    return pd.DataFrame([{"model": m, "dataset": d, "n_rows": n, "split": s}
                         for m, d, n in rows for s in range(2)])


def _summary() -> pd.DataFrame:
    def row(model, regime, method, median, wtl, p=(np.nan, np.nan, np.nan), n=7, subset="all"):
        return {"subset": subset, "model": model, "regime": regime, "metric": "logloss",
                "method": method, "n": n, "median": median, "wins": wtl[0], "ties": wtl[1],
                "losses": wtl[2], "p_better": p[0], "p_equivalent": p[1], "p_worse": p[2]}

    return pd.DataFrame([
        row("xgboost", "default", "TS-Ref.+TS", -1.25, (5, 0, 2), (0.9, 0.08, 0.02)),
        row("xgboost", "default", "Logloss", 0.5, (2, 1, 4), (0.1, 0.3, 0.6)),
        row("xgboost", "tuned", "TS-Ref.+TS", -0.004, (1, 0, 0), n=1),
        row("xgboost", "tuned", "Brier+TS", 3.0, (0, 0, 1), n=1),
        row("xgboost", "default", "TS-Ref.+TS", 99.0, (9, 9, 9), subset="large"),
    ])


def test_each_table_is_replaced_between_its_own_markers_and_nothing_else():
    page = _page("complete_pairs", "claims")
    new = with_tables(page, {"claims": "| new |\n|---|"})
    assert embedded(new, "claims") == "| new |\n|---|"
    assert embedded(new, "complete_pairs") == "| old |"
    assert new.replace("| new |\n|---|", "| old |") == page  # the rest of the page as it was
    assert with_tables(new, {"claims": "| new |\n|---|"}) == new  # idempotent
    assert names_in(page) == ["complete_pairs", "claims"]
    # an opening marker may say anything after the name's ";" (the README's "..." too)
    own = "<!-- generated table: ranks; ... -->\n| old |\n<!-- end of generated table: ranks -->"
    assert with_tables(own, {"ranks": "| r |"}) == own.replace("| old |", "| r |")


def test_a_page_without_tables_or_with_an_unknown_one_is_refused():
    inputs = PageInputs({"claims": pd.DataFrame()}, _selected(), 10_000)
    with pytest.raises(ValueError, match="no generated table"):
        regenerate_page("just prose\n", inputs)
    with pytest.raises(ValueError, match=r"unknown generated table\(s\) \['clams'\]"):
        regenerate_page(_page("clams"), inputs)
    with pytest.raises(ValueError, match=r"\['ranks'\] appear more than once"):
        names_in(_page("ranks", "claims", "ranks"))
    with pytest.raises(ValueError, match="'claims' \\(markers missing\\)"):
        with_tables("no markers", {"claims": "| t |"})
    begin, _ = markers("claims")
    with pytest.raises(ValueError, match="markers missing"):  # an opening without its end
        embedded(f"{begin}\n| t |\n", "claims")


def test_the_complete_pairs_table_lists_each_model_its_pairs_and_the_large_ones():
    table = complete_pairs_table(_selected(), 10_000, models=("xgboost", "mlp", "lightgbm"))
    lines = table.splitlines()
    assert lines[0] == "| model | complete (model, dataset) pairs | of them large (≥ 10,000 rows) |"
    assert "| XGBoost | 2: adult, kc1 | 1 (adult) |" in lines
    assert "| LightGBM | 2: adult, Car | 1 (adult) |" in lines  # names sorted ignoring case
    assert "| MLP | none yet | – |" in lines  # a model of the study without a pair yet
    assert "| XGBoost | 2: adult, kc1 | 0 |" in complete_pairs_table(_selected(), 50_000)
    assert complete_pairs_table(_selected().iloc[:0], 10_000) == (
        "No (model, dataset) pair has selections.")


def test_the_not_run_table_lists_per_model_and_regime_the_kept_large_datasets_without_a_pair():
    """What did not run is read from the data stage's table: only kept datasets of at least the
    large threshold count; a model's tuned regime is listed once it has a tuned pair."""
    datasets = pd.DataFrame({
        "dataset": ["adult", "covtype", "kc1", "bank", "Car"],
        "status": ["kept", "kept", "kept", "dropped", "kept"],
        "rows_final": [48_842, 100_000, 2_109, 45_211, 1_728]})
    selected = _selected().assign(regime="default")
    tuned = selected[(selected["model"] == "lightgbm") & (selected["dataset"] == "adult")]
    selected = pd.concat([selected, tuned.assign(regime="tuned")], ignore_index=True)
    lines = not_run_table(selected, datasets, 10_000, models=("xgboost", "mlp", "lightgbm"))
    lines = lines.splitlines()
    assert lines[0] == ("| model | regime | large datasets (≥ 10,000 rows) with it "
                        "| kept large datasets without it |")
    assert "| XGBoost | default | 1 | 1: covtype |" in lines  # bank was dropped, kc1 is small
    assert "| MLP | default | 0 | 2: adult, covtype |" in lines  # a model with no pair yet
    assert "| LightGBM | tuned | 1 | 1: covtype |" in lines
    assert not any(line.startswith("| XGBoost | tuned") for line in lines)
    everything = not_run_table(selected, datasets, 1_000)
    assert "| XGBoost | default | 2 | 2: Car, covtype |" in everything.splitlines()
    assert not_run_table(selected, None, 10_000).startswith("No dataset table")
    assert not_run_table(selected.iloc[:0], datasets, 10_000) == "No model in this folder."
    # inputs read without a results folder have no data stage's table either
    alone = PageInputs({}, selected, 10_000)
    assert TABLES["not_run"](alone).startswith("No dataset table")


def test_a_table_from_another_folder_is_computed_from_that_folders_inputs():
    """``NAME from PATH``: the same table twice in one page, one from the page's folder and one
    from another, each from its own inputs; a page with such a table and no way to read other
    folders is refused."""
    begin, end = markers("complete_pairs from results/other")
    assert begin.startswith("<!-- generated table: complete_pairs from results/other;")
    assert end == "<!-- end of generated table: complete_pairs from results/other -->"
    page = _page("complete_pairs", "complete_pairs from results/other")
    assert names_in(page) == ["complete_pairs", "complete_pairs from results/other"]
    mine = PageInputs({}, _selected(), 10_000)
    theirs = PageInputs({}, _selected().query("model == 'lightgbm'"), 10_000)
    asked = []

    def other(source: str) -> PageInputs:
        asked.append(source)
        return theirs

    new = regenerate_page(page, mine, other)
    assert embedded(new, "complete_pairs") == complete_pairs_table(_selected(), 10_000)
    assert embedded(new, "complete_pairs from results/other") == complete_pairs_table(
        theirs.selected, 10_000)
    assert asked == ["results/other"]
    with pytest.raises(ValueError, match="computed from another folder"):
        regenerate_page(page, mine)
    with pytest.raises(ValueError, match=r"unknown generated table\(s\) \['clams'\]"):
        names_in(_page("clams from results/other"))


def test_a_model_tuned_on_some_of_its_datasets_gets_a_row_naming_them():
    selected = _selected().assign(regime="default")
    xgb_adult = (selected["model"] == "xgboost") & (selected["dataset"] == "adult")
    tuned = pd.concat([selected[xgb_adult],
                       selected[selected["model"] == "lightgbm"]]).assign(regime="tuned")
    lines = complete_pairs_table(pd.concat([selected, tuned]), 10_000).splitlines()
    assert lines[1:] == ["|---|---|---|",
                         "| XGBoost | 2: adult, kc1 | 1 (adult) |",
                         "| XGBoost tuned | 1: adult | 1 (adult) |",
                         "| LightGBM | 2: adult, Car | 1 (adult) |"]  # tuned on both: no row
    tuned_everywhere = pd.concat([selected, selected.assign(regime="tuned")])
    assert "tuned" not in complete_pairs_table(tuned_everywhere, 10_000)


def test_the_all_datasets_table_gives_the_summary_numbers_against_the_baseline():
    lines = baseline_table(_summary()).splitlines()
    assert lines[0] == ("| method (vs Logloss+TS) | XGBoost default (n = 7) | "
                        "XGBoost tuned (n = 1) |")
    assert lines[2] == "| TS-Ref.+TS | −1.25 %, 5/0/2, 0.90/0.08/0.02 | −0.00 %, 1/0/0 |"
    assert lines[3] == "| Logloss (no TS) | +0.50 %, 2/1/4, 0.10/0.30/0.60 | – |"
    assert lines[4] == "| Accuracy+TS | – | – |"  # no such rows: a dash, not a zero
    assert "99.00" not in "\n".join(lines)  # subset "all" only
    other = baseline_table(_summary(), methods=("Brier+TS",), baseline="Brier+TS").splitlines()
    assert other[0].startswith("| method (vs Brier+TS) |") and other[2].endswith("+3.00 %, 0/0/1 |")
    assert baseline_table(_summary(), subset="none") == "No dataset in the subset 'none'."


def test_regenerating_a_page_fills_every_table_it_holds_from_the_inputs():
    frames = {"claims": pd.DataFrame(), "summary": _summary(), "meta": {}}
    page = _page("all_datasets", "complete_pairs")
    new = regenerate_page(page, PageInputs(frames, _selected(), 10_000, ("xgboost", "mlp")))
    assert embedded(new, "all_datasets") == baseline_table(_summary())
    assert embedded(new, "complete_pairs") == complete_pairs_table(_selected(), 10_000,
                                                                   ("xgboost", "mlp"))
    assert new.startswith("intro\n") and "text after all_datasets" in new


def test_the_ranks_table_gives_each_methods_mean_rank_and_the_critical_difference():
    """summary.md's ranks table (summary_markdown.rank_table_lines) with the figures' model
    names and order: one row per (model, regime), the ranked methods in figure order."""
    from tabbench.report.page_tables import ranks_table

    def row(model, regime, method, rank, n=6, cd=2.5, subset="all"):
        return {"subset": subset, "model": model, "regime": regime, "metric": "logloss",
                "method": method, "mean_rank": rank, "n": n, "cd": cd, "p_friedman": 0.01}

    ranks = pd.DataFrame([row("lightgbm", "tuned", "TS-Ref.+TS", 1.0),
                          row("lightgbm", "tuned", "Logloss+TS", 2.0),
                          row("xgboost", "default", "TS-Ref.+TS", 1.5, n=9, cd=3.5),
                          row("xgboost", "default", "Logloss+TS", 1.5, n=9, cd=3.5),
                          row("xgboost", "default", "TS-Ref.+TS", 9.0, subset="large")])
    lines = ranks_table(ranks).splitlines()
    assert lines[0] == "| model | regime | n | Logloss+TS | TS-Ref.+TS | CD | Friedman p |"
    assert lines[2:] == ["| XGBoost | default | 9 | **1.50** | **1.50** | 3.50 | 0.01 |",
                         "| LightGBM | tuned | 6 | 2.00 | **1.00** | 2.50 | 0.01 |"]
    assert ranks_table(ranks.iloc[:0]).startswith("No (model, regime) has the datasets to rank")


def test_the_regret_table_gives_each_stopping_metrics_median_regret_on_logloss_after_ts():
    from tabbench.report.page_tables import regret_table

    def row(stopping, median, target="logloss_ts", kind="regret"):
        return {"model": "mlp", "regime": "tuned", "stopping": stopping, "target": target,
                "kind": kind, "n": 4, "median": median}

    regret = pd.DataFrame([row("ts_ref", 0.00123), row("logloss", 0.0101),
                           row("logloss", 0.5, target="error"),
                           row("logloss", 0.7, kind="rel_regret")])
    lines = regret_table(regret).splitlines()
    assert lines[0] == ("| stopping metric (median regret, in test logloss after TS) | "
                        "MLP tuned (n = 4) |")
    assert lines[2:] == ["| Logloss | 0.0101 |", "| TS-Ref. | 0.0012 |"]  # registry order
    assert regret_table(None).startswith("No diagnostics in this results folder")


def test_the_progress_table_is_the_status_recorded_when_the_copy_was_published():
    from tabbench.report.page_tables import progress_table

    def model(name, done, running, left, seconds):
        return {"model": name, "planned": done + running + left, "done": done,
                "running": running, "left": left, "configs_recorded": 1234 * done,
                "configs_failed": 1, "seconds_left": seconds}

    manifest = {"published": "2026-12-02T07:00:00+0000", "status": {
        "models": [model("mlp", 10, 2, 83, 30 * 3600.0), model("xgboost", 95, 0, 0, None)],
        "seconds_left": 15.5 * 3600, "workers": 1.94, "ends": "2026-12-02T22:30:00+00:00",
        "not_predicted": []}}
    lines = progress_table(manifest).splitlines()
    assert lines[2] == "| XGBoost | 95 of 95 | 0 | 117,230 | 1 | none |"
    assert lines[3] == "| MLP | 10 of 95 | 2 | 12,340 | 1 | 30.0 h |"
    assert lines[-1] == ("Published 2026-12-02T07:00:00+0000: about 15.5 h of wall time left at "
                         "1.9 jobs in flight, done around 2026-12-02T22:30:00+00:00.")
    assert progress_table(None).startswith("Not a published copy")
    assert "before progress was kept" in progress_table({"published": "x"})
    assert progress_table({"status": {"error": "no such folder"}}).endswith("no such folder.")


def test_a_page_with_the_first_versions_claims_markers_is_rewritten_in_place():
    from tabbench.report.page_tables import LEGACY_MARKERS

    begin, end = LEGACY_MARKERS["claims"]
    page = f"intro\n{begin}\n| old |\n{end}\n" + _page("ranks")
    assert names_in(page) == ["claims", "ranks"]
    new = with_tables(page, {"claims": "| new |"})
    assert new == page.replace("| old |", "| new |", 1) and embedded(new, "claims") == "| new |"


def _headline_selected(gain_percent: float, n_datasets: int = 6) -> pd.DataFrame:
    """Selected rows of one model (default config) on ``n_datasets`` large datasets where
    TS-Ref. stopping's test logloss after TS is ``gain_percent`` % below logloss stopping's
    (with a small spread, as real datasets have)."""
    from tabbench.summary.select import SELECTED_COLUMNS, TEST_COLUMNS

    rows = []
    for i in range(n_datasets):
        for stopping, factor in (("logloss", 1.0),
                                 ("ts_ref", 1 - (gain_percent + 0.02 * i) / 100)):
            row = dict.fromkeys(TEST_COLUMNS, 1.0)
            row.update(model="mlp", regime="default", dataset=f"d{i}", split=0, config=0,
                       epoch=1, val=0.0, val_ts_ref=0.0, n_candidates=1, n_skipped=0,
                       beta=1.0, fit_seconds=1.0, params="{}", n_train=640, n_val=160, n_test=200,
                       n_classes=2, n_rows=20_000, stopping=stopping,
                       test_logloss_ts=0.5 * factor,
                   rule="best", patience=None, stop_epoch=1, epochs_trained=1,
                   epochs_recorded=1, oracle_logloss_ts=1.0)
            rows.append(row)
    return pd.DataFrame(rows)[list(SELECTED_COLUMNS)]


def test_the_rope_table_judges_the_headline_again_at_each_rope():
    """A gain of about 0.5 % on 6 datasets is a reproduced "better" within a ±0.1 % ROPE and a
    practical equivalence (not reproduced) within ±1 %: the table shows both, the folder's own
    ROPE marked, with the claims table's own verdicts."""
    from tabbench.report.page_tables import rope_table

    lines = rope_table(_headline_selected(0.5), 10_000, rope=1.0).splitlines()
    assert lines[0] == ("| model | regime | n | median | ROPE ±0.1 % | ROPE ±0.5 % | "
                        "ROPE ±1 % (the table's) | ROPE ±2 % |")
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[:4] == ["MLP", "default", "6", "-0.55 %"]
    assert cells[4].endswith("**reproduced**") and cells[6].endswith("**not reproduced**")
    from tabbench.summary.claims import VERDICT_LEGEND

    assert len(lines) == 5 and lines[3] == "" and lines[4] == VERDICT_LEGEND  # the legend
    # the folder's own ROPE joins the list when it is not one of them
    assert "ROPE ±0.3 % (the table's)" in rope_table(_headline_selected(0.5), 10_000, rope=0.3)
    # too few datasets: no probabilities, inconclusive whatever the ROPE
    few = rope_table(_headline_selected(0.5, n_datasets=3), 10_000, rope=1.0).splitlines()[2]
    assert few.count("–: **inconclusive**") == 4
    assert rope_table(_headline_selected(0.5).iloc[:0], 10_000, rope=1.0).startswith("No ")


def test_the_what_ran_table_gives_each_model_and_regime_its_pairs_configs_and_epochs():
    rows = []
    for dataset, n_rows, splits in (("adult", 48_842, 3), ("kc1", 2_109, 2)):
        for split in range(splits):
            rows.append({"model": "xgboost", "regime": "default", "dataset": dataset,
                         "n_rows": n_rows, "split": split, "n_candidates": 1})
            rows.append({"model": "xgboost", "regime": "tuned", "dataset": dataset,
                         "n_rows": n_rows, "split": split, "n_candidates": 30})
    rows.append({"model": "mlp", "regime": "default", "dataset": "adult", "n_rows": 48_842,
                 "split": 0, "n_candidates": 1})
    # a partial settings file: the epochs it gives, the rest the preset's
    settings = ResultsFolder(ResultsLayout("results"), {
        "preset": "demo",
        "epochs": {"xgboost_default": 100, "xgboost_tuned": 1000, "mlp": 256}})
    lines = what_ran_table(pd.DataFrame(rows), 10_000, settings).splitlines()
    assert lines[2:] == ["| XGBoost | default | 2 | 1 | 2–3 | 1 | 100 |",
                         "| XGBoost | tuned | 2 | 1 | 2–3 | 30 | 1000 |",
                         "| MLP | default | 1 | 1 | 1 | 1 | 256 |"]
    assert "–" in what_ran_table(pd.DataFrame(rows), 10_000, None).splitlines()[2]
    assert what_ran_table(pd.DataFrame(rows).iloc[:0], 10_000, settings) == (
        "No selection in this folder yet.")


def test_the_full_study_guide_names_every_generated_table():
    """docs/full-study.md lists the tables a page may embed: every one the code knows."""
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "full-study.md").read_text()
    missing = [name for name in TABLES
               if f"`{name}`" not in guide and f"generated table: {name};" not in guide]
    assert not missing, f"docs/full-study.md does not name the generated tables {missing}"
