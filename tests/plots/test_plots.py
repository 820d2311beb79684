"""Every figure is written, and what it shows equals the summary tables.

The figure functions return the numbers read back from the matplotlib artists (scatter offsets,
box and whisker line coordinates, curve data); these are compared with the tables written by
:mod:`tabbench.summary.aggregate` — the same files the Snakemake plot rule reads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fixtures.synthetic import DEMO_DATASETS, write_synthetic_results

from tabbench.plots import FIGURE_STEMS, figure_files, figure_function, make_figures
from tabbench.report.redraw import collect_selected
from tabbench.summary.aggregate import aggregate, aggregate_frames, read_summary
from tabbench.summary.select import write_selected

REPO = Path(__file__).resolve().parents[2]
MODELS = ("xgboost", "mlp", "realmlp")
DATASETS = [d for d in DEMO_DATASETS if d.name in
            ("adult", "MagicTelescope", "pendigits", "phoneme", "segment", "credit-g")]
EPOCHS = {"xgboost": (20, 30), "mlp": (12, 12), "realmlp": (12, 12)}
BOX_FIGURES = {  # stem -> (metric, large only)
    "fig5_logloss_large": ("logloss", True),
    "figG2_logloss_all_methods": ("logloss", True),
    "figG3_error": ("error", True),
    "figG4_auroc": ("auroc", True),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results")
    write_synthetic_results(root, DATASETS, MODELS, n_splits=2, n_configs=3, epochs=EPOCHS)
    for model in MODELS:
        for ds in DATASETS:
            runs = sorted((root / "runs" / model / ds.name).glob("split*.parquet"))
            write_selected(runs, root / "selected" / model / f"{ds.name}.parquet")
    return root


@pytest.fixture(scope="module")
def drawn(results: Path, tmp_path_factory):
    """Summary written to disk, read back, every figure drawn from it."""
    summary_dir = tmp_path_factory.mktemp("summary")
    aggregate(sorted((results / "selected").glob("*/*.parquet")), summary_dir,
              runs_dir=results / "runs", large_rows=10_000)
    summary = read_summary(summary_dir)
    out = tmp_path_factory.mktemp("figures")
    return summary, make_figures(summary, out), out


def test_every_figure_file_exists_and_is_not_empty(drawn):
    _, _, out = drawn
    for path in figure_files(out):
        assert path.exists() and path.stat().st_size > 5_000, path
        head = path.read_bytes()[:8]
        assert head.startswith(b"%PDF" if path.suffix == ".pdf" else b"\x89PNG"), path


def test_every_figure_has_a_report_caption():
    for stem in FIGURE_STEMS:
        caption = REPO / "workflow" / "report" / f"{stem}.rst"
        assert caption.exists() and len(caption.read_text()) > 100, stem


def _assert_box_statistics(b: dict, s: pd.Series) -> None:
    """A drawn box's statistics are the summary's; too few points get no box, only their
    median (quantiles NaN)."""
    from tabbench.plots.boxes import MIN_BOX_POINTS

    assert b["box"] == (len(b["values"]) >= MIN_BOX_POINTS), b
    for q in ("median", "q10", "q25", "q75", "q90") if b["box"] else ("median",):
        assert b[q] == pytest.approx(float(s[q]), rel=1e-9, abs=1e-12), (b, q)
    if not b["box"]:
        assert all(np.isnan(b[q]) for q in ("q10", "q25", "q75", "q90")), b


def test_a_box_is_drawn_only_over_enough_points(tmp_path):
    """Quartiles of two or three values would draw a spread that is not there: below
    MIN_BOX_POINTS a group shows its points and a median mark, no box and no whiskers."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import PathPatch

    from tabbench.plots.boxes import MIN_BOX_POINTS, box_panel

    few, many = [1.0, 5.0, 9.0][:MIN_BOX_POINTS - 1], list(range(MIN_BOX_POINTS + 1))
    data = pd.DataFrame([{"model": "xgboost", "group": g, "dataset": f"d{i}", "v": float(v)}
                         for g, vals in (("few", few), ("many", many))
                         for i, v in enumerate(vals)])
    fig, ax = plt.subplots()
    few_box, many_box = box_panel(ax, ["few", "many"], ["xgboost"], ["xgboost"], data,
                                  ("group", "v"))
    assert not few_box["box"] and few_box["median"] == pytest.approx(np.median(few))
    assert many_box["box"] and many_box["q25"] < many_box["median"] < many_box["q75"]
    boxes = [p for p in ax.patches if isinstance(p, PathPatch)]
    assert len(boxes) == 1 and boxes[0].get_path().vertices[:, 0].min() > 0.5  # the "many" one
    plt.close(fig)


@pytest.mark.parametrize("stem", sorted(BOX_FIGURES))
def test_box_figures_show_the_relative_table_and_the_summary_statistics(drawn, stem):
    summary, figs, _ = drawn
    metric, large_only = BOX_FIGURES[stem]
    rel, stats = summary["relative"], summary["summary"]
    boxes = figs[stem]["boxes"]
    expected = rel[(rel["metric"] == metric) & (rel["large"] if large_only else True)]
    if stem.startswith("fig5"):
        expected = expected[expected["method"].isin(
            ["Logloss", "Logloss+TS", "TS-Ref.+TS", "Accuracy+TS"])]
    # one box per (regime, method, model) present in the table, none invented
    want_keys = set(map(tuple, expected[["regime", "method", "model"]].drop_duplicates().values))
    assert {(b["regime"], b["method"], b["model"]) for b in boxes} == want_keys
    assert len(boxes) > 0
    subset = "large" if large_only else "all"
    for b in boxes:
        rows = expected[(expected["regime"] == b["regime"]) & (expected["method"] == b["method"])
                        & (expected["model"] == b["model"])].sort_values("dataset")
        assert b["datasets"] == rows["dataset"].tolist()
        np.testing.assert_allclose(b["values"], rows["rel_diff"].to_numpy(), rtol=1e-12)
        s = stats[(stats["subset"] == subset) & (stats["metric"] == metric)
                  & (stats["regime"] == b["regime"]) & (stats["method"] == b["method"])
                  & (stats["model"] == b["model"])]
        assert len(s) == 1
        _assert_box_statistics(b, s.iloc[0])


def test_side_by_side_panels_show_every_point_of_both_regimes(tmp_path):
    """Fig. 5's panels share their y axis: the default panel's −14 % must stay inside the
    limits even though the tuned panel (drawn last) only reaches −3 %."""
    from tabbench.plots.boxes import fig5

    rows = []
    for regime, values in (("default", [-14.0, -9.0, 2.0]), ("tuned", [-3.0, 0.5, 1.0])):
        for i, v in enumerate(values):
            for method in ("Logloss", "Logloss+TS", "TS-Ref.+TS", "Accuracy+TS"):
                rows.append({"model": "xgboost", "regime": regime, "metric": "logloss",
                             "method": method, "dataset": f"d{i}", "large": True,
                             "rel_diff": 0.0 if method == "Logloss+TS" else v})
    summary = {"relative": pd.DataFrame(rows), "meta": {"large_rows": 10_000}}
    out = fig5(summary, tmp_path)
    for b in out["boxes"]:
        lo, hi = out["ylims"][b["regime"]]
        assert all(lo <= v <= hi for v in b["values"]), (b["regime"], b["values"], (lo, hi))


def test_best_epoch_figure_matches_tables(drawn):
    summary, figs, _ = drawn
    table, stats = summary["best_epochs"], summary["best_epochs_summary"]
    boxes = figs["figG5_best_epoch"]["boxes"]
    assert len(boxes) == len(stats) > 0
    for b in boxes:
        rows = table[(table["model"] == b["model"]) & (table["stopping"] == b["stopping"])]
        rows = rows.sort_values("dataset")
        np.testing.assert_allclose(b["values"], rows["epoch"].to_numpy())
        s = stats[(stats["model"] == b["model"]) & (stats["stopping"] == b["stopping"])].iloc[0]
        _assert_box_statistics(b, s)


def test_size_figure_matches_relative_table(drawn):
    summary, figs, _ = drawn
    rel = summary["relative"]
    want = rel[(rel["metric"] == "logloss") & (rel["method"] == "TS-Ref.+TS")]
    points = figs["figG1_logloss_vs_size"]["points"]
    assert sum(len(p["values"]) for p in points) == len(want) > 0
    for p in points:
        rows = want[(want["regime"] == p["regime"]) & (want["model"] == p["model"])]
        rows = rows.sort_values("dataset")
        np.testing.assert_allclose(p["values"], rows["rel_diff"].to_numpy())
        np.testing.assert_allclose(p["n_rows"], rows["n_rows"].to_numpy())


def test_curve_figure_matches_curve_table(drawn):
    summary, figs, _ = drawn
    curve = summary["curve"]
    lines = figs["fig1_curves"]["lines"]
    assert not curve.empty and curve["model"].iloc[0] == "mlp"
    assert curve["dataset"].iloc[0] == "adult"  # the largest dataset
    np.testing.assert_allclose(lines["Val. logloss"]["value"], curve["val_logloss"])
    np.testing.assert_allclose(lines["Val. TS-refinement"]["value"], curve["val_ts_ref"])
    np.testing.assert_allclose(lines["Calibration error"]["value"], curve["calibration_gap"])
    finite = curve["val_ts_ref"].where(np.isfinite(curve["val_ts_ref"]), np.inf)
    assert lines["Val. TS-refinement"]["argmin_epoch"] == curve["epoch"].iloc[int(finite.argmin())]


def test_no_large_dataset_gives_an_explanatory_panel(drawn, tmp_path):
    summary, _, _ = drawn
    small = dict(summary)
    small["relative"] = summary["relative"].assign(large=False)
    small["meta"] = dict(summary["meta"], large_rows=10**9)
    res = figure_function("fig5_logloss_large")(small, tmp_path)
    assert res["boxes"] == [] and res["n_datasets"] == 0
    assert all(p.stat().st_size > 1000 for p in res["files"])


def test_empty_results_render_every_figure(tmp_path):
    aggregate([], tmp_path / "summary")
    figs = make_figures(read_summary(tmp_path / "summary"), tmp_path / "figs")
    assert set(figs) == set(FIGURE_STEMS)
    assert all(p.exists() for p in figure_files(tmp_path / "figs"))


# slow (~30 s): the fast suite redraws a folder through the same regenerate in test_publish,
# test_reproduction_page and the workflow's figures tests
@pytest.mark.slow
def test_cli_regenerates_from_a_results_folder(results, drawn, tmp_path):
    """`tabbench figures --results`: reuses fresh selections, recomputes missing ones, and
    gives the same summary as the Snakemake path."""
    from tabbench import cli

    out = tmp_path / "out"
    assert cli.main(["figures", "--results", str(results), "--out", str(out), "--jobs", "1"]) == 0
    assert all(p.exists() for p in figure_files(out))
    # the diagnostics too (records only here: no replay files)
    assert (out / "diag_winners_curse.png").exists() and (out / "diag_regret.png").exists()
    assert (out / "summary" / "diagnostics" / "selection_bias.parquet").exists()
    summary, _, _ = drawn
    pd.testing.assert_frame_equal(read_summary(out / "summary")["summary"], summary["summary"])
    selected, counts = collect_selected(results, jobs=1, reselect=True)
    assert counts["recomputed"] == counts["pairs"] == len(MODELS) * len(DATASETS)
    again = aggregate_frames(selected, results / "runs", 10_000)
    pd.testing.assert_frame_equal(again["relative"], summary["relative"])


def _hand_built_ranks() -> pd.DataFrame:
    """The ranks table of hand-built selected rows of one model ("mlp", default config) on 6
    large datasets, TS-Ref. stopping best on every dataset: an "all" and a "large" panel."""
    from tabbench.summary.select import SELECTED_COLUMNS, TEST_COLUMNS
    from tabbench.summary.tables import rank_table

    rows = []
    for i in range(6):
        for stopping, v in (("ts_ref", 0.9), ("logloss", 1.0), ("error", 1.2)):
            row = {c: 1.0 for c in TEST_COLUMNS}
            row.update(model="mlp", regime="default", dataset=f"d{i}", split=0, config=0,
                       epoch=1, val=0.0, val_ts_ref=0.0, n_candidates=1, n_skipped=0,
                       beta=1.0, fit_seconds=1.0, params="{}", n_train=640, n_val=160, n_test=200,
                       n_classes=2, n_rows=20_000, stopping=stopping,
                       test_logloss_ts=v + 0.001 * i,
                   rule="best", patience=None, stop_epoch=1, epochs_trained=1,
                   epochs_recorded=1, oracle_logloss_ts=1.0)
            rows.append(row)
    return rank_table(pd.DataFrame(rows)[list(SELECTED_COLUMNS)], large_rows=10_000)


def test_cd_diagrams_draw_the_summarys_mean_ranks(tmp_path):
    """The ranks table of hand-built selected rows (TS-Ref. stopping best on every dataset)
    becomes one CD panel per (subset, model, regime), drawing exactly the table's ranks."""
    from tabbench.plots.ranks import cd_diagrams

    ranks = _hand_built_ranks()
    assert set(ranks["subset"]) == {"all", "large"}
    drawn = cd_diagrams({"ranks": ranks}, tmp_path)
    assert sorted(drawn["panels"]) == ["all/mlp/default", "large/mlp/default"]
    panel = drawn["panels"]["all/mlp/default"]
    assert panel["mean_ranks"] == {"TS-Ref.+TS": 1.0, "Logloss+TS": 2.0, "Accuracy+TS": 3.0}
    assert panel["cd"] == pytest.approx(float(ranks["cd"].iloc[0]))
    assert all(p.exists() for p in drawn["files"])
    empty = cd_diagrams({"ranks": ranks.iloc[:0]}, tmp_path / "empty")
    assert empty["panels"] == {} and all(p.exists() for p in empty["files"])
    # the panels follow the models' order of every other figure, not the table's
    both = pd.concat([ranks.assign(model="lightgbm"), ranks.assign(model="xgboost")])
    order = list(cd_diagrams({"ranks": both}, tmp_path / "both")["panels"])
    assert order == ["all/xgboost/default", "all/lightgbm/default", "large/xgboost/default",
                     "large/lightgbm/default"]


def test_fig5_shows_and_names_only_the_models_it_has_points_for(tmp_path, monkeypatch):
    """A model with no large dataset yet gets neither a box slot nor a legend entry in Fig. 5
    (the legend named every model of the study), and keeps its colour across figures."""
    from tabbench.plots import boxes
    from tabbench.plots.style import model_colour

    rows = []
    for model, large in (("xgboost", False), ("lightgbm", True)):
        for i in range(3):
            for method in ("Logloss", "Logloss+TS", "TS-Ref.+TS", "Accuracy+TS"):
                rows.append({"model": model, "regime": "default", "metric": "logloss",
                             "method": method, "dataset": f"{model}{i}", "large": large,
                             "rel_diff": 0.0 if method == "Logloss+TS" else -1.0 - i})
    legends = []
    real_save = boxes.save

    def save(fig, out_dir, stem):
        legends.append([t.get_text() for leg in fig.legends for t in leg.get_texts()])
        return real_save(fig, out_dir, stem)

    monkeypatch.setattr(boxes, "save", save)
    out = boxes.fig5({"relative": pd.DataFrame(rows), "meta": {"large_rows": 10_000}}, tmp_path)
    assert legends == [["LightGBM", "median"]]
    assert {b["model"] for b in out["boxes"]} == {"lightgbm"}
    ts_ref = next(b for b in out["boxes"] if b["method"] == "TS-Ref.+TS")
    assert ts_ref["values"] == [-1.0, -2.0, -3.0]
    assert model_colour("lightgbm", ["xgboost", "lightgbm"]) != model_colour("xgboost",
                                                                              ["xgboost",
                                                                               "lightgbm"])


def test_fig5_says_how_many_datasets_each_model_has_when_they_differ(tmp_path, monkeypatch):
    """A study whose MLP lags its boosters (5 large datasets against 6) drew "n = 6 datasets"
    over every box: the panel titles give the range and the legend each model's count, and
    with equal counts the legend stays as it was."""
    from tabbench.plots import boxes

    def rows_for(counts: dict[str, int]) -> pd.DataFrame:
        return pd.DataFrame([
            {"model": model, "regime": regime, "metric": "logloss", "method": method,
             "dataset": f"d{i}", "large": True,
             "rel_diff": 0.0 if method == "Logloss+TS" else -1.0 - i}
            for model, n in counts.items() for regime in ("default", "tuned") for i in range(n)
            for method in ("Logloss", "Logloss+TS", "TS-Ref.+TS", "Accuracy+TS")])

    seen = []
    real_save = boxes.save

    def save(fig, out_dir, stem):
        seen.append(([t.get_text() for leg in fig.legends for t in leg.get_texts()],
                     [ax.get_title() for ax in fig.axes]))
        return real_save(fig, out_dir, stem)

    monkeypatch.setattr(boxes, "save", save)
    meta = {"large_rows": 10_000}
    boxes.fig5({"relative": rows_for({"xgboost": 6, "mlp": 5}), "meta": meta}, tmp_path / "a")
    boxes.fig5({"relative": rows_for({"xgboost": 6, "mlp": 6}), "meta": meta}, tmp_path / "b")
    (legend_a, titles_a), (legend_b, titles_b) = seen
    assert legend_a == ["XGBoost (n = 6)", "MLP (n = 5)", "median"]
    assert titles_a == ["Default hyperparameters (n = 5–6 datasets)",
                        "Tuned hyperparameters (n = 5–6 datasets)"]
    assert legend_b == ["XGBoost", "MLP", "median"]
    assert titles_b == ["Default hyperparameters (n = 6 datasets)",
                        "Tuned hyperparameters (n = 6 datasets)"]


def test_a_panel_says_which_model_it_leaves_out_for_want_of_results(tmp_path, monkeypatch):
    """A network trained at its default config only has no tuned pairs: the tuned panel of
    Fig. 5 dropped it without a word (the shipped bundled study's RealMLP); it names it now,
    and the default panel, which has it, says nothing."""
    from tabbench.plots import boxes

    rows = [{"model": model, "regime": regime, "metric": "logloss", "method": method,
             "dataset": f"d{i}", "large": True,
             "rel_diff": 0.0 if method == "Logloss+TS" else -1.0 - i}
            for model, regimes in (("xgboost", ("default", "tuned")), ("realmlp", ("default",)))
            for regime in regimes for i in range(6)
            for method in ("Logloss", "Logloss+TS", "TS-Ref.+TS", "Accuracy+TS")]
    titles = []
    real_save = boxes.save

    def save(fig, out_dir, stem):
        titles.append([ax.get_title() for ax in fig.axes])
        return real_save(fig, out_dir, stem)

    monkeypatch.setattr(boxes, "save", save)
    out = boxes.fig5({"relative": pd.DataFrame(rows), "meta": {"large_rows": 10_000}}, tmp_path)
    assert out["omitted"] == {"tuned": ["realmlp"]}
    assert titles == [["Default hyperparameters (n = 6 datasets)",
                       "Tuned hyperparameters (n = 6 datasets)\nnot drawn: RealMLP (no tuned "
                       "results)"]]
    assert {b["model"] for b in out["boxes"] if b["regime"] == "tuned"} == {"xgboost"}


def _suptitle_overlaps(fig) -> list[str]:
    """The axes (by title) whose drawn extent runs into the figure's suptitle."""
    if fig._suptitle is None or not fig._suptitle.get_text():
        return []
    renderer = fig.canvas.get_renderer()
    title = fig._suptitle.get_window_extent(renderer)
    return [ax.get_title() or f"axes {i}" for i, ax in enumerate(fig.axes)
            if ax.get_visible() and title.overlaps(ax.get_tightbbox(renderer))]


def test_no_figure_title_runs_into_its_panels(drawn, tmp_path, monkeypatch):
    """Every figure's suptitle sits above its panels: the CD diagrams once printed it over the
    first panel's title (tight_layout leaves no room for it above autorank's drawing)."""
    from matplotlib.figure import Figure

    summary, _, _ = drawn
    overlaps: dict[str, list[str]] = {}

    def savefig(fig, fname, *args, **kwargs):
        """The layout as it would be saved, checked; an empty file in its place (what is
        saved is test_every_figure_file_exists_and_is_not_empty's)."""
        found = _suptitle_overlaps(fig)
        if found:
            overlaps[Path(str(fname)).name] = found
        Path(str(fname)).write_bytes(b"")

    monkeypatch.setattr(Figure, "savefig", savefig)
    make_figures(summary, tmp_path)
    # and a tall CD figure: 8 panels (4 models x 2 subsets), as a finished study draws it
    from tabbench.plots.ranks import cd_diagrams

    ranks = _hand_built_ranks()
    cd_diagrams({"ranks": pd.concat([ranks.assign(model=m) for m in
                                     ("xgboost", "mlp", "realmlp", "lightgbm")])},
                tmp_path / "tall")
    assert overlaps == {}


def test_the_refining_gain_figure_draws_the_table_and_the_rules_threshold(drawn):
    """figH_refining_gain: one point per (model, large dataset) and regime with both gains, at
    the heterogeneity table's values, and the rule's threshold as a line at −X."""
    summary, figs, _ = drawn
    res = figs["figH_refining_gain"]
    table = summary["heterogeneity"]
    want = table[table["large"] & table["val_gain"].notna() & table["test_gain"].notna()]
    assert len(want) > 0
    got = {(p["regime"], p["model"], d): (v, t) for p in res["points"]
           for d, v, t in zip(p["datasets"], p["val_gain"], p["test_gain"], strict=True)}
    assert set(got) == set(zip(want["regime"], want["model"], want["dataset"], strict=True))
    for r in want.itertuples():
        assert got[(r.regime, r.model, r.dataset)] == pytest.approx((r.val_gain, r.test_gain))
    threshold = summary["meta"]["validation_rule"]["threshold"]
    assert threshold is not None and res["threshold_lines"] == [-threshold] * 2
