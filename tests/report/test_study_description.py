"""The HTML report's opening page (tabbench.report.study_description): what ran, at which scale, the
headline claims and where each figure is, drawn from the folder by the regenerate job, as
reStructuredText that docutils reads without a warning."""

from __future__ import annotations

import re
from pathlib import Path

import docutils.core
import pandas as pd
import pytest
import yaml
from fixtures.synthetic import SyntheticDataset, write_synthetic_results

from tabbench.core.layout import ResultsLayout
from tabbench.diagnostics.paths import DIAGNOSTIC_FIGURE_STEMS
from tabbench.models.registry import get_models
from tabbench.plots import FIGURE_STEMS
from tabbench.report.redraw import Redraw, collect_selected, summary_frames
from tabbench.report.study_description import (
    CLAIMS_CATEGORY,
    DESCRIPTION_FILE,
    DIAGNOSTICS_CATEGORY,
    FIGURES_CATEGORY,
    markdown_table_rst,
    write_description,
)
from tabbench.settings.folder import ModelRun, ResultsFolder

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
    # the configs and epochs of the models this folder trained, not of every registered one
    assert ("- **Configs and epochs** per (model, dataset, split):\n\n"
            "  - XGBoost: the default config (20 boosting rounds) and 3 random draws of its "
            "search space (20 boosting rounds each)\n\n- **Seed**") in rst
    assert "MLP" not in rst.split("At which scale")[0]
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


SHIPPED = Path(__file__).resolve().parents[2] / "docs" / "results"


def _shipped_selected(copy: str) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(p, columns=["model", "dataset", "split", "regime",
                                                  "n_candidates"])
                      for p in sorted((SHIPPED / copy / "selected").glob("*/*.parquet"))])


@pytest.mark.parametrize("copy", sorted(p.name for p in SHIPPED.iterdir()
                                        if (p / "run_config.yaml").is_file()))
def test_what_ran_states_each_models_configs_and_epochs_of_a_shipped_copy(copy):
    """The shipped studies record ``n_configs`` per model (the boosters tuned, the networks at
    their default) or as one number: the page states, per model with results, its random draws
    and the epochs of its default and random configs as the copy's settings give them, and
    those agree with what its selections compared (one config in the default regime, the
    draws in the tuned one, on the datasets that have it)."""
    from tabbench.report.study_description import _what_ran

    folder = ResultsFolder.open(SHIPPED / copy)
    recorded = yaml.safe_load((SHIPPED / copy / "run_config.yaml").read_text())
    selected = _shipped_selected(copy)
    text = "\n".join(_what_ran(folder, selected))
    assert "not recorded" not in text
    models = selected["model"].unique()
    for model in models:
        spec = get_models()[model]
        n = recorded["n_configs"]
        n = n[model] if isinstance(n, dict) else n
        first, rest = (recorded["epochs"][k] for k in spec.epochs_keys)
        rows = selected[selected["model"] == model]
        line = next(ln for ln in text.splitlines() if ln.startswith(f"  - {spec.label}: "))
        default = f"{first:,} {spec.epoch_name}" + ("" if first == 1 else "s")
        if n == 0:
            assert line.endswith(f"the default config only ({default})"), line
            assert set(rows["regime"]) == {"default"}
        else:
            random = f"{rest:,} {spec.epoch_name}" + ("" if rest == 1 else "s")
            assert (f"the default config ({default}) and {n} random draws of its search "
                    f"space ({random} each)") in line, line
            tuned = rows[rows["regime"] == "tuned"]
            assert set(tuned["n_candidates"]) == {n}
            assert (f"on {tuned['dataset'].nunique()} of its {rows['dataset'].nunique()} "
                    "datasets" in line) == (tuned["dataset"].nunique()
                                            < rows["dataset"].nunique()), line
        assert set(rows.loc[rows["regime"] == "default", "n_candidates"]) == {1}
    # the models of its settings without results here are named as such, and not described
    others = set(recorded["models"]) - set(models)
    assert ("the others have no results here" in text) == bool(others)
    for model in others:
        assert f"  - {get_models()[model].label}: " not in text


def test_a_model_the_settings_do_not_give_configs_for_is_not_recorded():
    from tabbench.report.study_description import _model_run_text

    rows = pd.DataFrame({"dataset": ["a"], "regime": ["default"]})
    assert _model_run_text(ModelRun("x", None, 5, None), rows) == (
        "configs not recorded (the default config: 5 epochs)")
    assert _model_run_text(ModelRun("x", 0, None, None, "boosting round"), rows) == (
        "the default config only (epochs not recorded)")
    assert _model_run_text(ModelRun("x", 2, 1, 3), rows) == (
        "the default config (1 epoch) and 2 random draws of its search space (3 epochs each)"
        ", on 0 of its 1 datasets (the others: the default config only)")


