"""What a summary compares (tabbench.summary.view): the baseline, Fig. 5's methods and declared
comparisons — checked against the claims' own code and hand-built relative differences, and
for a plugin's stopping metric installed through its entry point."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from fixtures.plugin_dists import METRIC_GROUP, METRIC_ID, METRIC_LABEL, install_example_plugin
from test_claims import means_frame

from tabbench.settings.run_config import INVOCATION_KEYS
from tabbench.settings.table import VIEW_KEYS
from tabbench.summary.aggregate import aggregate_frames
from tabbench.summary.claims import DECLARED_COLUMNS, Claim, check_claims
from tabbench.summary.methods import BASELINE, FIG5_METHODS
from tabbench.summary.view import DECLARED, SummaryView, ViewError, view_from_config, view_from_meta

REPO = Path(__file__).resolve().parents[2]
LARGE = [20_000] * 8
TS_REF = [1 - k / 100 for k in range(2, 10)]  # 2..9 % below the baseline


def _selected(**extra: list[float]) -> pd.DataFrame:
    values = {("xgboost", "default", "logloss"): [1.0] * 8,
              ("xgboost", "default", "ts_ref"): TS_REF,
              ("xgboost", "default", "brier"): [1.04] * 8}
    values.update({("xgboost", "default", k): v for k, v in extra.items()})
    return means_frame(values, LARGE)


def test_no_setting_is_the_papers_view():
    view = view_from_config({})
    assert view == SummaryView(BASELINE, FIG5_METHODS, ())
    assert view_from_meta(view.as_meta()) == view
    assert view_from_meta({}) == view  # a summary whose meta.json records no view


@pytest.mark.parametrize(("cfg", "message"), [
    ({"figures_baseline": "Logloss-TS"}, r"'figures_baseline': unknown method 'Logloss-TS'; "
                                         r"the registered ones are Logloss, Logloss\+TS"),
    ({"figures_methods": ["TS-Ref.+TS", "Nope"]}, "'figures_methods': unknown method 'Nope'"),
    ({"comparisons": [{"method": "Brier+TS"}]}, r"comparisons' \[0\]: missing versus"),
    ({"comparisons": [{"method": "Brier+TS", "versus": "TS-Ref.+TS", "metrc": "error"}]},
     r"\[0\]: unknown key metrc"),
    ({"comparisons": [{"method": "Brier+TS", "versus": "TS-Ref.+TS", "kind": "bigger"}]},
     "kind 'bigger' is not one of better, worse"),
    ({"comparisons": [{"method": "Brier+TS", "versus": "TS-Ref.+TS", "metric": "f1"}]},
     "metric 'f1' is not one of logloss"),
    ({"comparisons": [{"method": "Brier+TS", "versus": "TS-Ref.+TS", "kind": "best_ranked"}]},
     "ranks every stopping method"),
    ({"comparisons": [{"method": "Brier+TS", "versus": "TS-Ref.+TS"},
                      {"method": "Brier+TS", "versus": "TS-Ref.+TS", "kind": "worse"}]},
     "two comparisons have the id"),
    ({"comparisons": ["Brier+TS vs TS-Ref.+TS"]}, "expected a mapping"),
])
def test_a_setting_naming_nothing_known_is_one_clear_error(cfg, message):
    with pytest.raises(ViewError, match=message):
        view_from_config(cfg)


def test_the_summary_is_relative_to_the_chosen_baseline():
    sel = _selected()
    frames = aggregate_frames(sel, large_rows=10_000,
                              view=view_from_config({"figures_baseline": "TS-Ref.+TS"}))
    rel = frames["relative"]
    brier = rel[(rel["method"] == "Brier+TS") & (rel["metric"] == "logloss")]
    expected = 100 * (1.04 / np.array(TS_REF) - 1)
    np.testing.assert_allclose(brier.sort_values("dataset")["rel_diff"], expected, rtol=1e-12)
    summary = frames["summary"]
    itself = summary[(summary["method"] == "TS-Ref.+TS") & (summary["metric"] == "logloss")]
    assert (itself["median"] == 0).all() and itself["p_wilcoxon"].isna().all()
    assert frames["meta"]["baseline"] == "TS-Ref.+TS"
    assert frames["markdown"].startswith("# Relative test-metric differences to TS-Ref.+TS")
    # the paper's claims keep the paper's baseline whatever the figures show
    paper = frames["claims"][frames["claims"]["claim"] == "ts_ref_beats_logloss"]
    assert len(paper) == 1 and paper["versus"].iloc[0] == BASELINE
    assert paper["median"].iloc[0] == pytest.approx(-5.5)


def test_a_declared_comparison_is_judged_like_a_paper_claim_and_drawn(tmp_path):
    from tabbench.plots import make_figures

    spec = {"method": "Brier+TS", "versus": "TS-Ref.+TS", "kind": "worse",
            "statement": "Brier+TS loses to TS-Ref.+TS"}
    view = view_from_config({"comparisons": [spec]})
    sel = _selected()
    frames = aggregate_frames(sel, large_rows=10_000, view=view)
    claims = frames["claims"]
    mine = claims[claims["figure"] == DECLARED]
    same = check_claims(sel, 10_000, claims=(Claim(
        "x", "x", "x", "Brier+TS", "TS-Ref.+TS", "logloss", "worse"),))
    assert len(mine) == 1
    cols = ["n", "median", "wins", "losses", "p_wilcoxon", "p_worse", "verdict"]
    pd.testing.assert_frame_equal(mine[cols].reset_index(drop=True),
                                  same[cols].reset_index(drop=True))
    assert mine["statement"].iloc[0] == spec["statement"] and mine["verdict"].iloc[0] == (
        "reproduced")
    assert "Brier+TS loses to TS-Ref.+TS" in frames["claims_markdown"]
    declared = frames["declared"]
    assert list(declared.columns) == DECLARED_COLUMNS and len(declared) == 8
    np.testing.assert_allclose(np.median(declared["rel_diff"]), mine["median"].iloc[0])
    drawn = make_figures(frames, tmp_path)["figD_declared_comparisons"]
    assert drawn["n_comparisons"] == 1 and len(drawn["boxes"]) == 1
    box = drawn["boxes"][0]
    assert box["median"] == pytest.approx(mine["median"].iloc[0])
    assert sorted(box["values"]) == pytest.approx(sorted(declared["rel_diff"]))
    assert (tmp_path / "figD_declared_comparisons.png").is_file()


def test_the_declared_figure_has_a_model_legend_and_titles_within_their_panels(tmp_path):
    """Four models in both regimes: eight verdicts in a panel's title, wrapped to the panel's
    width (on one line they ran past the figure's edges), and the models' colours named in a
    legend."""
    from tabbench.plots.declared import fig_declared
    from tabbench.plots.style import model_label

    models = ["xgboost", "mlp", "realmlp", "lightgbm"]
    values = {}
    for model in models:
        for regime in ("default", "tuned"):
            values.update({(model, regime, "logloss"): [1.0] * 8,
                           (model, regime, "ts_ref"): TS_REF,
                           (model, regime, "brier"): [1.04] * 8})
    spec = {"method": "Brier+TS", "versus": "TS-Ref.+TS", "kind": "worse",
            "statement": "Brier+TS loses to TS-Ref.+TS on every model and in either regime"}
    frames = aggregate_frames(means_frame(values, LARGE), large_rows=10_000,
                              view=view_from_config({"comparisons": [spec]}))
    drawn = fig_declared(frames, tmp_path)
    assert len(drawn["boxes"]) == 8
    assert drawn["legend"] == [*(model_label(m) for m in models), "median"]
    (title, panel), = drawn["title_widths"]
    assert title <= panel


def test_without_a_declared_comparison_the_figure_says_how_to_declare_one(tmp_path):
    from tabbench.plots import make_figures

    frames = aggregate_frames(_selected(), large_rows=10_000)
    assert frames["declared"].empty and frames["meta"]["comparisons"] == []
    drawn = make_figures(frames, tmp_path)["figD_declared_comparisons"]
    assert drawn["boxes"] == [] and drawn["n_comparisons"] == 0


def test_fig5_draws_the_methods_asked_for_in_their_order(tmp_path):
    from tabbench.plots.boxes import fig5

    view = view_from_config({"figures_methods": ["TS-Ref.+TS", "Brier+TS"]})
    frames = aggregate_frames(_selected(), large_rows=10_000, view=view)
    drawn = fig5(frames, tmp_path)
    assert [b["method"] for b in drawn["boxes"]] == ["TS-Ref.+TS", "Brier+TS"]
    assert drawn["boxes"][1]["median"] == pytest.approx(4.0)


def test_a_plugin_metric_reaches_the_summary_fig5_and_a_claim(site, tmp_path):
    """The issue's case: a stopping metric from an installed package, compared with
    TS-Ref.+TS without editing tabbench."""
    from tabbench.plots.boxes import fig5

    install_example_plugin(site, [METRIC_GROUP])
    method = f"{METRIC_LABEL}+TS"
    sel = _selected(**{METRIC_ID: [0.9] * 8})
    view = view_from_config({"figures_methods": ["TS-Ref.+TS", method],
                             "comparisons": [{"method": method, "versus": "TS-Ref.+TS"}]})
    frames = aggregate_frames(sel, large_rows=10_000, view=view)
    assert method in set(frames["summary"]["method"])
    assert [b["method"] for b in fig5(frames, tmp_path)["boxes"]] == ["TS-Ref.+TS", method]
    row = frames["claims"][frames["claims"]["method"] == method]
    assert len(row) == 1 and row["verdict"].iloc[0] == "reproduced"  # 0.9 vs 0.91..0.98


def test_the_view_keys_are_redraw_settings_and_the_config_header_names_every_one():
    """They change no trained result, so a folder accepts them per invocation; config.yaml's
    header lists the keys that may change between runs: exactly INVOCATION_KEYS."""
    assert set(VIEW_KEYS) <= INVOCATION_KEYS
    text = (REPO / "config.yaml").read_text()
    lines = text.splitlines()
    header = " ".join(line.lstrip("# ") for line in lines[:lines.index("")])
    listed = re.search(r"only (.+?) may change\s+between runs", header)
    assert listed, "config.yaml's header does not list the per-invocation keys"
    names = set(re.findall(r"[a-z_]+", listed.group(1).replace(" and ", ", "))) - {"and"}
    assert names == set(INVOCATION_KEYS)
    cfg = yaml.safe_load(text)
    assert all(k in cfg for k in VIEW_KEYS)
    assert view_from_config(cfg) == SummaryView()
    # and Getting started's paragraph on a folder's settings names the same keys
    page = " ".join((REPO / "docs" / "getting-started.md").read_text().split())
    listed = re.search(r"Only (`.+?`) may change from one run to the next", page)
    assert listed, "docs/getting-started.md does not list the per-invocation keys"
    assert set(re.findall(r"`([a-z_]+)`", listed.group(1))) == set(INVOCATION_KEYS)


def test_the_command_line_takes_the_view_and_refuses_an_unknown_method(tmp_path, capsys):
    from tabbench.cli import main
    from tabbench.summary.aggregate import read_summary

    selected = tmp_path / "sel.parquet"
    _selected().to_parquet(selected)
    out = tmp_path / "summary"
    comparisons = '[{"method": "Brier+TS", "versus": "TS-Ref.+TS", "kind": "worse"}]'
    assert main(["aggregate", "--selected", str(selected), "--out", str(out),
                 "--large-rows", "10000", "--figures-baseline", "TS-Ref.+TS",
                 "--comparisons", comparisons, "--low-signal-learnability", "0.75"]) == 0
    meta = read_summary(out)["meta"]
    assert meta["baseline"] == "TS-Ref.+TS" and meta["comparisons"][0]["kind"] == "worse"
    assert meta["low_signal_learnability"] == 0.75
    capsys.readouterr()
    assert main(["aggregate", "--selected", str(selected), "--out", str(out),
                 "--figures-methods", "TS-Ref.+TS", "Brier-TS"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown method 'Brier-TS'" in err


def test_a_results_folder_redraws_with_its_own_view_unless_told_otherwise(tmp_path):
    from tabbench.core.layout import ResultsLayout
    from tabbench.report.redraw import Redraw, collect_selected, summary_frames

    results = tmp_path / "results"
    sel = _selected()
    for dataset, rows in sel.groupby("dataset"):
        path = results / "selected" / "xgboost" / f"{dataset}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        rows.to_parquet(path)
    Path(ResultsLayout(results).run_config).write_text(yaml.safe_dump(
        {"preset": "demo", "figures_large_rows": 10_000, "figures_baseline": "TS-Ref.+TS",
         "low_signal_learnability": 0.8}))
    # what regenerate writes (summary_frames: the one place a folder's settings are resolved)
    selected, _ = collect_selected(results, jobs=1)
    meta = summary_frames(results, selected)[0]["meta"]
    assert (meta["baseline"], meta["low_signal_learnability"]) == ("TS-Ref.+TS", 0.8)
    frames, _ = summary_frames(results, selected,
                               Redraw(view={"figures_baseline": "Brier+TS",
                                            "low_signal_learnability": 0.95}))
    assert frames["meta"]["baseline"] == "Brier+TS"
    assert frames["meta"]["low_signal_learnability"] == 0.95
