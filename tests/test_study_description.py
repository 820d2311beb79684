"""The HTML report's opening page (tabbench.report.study_description): what ran, at which scale, the
headline claims and where each figure is, drawn from the folder by the regenerate job, as
reStructuredText that docutils reads without a warning."""

from __future__ import annotations

import re
from pathlib import Path

import docutils.core
import pytest
import yaml
from fixtures.synthetic import SyntheticDataset, write_synthetic_results

from tabbench.core.layout import ResultsLayout
from tabbench.diagnostics.paths import DIAGNOSTIC_FIGURE_STEMS
from tabbench.plots import FIGURE_STEMS
from tabbench.report.results_folder import Redraw, collect_selected, summary_frames
from tabbench.report.study_description import (
    CLAIMS_CATEGORY,
    DESCRIPTION_FILE,
    DIAGNOSTICS_CATEGORY,
    FIGURES_CATEGORY,
    markdown_table_rst,
    write_description,
)

LINK = re.compile(r"`([^`<>]+)`_")


def _parse(rst: str, targets: set[str]) -> str:
    """docutils' HTML of ``rst`` (the Jinja raw block removed) with the link targets the report
    defines; any warning (a broken table, an unknown link) is an error."""
    body = rst.replace("{% raw %}\n", "").replace("\n{% endraw %}\n", "\n")
    body += "\n\n" + "\n".join(f".. _{name}: #{i}" for i, name in enumerate(sorted(targets)))
    return docutils.core.publish_string(
        body, writer="html",
        settings_overrides={"report_level": 2, "halt_level": 2}).decode()


def test_a_markdown_table_becomes_a_list_table_with_signed_cells_kept_as_text():
    table = "| claim | median |\n|---|---|\n| **TS-Ref.** vs Logloss | -3.2 % |\n| b | +0.5 % |"
    rst = markdown_table_rst(table)
    assert rst.startswith(".. list-table::")
    html = _parse(rst, set())
    assert "<table" in html and "-3.2 %" in html and "+0.5 %" in html
    assert "<strong>TS-Ref.</strong>" in html
    assert markdown_table_rst("No claim could be checked: 2 datasets.") == (
        "No claim could be checked: 2 datasets.")
    legend = "Verdicts: *reproduced* or not."
    html = _parse(markdown_table_rst(f"{table}\n\n{legend}"), set())
    assert html.count("<tr>") == 3 and "<p>Verdicts: <em>reproduced</em> or not.</p>" in html


@pytest.fixture(scope="module")
def described(tmp_path_factory) -> tuple[Path, str]:
    results = tmp_path_factory.mktemp("desc") / "results"
    datasets = [SyntheticDataset(f"ds_{i}", 2_000 + 6_000 * i, 2 + i % 2) for i in range(6)]
    write_synthetic_results(results, datasets, ["xgboost"], n_splits=2, n_configs=3,
                            epochs={"xgboost": (20, 20)})
    Path(ResultsLayout(results).run_config).write_text(yaml.safe_dump(
        {"preset": "my_preset", "models": ["xgboost"], "n_splits": 2, "n_configs": 3, "seed": 7,
         # a resolved config holds every registered model's epochs, trained or not
         "epochs": {"xgboost_default": 20, "xgboost_tuned": 20, "mlp": 24, "realmlp": 24,
                    "lightgbm_default": 100, "lightgbm_tuned": 200},
         "figures_large_rows": 10_000}))
    # what regenerate writes beside the figures (which are tested elsewhere: not drawn here)
    selected, _ = collect_selected(results, jobs=1)
    frames, _ = summary_frames(results, selected)
    path = write_description(results, results, selected, frames, results / "figures")
    assert path == results / "summary" / DESCRIPTION_FILE
    return results, path.read_text()


def test_the_page_says_what_ran_at_which_scale_from_the_folder(described):
    results, rst = described
    assert "``my_preset``" in rst and "**Seed**: 7" in rst
    assert "XGBoost" in rst
    for i in range(6):
        assert f"ds\\_{i}" in rst  # names escaped: no RST reference read into them
    assert "- **Splits**: 2 per dataset" in rst
    # the epochs of the models this folder trained, not of every registered one
    assert "- **Epochs** (at most): xgboost\\_default 20, xgboost\\_tuned 20\n" in rst
    assert "the default and 3 random draws" in rst
    assert "**Datasets**: 6, of which 4 large (at least 10,000 rows" in rst
    assert "**Runs files** (one training job each: model × dataset × split): 12" in rst


def test_a_reduced_scale_run_says_under_the_title_and_in_its_claims_that_it_is_no_test(
        described):
    """2 splits and 20 boosting rounds (the paper: 5 and 1,000): the page and claims.md say the
    verdicts are no finding (a demo's "not reproduced" read as one), and name the preset."""
    results, rst = described
    title_part = rst.split("What ran", 1)[0]
    assert ("**Not a test of the paper** (preset ``my_preset``): a reduced-scale run (preset "
            "my\\_preset: 2 splits instead of 5; fewer epochs (xgboost\\_default 20 of 100, "
            "xgboost\\_tuned 20 of 1000); 3 random configs instead of 30) cannot judge the "
            "paper's claims") in title_part, title_part
    selected, _ = collect_selected(results, jobs=1)
    frames, _ = summary_frames(results, selected)
    assert frames["meta"]["preset"] == "my_preset"
    claims = frames["claims_markdown"].splitlines()
    assert claims[2].startswith("**Preset: my_preset. Not a test of the paper: a reduced-scale "
                                "run (preset my_preset: 2 splits instead of 5;"), claims[:4]
    assert "<p><b>Preset: my_preset. Not a test of the paper:" in frames["claims_html"]


def test_the_page_has_the_claims_table_and_links_every_figure(described):
    results, rst = described
    assert "Headline claims" in rst and ".. list-table::" in rst
    targets = {FIGURES_CATEGORY, DIAGNOSTICS_CATEGORY, CLAIMS_CATEGORY,
               *(f"{s}.png" for s in (*FIGURE_STEMS, *DIAGNOSTIC_FIGURE_STEMS))}
    # every link is to a category or a figure entry of the report, and every one is there
    assert set(LINK.findall(rst)) == targets
    html = _parse(rst, targets)
    assert "The study in this results folder" in html
    for stem in FIGURE_STEMS:  # each figure's file named where regenerate draws it
        assert f"``{results}/figures/{stem}.pdf``" in rst, stem


def test_a_folder_without_run_config_is_described_from_its_results(tmp_path):
    results = tmp_path / "results"
    write_synthetic_results(results, [SyntheticDataset(f"d{i}", 3_000, 2) for i in range(2)],
                            ["xgboost"], n_splits=1, n_configs=2, epochs={"xgboost": (10, 10)})
    selected, _ = collect_selected(results, jobs=1)
    frames, _ = summary_frames(results, selected, Redraw(large_rows=10_000))
    rst = write_description(results, results, selected, frames, results).read_text()
    assert "has no ``run_config.yaml``" in rst and "**Splits**: 1 per dataset" in rst
    _parse(rst, set(LINK.findall(rst)))


@pytest.mark.parametrize("copy", ["bundled", "large"])
def test_what_ran_states_each_models_configs_of_a_shipped_copy(copy):
    """The shipped studies record ``n_configs`` per model (the boosters tuned, the networks at
    their default): the page states each model's draws instead of "not recorded"."""
    from tabbench.report.study_description import _configs_text

    root = Path(__file__).resolve().parents[1] / "docs" / "results" / copy
    n_configs = yaml.safe_load((root / "run_config.yaml").read_text())["n_configs"]
    assert isinstance(n_configs, dict)
    text = _configs_text(n_configs, ["xgboost", "mlp", "realmlp", "lightgbm"])
    assert "not recorded" not in text
    for model, n in n_configs.items():
        expected = "the default only" if n == 0 else f"the default and {n} random draws"
        label = {"xgboost": "XGBoost", "mlp": "MLP", "realmlp": "RealMLP",
                 "lightgbm": "LightGBM"}[model]
        assert f"{label} {expected}" in text


def test_configs_text_reads_one_number_for_every_model():
    from tabbench.report.study_description import _configs_text

    assert _configs_text(3, ["xgboost"]) == "the default and 3 random draws of the search space"
    assert _configs_text(0, ["xgboost"]) == "the default only"
    assert _configs_text(None, ["xgboost"]) == "not recorded"
