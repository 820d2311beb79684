"""What a target under a results folder may name (tabbench.study.targets), and what the end of a
run says about the folder's drawings (tabbench.report.drawing_state.stale_drawing).

- a model or dataset the study does not declare is refused in one line that says where to add
  it on purpose; a name that is no known one is a typo, and the close name is given;
- the paths no rule makes are exactly those the rules' patterns do not match;
- an invocation that draws from the cache may ask for runs or selected files beside it (one
  command retrains a pair and redraws); any other target makes it a study invocation;
- the drawings are stale when a file they read is newer, or they are missing.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tabbench.core.suggest import close_names, did_you_mean
from tabbench.report.drawing_state import nothing_to_draw, redraw_command, stale_drawing
from tabbench.study.targets import (
    DATASET,
    MODEL,
    SPLIT_PATTERN,
    Drawing,
    not_in_study,
    pattern_regex,
    plan_drawing,
    unmade_pattern,
    unmade_target,
)

MODELS = ["xgboost", "mlp", "realmlp", "lightgbm"]


def test_did_you_mean_names_the_close_names_only():
    assert did_you_mean("xgbost", MODELS) == " (did you mean 'xgboost'?)"
    assert did_you_mean("XGBoost", MODELS) == " (did you mean 'xgboost'?)"
    assert did_you_mean("catboost", ["mlp", "realmlp"]) == ""
    assert close_names("mpl", MODELS)[0] == "mlp"


def test_an_undeclared_model_is_refused_saying_how_to_add_it_on_purpose():
    declared = ["xgboost", "mlp", "realmlp"]
    assert not_in_study(MODEL, "mlp", declared, "results", "results/run_config.yaml") is None
    line = not_in_study(MODEL, "lightgbm", declared, "results", "results/run_config.yaml",
                        MODELS)
    assert "\n" not in line
    assert line.startswith("'lightgbm' is not a model of the study in results/; its models: "
                           "xgboost, mlp, realmlp."), line
    assert "join this folder's figures, claims and report" in line
    assert "add it to `models` in results/run_config.yaml" in line
    assert "(--config results_dir=DIR)" in line
    # a folder without run_config.yaml: its study is the command line's
    fresh = not_in_study(MODEL, "lightgbm", declared, "results", None, MODELS)
    assert "run with --config models=[xgboost,mlp,realmlp,lightgbm]" in fresh


def test_a_model_name_nobody_knows_is_a_typo_with_the_close_name():
    line = not_in_study(MODEL, "xgbost", ["xgboost", "mlp"], "results",
                        "results/run_config.yaml", MODELS)
    assert line == ("'xgbost' is not a model of the study in results/ nor a known one (did you "
                    "mean 'xgboost'?); its models: xgboost, mlp")
    assert "add it" not in line  # nothing to add


def test_an_undeclared_dataset_is_refused_naming_the_suite_setting():
    line = not_in_study(DATASET, "adult", ["kc1", "segment"], "res", "res/run_config.yaml")
    assert line.startswith("'adult' is not a dataset of the study in res/; its suite: kc1, "
                           "segment."), line
    assert "list it in `suite` (and not in `exclude`) in res/run_config.yaml" in line
    many = not_in_study(DATASET, "adult", [f"d{i}" for i in range(40)], "res", None)
    assert "its suite: 40 of them" in many and "--config suite=[...]" in many


def test_pattern_regex_is_the_rules_own_matching():
    regex = pattern_regex("results/runs/{model}/{dataset}/split{split}.parquet",
                          {"model": "xgboost|mlp", "split": SPLIT_PATTERN})
    assert re.fullmatch(regex, "results/runs/mlp/a.b/split3.parquet")
    assert re.fullmatch(regex, "results/runs/mlp/a/b/split3.parquet")  # `.+`, as Snakemake's
    assert not re.fullmatch(regex, "results/runs/xgbost/a/split3.parquet")
    assert not re.fullmatch(regex, "results/runs/mlp/a/splitx.parquet")
    assert not re.fullmatch(regex, "resultsXruns/mlp/a/split3.parquet")  # literal text escaped


def test_the_unmade_pattern_matches_exactly_what_no_rule_makes():
    made = [pattern_regex("results/runs/{model}/{dataset}/split{split}.parquet",
                          {"model": "xgboost|mlp", "split": SPLIT_PATTERN}),
            pattern_regex("results/selected/{model}/{dataset}.parquet",
                          {"model": "[^/]+", "dataset": "[^/]+"}),
            pattern_regex("results/summary/claims.md"), pattern_regex("results/report.html")]
    unmade = unmade_pattern("results", made)
    for path in ("runs/mlp/kc1/split0.parquet", "selected/anything/kc1.parquet",
                 "summary/claims.md", "report.html"):
        assert not re.fullmatch(unmade, path), path
    for path in ("selectd/xgboost/kc1.parquet", "runs/xgbost/kc1/split0.parquet",
                 "summary/claims.mdx", "report.html.bak", "x"):
        assert re.fullmatch(unmade, path), path
    with pytest.raises(ValueError, match="not under results/"):
        unmade_pattern("results", [pattern_regex("data/splits/{dataset}.parquet")])


@pytest.mark.parametrize(("path", "meant"), [
    ("results/selectd/xgboost/kc1.parquet", "results/selected/xgboost/kc1.parquet"),
    ("results/runs/xgbost/kc1/split0.parquet", "results/runs/xgboost/kc1/split0.parquet"),
    ("results/figure/fig5_logloss_large.png", "results/figures/fig5_logloss_large.png"),
    ("results/zzz/kc1.parquet", None),
])
def test_a_path_no_rule_makes_says_which_was_meant(path, meant):
    line = unmade_target(path, "results", MODELS, ("figures", "report"))
    assert line.startswith(f"no rule makes {path}"), line
    assert ("did you mean" in line) == (meant is not None), line
    if meant:
        assert f"(did you mean {meant!r}?)" in line
    assert "results/selected/MODEL/DATASET.parquet" in line and "figures, report" in line


@pytest.mark.parametrize(("targets", "from_cache", "rebuilt"), [
    ([], False, ()),  # the study
    (["figures"], True, ()),
    (["report", "results/figures/fig5_logloss_large.png", "results/summary/claims.md"],
     True, ()),
    (["results/selected/xgboost/kc1.parquet", "figures"], True,
     ("results/selected/xgboost/kc1.parquet",)),
    (["./results/runs/xgboost/kc1/split0.parquet", "report"], True,
     ("results/runs/xgboost/kc1/split0.parquet",)),
    # a selected file alone is no drawing; nor is any other target beside one
    (["results/selected/xgboost/kc1.parquet"], False, ()),
    (["figures", "data"], False, ()),
    (["figures", "results/replay/xgboost/kc1/split0.npz"], False, ()),
])
def test_what_the_targets_ask_of_the_drawing(targets, from_cache, rebuilt):
    plan = plan_drawing(targets, "results")
    assert plan == Drawing(from_cache, rebuilt)
    assert plan.trains_nothing == (from_cache and not rebuilt)


def test_a_drawing_may_rebuild_the_runs_of_a_selected_file_it_asks_for():
    plan = plan_drawing(["results/selected/xgboost/kc1.parquet", "figures"], "results")
    assert plan.may_rebuild("results/selected/xgboost/kc1.parquet")
    assert plan.may_rebuild("results/runs/xgboost/kc1/split3.parquet")
    assert not plan.may_rebuild("results/runs/xgboost/segment/split0.parquet")
    assert not plan.may_rebuild("results/runs/mlp/kc1/split0.parquet")
    only_runs = plan_drawing(["results/runs/xgboost/kc1/split0.parquet", "figures"], "results")
    assert only_runs.may_rebuild("results/runs/xgboost/kc1/split0.parquet")
    assert not only_runs.may_rebuild("results/runs/xgboost/kc1/split1.parquet")


# --- the folder's drawings -------------------------------------------------------------------


def _touch(path: Path, when: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    os.utime(path, (when, when))
    return path


def _folder(root: Path, drawn_at: float | None, selected_at: float) -> Path:
    """A folder with one complete pair (its selected file) and, where ``drawn_at``, a
    summary and a report drawn then."""
    _touch(root / "selected" / "xgboost" / "kc1.parquet", selected_at)
    if drawn_at is not None:
        _touch(root / "summary" / "meta.json", drawn_at)
        _touch(root / "report.html", drawn_at)
    return root


def test_drawings_newer_than_every_result_are_not_stale(tmp_path):
    now = time.time()
    assert stale_drawing(_folder(tmp_path / "results", now, now - 60)) is None
    assert stale_drawing(tmp_path / "empty") is None  # nothing to draw


def test_a_result_newer_than_the_drawings_says_how_to_redraw(tmp_path):
    now = time.time()
    results = _folder(tmp_path / "res", now - 60, now)
    line = stale_drawing(results)
    assert line == (f"the summary, claims and figures and the report of {results}/ are older "
                    f"than {results}/selected/xgboost/kc1.parquet or missing: redraw with "
                    f"`snakemake --cores 1 figures --config results_dir={results}` (nothing is "
                    "trained)")
    # a summary drawn again without its report (`snakemake diagnostics`): the report is stale
    os.utime(results / "summary" / "meta.json", (now + 60, now + 60))
    assert stale_drawing(results).startswith(f"the report of {results}/ is older than")
    (results / "report.html").unlink()  # missing: stale too
    assert stale_drawing(results).startswith(f"the report of {results}/ is older than")


def test_results_never_drawn_say_so(tmp_path):
    results = _folder(tmp_path / "res", None, time.time())
    assert stale_drawing(results).startswith(
        f"{results}/ holds 1 complete (model, dataset) results and no summary, claims, figures "
        "or report yet: draw them with `snakemake --cores 1 figures --config results_dir=")


def test_the_redraw_command_names_a_folder_other_than_results():
    assert redraw_command("results") == "snakemake --cores 1 figures"
    assert redraw_command("results_paper") == ("snakemake --cores 1 figures --config "
                                               "results_dir=results_paper")


def test_nothing_to_draw_tells_a_missing_folder_from_an_empty_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _folder(Path("results"), None, time.time())
    assert nothing_to_draw("results") is None
    assert nothing_to_draw("reslts").startswith(
        "results folder reslts/ does not exist (did you mean 'results'?). Run the study first")
    Path("empty").mkdir()
    assert nothing_to_draw("empty").startswith(
        "empty/ holds no complete results to draw figures from. Run the study first")
